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
//! Lock traffic alone between two writes from one site (an interpreter's global lock taken and
//! dropped between a reply's header and its body) does not say that a second request was
//! served: the writes stay one reply, as they were recorded, unless the work between them
//! begins as the turn's first request did. The first call past any wait after the reply is
//! then the same call (operation, object, call stack) as the first one past any wait after the
//! turn's read: the thread began the same work again, for a request it had already read (a
//! server that serves each request under a global lock, taking it from one place). A reply's
//! header and body are different work: CPython takes its lock back after a send at another
//! call stack than after a receive. Waits are passed over because whether a lock was
//! contended is timing.

use ahash::{AHashMap, AHashSet};
use scalpel_model::format::Op;
use scalpel_model::graph::{Edge, EdgeKind, Graph, Leaf};
use scalpel_model::object::Channel;

use crate::event::reads_bytes;
use crate::weak::dequeue_like;

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
        // Per connection read: the first call of the work after its latest read, when that
        // call was merged into the leaf ending at the turn's first reply.
        let mut read: AHashMap<u64, Option<usize>> = AHashMap::new();
        for i in range.clone() {
            let l = &graph.leaves[i];
            let Some(ch) = channel(graph, l) else {
                continue;
            };
            match direction(l) {
                Some(true) => {
                    read.insert(ch, first_work(graph, i, range.end, passed));
                }
                Some(false) if read.contains_key(&ch) => {
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
                        let opener = read.get(&ch).copied().flatten();
                        let again =
                            opener
                                .zip(first_work(graph, i, j, passed))
                                .is_some_and(|(a, b)| {
                                    same_call(graph, &graph.leaves[a], &graph.leaves[b])
                                });
                        if (call || again) && !reread && same_call(graph, l, &graph.leaves[j]) {
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

/// The first leaf after leaf `i`, before `end`, among the cuts `passed` says to pass, whose
/// ending call is not a wait (a wait happens or not by timing).
fn first_work(graph: &Graph, i: usize, end: usize, passed: impl Fn(u32) -> bool) -> Option<usize> {
    (i + 1..end).take_while(|&k| passed(k as u32)).find(|&k| {
        !graph.leaves[k]
            .end_op
            .and_then(|o| o.op())
            .is_some_and(blocks)
    })
}

/// Whether a call waits for another thread: a condition, semaphore or futex wait (a wait that
/// takes work, but not a read).
fn blocks(op: Op) -> bool {
    dequeue_like(op) && reads_bytes(op) != Some(true)
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

#[cfg(test)]
mod tests {
    use super::*;
    use scalpel_model::format::{ChanKind, ObjKind};
    use scalpel_model::graph::{LeafTypeId, ObjId};
    use scalpel_model::object::{ChannelKind, ObjectInfo, ObjectKind};
    use scalpel_model::read::Endpoint;
    use scalpel_model::testgraph::GraphBuilder;

    /// A connection (object 0, read and written) and a lock's condition (object 1).
    fn objects() -> Vec<ObjectInfo> {
        let stream = ObjectInfo {
            kind: ObjectKind::from(ObjKind::Stream),
            key: 1,
            shared: false,
            channel: Some(Channel::Stream {
                kind: ChannelKind::from(ChanKind::Tcp),
                key: 7,
                sender: Endpoint::None,
                receiver: Endpoint::None,
            }),
            desc: String::new(),
        };
        let cond = ObjectInfo {
            kind: ObjectKind::from(ObjKind::Cond),
            key: 2,
            shared: false,
            channel: None,
            desc: String::new(),
        };
        vec![stream, cond]
    }

    /// One thread runs `calls` (each a leaf ending at that call, the name standing for its call
    /// stack); every signal and wait is lock traffic the merge undoes. Returns the leaves whose
    /// program edge out the rule weakened.
    fn weakened(calls: &[(Op, &str)]) -> Vec<usize> {
        let mut b = GraphBuilder::new();
        let th = b.thread("server");
        let mut ty: Vec<(String, LeafTypeId)> = Vec::new();
        for (i, &(op, site)) in calls.iter().enumerate() {
            let t = match ty.iter().find(|(s, _)| s == site) {
                Some(&(_, t)) => t,
                None => {
                    let t = b.leaf_type(site, Some(op));
                    ty.push((site.to_owned(), t));
                    t
                }
            };
            b.leaf(th, t, 1_000 * i as u64, 1_000 * i as u64 + 10);
        }
        b.program_order(|_, _| Some(EdgeKind::Program));
        let mut g = b.build();
        g.objects = objects();
        for (l, &(op, _)) in g.leaves.iter_mut().zip(calls) {
            l.end_op = Some(op.into());
            l.end_obj = Some(ObjId::new(u32::from(!matches!(op, Op::Read | Op::Write))));
        }
        for t in &mut g.types {
            t.end.frames = vec![t.name.clone()];
        }
        let uncut: AHashSet<u32> = calls
            .iter()
            .enumerate()
            .filter(|(_, (op, _))| !matches!(op, Op::Read | Op::Write))
            .map(|(i, _)| i as u32)
            .collect();
        let mut edges = std::mem::take(&mut g.edges);
        let mut weak = vec![false; g.leaves.len()];
        weaken(&g, &mut edges, &mut weak, &uncut, &AHashSet::new());
        (0..weak.len()).filter(|&i| weak[i]).collect()
    }

    /// A server that serves each pipelined request under a global lock: after the read and
    /// after each reply it takes the lock from the same place (a wait first when contended).
    #[test]
    fn the_same_work_begun_again_after_a_reply_is_the_next_pipelined_request() {
        use Op::*;
        let calls = [
            (Read, "fill"),
            (CondSignal, "take"),
            (CondSignal, "drop"),
            (Write, "answer"),
            (CondTimedwait, "take-wait"),
            (CondSignal, "take"),
            (CondSignal, "drop"),
            (Write, "answer"),
            (CondSignal, "take"),
            (CondSignal, "drop"),
            (Write, "answer"),
            (Read, "fill"),
        ];
        assert_eq!(weakened(&calls), [3, 7]);
    }

    /// A reply written as a header and a body from one call site, the interpreter's lock taken
    /// back after the send at another place than after the receive: one reply.
    #[test]
    fn a_reply_in_parts_with_other_work_between_stays_one_reply() {
        use Op::*;
        let calls = [
            (Read, "recv"),
            (CondSignal, "take-after-recv"),
            (CondSignal, "drop"),
            (Write, "sendall"),
            (CondSignal, "take-after-send"),
            (CondSignal, "drop"),
            (Write, "sendall"),
            (Read, "recv"),
        ];
        assert!(weakened(&calls).is_empty());
    }
}
