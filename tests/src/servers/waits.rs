//! A database's waits, from its graph: storage waits on the commit path (the flush of its log,
//! known by a function in their stacks), the titles its processes took, and sleeps in a lock
//! wait woken through a latch (lock time inside their statement, or a waker for those that cut
//! one).

use std::collections::BTreeMap;

use scalpel_model::graph::{EdgeKind, Graph, InnerWait, LeafId};

fn frames<'g>(graph: &'g Graph, w: &InnerWait) -> &'g [String] {
    &graph.sites[w.site.index()].frames
}

fn holds(frames: &[String], f: &str) -> bool {
    frames.iter().any(|x| x.contains(f))
}

/// Storage waits by operation, and those (count, nanoseconds) with `frame` in their stacks.
pub fn storage_waits(graph: &Graph, frame: &str) -> (BTreeMap<String, usize>, usize, u64) {
    let mut by_op = BTreeMap::new();
    let (mut n, mut ns) = (0, 0);
    for w in &graph.inner_waits {
        let op = w.op.name();
        if !matches!(op.as_str(), "fdatasync" | "fsync" | "sync_file_range") {
            continue;
        }
        *by_op.entry(op).or_default() += 1;
        if holds(frames(graph, w), frame) {
            n += 1;
            ns += w.ns;
        }
    }
    (by_op, n, ns)
}

/// The processes' titles by role: a title up to a client's address (`127.0.0.1`), or whole.
pub fn titles(graph: &Graph) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for t in graph.processes.iter().filter_map(|p| p.title.as_deref()) {
        let role = t.split(" 127.0.0.1").next().unwrap_or(t);
        *out.entry(role.to_owned()).or_default() += 1;
    }
    out
}

/// Sleeps in `frame`: (inside their leaf as waits, their nanoseconds, sleeps that end a leaf,
/// those whose next leaf has a waker).
pub fn sleeps(graph: &Graph, frame: &str) -> (usize, u64, usize, usize) {
    let inside: Vec<_> = graph
        .inner_waits
        .iter()
        .filter(|w| w.op.name().starts_with("epoll") && holds(frames(graph, w), frame))
        .collect();
    let mut woken_into = vec![false; graph.leaves.len()];
    for e in &graph.edges {
        if !matches!(e.kind, EdgeKind::Program | EdgeKind::ProgramWeak) {
            if let Some(l) = graph.leaf_of(e.to) {
                woken_into[l.index()] = true;
            }
        }
    }
    let (mut cut, mut woken) = (0, 0);
    for (i, pair) in graph.leaves.windows(2).enumerate() {
        let (l, next) = (&pair[0], &pair[1]);
        let ends_here = holds(&graph.types[l.ty.index()].end.frames, frame);
        if ends_here && next.thread == l.thread {
            cut += 1;
            woken += usize::from(woken_into[LeafId::new(i as u32 + 1).index()]);
        }
    }
    (inside.len(), inside.iter().map(|w| w.ns).sum(), cut, woken)
}
