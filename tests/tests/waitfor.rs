//! `scalpel waitfor` on programs whose bottleneck is known (tests/c/knots.c and the
//! replicated-store sample): the first knot must be the one the program was written to have,
//! with the call behind it. The weights' arithmetic (cascade by overlap, idle edges, trimming)
//! is checked on worked examples in `scalpel-analysis`'s unit tests.

use std::ffi::OsStr;
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard};

use scalpel_e2e::{build_c, own_bin, record, record_flags, scalpel, Run};
use serde_json::Value;

/// Held by each test while it records and reads its program: the waits measured are the
/// programs' own, and on two cores another test's CPU burners (the convoy, the crunchers) make
/// a program's threads late to run and change the very waits a test asserts on.
fn one_at_a_time() -> MutexGuard<'static, ()> {
    static ONE: Mutex<()> = Mutex::new(());
    ONE.lock().unwrap_or_else(|e| e.into_inner())
}

fn waitfor(dir: &OsStr, extra: &[&str]) -> Output {
    Command::new(scalpel())
        .arg("waitfor")
        .arg(dir)
        .args(extra)
        .output()
        .unwrap()
}

fn json(run: &Run, extra: &[&str]) -> Value {
    let mut args = vec!["--format", "json"];
    args.extend_from_slice(extra);
    let o = waitfor(run.dir.as_os_str(), &args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).expect("JSON")
}

fn node_name(w: &Value, id: &Value) -> String {
    w["nodes"][id.as_u64().unwrap() as usize]["name"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The first knot's member names and share.
fn first_knot(w: &Value) -> (Vec<String>, f64) {
    let k = &w["knots"][0];
    assert!(k.is_object(), "no knot: {w:#}");
    let names = k["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| node_name(w, m))
        .collect();
    (names, k["share"].as_f64().unwrap())
}

/// The functions of an edge's heaviest call site (innermost first).
fn top_site(w: &Value, edge: &Value) -> Vec<String> {
    let e = &w["edges"][edge.as_u64().unwrap() as usize];
    let s = &e["sites"][0]["site"];
    let mut f: Vec<String> = s["frames"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap().to_owned())
        .collect();
    f.extend(s["function"].as_str().map(str::to_owned));
    f
}

fn edge_between<'a>(w: &'a Value, from: &str, to: &str) -> &'a Value {
    w["edges"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| node_name(w, &e["from"]).contains(from) && node_name(w, &e["to"]) == to)
        .unwrap_or_else(|| panic!("no edge {from} → {to}: {w:#}"))
}

#[test]
fn a_syncer_and_its_disk_are_the_knot_of_handlers_that_wait_for_flushes() {
    let _alone = one_at_a_time();
    let exe = build_c("knots", "knots-syncer", &[]);
    let tmp = tempfile::tempdir().unwrap();
    let r = record(&exe, &["syncer", tmp.path().to_str().unwrap(), "300"]).success();
    let w = json(&r, &[]);
    let (members, share) = first_knot(&w);
    // The program is `knots-syncer syncer`; its threads are named by pthread_setname_np.
    assert_eq!(members, ["knots-syncer syncer: syncer", "[disk]"], "{w:#}");
    assert!(share > 0.8, "the knot explains {share} of all waiting");
    let knot = &w["knots"][0];
    // Inside: the syncer's fdatasync. Into it: the handlers waiting for their flush.
    let inside = &knot["inside"][0];
    assert!(top_site(&w, inside).iter().any(|f| f == "syncer"), "{w:#}");
    let e = &w["edges"][inside.as_u64().unwrap() as usize];
    assert_eq!(e["sites"][0]["call"], "fdatasync");
    let into = &knot["into"][0];
    assert_eq!(
        node_name(&w, &w["edges"][into.as_u64().unwrap() as usize]["from"]),
        "knots-syncer syncer: handler ×4"
    );
    assert!(
        top_site(&w, into).iter().any(|f| f == "wait_flushed"),
        "{w:#}"
    );
    // The syncer waited for the handlers' records too, but lightly: trimmed from the knot.
    let trimmed: Vec<(String, String)> = w["trimmed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let e = &w["edges"][e.as_u64().unwrap() as usize];
            (node_name(&w, &e["from"]), node_name(&w, &e["to"]))
        })
        .collect();
    assert!(
        trimmed.is_empty()
            || trimmed.contains(&(
                "knots-syncer syncer: syncer".into(),
                "knots-syncer syncer: handler ×4".into()
            )),
        "{trimmed:?}"
    );
    // The handlers' waits are passed on to the syncer's flushes.
    let flush = edge_between(&w, "syncer", "[disk]");
    assert!(flush["cascaded_ns"].as_u64().unwrap() > flush["direct_ns"].as_u64().unwrap());
}

