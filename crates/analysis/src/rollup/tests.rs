//! Rollup arithmetic on hand-made graphs, where every number can be worked out exactly.

use scalpel_model::format::Op;
use scalpel_model::graph::{
    Edge, EdgeKind, Graph, Leaf, LeafId, LeafTypeId, NodeId, OpName, ThreadId,
};

use super::instance::Evaluator;
use super::*;
use scalpel_model::testgraph::GraphBuilder;

fn leaf(thread: u32, start: u64, end: u64, block: u64, op: Op) -> Leaf {
    Leaf {
        block_ns: block,
        end_op: Some(OpName::from(op)),
        ..Leaf::new(ThreadId::new(thread), LeafTypeId::new(thread), start, end)
    }
}

fn edge(from: u32, to: u32, kind: EdgeKind) -> Edge {
    Edge {
        from: NodeId::new(from),
        to: NodeId::new(to),
        kind,
        obj: None,
    }
}

/// Thread 0: leaf 0 signals at 10, leaf 1 follows. Thread 1: leaf 2 waits 2..14 on the
/// condition, leaf 3 starts at 16 (2 ns late), sleeps 10 ns inside, ends with a 2 ns write at 30.
fn graph() -> Graph {
    let mut l3 = leaf(1, 16, 30, 2, Op::Write);
    l3.sleep_ns = 10;
    graph_of(
        vec![
            leaf(0, 0, 10, 0, Op::CondSignal),
            leaf(0, 10, 12, 0, Op::ThreadExit),
            leaf(1, 0, 2, 12, Op::CondWait),
            l3,
        ],
        vec![
            edge(0, 1, EdgeKind::Program),
            edge(0, 3, EdgeKind::Cond),
            edge(2, 3, EdgeKind::Program),
        ],
    )
}

/// Two threads of two leaves each (types `a` and `b`, by thread), edges by leaf id.
fn graph_of(leaves: Vec<Leaf>, edges: Vec<Edge>) -> Graph {
    let mut b = GraphBuilder::new();
    for (ty, thread) in [("a", "t0"), ("b", "t1")] {
        b.leaf_type(ty, None);
        b.thread(thread);
    }
    for l in leaves {
        b.push(l.thread, l);
    }
    let at = |id: NodeId| (ThreadId::new(id.get() / 2), id.get() % 2);
    for e in edges {
        b.edge(at(e.from), at(e.to), e.kind);
    }
    b.build()
}

#[test]
fn critical_path_follows_the_last_cause_and_adds_up_to_the_latency() {
    let g = graph();
    let idx = GraphIndex::new(&g);
    let mut ev = Evaluator::new(&g, &idx);
    let i = ev.eval(&[0, 2, 3].map(LeafId::new));
    assert_eq!((i.start_ns, i.end_ns, i.latency()), (0, 32, 32));
    // Leaf 3 completes last (30 + its 2 ns write); of its causes, leaf 2's wait completed at 14
    // and leaf 0's signal at 10, so the path is 2 → 3.
    let path: Vec<u32> = i.path.iter().map(|s| s.leaf).collect();
    assert_eq!(path, [2, 3]);
    let (a, b) = (&i.path[0], &i.path[1]);
    assert_eq!(a.running_ns, 2);
    assert_eq!(a.blocked[BlockKind::Cond.index()], 12);
    // Leaf 3: 2 ns queued after the wait returned, 10 asleep, 2 writing, 4 running.
    assert_eq!(b.blocked[BlockKind::Queued.index()], 2);
    assert_eq!(b.blocked[BlockKind::Sleep.index()], 10);
    assert_eq!(b.blocked[BlockKind::Write.index()], 2);
    assert_eq!(b.running_ns, 4);
    assert_eq!(a.total() + b.total(), i.latency());
}

#[test]
fn queued_time_is_charged_to_what_the_thread_was_busy_with() {
    // Thread 0 signals at 5; thread 1's leaf 3 could start then, but thread 1 is inside leaf
    // 2 (0..18, 10 ns of it asleep) and its 2 ns write until 20.
    let mut busy = leaf(1, 0, 18, 2, Op::Write);
    busy.sleep_ns = 10;
    let g = graph_of(
        vec![
            leaf(0, 0, 5, 0, Op::CondSignal),
            leaf(0, 5, 6, 0, Op::ThreadExit),
            busy,
            leaf(1, 20, 25, 0, Op::ThreadExit),
        ],
        vec![
            edge(0, 1, EdgeKind::Program),
            edge(0, 3, EdgeKind::Cond),
            edge(2, 3, EdgeKind::Program),
        ],
    );
    let idx = GraphIndex::new(&g);
    let mut ev = Evaluator::new(&g, &idx);
    let i = ev.eval(&[0, 3].map(LeafId::new));
    let path: Vec<u32> = i.path.iter().map(|s| s.leaf).collect();
    assert_eq!(path, [0, 3]);
    let s = &i.path[1];
    assert_eq!(s.blocked[BlockKind::Queued.index()], 15);
    // 5..20: the write 18..20, then 5..18 of leaf 2's span split in proportion: 10/18 of 13
    // asleep (7, rounded down), the rest running.
    let charged: Vec<(u32, Option<BlockKind>, u64)> =
        s.behind.iter().map(|b| (b.leaf, b.kind, b.ns)).collect();
    assert_eq!(
        charged,
        [
            (2, Some(BlockKind::Write), 2),
            (2, Some(BlockKind::Sleep), 7),
            (2, None, 6)
        ]
    );
    assert_eq!(s.total(), 20);
    // Time no earlier leaf covers stays plain queued: in the first graph, leaf 3 starts 2 ns
    // after the wait that ended leaf 2 returned.
    let g = graph();
    let idx = GraphIndex::new(&g);
    let i = Evaluator::new(&g, &idx).eval(&[0, 2, 3].map(LeafId::new));
    assert_eq!(i.path[1].blocked[BlockKind::Queued.index()], 2);
    assert!(i.path[1].behind.is_empty());
}

