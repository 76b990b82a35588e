//! `scalpel diff` on runs whose difference is known: the replicated-store sample with its
//! flow-control sleep and without it (the commit task must be the first line, changed beyond
//! noise, with the sleep in `flow_control_sleep` as where the time went), recordings of one
//! setting against each other (nothing changed; types matched for 99% of the leaves), a model
//! against itself (empty), and runs of different programs (every type new or gone, said so).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard};

use scalpel_e2e::schema::violations;
use scalpel_e2e::{own_bin, record_with, replicated_primary, scalpel, Run};
use serde_json::Value;

fn diff(old: &Path, new: &Path, extra: &[&str]) -> Output {
    Command::new(scalpel())
        .arg("diff")
        .arg(old)
        .arg(new)
        .args(extra)
        .output()
        .unwrap()
}

fn diff_json(old: &Path, new: &Path) -> Value {
    let o = diff(old, new, &["--format", "json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let errors = violations("scalpel-diff-1", &v);
    assert!(errors.is_empty(), "{errors:?}");
    v
}

/// The replicated store recorded with a flow-control sleep of `sleep_ms`, and the primary's
/// model inferred from it.
///
/// Why a 2 MB/s link: the bug shows in every stretch of the run only while the workers outpace
/// the link. At the sample's default 4 MB/s, a 2-core machine busy with other work (CI, with
/// three spinning loops beside it here) stalled 2–3 times a run instead of 7: the commits
/// between stalls ran at the no-sleep speed, the median moved 43 → 52 ms against 32 ms, and
/// the diff rightly called it noise (p = 0.002–0.02, four runs of four). At 2 MB/s the same
/// load gave 7 stalls in each of four runs, medians 221–239 ms against 65 ms, p ≤ 3·10⁻⁵.
/// A CI run of session 77 still stalled too rarely (median 105 ms against 63 ms, p = 0.013):
/// the sample's stall re-armed only once the queue fell to half its limit, which a disk that
/// kept the workers' output even never let happen (2–3 stalls a run with the logs on disk
/// here). Since it re-arms after sending the stall's backlog: 11–13 stalls on tmpfs or disk,
/// medians 259–264 ms against 63–65 ms, p = 7·10⁻⁸ (four runs).
fn primary_model(sleep_ms: u32) -> (Run, PathBuf) {
    let sleep = sleep_ms.to_string();
    let (run, model, _) = replicated_primary(&[
        "--rpc",
        "async",
        "--link-mbps",
        "2",
        "--flow-sleep-ms",
        &sleep,
    ]);
    (run, model)
}

fn share(side: &Value) -> f64 {
    side["matched_leaves"].as_f64().unwrap() / side["leaves"].as_f64().unwrap().max(1.0)
}

fn unmatched(v: &Value) -> Vec<String> {
    v["types"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["status"] != "matched")
        .map(|t| format!("{} {}", t["status"], t["name"]))
        .collect()
}

/// Held by each test that records: the recordings of one setting must run under the same
/// load, and a sibling test recording beside the first of them (on two cores) slowed only
/// those, moving a 20 µs nested type to 42 µs in one of five pairs.
static ONE_RECORDER: Mutex<()> = Mutex::new(());

fn one_recorder() -> MutexGuard<'static, ()> {
    ONE_RECORDER.lock().unwrap_or_else(|e| e.into_inner())
}

#[test]
fn the_flow_control_sleep_is_where_the_commit_tasks_time_went() {
    let _alone = one_recorder();
    // Six recordings of one setting, and one without the sleep.
    let same: Vec<(Run, PathBuf)> = (0..6).map(|_| primary_model(200)).collect();
    let (_off, off) = primary_model(0);
    let (_, on) = &same[0];
    let v = diff_json(on, &off);
    let first = &v["types"][0];
    assert_eq!(first["status"], "matched", "{v:#}");
    assert_eq!(first["significant"], true, "{first:#}");
    // The commit: a packet received on a session, answered through a sender.
    let name = first["name"].as_str().unwrap();
    assert!(
        name.contains("recv_packet") && name.contains("send_packet"),
        "{name}"
    );
    let (p50_on, p50_off) = (
        first["old"]["p50_ns"].as_u64().unwrap(),
        first["new"]["p50_ns"].as_u64().unwrap(),
    );
    assert!(p50_off * 2 < p50_on, "{p50_on} → {p50_off}");
    let cause = &first["cause"];
    assert_eq!(cause["what"], "sleep", "{cause:#}");
    let mut at: Vec<&str> = cause["stack"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    at.extend(cause["function"].as_str());
    assert!(
        at.iter().any(|f| f.contains("flow_control_sleep")),
        "{cause:#}"
    );
    assert!(cause["share_change"].as_f64().unwrap() > 0.5, "{cause:#}");
    // The table says the same on its first row.
    let o = diff(on, &off, &[]);
    let table = String::from_utf8(o.stdout).unwrap();
    let mut lines = table.lines();
    let (first, second) = (lines.next().unwrap(), lines.next().unwrap());
    assert!(
        first.starts_with("finding: task ") && first.contains("recv_packet"),
        "{table}"
    );
    assert!(second.contains("sleep in"), "{table}");
    let rows: Vec<&str> = table
        .lines()
        .skip_while(|l| !l.starts_with("task  "))
        .collect();
    assert!(rows[1].contains("recv_packet"), "{table}");
    assert!(rows[..5].iter().any(|r| r.contains("faster")), "{table}");
    assert!(
        rows[..6].iter().any(|r| r.contains("flow_control_sleep")),
        "{table}"
    );
    assert!(table.lines().all(|l| l.chars().count() <= 120), "{table}");
    // The differential flame graph of one commit: the sleep in flow_control_sleep lost its
    // time per instance, and the picture says which colour is which.
    flame_diff_names_the_sleep(on, &off, name);
    // The report with the sleep's run as its baseline opens with the same finding.
    let html = off.join("report.html");
    let o = Command::new(scalpel())
        .arg("report")
        .arg(&off)
        .arg("--baseline")
        .arg(on)
        .arg("-o")
        .arg(&html)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let page = std::fs::read_to_string(&html).unwrap();
    let (compared, model) = (
        page.find("<h2>Compared with")
            .expect("a comparison section"),
        page.find("Task model</h2>").unwrap(),
    );
    assert!(compared < model);
    assert!(
        page[compared..model].contains("flow_control_sleep"),
        "{page}"
    );
    // Recordings of one setting: no type changed beyond noise in 5 pairs. Each pair's false-
    // positive rate is bounded by α = 0.01 over its types (Bonferroni), so the 5 pairs show one
    // with a chance below 5% if the runs were samples of one distribution; the 10% bound on
    // the median's move keeps run-to-run drift out too.
    for pair in same.windows(2) {
        let v = diff_json(&pair[0].1, &pair[1].1);
        let changed: Vec<&Value> = v["types"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["significant"] == true)
            .collect();
        assert!(changed.is_empty(), "{changed:#?}");
        for side in ["old", "new"] {
            assert!(
                share(&v[side]) >= 0.99,
                "{side}: {} of the leaves matched; unmatched: {:?}",
                share(&v[side]),
                unmatched(&v)
            );
        }
    }
}

/// `scalpel flame --diff OLD NEW --task NAME`: folded lines `stack old new` per instance, the
/// sleep's stack with ≥ 1 ms per commit before and none after; the SVG's title line holds the
/// colour key; a task the old run lacks is refused by name.
fn flame_diff_names_the_sleep(on: &Path, off: &Path, task: &str) {
    let flame = |extra: &[&str]| {
        Command::new(scalpel())
            .arg("flame")
            .arg(off)
            .arg("--diff")
            .arg(on)
            .args(extra)
            .output()
            .unwrap()
    };
    let o = flame(&["--task", task, "--folded"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let folded = String::from_utf8(o.stdout).unwrap();
    let sleep: Vec<(u64, u64)> = folded
        .lines()
        .filter(|l| l.contains("flow_control_sleep") && l.contains("[sleep]"))
        .map(|l| {
            let mut w = l.rsplitn(3, ' ');
            let new = w.next().unwrap().parse().unwrap();
            let old = w.next().unwrap().parse().unwrap();
            (old, new)
        })
        .collect();
    let (old, new) = sleep.iter().fold((0, 0), |(a, b), &(o, n)| (a + o, b + n));
    // ns per instance: a 200 ms sleep a flow-control round is shared by the round's commits
    // (12 ms a commit in one run); at least 1 ms before, none after.
    assert!(old >= 1_000_000 && new == 0, "{old} → {new}\n{folded}");
    let svg = off.join("diff.svg");
    let o = flame(&["--task", task, "-o", svg.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.contains("Red: more time in the new run, blue: less."));
    assert!(text.contains("flow_control_sleep"));
    let o = flame(&["--task", "no such task"]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("the old run") && err.contains("no such task"),
        "{err}"
    );
}

#[test]
fn a_model_against_itself_is_an_empty_diff_and_other_programs_match_nothing() {
    let _alone = one_recorder();
    let (_run, model) = primary_model(50);
    let v = diff_json(&model, &model.join("model.json"));
    assert_eq!(v["types"], Value::Array(vec![]), "{v:#}");
    assert!(v["unchanged"].as_u64().unwrap() > 0);
    let o = diff(&model, &model, &[]);
    assert!(String::from_utf8(o.stdout)
        .unwrap()
        .contains("no task type changed"));
    // Another program: its types are new or gone (a name any program has, such as a thread's
    // exit, may still match), and the table says why.
    let other = record_with(&own_bin("threadpool"), &[], |_| {}).success();
    let v = diff_json(&model, &other.dir);
    assert!(share(&v["old"]) < 0.01 && share(&v["new"]) < 0.01, "{v:#}");
    let o = diff(&model, &other.dir, &[]);
    assert!(o.status.success());
    let table = String::from_utf8(o.stdout).unwrap();
    assert!(table.contains("the same program?"), "{table}");
    assert!(
        table.contains(" gone ") && table.contains(" new "),
        "{table}"
    );
}

#[test]
fn bad_runs_and_bad_flags_are_refused_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("no-such-run");
    let o = diff(&missing, tmp.path(), &[]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("the old run") && err.contains("no-such-run"),
        "{err}"
    );
    let o = diff(tmp.path(), tmp.path(), &["--alpha", "2"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("probability"));
}
