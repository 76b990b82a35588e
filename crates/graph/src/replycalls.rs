//! Pipelined replies with a call between them: a reply, then the next request's call into a
//! service or through a backend, then the next reply from the same call site.
//!
//! `super::replies` splits two pipelined replies where the thread's next cut after a reply is
//! the same write: the second answers a request read with the first. A pipelined request that
//! calls out before its reply (it waits for a group commit, it asks a backend) puts cuts between
//! the two writes, and the rule did not see them as neighbours: the next request's call joined
//! the request before it. Those cuts are the next request's calls: into a service or a helper
//! (which the stages below turn into waits inside the work, `service`, `calls`), or through a
//! peer outside the trace (`call` edges, `outbound`). So a reply whose thread's next remaining
//! cut, past merged cuts and the cuts of calls through a peer, is a write from the same call on
//! the same connection, with at least one call between, ends a request, as two neighbouring
//! replies do.
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

/// Marks weak the program edge out of every reply followed, across calls (`calls`: merged calls
/// into a service or a helper; and calls through a peer, from the `call` edges) and other
/// merged cuts (`uncut`: the leaves whose ending call the merge will undo), by the same reply
/// call. Returns how many edges it weakened.
pub(super) fn weaken(
    graph: &Graph,
    edges: &mut [Edge],
    weak: &mut [bool],
    uncut: &AHashSet<u32>,
    calls: &AHashSet<u32>,
) -> usize {
    // Calls through a peer: the leaves a `call` edge leaves, and every cut on its connection.
    let mut call_chans: AHashSet<u64> = AHashSet::new();
    let mut calls = calls.clone();
    for e in edges.iter().filter(|e| e.kind == EdgeKind::Call) {
        calls.insert(e.from.get());
        let chan = e
            .obj
            .and_then(|o| graph.objects.get(o.index())?.channel.as_ref());
        if let Some(Channel::Stream { key, .. }) = chan {
            call_chans.insert(*key);
        }
    }
    for (i, l) in graph.leaves.iter().enumerate() {
        if channel(graph, l).is_some_and(|c| call_chans.contains(&c)) {
            calls.insert(i as u32);
        }
    }
    let passed = |k: u32| uncut.contains(&k) || calls.contains(&k);
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
                    if let Some(j) = next_remaining(i, range.end, passed) {
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

/// The thread's next cut after leaf `i`, before `end`, past the cuts `passed` says to pass,
/// when there is at least one such cut between.
fn next_remaining(i: usize, end: usize, passed: impl Fn(u32) -> bool) -> Option<usize> {
    let mut j = i + 1;
    while j < end && passed(j as u32) {
        j += 1;
    }
    (j > i + 1 && j < end).then_some(j)
}
