//! `scalpel timeline`: the file follows the trace-event format's rules as Perfetto and Chrome's
//! viewer read them (checked here event by event), and its counts equal the graph's and the
//! model's.

use std::collections::{HashMap, HashSet};
use std::process::Command;

use scalpel_e2e::score::infer_model;
use scalpel_e2e::{own_bin, record, scalpel};
use serde_json::Value;

/// Checks every rule the viewers rely on; returns the events by phase.
fn check_format(doc: &Value) -> HashMap<String, Vec<&Value>> {
    let events = doc["traceEvents"].as_array().expect("a traceEvents array");
    let mut by_ph: HashMap<String, Vec<&Value>> = HashMap::new();
    for e in events {
        let ph = e["ph"].as_str().unwrap_or_else(|| panic!("no ph: {e}"));
        assert!(e["name"].is_string(), "no name: {e}");
        assert!(e["pid"].is_u64() && e["tid"].is_u64(), "no pid or tid: {e}");
        match ph {
            "M" => {
                let n = e["name"].as_str().unwrap();
                assert!(n == "process_name" || n == "thread_name", "{e}");
                assert!(e["args"]["name"].is_string(), "{e}");
            }
            "X" => {
                assert!(e["ts"].as_f64().is_some_and(|t| t >= 0.0), "{e}");
                assert!(e["dur"].as_f64().is_some_and(|d| d >= 0.0), "no dur: {e}");
                assert!(e["cat"].is_string(), "{e}");
            }
            "s" | "f" | "b" | "e" => {
                assert!(e["ts"].as_f64().is_some_and(|t| t >= 0.0), "{e}");
                assert!(e["id"].is_u64(), "{e}");
                assert!(e["cat"].is_string(), "{e}");
                if ph == "f" {
                    assert_eq!(e["bp"], "e", "{e}");
                }
            }
            other => panic!("phase {other} is not written: {e}"),
        }
        by_ph.entry(ph.to_owned()).or_default().push(e);
    }
    // Slices on one thread nest and never overlap (in integer nanoseconds, as written).
    let ns = |v: &Value| (v.as_f64().unwrap() * 1000.0).round() as i64;
    let mut tracks: HashMap<(u64, u64), Vec<(i64, i64)>> = HashMap::new();
    for e in &by_ph["X"] {
        let key = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
        let s = ns(&e["ts"]);
        tracks.entry(key).or_default().push((s, s + ns(&e["dur"])));
    }
    for (track, mut slices) in tracks {
        slices.sort_by_key(|&(s, e)| (s, -e));
        let mut open: Vec<i64> = Vec::new();
        for (s, e) in slices {
            while open.last().is_some_and(|&end| end <= s) {
                open.pop();
            }
            if let Some(&end) = open.last() {
                assert!(
                    e <= end,
                    "slice {s}..{e} overlaps its parent ending {end} on {track:?}"
                );
            }
            open.push(e);
        }
    }
    // Flows: one start and one end per id, each at the exact start of a slice on its thread.
    let starts: HashSet<(u64, u64, i64)> = by_ph["X"]
        .iter()
        .map(|e| {
            (
                e["pid"].as_u64().unwrap(),
                e["tid"].as_u64().unwrap(),
                ns(&e["ts"]),
            )
        })
        .collect();
    for (start, end) in [("s", "f"), ("b", "e")] {
        let ids = |ph: &str| -> Vec<u64> {
            let mut v: Vec<u64> = by_ph
                .get(ph)
                .map_or(&[][..], |v| v)
                .iter()
                .map(|e| e["id"].as_u64().unwrap())
                .collect();
            v.sort_unstable();
            v
        };
        let (a, b) = (ids(start), ids(end));
        assert_eq!(a, b, "every {start} has one {end}");
        let mut dedup = a.clone();
        dedup.dedup();
        assert_eq!(dedup.len(), a.len(), "ids of {start} events are unique");
    }
    for e in by_ph.get("s").into_iter().chain(by_ph.get("f")).flatten() {
        let key = (
            e["pid"].as_u64().unwrap(),
            e["tid"].as_u64().unwrap(),
            ns(&e["ts"]),
        );
        assert!(
            starts.contains(&key),
            "flow event not at a slice's start: {e}"
        );
    }
    by_ph
}

#[test]
fn the_timeline_follows_the_format_and_counts_what_the_graph_holds() {
    let r = record(&own_bin("replicated-store"), &["--flow-sleep-ms", "100"]).success();
    let model_dir = r.tmp.path().join("model");
    let (model, g) = infer_model(&r.dir, &model_dir, &[]);
    let out = r.tmp.path().join("timeline.json");
    let o = Command::new(scalpel())
        .arg("timeline")
        .arg(&model_dir)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let doc: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let by_ph = check_format(&doc);
    // Counts: a slice per leaf, an arrow per edge between threads, a task per occurrence.
    let leaves = by_ph["X"]
        .iter()
        .filter(|e| e["args"]["leaf"].is_u64())
        .count();
    assert_eq!(leaves, g.leaves.len());
    let cross = g
        .edges
        .iter()
        .filter(|e| {
            let (Some(f), Some(t)) = (g.leaf_of(e.from), g.leaf_of(e.to)) else {
                return false;
            };
            !e.kind.in_thread() && g.leaf(f).thread != g.leaf(t).thread
        })
        .count();
    assert_eq!(by_ph["s"].len(), cross);
    let occurrences: usize = model
        .types
        .iter()
        .filter(|t| t.kind != scalpel_model::task::TaskKind::Leaf)
        .map(|t| t.occurrences.len())
        .sum();
    assert_eq!(by_ph["b"].len(), occurrences);
    // Every thread and process is named; the senders' sleeps are slices with their kind.
    let names: HashSet<&str> = by_ph["M"]
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .map(|e| e["args"]["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains("sender") && names.contains("worker"),
        "{names:?}"
    );
    assert_eq!(
        by_ph["M"]
            .iter()
            .filter(|e| e["name"] == "thread_name")
            .count(),
        g.threads.len()
    );
    assert!(by_ph["X"]
        .iter()
        .any(|e| e["name"] == "sleep" && e["args"]["kind"] == "sleep"));
    // Lock waits name their holder; waits another thread ended, their waker.
    assert!(by_ph["X"].iter().any(|e| e["args"]["waker"].is_string()));
    // The stdout line says what was written.
    let said = String::from_utf8_lossy(&o.stdout);
    assert!(
        said.contains(&format!("{} leaf slices", g.leaves.len())),
        "{said}"
    );
    // A window holds less; a bad one is refused.
    let part = r.tmp.path().join("part.json");
    let o = Command::new(scalpel())
        .arg("timeline")
        .arg(&model_dir)
        .args(["--from", "0", "--to", "0.2", "-o"])
        .arg(&part)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let doc2: Value = serde_json::from_slice(&std::fs::read(&part).unwrap()).unwrap();
    let part_by = check_format(&doc2);
    assert!(part_by["X"].len() < by_ph["X"].len());
    let o = Command::new(scalpel())
        .arg("timeline")
        .arg(&model_dir)
        .args(["--from", "2", "--to", "1"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--from"));
    // The same model gives the same file.
    let again = r.tmp.path().join("again.json");
    let o = Command::new(scalpel())
        .arg("timeline")
        .arg(&model_dir)
        .arg("-o")
        .arg(&again)
        .output()
        .unwrap();
    assert!(o.status.success());
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&again).unwrap());
}
