//! Rollups and the top-down view on recorded programs: leaf metrics against values worked out
//! by hand, and `scalpel top` naming an injected delay.

use std::process::{Command, Output};

use scalpel_analysis::rollup::{leaf_metrics, rollup, BlockKind, GraphIndex};
use scalpel_e2e::score::{infer_model, load_tasks, report, score};
use scalpel_e2e::{build_c, own_bin, record, record_with, scalpel};
use scalpel_model::format::Op;

fn run(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(scalpel())
        .args(args)
        .output()
        .expect("scalpel runs")
}

const MS: u64 = 1_000_000;

/// `scalpel top PATH --format json EXTRA…`, which must succeed, parsed.
fn top_json(path: &std::path::Path, extra: &[&str]) -> serde_json::Value {
    let mut args: Vec<&std::ffi::OsStr> = vec![
        "top".as_ref(),
        path.as_os_str(),
        "--format".as_ref(),
        "json".as_ref(),
    ];
    args.extend(extra.iter().map(std::ffi::OsStr::new));
    let o = run(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

fn within(what: &str, v: u64, lo: u64, hi: u64) {
    assert!(
        (lo..=hi).contains(&v),
        "{what}: {v} ns, expected {lo}..={hi}"
    );
}

#[test]
fn leaf_metrics_match_the_program_worked_out_by_hand() {
    let exe = build_c("metrics", "metrics", &[]);
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("out.txt");
    let r = record(&exe, &[file.to_str().unwrap()]).success();
    let out = r.tmp.path().join("model");
    let (model, g) = infer_model(&r.dir, &out, &[]);
    let idx = GraphIndex::new(&g);
    let thread = |name: &str| {
        g.threads
            .iter()
            .find(|t| t.name == name)
            .unwrap_or_else(|| panic!("no thread {name}: {:?}", g.threads))
    };
    let leaves_of = |name: &str| {
        let t = thread(name);
        t.leaf_ids().map(|l| l.get()).collect::<Vec<u32>>()
    };
    let op = |l: u32| g.leaves[l as usize].end_op.and_then(|o| o.op());
    // What the program timed itself: sleeps overrun and wake-ups come late on a loaded machine,
    // so each figure is held to the program's own clock, and only sleeps to a worked-out least.
    let own = |thread: &str, what: &str| r.printed(thread, what);
    // The agent times each call inside the program's pair of clock readings, on the same clock,
    // so it is at most the program's figure and at least that less a millisecond, less however
    // long the thread waited for a CPU within the span (it may be preempted between the
    // agent's reading and its own; the program measures that wait too).
    let timed = |what: &str, v: u64, least: u64, program: u64, waited: u64| {
        let lo = least.max(program.saturating_sub(MS + waited));
        within(what, v, lo, program + MS + waited);
    };
    // A test that shows something: main blocked on the lock and on the read.
    let shows = |what: &str, program: u64| {
        assert!(
            program >= 2 * MS,
            "main's {what} took {program} ns: it did not block"
        );
    };
    // Main: the leaf that ends at the read waited 5 ms asleep and ~25 ms for the lock the holder
    // kept for 30 ms, then ~20 ms in the read (the holder slept 20 ms before writing).
    let main = leaves_of("metrics");
    let before_read = *main
        .iter()
        .find(|&&l| op(l) == Some(Op::Read))
        .expect("main's leaf ending at the read");
    let m = leaf_metrics(&g, &idx, before_read);
    let b = |k: BlockKind| m.blocked[k.index()];
    let (sleep, lock, read) = (
        own("main", "sleep"),
        own("main", "lock"),
        own("main", "read"),
    );
    let waited = |what: &str| own("main-delay", what);
    shows("lock", lock);
    shows("read", read);
    timed(
        "main sleep",
        b(BlockKind::Sleep),
        5 * MS,
        sleep,
        waited("sleep"),
    );
    timed(
        "main lock wait",
        b(BlockKind::Lock),
        0,
        lock,
        waited("lock"),
    );
    timed(
        "main read wait",
        b(BlockKind::Read),
        0,
        read,
        waited("read"),
    );
    let wall = own("main", "wall");
    let running = wall - sleep - lock - read;
    timed("main running", m.running_ns, 0, running, waited("wall"));
    let sum: u64 = m.running_ns + m.blocked.iter().sum::<u64>();
    assert_eq!(sum, m.wall_ns, "running + blocked = wall");
    timed("main wall", m.wall_ns, 5 * MS, wall, waited("wall"));
    // The leaf after the read: 100 bytes in from the pipe, 10 bytes out to the file.
    let after = leaf_metrics(&g, &idx, before_read + 1);
    let chan = |k: &str| after.channels.iter().find(|c| c.kind == k).cloned();
    let pipe = chan("pipe").expect("pipe bytes");
    assert_eq!((pipe.bytes_in, pipe.bytes_out), (100, 0));
    let f = chan("file").expect("file bytes");
    assert_eq!((f.bytes_in, f.bytes_out), (0, 10));
    // Holder: 50 ms asleep in two sleeps, 100 bytes out on the pipe.
    let holder = leaves_of("holder");
    let writes = *holder
        .iter()
        .find(|&&l| op(l) == Some(Op::Write))
        .expect("holder's leaf ending at the write");
    let h = leaf_metrics(&g, &idx, writes);
    timed(
        "holder sleep",
        h.blocked[BlockKind::Sleep.index()],
        50 * MS,
        own("holder", "sleep"),
        own("holder", "delay"),
    );
    let hp = h.channels.iter().find(|c| c.kind == "pipe").unwrap();
    assert_eq!((hp.bytes_in, hp.bytes_out), (0, 100));
    // Blame: the lock wait names the holder's leaf as the holder, the read names it as the
    // waker, and the holder's sleeps are in hold_and_send.
    let r = rollup(&g, &model);
    let holder_ty = g.leaves[writes as usize].ty;
    let main_ty = g.leaves[before_read as usize].ty;
    let of = |ty: scalpel_model::graph::LeafTypeId, k: BlockKind| {
        r.blame
            .iter()
            .find(|x| x.leaf_type == ty && x.kind == k)
            .unwrap_or_else(|| panic!("no {k:?} blame for type {ty}: {:#?}", r.blame))
    };
    assert_eq!(
        of(main_ty, BlockKind::Lock).peer,
        Some(holder_ty),
        "lock holder"
    );
    assert_eq!(
        of(main_ty, BlockKind::Read).peer,
        Some(holder_ty),
        "read waker"
    );
    let sleep = of(holder_ty, BlockKind::Sleep);
    assert_eq!(sleep.count, 2);
    assert_eq!(sleep.function.as_deref(), Some("hold_and_send"));
}

#[test]
fn top_names_an_injected_sleep_as_the_largest_contributor() {
    const SLEEP_US: u64 = 5000;
    let truth = std::env::temp_dir().join(format!("scalpel-rollup-{}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&truth);
    let sleep = SLEEP_US.to_string();
    let args = ["mixed", "--items", "400", "--put-sleep-us", &sleep];
    let r = record_with(&own_bin("tasks"), &args, |c| {
        c.env("SCALPEL_TRUTH", &truth);
    })
    .success();
    let out = r.tmp.path().join("model");
    let (model, g) = infer_model(&r.dir, &out, &[]);
    let composed: &[(&str, &[&str])] = &[
        ("get", &["get_ask", "get_serve"]),
        ("put", &["put_ask", "put_serve"]),
    ];
    let tasks = load_tasks(&truth);
    let sc = score(&model, &g, &tasks, composed);
    eprintln!("{}", report(&sc));
    // The delay as injected: each sleep as long as it really took (it overruns on a busy
    // machine), timed by the program.
    let sleeps: Vec<u64> = tasks
        .iter()
        .filter(|t| t.ty == "put_sleep")
        .map(|t| t.end_ns - t.start_ns)
        .collect();
    let put = sc.iter().find(|t| t.truth == "put").unwrap();
    assert_eq!(sleeps.len(), put.instances, "one timed sleep per put");
    let injected = sleeps.iter().sum::<u64>() as f64 / sleeps.len() as f64;
    assert!(
        injected >= (SLEEP_US * 1000) as f64,
        "sleeps of {injected} ns"
    );
    assert!(put.recall >= 0.95, "put recall {}", put.recall);
    let name = model.types[put.model_type.as_ref().unwrap().0 as usize]
        .name
        .clone();
    let o = run(&[
        "top".as_ref(),
        out.as_os_str(),
        "--expand".as_ref(),
        name.as_ref(),
        "--format".as_ref(),
        "json".as_ref(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let e = &v["expanded"];
    let first = &e["contributors"][0];
    let leaf = first["leaf"].as_str().unwrap();
    assert_eq!(first["what"], "sleep", "{e:#}");
    assert!(leaf.contains("serve_put"), "largest contributor {leaf}");
    assert_eq!(first["calls"][0]["call"], "sleep");
    assert_eq!(first["calls"][0]["function"], "serve_put");
    // The sleep per request and its share of the latency match the injected delay.
    let per = first["per_instance_ns"].as_u64().unwrap() as f64;
    assert!(
        (per - injected).abs() <= 0.05 * injected,
        "sleep per put {per} ns, injected {injected} ns"
    );
    let mean = e["task"]["latency"]["mean_ns"].as_u64().unwrap() as f64;
    let share = first["share"].as_f64().unwrap();
    assert!(
        (share - injected / mean).abs() <= 0.05,
        "sleep share {share}, injected delay over mean latency {}",
        injected / mean
    );
    // The same view as a table and CSV; a task that does not exist is named in the error.
    for fmt in ["table", "csv"] {
        let o = run(&[
            "top".as_ref(),
            out.as_os_str(),
            "--expand".as_ref(),
            name.as_ref(),
            "--format".as_ref(),
            fmt.as_ref(),
        ]);
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success() && text.contains("serve_put"), "{text}");
    }
    let o = run(&[
        "top".as_ref(),
        out.as_os_str(),
        "--expand".as_ref(),
        "no such task".as_ref(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("no task named \"no such task\""),
        "{err}"
    );
    // Straight from the trace directory, without a prior `infer`.
    let o = run(&["top".as_ref(), r.dir.as_os_str()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let _ = std::fs::remove_file(&truth);
}

#[test]
fn top_and_report_refuse_bad_input_with_the_file_named() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("model.json");
    std::fs::write(&bad, "{\"schema\": 3").unwrap();
    let o = run(&["top".as_ref(), bad.as_os_str()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(
        err.contains("model.json") && err.contains("line 1"),
        "{err}"
    );
    let missing = tmp.path().join("nothing-here");
    let o = run(&["report".as_ref(), missing.as_os_str()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("nothing-here"), "{err}");
}

#[test]
fn top_infers_a_trace_directory_with_the_options_given_and_refuses_them_for_a_model() {
    let exe = build_c("metrics", "metrics", &[]);
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("out.txt");
    let r = record(&exe, &[file.to_str().unwrap()]).success();
    let top = |extra: &[&str]| top_json(&r.dir, extra);
    let plain = top(&[]);
    let leaves = |v: &serde_json::Value| v["leaves"].as_u64().unwrap();
    // Each thread locks and unlocks the mutex once: four more cuts.
    let cut = top(&["--cut-at-locks"]);
    assert!(
        leaves(&cut) >= leaves(&plain) + 4,
        "{} leaves cut at locks, {} without",
        leaves(&cut),
        leaves(&plain)
    );
    let holder = top(&["--include", "thread:holder"]);
    assert_eq!(holder["threads"], 1, "{holder:#}");
    assert!(leaves(&holder) < leaves(&plain));
    // A model already inferred cannot be cut again: the options are refused, by name.
    let out = r.tmp.path().join("model");
    infer_model(&r.dir, &out, &[]);
    for (cmd, flag, value) in [
        ("top", "--cut-at-locks", None),
        ("report", "--min-support", Some("3")),
        ("top", "--exclude", Some("thread:holder")),
    ] {
        let mut args: Vec<&std::ffi::OsStr> = vec![cmd.as_ref(), out.as_os_str(), flag.as_ref()];
        args.extend(value.map(std::ffi::OsStr::new));
        let o = run(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{cmd} {flag}: {err}");
        assert!(
            err.contains("model.json") && err.contains(flag) && err.contains("trace directory"),
            "{err}"
        );
    }
}

/// What the top-down view of one replicated-store run shows.
struct StoreView {
    /// The top-level task that holds the local commit, expanded.
    commit: Option<serde_json::Value>,
    /// The local commit (mutate, async RPC, send), expanded.
    local_commit: Option<serde_json::Value>,
    blame: Vec<scalpel_analysis::rollup::Blame>,
    /// Achieved TCP bandwidth, bytes per second.
    tcp: f64,
}

/// Records replicated-store in one RPC mode and walks `scalpel top` on the primary's model
/// (`--include pid:N`, as the paper modelled the primary alone) from the top-level tasks down.
fn replicated_store(mode: &str) -> StoreView {
    let tmp = tempfile::tempdir().unwrap();
    let truth = tmp.path().join("truth.jsonl");
    let r = record_with(&own_bin("replicated-store"), &["--rpc", mode], |c| {
        c.env("SCALPEL_TRUTH", &truth);
    })
    .success();
    let primary = load_tasks(&truth)
        .iter()
        .find(|t| t.ty == "local_commit")
        .expect("local commits in the truth")
        .pid;
    let out = r.tmp.path().join("model");
    let (model, g) = infer_model(&r.dir, &out, &["--include", &format!("pid:{primary}")]);
    let top = |extra: &[&str]| top_json(&out, extra);
    let list = top(&[]);
    let tcp = list["channels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["kind"] == "tcp")
        .expect("tcp bytes")["bandwidth"]
        .as_f64()
        .unwrap();
    // From the top-level tasks (most total time first), the first whose children hold the
    // local commit (a task named by its first leaf, the async RPC, and its dominant one): the
    // task that serves a client's commit.
    let mut commit = None;
    let mut local_commit = None;
    for t in list["tasks"].as_array().unwrap() {
        let expanded = top(&["--expand", t["name"].as_str().unwrap()])["expanded"].clone();
        let local = expanded["children"].as_array().and_then(|c| {
            c.iter()
                .map(|c| c["task"]["name"].as_str().unwrap().to_string())
                .find(|n| n.contains("rpc_async_call"))
        });
        if let Some(local) = local {
            local_commit = Some(top(&["--expand", &local])["expanded"].clone());
            commit = Some(expanded);
            break;
        }
    }
    StoreView {
        commit,
        local_commit,
        blame: rollup(&g, &model).blame,
        tcp,
    }
}

#[test]
fn replicated_store_async_leads_to_the_flow_control_sleep_and_sync_has_none() {
    let in_flow_control = |b: &scalpel_analysis::rollup::Blame| {
        b.function
            .as_deref()
            .is_some_and(|f| f.ends_with("flow_control_sleep"))
    };
    let v = replicated_store("async");
    // Top down: the commit task holds the local commit (mutate, async RPC, send), whose time
    // goes to the sender threads, blocked above all asleep in the network layer's flow control.
    let commit = v.commit.expect("a top-level task holds the local commit");
    let local = v.local_commit.expect("the local commit expands");
    // The largest contributor is the sender leaf asleep: a mutation waits in the send queue
    // while the sender threads sleep in flow control, and the wait is charged to what the
    // senders were doing (or the sleep lies on the path itself).
    let contributors = local["contributors"].as_array().unwrap();
    let c = &contributors[0];
    assert_eq!(c["what"], "sleep", "{local:#}");
    assert!(
        c["leaf"]
            .as_str()
            .is_some_and(|l| l.contains("send_packet")),
        "{local:#}"
    );
    let call = &c["calls"][0];
    assert!(
        call["function"]
            .as_str()
            .is_some_and(|f| f.ends_with("flow_control_sleep")),
        "{local:#}"
    );
    assert!(call["stack"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f.as_str().is_some_and(|f| f.ends_with("Primary::sender"))));
    eprintln!(
        "commit task {}: local commit {}: {} of it asleep in {}",
        commit["task"]["name"], local["task"]["name"], c["share"], call["function"]
    );
    let blame = v.blame;
    let async_bw = v.tcp;
    let slept: u64 = blame
        .iter()
        .filter(|b| in_flow_control(b))
        .map(|b| b.total_ns)
        .sum();
    assert!(slept >= 1_000_000_000, "flow-control sleep {slept} ns");
    let v = replicated_store("sync");
    let sync_bw = v.tcp;
    assert!(
        !v.blame.iter().any(in_flow_control),
        "sync mode slept in flow control"
    );
    assert!(
        async_bw * 2.0 < sync_bw,
        "achieved bandwidth: async {async_bw:.0} B/s, sync {sync_bw:.0} B/s"
    );
    eprintln!("achieved TCP bandwidth: async {async_bw:.0} B/s, sync {sync_bw:.0} B/s");
}

/// `top`'s table counts a task once: a type that also occurs inside other tasks is listed with
/// its top-level instances alone (their number and their time), since the nested ones are
/// already inside their parents' rows. The replicated store's send task is both.
#[test]
fn top_counts_only_the_instances_that_stand_alone() {
    let r = record(&own_bin("replicated-store"), &["--rpc", "async"]).success();
    let out = r.tmp.path().join("model");
    let (model, g) = infer_model(&r.dir, &out, &[]);
    let list = top_json(&out, &["--limit", "100000"]);
    let rows = list["tasks"].as_array().unwrap();
    let stats = rollup(&g, &model);
    let mut nested_too = 0;
    for row in rows {
        let name = row["name"].as_str().unwrap();
        let t = model.types.iter().position(|t| t.name == name).unwrap();
        let ty = &model.types[t];
        let count = row["count"].as_u64().unwrap();
        assert_eq!(
            count, ty.top_level,
            "{name}: row count against top-level instances"
        );
        if ty.top_level < ty.count {
            nested_too += 1;
            let all = &stats.types[t];
            let total = row["total_ns"].as_u64().unwrap();
            assert!(
                total < all.total_ns,
                "{name}: {total} ns alone, {} in all",
                all.total_ns
            );
        }
    }
    let top_level: u64 = model.types.iter().map(|t| t.top_level).sum();
    let listed: u64 = rows.iter().map(|r| r["count"].as_u64().unwrap()).sum();
    assert_eq!(listed, top_level, "every top-level instance is in one row");
    assert!(
        nested_too > 0,
        "no listed type also occurs nested; the test shows nothing"
    );
}

#[test]
fn rollups_are_the_same_on_one_worker_thread_and_on_several() {
    // Four connections of 500 requests: types of thousands of instances, which several workers
    // split into parts folded apart and merged.
    let r = record(
        &own_bin("threadpool"),
        &["--connections", "4", "--requests", "500"],
    )
    .success();
    let out = r.tmp.path().join("model");
    let (model, g) = infer_model(&r.dir, &out, &[]);
    let on = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| rollup(&g, &model))
    };
    let one = on(1);
    let largest = one.types.iter().map(|t| t.count).max().unwrap_or(0);
    assert!(
        largest >= 1000,
        "the largest type has {largest} instances: too few to be split; the test shows nothing"
    );
    for threads in [2, 3] {
        assert!(
            on(threads) == one,
            "the rollups on {threads} worker threads differ from those on one"
        );
    }
}
