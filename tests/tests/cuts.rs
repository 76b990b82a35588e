//! Where leaves are cut in recorded programs: at synchronization that can order threads, and not
//! at lock traffic.

use scalpel_e2e::score::infer_output;
use scalpel_e2e::*;
use scalpel_model::graph::Graph;

/// Rounds the worker of `tests/c/wakeonly.c` serves.
const ROUNDS: usize = 40;

/// A futex word that is woken (half the rounds) but never waited on is a lock whose contender
/// took it without waiting: its wake orders nothing, so it must not cut the worker's rounds
/// into two leaf types (once in 800 sends, this gave a replicated-store send a leaf type of its
/// own, and the remote-ack task lost an occurrence).
#[test]
fn a_wake_on_a_word_nobody_waits_on_does_not_cut() {
    let exe = build_c("wakeonly", "wakeonly", &[]);
    let run = record(&exe, &[]).success();
    let t = run.load();
    assert_eq!(
        with_op(&t, Op::FutexWake).len(),
        ROUNDS / 2,
        "the program woke the word"
    );
    assert!(with_op(&t, Op::FutexWait).is_empty());
    let out = run.tmp.path().join("graph");
    let o = infer_output(&run.dir, &out, &["--stage", "graph"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let g: Graph = scalpel_model::store::read_graph(&out.join("graph.json")).unwrap();
    let op = |o: &Option<scalpel_model::graph::OpName>| o.and_then(|o| o.op());
    let worker = g.threads.iter().position(|th| th.tid != th.pid).unwrap() as u32;
    let rounds = g
        .leaves
        .iter()
        .filter(|l| l.thread.get() == worker)
        .filter(|l| op(&l.start_op) == Some(Op::Read) && op(&l.end_op) == Some(Op::Write))
        .count();
    let cut: Vec<_> = g
        .leaves
        .iter()
        .filter(|l| op(&l.end_op) == Some(Op::FutexWake))
        .collect();
    assert!(cut.is_empty(), "leaves cut at the wake: {cut:?}");
    assert_eq!(rounds, ROUNDS);
}
