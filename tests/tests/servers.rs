//! The server checks (`server-check`, `tests/src/servers/`) on a recorded program whose
//! requests are known: the corpus's thread pool serving 6 connections of 24 requests each, the
//! server's `write` of each reply marking one request.

use std::collections::BTreeMap;

use scalpel_e2e::corpus::corpus_dir;
use scalpel_e2e::servers::{check, Checks, Outcome, Run};
use scalpel_graph::{build_graph, GraphOptions};
use scalpel_mine::{mine, MineOptions};
use scalpel_model::graph::Graph;
use scalpel_model::progress::Quiet;
use scalpel_model::task::Model;

const REQUESTS: u64 = 144;

fn threadpool() -> (Graph, Model) {
    let trace = corpus_dir().join("sessions-threadpool/trace");
    let g = build_graph(&trace, &GraphOptions::default()).unwrap().graph;
    let m = mine(&g, "graph.json", &MineOptions::default(), &Quiet).model;
    (g, m)
}

fn run(g: &Graph, m: &Model, checks: &str) -> (Vec<String>, String) {
    let (o, out) = run_after(g, m, checks, None);
    (o.failures, out)
}

/// A run given another recording's names and shares.
fn run_after(
    g: &Graph,
    m: &Model,
    checks: &str,
    same_names: Option<BTreeMap<String, f64>>,
) -> (Outcome, String) {
    let checks: Checks = toml::from_str(checks).unwrap();
    let run = Run {
        name: "threadpool".into(),
        requests: REQUESTS,
        same_names,
    };
    let mut out = Vec::new();
    let o = check(g, m, &checks, &run, &mut out).unwrap();
    (o, String::from_utf8(out).unwrap())
}

const REQUEST_RULE: &str = r#"
[requests]
marker_op = "write"
channel = "tcp"
needs = ["read"]
min_share = 0.99
min_top = 0.99
max_types = 2
"#;

#[test]
fn every_request_of_the_thread_pool_is_one_task_and_two_types_cover_the_leaves() {
    let (g, m) = threadpool();
    let (failures, out) = run(&g, &m, REQUEST_RULE);
    assert!(failures.is_empty(), "{failures:?}\n{out}");
    assert!(out.contains(": 144 of 144 requests (100.0%"), "{out}");
    // 783 leaves: each worker's start-up wait for the main thread's broadcast (which woke both
    // workers: shared work) is a wait inside the worker's first leaf, not a cut.
    assert!(
        out.contains("threadpool: 2 task types cover 95% of 783 leaves"),
        "{out}"
    );
}

#[test]
fn a_bound_the_model_misses_fails_and_says_by_how_much() {
    let (g, m) = threadpool();
    let rule = REQUEST_RULE.replace("max_types = 2", "max_types = 1");
    let (failures, _) = run(&g, &m, &rule);
    assert_eq!(failures, ["2 task types cover 95% of the leaves, over 1"]);
    let rule = REQUEST_RULE.replace("channel = \"tcp\"", "channel = \"unix\"");
    let (failures, _) = run(&g, &m, &rule);
    assert_eq!(failures, ["no task holds a request marker (0 markers)"]);
}

#[test]
fn type_edges_are_found_by_their_operations_and_kind() {
    let (g, m) = threadpool();
    let edges = r#"
type_edges = [
    { from = "→ write", to = "→ read", kind = "stream" },
    { from = "→ write", to = "→ read", kind = "futex" },
]
"#;
    let (failures, out) = run(&g, &m, edges);
    assert!(
        out.contains("type graph: → write -> → read (stream)"),
        "{out}"
    );
    assert_eq!(
        failures,
        ["no futex edge from a '→ write' type to a '→ read' type"]
    );
}

#[test]
fn a_name_that_holds_one_percent_must_be_in_the_other_recording_a_share_may_drift() {
    let (g, m) = threadpool();
    let (first, _) = run_after(&g, &m, REQUEST_RULE, None);
    let shares = first.shares;
    let named: Vec<&String> = shares.keys().filter(|n| shares[*n] >= 0.01).collect();
    assert!(named.len() >= 2, "{shares:?}");
    let (same, out) = run_after(&g, &m, REQUEST_RULE, Some(shares.clone()));
    assert!(same.failures.is_empty(), "{:?}", same.failures);
    assert!(
        out.contains("names are those of the other recording"),
        "{out}"
    );
    // A type that held 1% there and half a percent here (or the other way round) only drifted.
    let mut drifted = shares.clone();
    drifted.insert(named[0].clone(), 0.006);
    let (o, _) = run_after(&g, &m, REQUEST_RULE, Some(drifted));
    assert!(o.failures.is_empty(), "{:?}", o.failures);
    // Renamed: gone from here under its old name, new here under its own.
    let mut renamed = shares.clone();
    let share = renamed.remove(named[0]).unwrap();
    renamed.insert(format!("{} #0001", named[0]), share);
    let (o, _) = run_after(&g, &m, REQUEST_RULE, Some(renamed));
    assert_eq!(
        o.failures,
        [format!(
            "names changed between recordings: gone [\"{0} #0001\"], new [{0:?}]",
            named[0]
        )]
    );
}
