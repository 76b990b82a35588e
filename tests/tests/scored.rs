//! Every sample with true task types, recorded under the agent, inferred and scored against the
//! truth it wrote: each true type must come out as one model type whose occurrences are the
//! true instances (occurrence precision and recall at least 0.95, the hierarchy issue's bar).
//! The `tasks` sample is scored in `model.rs` and replicated-store in `replicated.rs`;
//! `handoff` has no tasks, only causal edges, scored in `graph.rs`.
//!
//! Not passing yet, so ignored (run with `--ignored`); issue 7 stays open on them. Two causes
//! measured so far: these samples read the clock just before or after the sync calls that
//! bound a task, so a span reaches into the neighbouring leaves, which the overlap rule in
//! `score.rs` counts (a rule that follows leaf boundaries instead fixed threadpool and
//! workqueue but cost replicated-store's worker task); and some stages make no traced call
//! per item (pipeline's Rust channels when nobody waits, lowlock's mutex-only queue), so no
//! leaf boundary separates their items.

use scalpel_e2e::score::{infer_model, load_tasks, report, score, TypeScore};
use scalpel_e2e::{own_bin, record_with};

/// Records `bin args…` with its truth, infers, and scores every true type.
fn scored(bin: &str, args: &[&str], composed: &[(&str, &[&str])]) -> Vec<TypeScore> {
    let tmp = tempfile::tempdir().unwrap();
    let truth = tmp.path().join("truth.jsonl");
    let run = record_with(&own_bin(bin), args, |c| {
        c.env("SCALPEL_TRUTH", &truth);
    })
    .success();
    let out = run.tmp.path().join("model");
    let (model, graph) = infer_model(&run.dir, &out, &[]);
    let tasks = load_tasks(&truth);
    assert!(!tasks.is_empty(), "{bin} wrote its truth");
    let sc = score(&model, &graph, &tasks, composed);
    eprintln!("{bin} {args:?}:\n{}", report(&sc));
    sc
}

/// Every true type recovered at `min` precision and recall.
fn all_at_least(sc: &[TypeScore], min: f64) {
    for t in sc {
        assert!(
            t.precision >= min && t.recall >= min,
            "{}: P {:.4} R {:.4} (model type {:?})\n{}",
            t.truth,
            t.precision,
            t.recall,
            t.model_type,
            report(sc)
        );
    }
}

#[test]
#[ignore = "issue 7: not recovered yet"]
fn pipeline() {
    all_at_least(&scored("pipeline", &["300"], &[]), 0.95);
}

#[test]
#[ignore = "issue 7: not recovered yet"]
fn fanout() {
    all_at_least(&scored("fanout", &["200"], &[]), 0.95);
}

#[test]
#[ignore = "issue 7: not recovered yet"]
fn threadpool() {
    let args = ["--workers", "3", "--connections", "4", "--requests", "100"];
    all_at_least(&scored("threadpool", &args, &[]), 0.95);
}

#[test]
#[ignore = "issue 7: not recovered yet"]
fn workqueue() {
    all_at_least(&scored("workqueue", &["300"], &[]), 0.95);
}

#[test]
#[ignore = "issue 7: not recovered yet"]
fn lowlock() {
    let args = ["--items", "2000", "--consumers", "2", "--truth-sample"];
    all_at_least(&scored("lowlock", &args, &[]), 0.95);
    let args = [
        "--fixed",
        "--items",
        "2000",
        "--consumers",
        "2",
        "--truth-sample",
    ];
    all_at_least(&scored("lowlock", &args, &[]), 0.95);
}
