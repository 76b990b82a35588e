//! Worked examples: weights passed down a chain, knots, trimming, groups.

use scalpel_model::format::Op;
use scalpel_model::graph::{
    BoundaryInfo, EdgeKind, Graph, InnerWait, LeafId, LockWait, ObjId, OpName, SiteId,
};

use super::*;
use scalpel_model::graph::{Leaf, LeafTypeId, ThreadId};
use scalpel_model::testgraph::GraphBuilder;

fn edge<'a>(w: &'a WaitFor, from: &str, to: &str) -> &'a WaitEdge {
    let id = |n: &str| {
        // Hand-made graphs have no processes: groups are named `process: thread`.
        let full = format!("process: {n}");
        WaitNodeId(
            w.nodes
                .iter()
                .position(|x| x.name == n || x.name == full)
                .unwrap_or_else(|| {
                    panic!(
                        "no node {n}: {:?}",
                        w.nodes.iter().map(|n| &n.name).collect::<Vec<_>>()
                    )
                }) as u32,
        )
    };
    let (f, t) = (id(from), id(to));
    w.edges
        .iter()
        .find(|e| e.from == f && e.to == t)
        .unwrap_or_else(|| panic!("no edge {from} → {to}"))
}

fn names(w: &WaitFor, k: &Knot) -> Vec<String> {
    k.members
        .iter()
        .map(|m| {
            w.nodes[m.index()]
                .name
                .trim_start_matches("process: ")
                .to_owned()
        })
        .collect()
}

fn inner(g: &mut Graph, leaf: u32, op: Op, at: u64, ns: u64, obj: Option<u32>) {
    g.sites.push(BoundaryInfo {
        op: None,
        function: Some(format!("{}_site", op as u8)),
        frames: Vec::new(),
        code_key: 0,
    });
    g.inner_waits.push(InnerWait {
        leaf: LeafId::new(leaf),
        op: OpName::from(op),
        obj: obj.map(ObjId::new),
        at_ns: at,
        ns,
        site: SiteId::new(g.sites.len() as u32 - 1),
    });
}

/// A leaf of `ty` over `start..end` on `t`, then `block` ns in the call `op` that ended it.
fn blocked(
    b: &mut GraphBuilder,
    t: ThreadId,
    (ty, op): (LeafTypeId, Op),
    start: u64,
    end: u64,
    block: u64,
) -> (ThreadId, u32) {
    let mut l = Leaf::new(t, ty, start, end);
    l.block_ns = block;
    l.end_op = Some(OpName::from(op));
    b.push(t, l)
}

/// A waits on B over [0, 100], B on C over [20, 50], C sleeps over [25, 45] inside a leaf.
fn chain() -> Graph {
    let mut b = GraphBuilder::new();
    let wait = b.leaf_type("wait", Some(Op::CondWait));
    let signal = b.leaf_type("signal", Some(Op::CondSignal));
    let (ta, tb, tc) = (b.thread("a"), b.thread("b"), b.thread("c"));
    blocked(&mut b, ta, (wait, Op::CondWait), 0, 0, 100);
    let a1 = b.leaf(ta, signal, 100, 120);
    blocked(&mut b, tb, (wait, Op::CondWait), 0, 20, 30);
    let b1 = b.leaf(tb, signal, 50, 100);
    b.leaf(tb, signal, 100, 130);
    let c0 = b.leaf(tc, signal, 0, 50);
    b.leaf(tc, signal, 50, 60);
    b.edge(b1, a1, EdgeKind::Cond);
    b.edge(c0, b1, EdgeKind::Cond);
    let mut g = b.build();
    let c0 = 5;
    g.leaves[c0].sleep_ns = 20;
    inner(&mut g, c0 as u32, Op::Sleep, 25, 20, None);
    g
}

#[test]
fn a_wait_is_passed_down_the_chain_by_its_overlap() {
    let w = build(&chain(), None, &WaitForOptions::default(), None);
    let ab = edge(&w, "a", "b");
    assert_eq!((ab.direct_ns, ab.cascaded_ns), (100, 0));
    let bc = edge(&w, "b", "c");
    assert_eq!((bc.direct_ns, bc.cascaded_ns), (30, 30));
    // C's sleep: its own 20, and 20 for each of the two waits above it.
    let ct = edge(&w, "c", "[timer]");
    assert_eq!((ct.direct_ns, ct.cascaded_ns), (20, 40));
    assert_eq!(w.total_wait_ns, 150);
    assert_eq!(w.knots.len(), 1);
    assert_eq!(names(&w, &w.knots[0]), ["[timer]"]);
    // Each of the three waits reaches the timer for the 20 ns of the sleep.
    assert_eq!(w.knots[0].explained_ns, 60);
    assert!((w.knots[0].share - 0.4).abs() < 1e-9);
}

