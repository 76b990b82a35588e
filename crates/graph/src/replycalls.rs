//! Pipelined replies with a call between them: a reply, then the next request's call into a
//! service or through a backend, then the next reply from the same call site.
//!
//! `super::replies` splits two pipelined replies where the thread's next cut after a reply is
//! the same write: the second answers a request read with the first. A pipelined request that
//! calls out before its reply (it waits for a group commit, it asks a backend) puts cuts between
//! the two writes, and the rule did not see them as neighbours: the next request's call joined
//! the request before it. Those cuts are the ones the stages below turn into waits inside the
//! work (`service`, `calls`): with them merged, the two replies are neighbours again. So a reply
//! whose thread's next remaining cut is a write from the same call on the same connection, with
//! only merged cuts between and at least one of them a call of that kind, ends a request, as
//! two neighbouring replies do.
//!
//! Why a call must be among them: with lock traffic alone between two writes from one site (an
//! interpreter's global lock taken and dropped between a reply's header and its body), nothing
//! says a second request was served; the writes stay one reply, as they were recorded.

use ahash::AHashSet;
use scalpel_model::graph::{Edge, EdgeKind, Graph, Leaf};
use scalpel_model::object::Channel;

use crate::event::reads_bytes;

/// The connection key of a leaf's ending call, when it is on a byte stream.
fn channel(graph: &Graph, l: &Leaf) -> Option<u64> {
    match graph.objects.get(l.end_obj?.index())?.channel.as_ref()? {
        Channel::Stream { key, .. } => Some(*key),
        Channel::Listening { .. } => None,
    }
}

/// Whether the leaf's ending call moves bytes in (`Some(true)`) or out (`Some(false)`).
fn direction(l: &Leaf) -> Option<bool> {
    l.end_op?.op().and_then(reads_bytes)
}

/// Whether leaves `a` and `b` end at the same call: operation, object and call stack.
fn same_call(graph: &Graph, a: &Leaf, b: &Leaf) -> bool {
    let (ta, tb) = (
        &graph.types[a.ty.index()].end,
        &graph.types[b.ty.index()].end,
    );
    a.end_op == b.end_op && a.end_obj == b.end_obj && ta.op == tb.op && ta.frames == tb.frames
}

/// Marks weak the program edge out of every reply followed, across merged cuts of which one is
/// a call (`calls`), by the same reply call. `uncut`: the leaves whose ending call the merge
/// will undo. Returns how many edges it weakened.
pub(super) fn weaken(
    graph: &Graph,
    edges: &mut [Edge],
    weak: &mut [bool],
    uncut: &AHashSet<u32>,
    calls: &AHashSet<u32>,
) -> usize {
    let mut found: AHashSet<u32> = AHashSet::new();
    for t in &graph.threads {
        let first = t.first_leaf.index();
        let range = first..first + t.leaves as usize;
        let mut read: AHashSet<u64> = AHashSet::new();
        for i in range.clone() {
            let l = &graph.leaves[i];
            let Some(ch) = channel(graph, l) else {
                continue;
            };
            match direction(l) {
                Some(true) => {
                    read.insert(ch);
                }
                Some(false) if read.contains(&ch) => {
                    if let Some(j) = next_remaining(i, range.end, uncut) {
                        let between = |k: usize| {
                            let m = &graph.leaves[k];
                            (
                                calls.contains(&(k as u32)),
                                direction(m) == Some(true) && channel(graph, m) == Some(ch),
                            )
                        };
                        let call = (i + 1..j).any(|k| between(k).0);
                        let reread = (i + 1..j).any(|k| between(k).1);
                        if call && !reread && same_call(graph, l, &graph.leaves[j]) {
                            found.insert(i as u32);
                        }
                    }
                }
                _ => {}
            }
        }
    }
    for &i in &found {
        weak[i as usize] = true;
    }
    for e in edges.iter_mut() {
        let from = e.from.get();
        if e.kind == EdgeKind::Program && found.contains(&from) && e.to.get() == from + 1 {
            e.kind = EdgeKind::ProgramWeak;
        }
    }
    found.len()
}

/// The thread's next cut after leaf `i` that the merge leaves (the first leaf after `i`, before
/// `end`, whose predecessor's cut is not undone), when at least one cut between is undone.
fn next_remaining(i: usize, end: usize, uncut: &AHashSet<u32>) -> Option<usize> {
    let mut j = i + 1;
    while j < end && uncut.contains(&(j as u32)) {
        j += 1;
    }
    (j > i + 1 && j < end).then_some(j)
}