#[test]
fn a_lock_convoy_is_a_knot_of_the_threads_that_hold_the_lock() {
    let _alone = one_at_a_time();
    let exe = build_c("knots", "knots-convoy", &[]);
    let r = record(&exe, &["convoy", "200"]).success();
    let w = json(&r, &[]);
    let (members, share) = first_knot(&w);
    assert_eq!(members, ["knots-convoy convoy: worker ×4"], "{w:#}");
    assert!(share > 0.8, "the knot explains {share} of all waiting");
    let inside = &w["knots"][0]["inside"][0];
    let e = &w["edges"][inside.as_u64().unwrap() as usize];
    assert_eq!(e["kinds"][0][0], "lock", "{e:#}");
    assert_eq!(e["sites"][0]["call"], "mutex_lock");
    assert!(
        top_site(&w, inside).iter().any(|f| f == "critical_section"),
        "{e:#}"
    );
}

#[test]
fn threads_that_only_compute_on_too_few_cores_wait_for_the_scheduler() {
    let _alone = one_at_a_time();
    let exe = build_c("knots", "knots-cpu", &[]);
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let threads = (2 * cores).min(64).to_string();
    let r = record_flags(&exe, &["--cpu-time"], &["cpu", &threads, "300"], |_| {}).success();
    let w = json(&r, &[]);
    let (members, share) = first_knot(&w);
    assert_eq!(members, ["[scheduler]"], "{w:#}");
    assert!(share > 0.5, "the knot explains {share} of all waiting");
    let crunch = edge_between(&w, "cruncher", "[scheduler]");
    assert_eq!(crunch["kinds"][0][0], "off_cpu");
}

#[test]
fn the_replicated_stores_knot_is_the_senders_flow_control_sleep() {
    let _alone = one_at_a_time();
    let r = record(&own_bin("replicated-store"), &["--rpc", "async"]).success();
    let w = json(&r, &[]);
    let (members, share) = first_knot(&w);
    assert_eq!(members, ["[timer]"], "{w:#}");
    assert!(share > 0.5, "the knot explains {share} of all waiting");
    let into = &w["knots"][0]["into"][0];
    let e = &w["edges"][into.as_u64().unwrap() as usize];
    assert!(node_name(&w, &e["from"]).contains("sender"), "{e:#}");
    assert!(
        top_site(&w, into)
            .iter()
            .any(|f| f.ends_with("flow_control_sleep")),
        "{e:#}"
    );
    // The text report names it first, and the same trace prints the same text.
    let text = |r: &Run| waitfor(r.dir.as_os_str(), &[]);
    let (a, b) = (text(&r), text(&r));
    assert!(a.status.success());
    assert_eq!(a.stdout, b.stdout);
    let s = String::from_utf8(a.stdout).unwrap();
    let knot = s.lines().find(|l| l.starts_with("Knot 1:")).unwrap();
    assert!(knot.contains("[timer]"), "{s}");
    assert!(s.contains("flow_control_sleep"), "{s}");
    // The report names it too.
    let html = r.tmp.path().join("report.html");
    let o = Command::new(scalpel())
        .arg("report")
        .arg(&r.dir)
        .arg("-o")
        .arg(&html)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let page = std::fs::read_to_string(&html).unwrap();
    let at = page
        .find("<h2 id=knots>Where the waiting ends</h2>")
        .expect("a knots section");
    let knot = &page[at..];
    assert!(knot.contains("<h3>Knot 1: [timer] &mdash;"), "{knot}");
    assert!(knot.contains("flow_control_sleep"), "{knot}");
}

#[test]
fn one_task_types_waits_and_bad_names_are_refused() {
    let _alone = one_at_a_time();
    let exe = build_c("knots", "knots-task", &[]);
    let tmp = tempfile::tempdir().unwrap();
    let r = record(&exe, &["syncer", tmp.path().to_str().unwrap(), "100"]).success();
    let all = json(&r, &[]);
    // The handler's wait for its flush, as a task type of its own (a leaf type: which group
    // holds it depends on how the flushes fell, and `--task` takes any type): its waits are the
    // handlers'.
    let out_dir = tmp.path().join("model");
    let out = Command::new(scalpel())
        .arg("infer")
        .arg(&r.dir)
        .arg("-o")
        .arg(&out_dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let model: Value =
        serde_json::from_slice(&std::fs::read(out_dir.join("model.json")).unwrap()).unwrap();
    let task = model["types"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .find(|n| n.starts_with("wait_flushed"))
        .unwrap_or_else(|| panic!("no task ending in wait_flushed: {model:#}"))
        .to_owned();
    let one = json(&r, &["--task", &task]);
    assert_eq!(one["task"], task.as_str());
    assert!(one["total_wait_ns"].as_u64().unwrap() < all["total_wait_ns"].as_u64().unwrap());
    let waiters: Vec<String> = one["edges"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["direct_ns"].as_u64().unwrap() > 0)
        .map(|e| node_name(&one, &e["from"]))
        .collect();
    assert!(waiters.iter().all(|n| n.contains("handler")), "{waiters:?}");
    // A name that is no task, and a share that is no percentage, say so.
    let o = waitfor(r.dir.as_os_str(), &["--task", "no such task"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("no such task"));
    let o = waitfor(r.dir.as_os_str(), &["--trim", "150"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("percentage"));
    // The drawing: the knot in red.
    let svg = tmp.path().join("w.svg");
    let o = waitfor(r.dir.as_os_str(), &["--svg", svg.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.contains("<svg") && text.contains("knot 1") && text.contains("#b00000"));
}