#[test]
fn a_wait_whose_wakeup_is_outside_the_instance_is_not_part_of_it() {
    let g = graph();
    let idx = GraphIndex::new(&g);
    let mut ev = Evaluator::new(&g, &idx);
    // Leaf 2 alone: its wait leads to leaf 3, which is not in the instance.
    let i = ev.eval(&[LeafId::new(2)]);
    assert_eq!(i.latency(), 2);
    assert_eq!(i.path[0].running_ns, 2);
    assert_eq!(i.path[0].blocked.iter().sum::<u64>(), 0);
}

#[test]
fn leaf_metrics_split_wall_time_by_kind() {
    let g = graph();
    let idx = GraphIndex::new(&g);
    let m = leaf_metrics(&g, &idx, 3);
    assert_eq!(m.wall_ns, 16);
    assert_eq!(m.running_ns, 4);
    assert_eq!(m.blocked[BlockKind::Sleep.index()], 10);
    assert_eq!(m.blocked[BlockKind::Write.index()], 2);
    let w = leaf_metrics(&g, &idx, 2);
    assert_eq!((w.wall_ns, w.running_ns), (14, 2));
    assert_eq!(w.blocked[BlockKind::Cond.index()], 12);
    assert_eq!(
        idx.waker(&g, 2),
        Some(0),
        "leaf 0's signal woke leaf 2's wait"
    );
}

#[test]
fn percentiles_are_nearest_rank() {
    let mut v = vec![5, 1, 3, 2, 4];
    let l = Latency::of(&mut v);
    assert_eq!(
        (l.mean_ns, l.p50_ns, l.p90_ns, l.p99_ns, l.max_ns),
        (3, 3, 5, 5, 5)
    );
    let mut v: Vec<u64> = (1..=100).collect();
    let l = Latency::of(&mut v);
    assert_eq!((l.p50_ns, l.p90_ns, l.p99_ns), (50, 90, 99));
    assert_eq!(Latency::of(&mut []), Latency::default());
}

#[test]
fn a_session_steps_back_over_its_threads_gaps_as_idle_and_queued_time() {
    // One thread: leaf 0 (a request, its 2 ns reply written by 12), leaf 1 (other work, 12..20,
    // then 24 ns waiting for new work in epoll: the program edge out of it is weak), leaf 2 (the
    // next request, 44..50). The instance {0, 2} has no edge between its leaves.
    let mut b = GraphBuilder::new();
    b.leaf_type("a", None);
    let t = b.thread("t0");
    b.push(t, leaf(0, 0, 10, 2, Op::Write));
    b.push(t, leaf(0, 12, 20, 24, Op::EpollWait));
    b.push(t, leaf(0, 44, 50, 0, Op::ThreadExit));
    b.edge((t, 0), (t, 1), EdgeKind::Program);
    b.edge((t, 1), (t, 2), EdgeKind::ProgramWeak);
    let g = b.build();
    let idx = GraphIndex::new(&g);
    let i = Evaluator::new(&g, &idx).eval(&[0, 2].map(LeafId::new));
    let path: Vec<u32> = i.path.iter().map(|s| s.leaf).collect();
    assert_eq!(path, [0, 2]);
    assert_eq!(i.latency(), 50);
    let s = &i.path[1];
    // 12..44: leaf 1's 8 ns of running are work in the way (queued, charged to it); its wait
    // for new work is the thread's idle time.
    assert_eq!(s.blocked[BlockKind::Queued.index()], 8);
    assert_eq!(s.blocked[BlockKind::Idle.index()], 24);
    let charged: Vec<(u32, Option<BlockKind>, u64)> =
        s.behind.iter().map(|b| (b.leaf, b.kind, b.ns)).collect();
    assert_eq!(charged, [(1, None, 8)]);
    assert_eq!(s.running_ns, 6);
    assert_eq!(i.path[0].total() + s.total(), i.latency());
}

#[test]
fn rates_are_over_the_traces_span_not_the_types_own() {
    // One thread exit, 2 ns long, in a trace of three seconds: a third of one per second.
    let g = graph();
    let idx = GraphIndex::new(&g);
    let mut ev = Evaluator::new(&g, &idx);
    let mut f = fold::TypeFold::new(&g, 3_000_000_000);
    f.add(&ev.eval(&[LeafId::new(1)]));
    let s = f.finish(1, Vec::new());
    assert_eq!(s.count, 1);
    assert!((s.per_second - 1.0 / 3.0).abs() < 1e-9, "{}", s.per_second);
    assert_eq!(s.span_ns, 2);
}

#[test]
fn a_share_is_the_128_bit_quotient_whether_or_not_the_product_fits() {
    let wide =
        |ns: u64, num: u64, den: u64| (u128::from(ns) * u128::from(num) / u128::from(den)) as u64;
    let values = [
        0,
        1,
        3,
        999,
        1 << 31,
        1 << 33,
        u64::MAX / 3,
        u64::MAX - 1,
        u64::MAX,
    ];
    for ns in values {
        for den in values.into_iter().filter(|&d| d > 0) {
            for num in values.into_iter().filter(|&n| n <= den) {
                assert_eq!(super::stats::scale(ns, num, den), wide(ns, num, den));
            }
        }
    }
    assert_eq!(super::stats::scale(5, 0, 0), 0);
}