#[test]
fn only_the_task_s_waits_are_direct_but_chains_go_everywhere() {
    let g = chain();
    let mut keep = vec![false; g.leaves.len()];
    keep[0] = true;
    let w = build(
        &g,
        Some(&keep),
        &WaitForOptions::default(),
        Some("t".into()),
    );
    assert_eq!(w.total_wait_ns, 100);
    let bc = edge(&w, "b", "c");
    assert_eq!((bc.direct_ns, bc.cascaded_ns), (0, 30));
    assert_eq!(w.knots[0].explained_ns, 20);
}

/// A lock convoy: `workers` (two threads of one role) wait on each other's critical section;
/// `main` joins them.
#[test]
fn lock_waits_are_edges_to_the_holder_and_a_convoy_is_its_own_knot() {
    let mut b = GraphBuilder::new();
    let work = b.leaf_type("work", Some(Op::ThreadExit));
    let join = b.leaf_type("join", Some(Op::ThreadJoin));
    let (main, w1, w2) = (b.thread("main"), b.thread("worker-1"), b.thread("worker-2"));
    blocked(&mut b, main, (join, Op::ThreadJoin), 0, 1, 199);
    let m1 = b.leaf(main, work, 200, 210);
    b.leaf(w1, work, 0, 100);
    let w2a = b.leaf(w2, work, 0, 200);
    b.edge(w2a, m1, EdgeKind::Join);
    let mut g = b.build();
    // Worker 2 waits 90 ns for the lock worker 1 holds (leaf 2: worker 1, leaf 3: worker 2).
    g.leaves[3].lock_ns = 90;
    inner(&mut g, 3, Op::MutexLock, 5, 90, Some(7));
    g.lock_waits.push(LockWait {
        obj: ObjId::new(7),
        waiter: LeafId::new(3),
        holder: Some(LeafId::new(2)),
        wait_ns: 90,
    });
    let w = build(&g, None, &WaitForOptions::default(), None);
    let conv = edge(&w, "worker ×2", "worker ×2");
    assert_eq!(conv.direct_ns, 90);
    assert_eq!(conv.kinds, [(BlockKind::Lock, 90)]);
    // Main's join waited on worker 2, which spent 90 ns of it waiting on the lock.
    let mw = edge(&w, "main", "worker ×2");
    assert_eq!((mw.direct_ns, mw.cascaded_ns), (199, 0));
    assert_eq!(conv.cascaded_ns, 90);
    assert_eq!(w.knots.len(), 1);
    assert_eq!(names(&w, &w.knots[0]), ["worker ×2"]);
    // All of main's join and the lock wait end in the workers.
    assert_eq!(w.knots[0].explained_ns, 199 + 90);
}

/// A handler waits on a syncer that waits on the disk (an fsync 60..990) and, briefly, on the
/// handler (0..50). With `occasional`, a third thread runs to 3000 and fsyncs for 12 ns.
fn syncer(occasional: bool) -> Graph {
    let mut b = GraphBuilder::new();
    let wait = b.leaf_type("wait", Some(Op::CondWait));
    let signal = b.leaf_type("signal", Some(Op::CondSignal));
    let (h, s) = (b.thread("handler"), b.thread("syncer"));
    // The handler signals at 1 and waits to 1000; the syncer signals at 1000.
    let h0 = blocked(&mut b, h, (signal, Op::CondWait), 0, 1, 999);
    let h1 = b.leaf(h, signal, 1000, 1010);
    blocked(&mut b, s, (wait, Op::CondWait), 0, 0, 50);
    let s1 = b.leaf(s, signal, 50, 1000);
    b.edge(h0, s1, EdgeKind::Cond);
    b.edge(s1, h1, EdgeKind::Cond);
    if occasional {
        let x = b.thread("occasional");
        b.leaf(x, signal, 0, 3000);
    }
    let mut g = b.build();
    g.leaves[3].other_ns = 930;
    inner(&mut g, 3, Op::Fdatasync, 60, 930, None);
    if occasional {
        g.leaves[4].other_ns = 12;
        inner(&mut g, 4, Op::Fsync, 2000, 12, None);
    }
    g
}

