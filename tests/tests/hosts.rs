//! The replicated store on three machines: client, primary and backup each in a network
//! namespace of its own, joined by veth links, the client's monotonic clock 1,000 s ahead and the
//! backup's 3 s behind (time namespaces), each recorded into a directory of its own and inferred
//! once. The merged model must have the paper's three tasks on the primary, every connection
//! between machines matched, and each clock placed within its bound and 50 µs of the truth;
//! its tables, partitioned by machine, answer on a Ballista cluster as they do embedded; and
//! each machine's graph built alone, its tables joined with the others' in SQL, gives the same
//! messages between machines.
//!
//! Needs root, `ip` and `unshare`; without them it says so and passes, unless
//! `SCALPEL_HOSTS_REQUIRED` is set (`scripts/demo-hosts.sh`, which CI runs).

use std::path::PathBuf;
use std::process::Command;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use scalpel_e2e::hosts::{line_from, missing, on_reference, record_on, wait_ok, Net};
use scalpel_e2e::score::{load_model, load_tasks, report, score};
use scalpel_e2e::{not_run, own_bin, scalpel, PAPER_TASKS};
use scalpel_model::format::ChanKind;
use scalpel_model::graph::{ClockGrade, EdgeKind, Graph};

const CLIENT_AHEAD_S: i64 = 1000;
const BACKUP_AHEAD_S: i64 = -3;

/// Whether the machines can be made here; if not, says so as a test not run, or fails when
/// `SCALPEL_HOSTS_REQUIRED` says they must.
fn can_run(test: &str) -> bool {
    let Some(why) = missing() else { return true };
    assert!(
        std::env::var_os("SCALPEL_HOSTS_REQUIRED").is_none(),
        "several-machine test: {why}"
    );
    not_run(test, &why);
    false
}

/// Held by each test from its first recording to its last check. Why: on two cores a sibling's
/// three machines (and its Ballista cluster) beside a recording make more calls on one channel
/// overlap, and the order of overlapping calls is a guess (`scalpel-graph`'s `streamorder`). In
/// a CI run on `a40ebb2`, with the chain test recording beside it, 12 of 400 remote acks were
/// paired with another ack's sender (F1 0.970); 13 recordings inferred with the rules of that
/// change to `streamorder` had 0 to 5 of 400 per type.
fn one_machine_set() -> MutexGuard<'static, ()> {
    static ONE: Mutex<()> = Mutex::new(());
    ONE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Stream edges whose two leaves are on different machines.
fn crossing_edges(g: &Graph) -> usize {
    let host = |leaf: u32| {
        let t = g.leaves[leaf as usize].thread;
        g.processes[g.threads[t.index()].process.index()].host
    };
    let leaves = g.leaves.len() as u32;
    g.edges
        .iter()
        .filter(|e| e.kind == EdgeKind::Stream && e.from.get() < leaves && e.to.get() < leaves)
        .filter(|e| host(e.from.get()) != host(e.to.get()))
        .count()
}

