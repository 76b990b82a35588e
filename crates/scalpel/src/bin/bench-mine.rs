//! `scalpel-bench-mine LEAVES`: the miner's time and memory on a synthetic causal graph with a
//! known hierarchy, and whether the hierarchy was recovered.
//!
//! Each request is: on the listener, an accept leaf and a push leaf; on one of 8 workers, a
//! pop leaf, a fan-out leaf, a loop of 1 to 3 read leaves, and a reply leaf; on two of 8
//! backend threads, a sub-request of two leaves each (fanned out by the worker, joined by its
//! reply leaf). Consecutive requests on a thread are joined by weak program order. So the true
//! model has a request type (10 to 12 leaves, one per request), a sub-request type (two per
//! request) and a loop type. The graph is made in memory, mined, and checked: every request's
//! leaves must be exactly one occurrence of one type, and every sub-request's of another.
//! Prints leaves, edges, mining time, peak memory (VmHWM, the whole process, graph included)
//! and the verdict. `scripts/bench-mine.sh` runs it for 10^5, 10^6 and 10^7 leaves.

use std::time::Instant;

use ahash::AHashMap;
use scalpel_mine::{mine, MineOptions};
use scalpel_model::graph::{EdgeKind, Graph, LeafId, LeafTypeId, ThreadId};
use scalpel_model::progress::Quiet;
use scalpel_model::testgraph::{At, GraphBuilder};

const WORKERS: u32 = 8;
const BACKENDS: u32 = 8;
/// Leaf types, in order: accept, push, pop, fan-out, read, reply, sub-start, sub-end.
const TYPES: [&str; 8] = [
    "accept",
    "push",
    "pop",
    "fan_out",
    "read",
    "reply",
    "sub_serve",
    "sub_done",
];

/// A request's leaves and its two sub-requests' leaves.
type Truth<L> = (Vec<L>, [Vec<L>; 2]);

fn generate(target: u64) -> (Graph, Vec<Truth<LeafId>>) {
    let mut g = GraphBuilder::new();
    for name in TYPES {
        g.leaf_type(name, None);
    }
    for th in 0..1 + WORKERS + BACKENDS {
        g.thread(&format!("t{th}"));
    }
    let mut truth: Vec<Truth<At>> = Vec::new();
    let mut leaves = 0u64;
    let mut r = 0u64;
    while leaves < target {
        let t = r * 1_000;
        let w = 1 + (r % u64::from(WORKERS)) as u32;
        let b0 = 1 + WORKERS + ((2 * r) % u64::from(BACKENDS)) as u32;
        let b1 = 1 + WORKERS + ((2 * r + 1) % u64::from(BACKENDS)) as u32;
        let reads = 1 + (r % 3) as u32;
        let mut leaf =
            |th: u32, ty: u32, at: u64| g.leaf(ThreadId::new(th), LeafTypeId::new(ty), at, at + 5);
        let accept = leaf(0, 0, t);
        let push = leaf(0, 1, t + 10);
        let pop = leaf(w, 2, t + 20);
        let fan = leaf(w, 3, t + 30);
        let mut parts = vec![accept, push, pop, fan];
        let mut prev = fan;
        let mut edges = Vec::new();
        for k in 0..reads {
            let rd = leaf(w, 4, t + 40 + u64::from(k));
            edges.push((prev, rd, EdgeKind::Program));
            parts.push(rd);
            prev = rd;
        }
        let s0 = [leaf(b0, 6, t + 35), leaf(b0, 7, t + 36)];
        let s1 = [leaf(b1, 6, t + 35), leaf(b1, 7, t + 36)];
        let reply = leaf(w, 5, t + 60);
        parts.push(reply);
        edges.extend([
            (accept, push, EdgeKind::Program),
            (push, pop, EdgeKind::Cond),
            (pop, fan, EdgeKind::Program),
            (prev, reply, EdgeKind::Program),
            (fan, s0[0], EdgeKind::Stream),
            (fan, s1[0], EdgeKind::Stream),
            (s0[0], s0[1], EdgeKind::Program),
            (s1[0], s1[1], EdgeKind::Program),
            (s0[1], reply, EdgeKind::Stream),
            (s1[1], reply, EdgeKind::Stream),
        ]);
        for (a, b, kind) in edges {
            g.edge(a, b, kind);
        }
        parts.extend(s0);
        parts.extend(s1);
        leaves += parts.len() as u64;
        truth.push((parts, [s0.to_vec(), s1.to_vec()]));
        r += 1;
    }
    // Program order within each thread: strong inside a request (an edge the builder merges
    // with the one already there), weak from one request's last leaf to the next's first.
    let in_request: AHashMap<At, u32> = truth
        .iter()
        .enumerate()
        .flat_map(|(r, (l, _))| l.iter().map(move |&x| (x, r as u32)))
        .collect();
    g.program_order(|a, b| {
        Some(if in_request.get(&a) == in_request.get(&b) {
            EdgeKind::Program
        } else {
            EdgeKind::ProgramWeak
        })
    });
    let ids = |v: &[At]| {
        let mut v: Vec<LeafId> = v.iter().map(|&x| LeafId::new(g.id(x))).collect();
        v.sort_unstable();
        v
    };
    let truth = truth
        .iter()
        .map(|(l, s)| (ids(l), [ids(&s[0]), ids(&s[1])]))
        .collect();
    (g.build(), truth)
}

fn peak_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// Whether some type's occurrences are exactly `sets`.
fn recovered(model: &scalpel_model::task::Model, sets: &[Vec<LeafId>]) -> bool {
    let want: ahash::AHashSet<&[LeafId]> = sets.iter().map(|s| s.as_slice()).collect();
    model.types.iter().any(|t| {
        t.occurrences.len() == sets.len()
            && t.occurrences
                .iter()
                .all(|o| want.contains(o.leaves.as_slice()))
    })
}

fn main() {
    let target: u64 = match std::env::args().nth(1).map(|a| a.parse()) {
        Some(Ok(n)) if n > 0 => n,
        _ => {
            eprintln!("usage: scalpel-bench-mine LEAVES");
            std::process::exit(2);
        }
    };
    let (graph, truth) = generate(target);
    let t0 = Instant::now();
    let mined = mine(&graph, "graph.json", &MineOptions::default(), &Quiet);
    let secs = t0.elapsed().as_secs_f64();
    let requests: Vec<Vec<LeafId>> = truth.iter().map(|t| t.0.clone()).collect();
    let subs: Vec<Vec<LeafId>> = truth.iter().flat_map(|t| t.1.clone()).collect();
    let ok_req = recovered(&mined.model, &requests);
    let ok_sub = recovered(&mined.model, &subs);
    let loops = mined
        .model
        .types
        .iter()
        .any(|t| t.kind == scalpel_model::task::TaskKind::Loop);
    println!(
        "leaves {} edges {} requests {}: mined in {secs:.2} s ({:.2} M leaves/s), {} rounds, peak {} MiB; recovered: requests {}, sub-requests {}, loop {}",
        graph.leaves.len(),
        graph.edges.len(),
        truth.len(),
        graph.leaves.len() as f64 / secs / 1e6,
        mined.model.mining.rounds,
        peak_kib() / 1024,
        if ok_req { "yes" } else { "NO" },
        if ok_sub { "yes" } else { "NO" },
        if loops { "yes" } else { "NO" },
    );
    if !(ok_req && ok_sub && loops) {
        let _ = scalpel_views::tree::write_tree(&mut std::io::stderr(), &mined.model);
        std::process::exit(1);
    }
}
