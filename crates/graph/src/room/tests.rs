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

/// An event loop puts items A and B for two workers; each worker's notice, about an item
/// older than the loop's latest put, wakes the loop into its next put: room, both.
#[test]
fn a_notice_about_an_older_item_is_room() {
    use Op::*;
    let mut b = GraphBuilder::new();
    let (lp, w1, w2, w3) = (
        b.thread("loop"),
        b.thread("w1"),
        b.thread("w2"),
        b.thread("w3"),
    );
    let l = steps(
        &mut b,
        lp,
        0,
        &[
            (EpollWait, SemPost),
            (SemPost, SemPost),
            (SemPost, EpollWait),
            (EpollWait, Read),
            (Read, SemPost),
            (SemPost, EpollWait),
            (EpollWait, Read),
            (Read, SemPost),
        ],
    );
    let a = steps(&mut b, w1, 500, &[(SemWait, Write)]);
    let bb = steps(&mut b, w2, 1_500, &[(SemWait, Write)]);
    // A third worker takes the loop's later items, C and D.
    let c = steps(&mut b, w3, 4_500, &[(SemWait, SemWait), (SemWait, SemWait)]);
    b.edge(l[0], a[0], EdgeKind::Sem);
    b.edge(l[1], bb[0], EdgeKind::Sem);
    b.edge(l[4], c[0], EdgeKind::Sem);
    b.edge(l[7], c[1], EdgeKind::Sem);
    b.edge(a[0], l[4], EdgeKind::Stream);
    b.edge(bb[0], l[7], EdgeKind::Stream);
    let (ids, mut g) = ([b.id(l[3]), b.id(l[6]), b.id(a[0]), b.id(bb[0])], graph(b));
    let mut edges = std::mem::take(&mut g.edges);
    let waits = room_waits(&g, &mut edges, &[]);
    let got: Vec<(u32, Option<u32>)> = waits
        .iter()
        .map(|w| (w.waiter.get(), w.holder.map(|h| h.get())))
        .collect();
    assert_eq!(got, [(ids[0], Some(ids[2])), (ids[1], Some(ids[3]))]);
    assert!(edges.iter().all(|e| e.kind != EdgeKind::Stream));
}

/// A loop gets the result of the item it put last (B): a cause. A notice about an older item
/// (A) is room in a loop, and a cause for a producer that is no event loop.
#[test]
fn the_latest_item_s_result_and_a_producer_outside_a_loop_keep_their_edges() {
    use Op::*;
    for (start, about) in [(EpollWait, 1), (Read, 1), (Read, 0), (EpollWait, 0)] {
        let mut b = GraphBuilder::new();
        let (lp, w, w2) = (b.thread("loop"), b.thread("w"), b.thread("w2"));
        let l = steps(
            &mut b,
            lp,
            0,
            &[
                (start, SemPost),
                (SemPost, SemPost),
                (SemPost, EpollWait),
                (start, Read),
                (Read, SemPost),
            ],
        );
        let x = steps(&mut b, w, 500, &[(SemWait, Write), (Write, SemWait)]);
        let y = steps(&mut b, w2, 4_500, &[(SemWait, SemWait)]);
        b.edge(l[0], x[0], EdgeKind::Sem);
        b.edge(l[1], x[1], EdgeKind::Sem);
        b.edge(l[4], y[0], EdgeKind::Sem);
        // The notice about B, the latest put, is no room; about A, in a loop, it is.
        b.edge(x[about], l[4], EdgeKind::Stream);
        let mut g = graph(b);
        let mut edges = std::mem::take(&mut g.edges);
        let room = start == EpollWait && about == 0;
        let waits = room_waits(&g, &mut edges, &[]);
        assert_eq!(waits.len(), usize::from(room), "{start:?} {about}");
        assert_eq!(edges.len(), 4 - usize::from(room));
    }
}