#[test]
fn the_replicated_store_on_three_machines_is_one_model() {
    if !can_run("the_replicated_store_on_three_machines_is_one_model") {
        return;
    }
    let _alone = one_machine_set();
    let tmp = tempfile::tempdir().unwrap();
    // To look at a run: SCALPEL_KEEP=1 keeps the traces, the models and the truth.
    let root: PathBuf = if std::env::var_os("SCALPEL_KEEP").is_some() {
        let kept = tmp.keep();
        eprintln!("keeping {}", kept.display());
        kept
    } else {
        tmp.path().to_path_buf()
    };
    let root = root.as_path();
    let net = Net::new(&["pri", "cli", "bak"]);
    net.link(0, 1, 201); // primary 10.201.0.1, client 10.201.0.2
    net.link(0, 2, 202); // primary 10.202.0.1, backup 10.202.0.2
    let exe = own_bin("replicated-store");
    let truth = root.join("truth.jsonl");
    let env = [("SCALPEL_TRUTH", truth.as_path())];
    let limit = Duration::from_secs(300);
    let mut backup = record_on(
        &net,
        2,
        BACKUP_AHEAD_S,
        &root.join("backup"),
        &exe,
        &["backup", "--bind", "10.202.0.2", "--port", "7101"],
        &env,
    );
    line_from(&mut backup, "7101", limit);
    let mut primary = record_on(
        &net,
        0,
        0,
        &root.join("primary"),
        &exe,
        &[
            "--bind",
            "10.201.0.1",
            "--port",
            "7100",
            "--backup",
            "10.202.0.2:7101",
            "--remote-clients",
        ],
        &env,
    );
    line_from(&mut primary, "listening on", limit);
    let mut client = record_on(
        &net,
        1,
        CLIENT_AHEAD_S,
        &root.join("client"),
        &exe,
        &["client", "--host", "10.201.0.1", "--port", "7100"],
        &env,
    );
    wait_ok(&mut client, "the client", limit);
    wait_ok(&mut primary, "the primary", limit);
    wait_ok(&mut backup, "the backup", limit);

    let model_dir = root.join("model");
    let o = Command::new(scalpel())
        .arg("infer")
        .args(["primary", "client", "backup"].map(|d| root.join(d)))
        .arg("-o")
        .arg(&model_dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    for bad in [
        "contradict",
        "end before they begin",
        "placed by its wall clock",
    ] {
        assert!(!stderr.contains(bad), "{stderr}");
    }
    let graph = load_model(&model_dir).1;

    // The clocks: the primary is the reference; the client's reads 1,000 s ahead, so 1,000 s
    // are taken off its times, and 3 s are added to the backup's.
    assert_eq!(graph.hosts.len(), 3, "{:?}", graph.hosts);
    for (h, truth_s) in graph
        .hosts
        .iter()
        .zip([0, -CLIENT_AHEAD_S, -BACKUP_AHEAD_S])
    {
        let err = h.clock.offset_ns - truth_s * 1_000_000_000;
        let bound = h.clock.bound_ns.expect("placed by messages");
        eprintln!(
            "host {}: offset {} ns, truth {} s, error {err} ns, bound {bound} ns, drift {} ppb, \
             {} messages, {:?}",
            h.host, h.clock.offset_ns, truth_s, h.clock.drift_ppb, h.clock.pairs, h.clock.grade
        );
        assert!(err.unsigned_abs() <= bound, "{h:?}: error {err} ns");
        assert!(err.abs() <= 50_000, "{h:?}: error {err} ns");
        assert_ne!(h.clock.grade, ClockGrade::Fail);
        // One crystal under every namespace: the true drift is 0, within the drift's bound.
        let drift_bound = h.clock.drift_bound_ppb.expect("placed by messages");
        assert!(h.clock.drift_ppb.unsigned_abs() <= drift_bound, "{h:?}");
    }
    // Every connection between machines matched: the client's four and the backup's one, and
    // no TCP peer left outside the trace (the primary's stdout, a pipe to this test, is one).
    let crossing = crossing_edges(&graph);
    let tcp_outside: Vec<String> = graph
        .externals
        .iter()
        .map(|x| &graph.objects[x.obj.index()])
        .filter(|o| o.channel_kind().is_some_and(|k| k.is(ChanKind::Tcp)))
        .map(|o| o.desc.clone())
        .collect();
    eprintln!(
        "stream edges between machines: {crossing}; TCP peers outside the trace: {}",
        tcp_outside.len()
    );
    assert!(crossing >= 1600, "{crossing}");
    assert!(tcp_outside.is_empty(), "{tcp_outside:?}");

    // The primary's three tasks, as the paper models the primary and as on one machine (see
    // `replicated.rs`): the primary's machine kept, the others' leaves beyond its connections.
    // Its clock is the reference, so the truth's times need no shift.
    let primary_dir = root.join("primary-model");
    let o = Command::new(scalpel())
        .arg("infer")
        .args(["primary", "client", "backup"].map(|d| root.join(d)))
        .args(["--include", "host:primary", "-o"])
        .arg(&primary_dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (model, graph) = load_model(&primary_dir);
    let tasks = load_tasks(&truth);
    let sc = score(&model, &graph, &tasks, PAPER_TASKS);
    eprintln!("{}", report(&sc));
    for ty in ["worker_task", "local_commit", "remote_ack"] {
        let t = sc.iter().find(|t| t.truth == ty).expect("scored");
        let f1 = 2.0 * t.precision * t.recall / (t.precision + t.recall).max(f64::EPSILON);
        assert!(f1 >= 0.98, "{ty}: F1 {f1:.3}\n{}", report(&sc));
    }
    // The demo's finding: the report of the primary leads with the flow-control sleep, as the
    // demo's does on one machine.
    let html = root.join("report.html");
    let o = Command::new(scalpel())
        .arg("report")
        .arg(&primary_dir)
        .arg("-o")
        .arg(&html)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&html).unwrap();
    let glance = text
        .split_once("id=finding>")
        .and_then(|(_, rest)| rest.split_once("</div>"))
        .map_or("", |(g, _)| g);
    assert!(glance.contains("flow_control_sleep"), "{glance}");
    // The report names the machines and their clocks.
    assert!(
        text.contains("machines: primary (reference), client (clock -999.99")
            || text.contains("machines: primary (reference), client (clock -1000.00"),
        "no machines line in the report"
    );
    // And across machines: in the whole model, the heaviest task (the client's commits) has a
    // critical path through the primary's flow-control sleep and the backup's receive.
    let top = |extra: &[&str]| {
        let o = Command::new(scalpel())
            .arg("top")
            .arg(&model_dir)
            .args(extra)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let tasks: serde_json::Value = serde_json::from_str(&top(&["--format", "json"])).unwrap();
    let heaviest = tasks["tasks"][0]["name"]
        .as_str()
        .expect("a task")
        .to_string();
    let expanded = top(&["--expand", &heaviest]);
    eprintln!("{expanded}");
    assert!(expanded.contains("submit_commit"), "{expanded}");
    for on_path in ["flow_control_sleep", "run_backup"] {
        assert!(expanded.contains(on_path), "{on_path}: {expanded}");
    }
    tables_on_a_cluster(root, &model_dir);
}

/// The three machines' model as a dataset (partitioned by machine) answers on a Ballista
/// cluster as it does embedded.
fn tables_on_a_cluster(root: &std::path::Path, model_dir: &std::path::Path) {
    use scalpel_e2e::cluster::{ok, same_answers, sql, Cluster};
    let data = root.join("tables");
    let o = Command::new(scalpel())
        .arg("export")
        .arg(model_dir)
        .args(["--format", "parquet", "-o"])
        .arg(&data)
        .output()
        .unwrap();
    ok(&o);
    let nodes = root.join("cluster");
    std::fs::create_dir(&nodes).unwrap();
    let cluster = Cluster::start(&nodes, 2);
    let hosts = ok(&sql(
        &data,
        &cluster.engine,
        "SELECT host, COUNT(*) AS n FROM leaves GROUP BY host ORDER BY host",
    ));
    assert_eq!(hosts.lines().count(), 3, "{hosts}");
    same_answers(&data, &cluster.engine);
    let machines = ["primary", "client", "backup"].map(|m| (m, root.join(m)));
    let merged = load_model(model_dir).1;
    let engines = ["embedded", cluster.engine.as_str()];
    let apart = scalpel_e2e::apart::same_messages(root, &machines, &merged, &engines);
    // And what those messages say of the clocks (the client's reads 1,000 s ahead, the
    // backup's 3 s behind).
    let ahead = [
        ("primary", 0),
        ("client", CLIENT_AHEAD_S * 1_000_000_000),
        ("backup", BACKUP_AHEAD_S * 1_000_000_000),
    ];
    scalpel_e2e::apart::same_clocks(&apart, &merged, &engines, &ahead);
    // And the same with a drift, by `clock_fit` (on the cluster too: its nodes know it).
    scalpel_e2e::apart::same_drifts(&apart, &merged, &engines, &ahead);
    cluster.every_executor_ran_a_task();
}

/// A three-tier chain on three machines (client, front, back; the client's clock 500 s ahead,
/// the back's 7 s ahead): each request is one task from the client through the front to the
/// back and back again.
#[test]
fn a_request_through_three_machines_is_one_task() {
    if !can_run("a_request_through_three_machines_is_one_task") {
        return;
    }
    let _alone = one_machine_set();
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let net = Net::new(&["fro", "cli", "bac"]);
    net.link(0, 1, 203); // front 10.203.0.1, client 10.203.0.2
    net.link(0, 2, 204); // front 10.204.0.1, back 10.204.0.2
    let exe = own_bin("chain");
    let truth = root.join("truth.jsonl");
    let env = [("SCALPEL_TRUTH", truth.as_path())];
    let limit = Duration::from_secs(120);
    let dir = |name: &str| root.join(name);
    let mut back = record_on(
        &net,
        2,
        7,
        &dir("back"),
        &exe,
        &["back", "--bind", "10.204.0.2", "--port", "7301"],
        &env,
    );
    line_from(&mut back, "7301", limit);
    let mut front = record_on(
        &net,
        0,
        0,
        &dir("front"),
        &exe,
        &[
            "front",
            "--bind",
            "10.203.0.1",
            "--port",
            "7300",
            "--back",
            "10.204.0.2:7301",
        ],
        &env,
    );
    line_from(&mut front, "7300", limit);
    let mut client = record_on(
        &net,
        1,
        500,
        &dir("client"),
        &exe,
        &["client", "--host", "10.203.0.1", "--port", "7300"],
        &env,
    );
    wait_ok(&mut client, "the client", limit);
    wait_ok(&mut front, "the front", limit);
    wait_ok(&mut back, "the back", limit);
    let model_dir = dir("model");
    let o = Command::new(scalpel())
        .arg("infer")
        .args(["front", "client", "back"].map(dir))
        .arg("-o")
        .arg(&model_dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    eprintln!("{stdout}");
    assert!(
        stdout.contains("3 machines, 4 connections between them"),
        "{stdout}"
    );
    let (model, graph) = load_model(&model_dir);
    for (h, ahead_s) in graph.hosts.iter().zip([0i64, 500, 7]) {
        let err = h.clock.offset_ns + ahead_s * 1_000_000_000;
        eprintln!(
            "host {}: error {err} ns, bound {:?}",
            h.host, h.clock.bound_ns
        );
        assert!(
            err.unsigned_abs() <= h.clock.bound_ns.expect("bounded"),
            "{h:?}"
        );
        assert!(err.abs() <= 50_000, "{h:?}");
    }
    let tasks = on_reference(&graph, &load_tasks(&truth));
    let sc = score(
        &model,
        &graph,
        &tasks,
        &[("request", &["request", "front", "back"])],
    );
    eprintln!("{}", report(&sc));
    let r = sc.iter().find(|t| t.truth == "request").expect("scored");
    assert_eq!(r.instances, 400);
    assert!(
        r.precision >= 0.95 && r.recall >= 0.95,
        "the request across three machines: P {:.3} R {:.3}\n{}",
        r.precision,
        r.recall,
        report(&sc)
    );
    // Each machine's graph built alone, joined in SQL: the same messages between machines.
    let machines = ["front", "client", "back"].map(|m| (m, dir(m)));
    let apart = scalpel_e2e::apart::same_messages(root, &machines, &graph, &["embedded"]);
    let ahead = [
        ("front", 0),
        ("client", 500_000_000_000),
        ("back", 7_000_000_000),
    ];
    scalpel_e2e::apart::same_clocks(&apart, &graph, &["embedded"], &ahead);
    scalpel_e2e::apart::same_drifts(&apart, &graph, &["embedded"], &ahead);
}