/// The syncer and the disk are the knot; the light edge back to the handler is trimmed.
#[test]
fn a_light_edge_back_to_the_feeders_is_trimmed() {
    let w = build(&syncer(false), None, &WaitForOptions::default(), None);
    assert_eq!(edge(&w, "handler", "syncer").direct_ns, 999);
    // The syncer's wait for the handler overlaps the handler's wait for the syncer: nothing
    // is passed back round the circle.
    let back = edge(&w, "syncer", "handler");
    assert_eq!((back.direct_ns, back.cascaded_ns), (50, 0));
    let disk = edge(&w, "syncer", "[disk]");
    assert_eq!((disk.direct_ns, disk.cascaded_ns), (930, 930));
    // The disk idled 1010 − 930 ns, waiting for the syncer.
    assert_eq!(edge(&w, "[disk]", "syncer").idle_ns, 80);
    assert_eq!(w.knots.len(), 1, "{:?}", w.knots);
    assert_eq!(names(&w, &w.knots[0]), ["syncer", "[disk]"]);
    assert_eq!(w.trimmed.len(), 1);
    let t = &w.edges[w.trimmed[0].index()];
    assert_eq!(w.nodes[t.from.index()].name, "process: syncer");
    assert_eq!(w.nodes[t.to.index()].name, "process: handler");
}

/// A disk busy nearly all the time idles for less than the floor under which waits are left
/// out: its idle edge stays, so the knot is the syncer with its disk, not the disk alone.
#[test]
fn a_saturated_disk_is_a_knot_with_the_thread_that_keeps_it_busy() {
    let opts = WaitForOptions {
        min_share: 0.05,
        ..WaitForOptions::default()
    };
    let w = build(&syncer(false), None, &opts, None);
    let idle = edge(&w, "[disk]", "syncer");
    let total: u64 = w.edges.iter().map(|e| e.direct_ns).sum();
    assert!(
        (idle.idle_ns as f64) < 0.05 * total as f64,
        "{idle:?}, {total}"
    );
    assert_eq!(w.knots.len(), 1, "{:?}", w.knots);
    assert_eq!(names(&w, &w.knots[0]), ["syncer", "[disk]"]);
}

/// The disk's idle time is shared with a thread that used it a little: that edge neither
/// makes the syncer's knot leak nor makes the occasional user a knot.
#[test]
fn a_device_idle_edge_to_an_occasional_user_does_not_move_the_knot() {
    let w = build(&syncer(true), None, &WaitForOptions::default(), None);
    // Idle 3000 − 942 ns, shared 930 : 12; the user's own 12 ns are under 1% of the waiting.
    assert_eq!(edge(&w, "[disk]", "occasional").idle_ns, 2058 * 12 / 942);
    assert_eq!(edge(&w, "[disk]", "syncer").idle_ns, 2058 * 930 / 942);
    assert_eq!(w.knots.len(), 1, "{:?}", w.knots);
    assert_eq!(names(&w, &w.knots[0]), ["syncer", "[disk]"]);
}

/// A and B wait on each other for 1000 ns each; A then waits 50 ns on C, which waits on
/// nothing. Strictly, {A, B} leaks into C and C is the only knot; but C holds 2% of the waiting
/// and the circle the rest, so the light edge out of the circle is trimmed.
fn circle_and_bystander() -> Graph {
    let mut b = GraphBuilder::new();
    let wait = b.leaf_type("wait", Some(Op::CondWait));
    let signal = b.leaf_type("signal", Some(Op::CondSignal));
    let (ta, tb, tc) = (b.thread("a"), b.thread("b"), b.thread("c"));
    blocked(&mut b, ta, (wait, Op::CondWait), 0, 0, 1000);
    let a1 = blocked(&mut b, ta, (wait, Op::CondWait), 1000, 2000, 50);
    let a2 = b.leaf(ta, signal, 2050, 2060);
    let b0 = b.leaf(tb, signal, 0, 1000);
    blocked(&mut b, tb, (wait, Op::CondWait), 1000, 1000, 1000);
    let b2 = b.leaf(tb, signal, 2000, 2010);
    let c0 = b.leaf(tc, signal, 0, 2050);
    b.edge(b0, a1, EdgeKind::Cond);
    b.edge(a1, b2, EdgeKind::Cond);
    b.edge(c0, a2, EdgeKind::Cond);
    b.build()
}

