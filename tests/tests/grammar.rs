//! The miner's grammar (`scalpel_mine::Grammar`) on recorded traces: replayed on the graph it
//! was learned on, it gives the same model; learned on the first half of a recording and
//! replayed on the whole, the model differs from mining the whole alone only where the second
//! half holds what the first did not (the figures are printed; `docs/BENCHMARKS.md`).

use scalpel_e2e::corpus::cases;
use scalpel_e2e::grammar::{across, halves, replay};
use scalpel_e2e::{own_bin, record};
use scalpel_graph::{build_graph, GraphOptions};
use scalpel_mine::{mine, MineOptions};
use scalpel_model::progress::Quiet;

#[test]
fn every_corpus_graph_replays_its_own_grammar_exactly() {
    for case in cases() {
        let g = build_graph(&case.join("trace"), &GraphOptions::default())
            .unwrap_or_else(|e| panic!("{}: {e}", case.display()))
            .graph;
        let run = mine(&g, "graph.json", &MineOptions::default(), &Quiet);
        assert!(
            replay(&g, &run.grammar) == run.model,
            "{}: the replayed grammar gave another model",
            case.display()
        );
    }
}

#[test]
fn a_grammar_learned_on_half_a_recording_labels_the_whole() {
    let (mut leaves, mut named, mut split) = (0usize, 0usize, 0usize);
    for case in cases() {
        let Some(h) = halves(&case.join("trace")).unwrap() else {
            continue;
        };
        eprintln!("{}: {h}", case.file_name().unwrap().to_string_lossy());
        leaves += h.leaves;
        named += h.named;
        split += h.split;
    }
    eprintln!("all cases: {leaves} leaves, {named} under a top-level type of another name, {split} in another top-level task");
    assert!(leaves > 0);
}

/// Learned on one recording of a program and replayed on another (more connections, more
/// requests): the leaf types are found again by their names and boundaries, which the corpus's
/// scrubbed traces lack (their frames are bare addresses), so the program is recorded here.
#[test]
fn a_grammar_learned_on_one_recording_labels_another() {
    let small = record(
        &own_bin("threadpool"),
        &["--connections", "3", "--requests", "12"],
    )
    .success();
    let large = record(
        &own_bin("threadpool"),
        &["--connections", "6", "--requests", "24"],
    )
    .success();
    let a = across(&small.dir, &large.dir).unwrap();
    eprintln!("threadpool, 3×12 → 6×24 requests: {a}");
    assert!(a.rules > 0 && a.replayed > 0, "{a}");
}
