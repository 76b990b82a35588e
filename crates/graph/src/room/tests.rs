//! The rule on hand-made graphs: a loop's puts and its workers' notices.

use scalpel_model::format::Op;
use scalpel_model::graph::{EdgeKind, Graph, Leaf, ObjId, ThreadId};
use scalpel_model::testgraph::{At, GraphBuilder};

use super::room_waits;

/// Adds leaves running `steps` (start and end call) to `thread`, 1 µs apart from `t0`.
fn steps(b: &mut GraphBuilder, thread: ThreadId, t0: u64, steps: &[(Op, Op)]) -> Vec<At> {
    let ty = b.leaf_type("step", None);
    let mut out = Vec::new();
    for (i, &(from, to)) in steps.iter().enumerate() {
        let t = t0 + 1_000 * i as u64;
        let mut l = Leaf::new(thread, ty, t, t + 10);
        l.start_op = Some(from.into());
        l.end_op = Some(to.into());
        // A write is a notice on object 2.
        l.end_obj = (to == Op::Write).then(|| ObjId::new(2));
        out.push(b.push(thread, l));
    }
    out
}

/// Items handed over by semaphore posts (object 1), notices written back (object 2).
fn graph(b: GraphBuilder) -> Graph {
    let mut g = b.build();
    for e in &mut g.edges {
        e.obj = Some(ObjId::new(if e.kind == EdgeKind::Sem { 1 } else { 2 }));
    }
    g
}

/// A producer (an event loop when it starts at `EpollWait`) puts items A, B and C for a
/// worker, then D for another; the worker writes a notice after each of `notified` (indices
/// of A, B, C), and the one after C wakes the producer into its put of D. Returns the waits
/// the rule found and the edges it left.
fn run(start: Op, notified: &[usize]) -> (usize, usize) {
    use Op::*;
    let mut b = GraphBuilder::new();
    let (lp, w, w2) = (b.thread("loop"), b.thread("w"), b.thread("w2"));
    let l = steps(
        &mut b,
        lp,
        0,
        &[
            (start, SemPost),
            (SemPost, SemPost),
            (SemPost, SemPost),
            (SemPost, EpollWait),
            (start, Read),
            (Read, SemPost),
        ],
    );
    // The worker's leaf per item ends at its notice, or at its wait for the next item.
    let ends: Vec<(Op, Op)> = (0..3)
        .map(|i| {
            (
                SemWait,
                if notified.contains(&i) {
                    Write
                } else {
                    SemWait
                },
            )
        })
        .collect();
    let x = steps(&mut b, w, 500, &ends);
    let y = steps(&mut b, w2, 9_500, &[(SemWait, SemWait)]);
    for i in 0..3 {
        b.edge(l[i], x[i], EdgeKind::Sem);
    }
    b.edge(l[5], y[0], EdgeKind::Sem);
    // The notices of A and B went to the loop's wait for more input (its leaf before D's).
    for &i in notified {
        let to = if i == 2 { l[5] } else { l[4] };
        b.edge(x[i], to, EdgeKind::Stream);
    }
    let mut g = graph(b);
    let mut edges = std::mem::take(&mut g.edges);
    let waits = room_waits(&g, &mut edges, &[]).room;
    (waits.len(), edges.len())
}

/// A worker that tells its event loop about some of its items only (it was asked to: the loop
/// waited for room) frees room: the notice into the loop's next put is a wait.
#[test]
fn a_notice_sent_for_some_items_only_is_room() {
    assert_eq!(run(Op::EpollWait, &[2]), (1, 4));
}

/// A notice after every item is each item's result, a cause; and a producer that is no event
/// loop keeps every edge.
#[test]
fn a_notice_after_every_item_and_a_producer_outside_a_loop_keep_their_edges() {
    assert_eq!(run(Op::EpollWait, &[0, 1, 2]), (0, 7));
    assert_eq!(run(Op::Read, &[2]), (0, 5));
}

/// A feeder that is no event loop hands items A and B to two workers (semaphore posts), waits
/// on a condition (object 2) for a free worker, and hands the one that woke it its next item:
/// C to the first worker, D to the second (`idle`). With `workers` 1, every item goes to the
/// one worker. Returns the idle waits found and the edges left.
fn feed(workers: usize) -> (usize, usize) {
    use Op::*;
    let mut b = GraphBuilder::new();
    let (p, w1, w2) = (b.thread("feeder"), b.thread("w1"), b.thread("w2"));
    let l = steps(
        &mut b,
        p,
        0,
        &[
            (Read, SemPost),
            (SemPost, SemPost),
            (SemPost, CondWait),
            (CondWait, SemPost),
            (SemPost, CondWait),
            (CondWait, SemPost),
        ],
    );
    let item = [(SemWait, CondSignal), (CondSignal, SemWait)];
    let x = steps(&mut b, w1, 100, &[item[0], item[1], item[0], item[1]]);
    let y = steps(&mut b, w2, 200, &[item[0], item[1], item[0], item[1]]);
    let second = if workers == 2 { &y } else { &x };
    // A to the first worker, B to the second; C and D to the one whose notice woke the feeder.
    b.edge(l[0], x[0], EdgeKind::Sem);
    b.edge(l[1], second[0], EdgeKind::Sem);
    b.edge(l[3], x[2], EdgeKind::Sem);
    b.edge(l[5], second[2], EdgeKind::Sem);
    b.edge(x[0], l[3], EdgeKind::Cond);
    b.edge(second[0], l[5], EdgeKind::Cond);
    let mut g = graph(b);
    let mut edges = std::mem::take(&mut g.edges);
    let waits = room_waits(&g, &mut edges, &[]);
    assert!(waits.room.is_empty(), "no event loop: no room waits");
    (waits.idle.len(), edges.len())
}

/// Two workers that tell their feeder they are free, each handed its next item at once: the
/// wake-ups are waits for a free worker, not causes of the next items.
#[test]
fn a_feeders_wake_up_from_a_free_worker_it_hands_an_item_is_a_wait() {
    assert_eq!(feed(2), (2, 4));
}

/// One worker's wake-ups may be its answers (a client waiting on its reply): they stay edges.
#[test]
fn one_workers_wake_ups_stay_edges() {
    assert_eq!(feed(1), (0, 6));
}
