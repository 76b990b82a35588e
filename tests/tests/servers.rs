//! The server checks (`server-check`, `tests/src/servers/`) on a recorded program whose
//! requests are known: the corpus's thread pool serving 6 connections of 24 requests each, the
//! server's `write` of each reply marking one request.

use scalpel_e2e::corpus::corpus_dir;
use scalpel_e2e::servers::{check, Checks, Run};
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
    let checks: Checks = toml::from_str(checks).unwrap();
    let run = Run {
        name: "threadpool".into(),
        requests: REQUESTS,
        same_names: None,
    };
    let mut out = Vec::new();
    let o = check(g, m, &checks, &run, &mut out).unwrap();
    (o.failures, String::from_utf8(out).unwrap())
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