#[test]
fn a_light_edge_out_of_a_circle_does_not_make_a_bystander_the_knot() {
    let w = build(
        &circle_and_bystander(),
        None,
        &WaitForOptions::default(),
        None,
    );
    assert_eq!(edge(&w, "a", "b").direct_ns, 1000);
    assert_eq!(edge(&w, "b", "a").direct_ns, 1000);
    assert_eq!(edge(&w, "a", "c").direct_ns, 50);
    assert_eq!(w.knots.len(), 1, "{:?}", w.knots);
    assert_eq!(names(&w, &w.knots[0]), ["a", "b"]);
    let t = &w.edges[w.trimmed[0].index()];
    assert_eq!(w.nodes[t.to.index()].name, "process: c");
    // With no trimming at all, the strict rule: C is the knot.
    let strict = WaitForOptions {
        trim: 0.0,
        ..WaitForOptions::default()
    };
    let w = build(&circle_and_bystander(), None, &strict, None);
    assert_eq!(names(&w, &w.knots[0]), ["c"]);
}

#[test]
fn threads_of_one_role_are_one_node_and_other_roles_are_not() {
    let mut b = GraphBuilder::new();
    let x = b.leaf_type("x", None);
    let y = b.leaf_type("y", None);
    let ts: Vec<ThreadId> = ["pool-1", "pool-2", "pool-3", "main"]
        .iter()
        .map(|n| b.thread(n))
        .collect();
    for (i, &t) in ts.iter().enumerate() {
        // pool-3 runs other leaf types than its siblings: another role under the same name.
        let ty = if i == 2 { y } else { x };
        b.leaf(t, ty, 0, 10);
        b.leaf(t, ty, 10, 20);
    }
    let g = b.build();
    let gr = groups::group_threads(&g, true);
    let names: Vec<&str> = gr.groups.iter().map(|g| g.name.as_str()).collect();
    assert_eq!(
        names,
        ["process: pool (x) ×2", "process: pool (y)", "process: main"]
    );
    assert_eq!(gr.of, [0, 0, 1, 2]);
    // The thread view: one node per thread, named by its name and tid.
    let alone = groups::group_threads(&g, false);
    let names: Vec<&str> = alone.groups.iter().map(|g| g.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "process: pool-1 (1)",
            "process: pool-2 (2)",
            "process: pool-3 (3)",
            "process: main (4)"
        ]
    );
}

#[test]
fn the_same_graph_gives_the_same_wait_for_graph() {
    let g = chain();
    let a = build(&g, None, &WaitForOptions::default(), None);
    let b = build(&g, None, &WaitForOptions::default(), None);
    assert_eq!(a, b);
}

/// A graph's wait-for graph without its thread ids (the windows number theirs anew).
fn without_threads(mut w: WaitFor) -> WaitFor {
    for n in &mut w.nodes {
        n.threads.clear();
    }
    w
}

/// The windows' graph from `windows`, two passes as `scalpel waitfor` makes them.
fn of_windows(windows: &[&Graph]) -> WaitFor {
    let mut sum = WindowsWaitFor::new(WaitForOptions::default(), None);
    for g in windows {
        sum.add(g, None);
    }
    let mut knots = sum.knots();
    for g in windows {
        knots.explain(g, None);
    }
    knots.finish()
}

#[test]
fn one_window_is_the_wait_for_graph_of_its_graph() {
    for g in [chain(), syncer(false), syncer(true), circle_and_bystander()] {
        let whole = build(&g, None, &WaitForOptions::default(), None);
        assert_eq!(without_threads(of_windows(&[&g])), without_threads(whole));
    }
}

#[test]
fn windows_add_their_edges_up_and_find_the_knots_of_the_sums() {
    let g = syncer(false);
    let one = build(&g, None, &WaitForOptions::default(), None);
    let two = of_windows(&[&g, &g]);
    assert_eq!(two.total_wait_ns, 2 * one.total_wait_ns);
    assert_eq!(two.edges.len(), one.edges.len());
    for (a, b) in one.edges.iter().zip(&two.edges) {
        assert_eq!(
            (b.direct_ns, b.idle_ns),
            (2 * a.direct_ns, 2 * a.idle_ns),
            "{b:?}"
        );
    }
    assert_eq!(two.knots.len(), one.knots.len());
    for (a, b) in one.knots.iter().zip(&two.knots) {
        assert_eq!(a.members, b.members);
        assert_eq!(b.explained_ns, 2 * a.explained_ns);
        assert!((a.share - b.share).abs() < 1e-9);
    }
}
