//! The causal edges between leaves: notifications matched per object, the passes that land
//! or drop them, program order, and the edges' final form.

use ahash::AHashMap;
use rayon::prelude::*;
use scalpel_model::format::{ChanKind, ObjKind};
use scalpel_model::graph::{
    merge_into, ChannelKind, Edge, EdgeKind, External, ExternalRole, Graph, NodeId, ObjId, ThreadId,
};

use crate::event::{KindOf, HAS_SEQ, HAS_X, NO_OBJ};
use crate::leaves::Bound;
use crate::notify::GroupOut;
use crate::weak::WeakOrder;
use crate::{notify, outbound, queues, ready, streams};

/// An edge to or from an external node: (leaf, the external is the source, object).
pub(crate) type ExtEdge = (u32, bool, u32);

/// Matches every object's cuts, in parallel over objects.
pub(crate) fn notification_edges(
    mut bounds: Vec<Bound>,
    kinds: &[KindOf],
    channels: &[u64],
    reports: &ready::Reports,
    closed: &[(u64, u64)],
    graph: &mut Graph,
) -> (Vec<Edge>, Vec<ExtEdge>) {
    let mut conns = GroupOut::default();
    streams::connections(&bounds, &mut conns);
    streams::handoffs(&bounds, channels, graph, &mut conns);
    outbound::calls(&bounds, closed, graph, &mut conns);
    // A byte stream's transfers carry an offset and, from agents since issue 25, no sequence
    // number: `streams::stream` orders them by offset and time.
    bounds.retain(|b| b.obj != NO_OBJ && b.flags & (HAS_SEQ | HAS_X) != 0);
    bounds.par_sort_unstable_by_key(|b| (b.obj, b.seq, b.leaf));
    let groups: Vec<&[Bound]> = bounds.chunk_by(|a, b| a.obj == b.obj).collect();
    let leaves = &graph.leaves;
    let outs: Vec<GroupOut> = groups
        .par_iter()
        .map(|g| {
            let o = g[0].obj;
            let mut out = GroupOut::default();
            let (kind, chan) = kinds.get(o as usize).map_or((None, None), |&(k, c)| {
                (k.known(), c.and_then(ChannelKind::known))
            });
            match (kind, chan) {
                (Some(ObjKind::Cond), _) => notify::cond(g, o, leaves, &mut out),
                (Some(ObjKind::Sem), _) => notify::sem(g, o, &mut out),
                (Some(ObjKind::Futex), _) => notify::futex(g, o, leaves, &mut out),
                (Some(ObjKind::Thread), _) => notify::join(g, o, &mut out),
                (Some(ObjKind::Spawn), _) => notify::spawn(g, o, &mut out),
                (Some(ObjKind::Stream), Some(ChanKind::Eventfd)) => {
                    streams::eventfd(g, o, leaves, reports, &mut out)
                }
                (Some(ObjKind::Stream), chan) => {
                    streams::stream(g, o, chan, leaves, reports, &mut out)
                }
                _ => {}
            }
            out
        })
        .collect();
    let mut edges = Vec::new();
    let mut ext = Vec::new();
    let mut peers = Vec::new();
    for out in std::iter::once(conns).chain(outs) {
        edges.extend(out.edges);
        ext.extend(out.external);
        peers.extend(out.peers);
        graph.unmatched.add(&out.unmatched);
    }
    graph.peer_transfers = crate::peers::keep(graph, channels, peers);
    (edges, ext)
}

/// A hand-off lands where the taking thread was told: when the accepting leaf also wrote to a
/// descriptor that the thread that first used the connection then read or was told of
/// (memcached writes the worker's notify eventfd after it queues the connection), the hand-off
/// goes to the leaf that notification started, not to the first use. The first request may come
/// much later (the client's delay), and counting that wait as the connection's queueing would
/// blame the worker for it. A condition variable's wakeup is left alone: a worker pool that
/// takes connections from a condvar queue (Apache, the threadpool sample) pops and serves in one
/// go, and its hand-off already marks where it went back for new work.
pub(crate) fn land_handoffs(graph: &Graph, edges: &mut [Edge]) {
    if !edges.iter().any(|e| e.kind == EdgeKind::Handoff) {
        return;
    }
    let mut told: AHashMap<NodeId, Vec<NodeId>> = AHashMap::new();
    for e in edges.iter() {
        let wakes = matches!(
            e.kind,
            EdgeKind::Stream | EdgeKind::Eventfd | EdgeKind::Ready
        );
        if wakes {
            told.entry(e.from).or_default().push(e.to);
        }
    }
    for e in edges.iter_mut().filter(|e| e.kind == EdgeKind::Handoff) {
        let Some(to) = graph.leaves.get(e.to.index()) else {
            continue;
        };
        // The latest notified leaf of the same thread at or before the first use.
        let landing = told.get(&e.from).and_then(|v| {
            v.iter()
                .filter(|n| {
                    n.get() <= e.to.get()
                        && graph
                            .leaves
                            .get(n.index())
                            .is_some_and(|l| l.thread == to.thread)
                })
                .max()
                .copied()
        });
        if let Some(n) = landing {
            e.to = n;
        }
    }
}

/// A signal that went with a hand-off (the same leaf pushed a connection that another thread
/// took) but woke a third thread, which only waited again on the same condition, did no work:
/// the hand-off edge shows where the work went. Such cond edges are dropped.
pub(crate) fn drop_stolen_wakeups(graph: &Graph, edges: &mut Vec<Edge>) {
    let mut handed: AHashMap<NodeId, Vec<NodeId>> = AHashMap::new();
    for e in edges.iter().filter(|e| e.kind == EdgeKind::Handoff) {
        handed.entry(e.from).or_default().push(e.to);
    }
    if handed.is_empty() {
        return;
    }
    edges.retain(|e| {
        if e.kind != EdgeKind::Cond {
            return true;
        }
        let Some(takers) = handed.get(&e.from) else {
            return true;
        };
        !queues::waits_again(graph, e) || takers.contains(&e.to)
    });
}

/// Weak program order with the hand-offs': where a thread took a handed-off connection is where
/// it went back for new work, so the program edge into that leaf is weak, like one out of a
/// wait for work. The loop-head guess is dropped on a thread that takes hand-offs but never
/// right after a wait at its guessed head: the guess missed its loop. A threadpool worker that
/// found a connection queued at start never waited before it, so its first repeated wait was
/// the read of a request header, and every request would be cut from its connection. (An
/// Apache worker keeps its guess: it takes hand-offs right after its queue wait, and the same
/// wait also brings it work that is no new connection.)
///
/// A take from a queue is new work whether or not the taker waited: one that found its item
/// gets a `queue` edge into the leaf it took the lock in, and that leaf's program edge in is
/// weak; one that waited is woken (`woken`: the leaf its take began in and the leaf whose
/// `cond` edge brought the item, see `queues::woken_takes`), and unless a program edge from
/// the one to the other, or into the first, is weak already (the loop head's guess, or a
/// semaphore the thread waited on before it took the lock; not one the merge undoes, `merged`),
/// the edge out of its wait is made weak, as at a loop head. The guess alone missed it where
/// the thread's first repeated wait was elsewhere (a pipeline stage that first waited for room
/// in the next stage's queue). And such takes test the guess as hand-offs do: when none began
/// or waited at it, it is dropped (a stage whose first repeated wait was for a group commit,
/// inside the work).
///
/// `earlier`, in a trace read in windows: the verdicts of the windows before, by thread (pid,
/// tid). A thread takes its hand-offs where its connection begins, which may be a window before
/// the one that serves most of it; there the guess is tested, and the verdict holds after (with
/// this window's evidence: a guess any window found taken at stays).
pub(crate) fn handoff_weak(
    graph: &Graph,
    edges: &[Edge],
    order: WeakOrder,
    (woken, merged): (&[(u32, u32)], &[bool]),
    earlier: Option<&mut AHashMap<(u32, u32), bool>>,
) -> Vec<bool> {
    let WeakOrder { mut weak, head, .. } = order;
    // Per thread that takes hand-offs or waited for items: whether one came right after a wait
    // at its guessed head.
    let mut takes: AHashMap<ThreadId, bool> = AHashMap::new();
    let mut into = Vec::new();
    for e in edges.iter().filter(|e| e.kind == EdgeKind::Queue) {
        // A take from a queue is where its thread went back for new work, like a hand-off.
        let to = e.to.index();
        if to > 0 && graph.leaves[to - 1].thread == graph.leaves[to].thread {
            into.push(to - 1);
        }
    }
    for e in edges.iter().filter(|e| e.kind == EdgeKind::Handoff) {
        let to = e.to.index();
        let thread = graph.leaves[to].thread;
        if to > 0 && graph.leaves[to - 1].thread == thread {
            *takes.entry(thread).or_insert(false) |= head.get(to - 1).copied().unwrap_or(false);
            into.push(to - 1);
        }
    }
    // Likewise a thread whose takes from a queue waited: the guess missed when none of those
    // takes began at it or waited at it (a pipeline stage's first repeated wait was a group
    // commit's, inside the work).
    for &(began, woke) in woken {
        let (from, woke) = (take_from(graph, began), woke as usize);
        let at_head = (from..woke).any(|i| head.get(i).copied().unwrap_or(false));
        *takes.entry(graph.leaves[woke].thread).or_insert(false) |= at_head;
    }
    if let Some(earlier) = earlier {
        for (i, t) in graph.threads.iter().enumerate() {
            let (id, key) = (ThreadId::new(i as u32), (t.pid, t.tid));
            let verdict = match (takes.get(&id), earlier.get(&key)) {
                (None, None) => continue,
                (a, b) => a.copied().unwrap_or(false) || b.copied().unwrap_or(false),
            };
            takes.insert(id, verdict);
            earlier.insert(key, verdict);
        }
    }
    for (i, w) in weak.iter_mut().enumerate() {
        let missed = takes.get(&graph.leaves[i].thread) == Some(&false);
        if missed && head.get(i).copied().unwrap_or(false) {
            *w = false;
        }
    }
    for i in into {
        weak[i] = true;
    }
    for &(began, woke) in woken {
        let (from, woke) = (take_from(graph, began), woke as usize);
        // A leaf the merge joins to the next keeps no cut, so no weak edge either.
        let cut = |i: usize| weak[i] && !merged.get(i).copied().unwrap_or(false);
        if woke > began as usize && !(from..woke).any(cut) {
            weak[woke - 1] = true;
        }
    }
    weak
}

/// The first leaf whose program edge out lies on a take that began in leaf `began`: the one
/// before it on its thread (its edge in), or `began` itself when it is its thread's first.
fn take_from(graph: &Graph, began: u32) -> usize {
    let began = began as usize;
    let thread = graph.leaves[began].thread;
    if began > 0 && graph.leaves[began - 1].thread == thread {
        began - 1
    } else {
        began
    }
}

/// Program order: each thread's leaves in sequence.
pub(crate) fn program_edges(graph: &Graph, weak: &[bool], edges: &mut Vec<Edge>) {
    for t in &graph.threads {
        for i in t.first_leaf.get()..(t.first_leaf.get() + t.leaves).saturating_sub(1) {
            let kind = if weak.get(i as usize).copied().unwrap_or(false) {
                EdgeKind::ProgramWeak
            } else {
                EdgeKind::Program
            };
            edges.push(Edge {
                from: NodeId::new(i),
                to: NodeId::new(i + 1),
                kind,
                obj: None,
            });
        }
    }
}

/// Numbers the external nodes after the leaves, adds their edges, sorts and dedups.
pub(crate) fn finish_edges(
    graph: &mut Graph,
    mut edges: Vec<Edge>,
    ext: Vec<ExtEdge>,
    kinds: &[KindOf],
) {
    let base = graph.leaves.len() as u32;
    // An external stands for a channel; an object index with no object is no channel.
    let ext: Vec<ExtEdge> = ext
        .into_iter()
        .filter(|&(_, _, o)| (o as usize) < graph.objects.len())
        .collect();
    let mut index: AHashMap<(bool, u32), u32> = AHashMap::new();
    let mut keys: Vec<(u32, bool)> = ext.iter().map(|&(_, src, o)| (o, src)).collect();
    keys.sort_unstable();
    keys.dedup();
    for (o, src) in keys {
        index.insert((src, o), graph.externals.len() as u32);
        graph.externals.push(External {
            role: if src {
                ExternalRole::Source
            } else {
                ExternalRole::Sink
            },
            obj: ObjId::new(o),
        });
    }
    for (leaf, src, o) in ext {
        let node = base + index[&(src, o)];
        let (from, to) = if src { (node, leaf) } else { (leaf, node) };
        edges.push(Edge {
            from: NodeId::new(from),
            to: NodeId::new(to),
            kind: kind_of_external(kinds, o),
            obj: Some(ObjId::new(o)),
        });
    }
    // Two thirds of the edges are program order, made thread by thread already sorted: only
    // the rest is taken out and sorted, then merged back from the end, in the same buffer.
    let mut other = Vec::new();
    edges.retain(|e| {
        let program = matches!(e.kind, EdgeKind::Program | EdgeKind::ProgramWeak);
        if !program {
            other.push(*e);
        }
        program
    });
    if edges.windows(2).any(|w| w[0] > w[1]) {
        edges.par_sort_unstable();
    }
    other.par_sort_unstable();
    merge_into(&mut edges, &other);
    edges.dedup();
    graph.edges = edges;
}

/// External edges take the kind of their object: connections for endpoints, eventfd for
/// eventfds, bytes otherwise.
fn kind_of_external(kinds: &[KindOf], o: u32) -> EdgeKind {
    let Some(&(kind, chan)) = kinds.get(o as usize) else {
        return EdgeKind::Stream;
    };
    match (kind.known(), chan.and_then(ChannelKind::known)) {
        (Some(ObjKind::Endpoint), _) => EdgeKind::Connect,
        (_, Some(ChanKind::Eventfd)) => EdgeKind::Eventfd,
        _ => EdgeKind::Stream,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use scalpel_model::testgraph::GraphBuilder;

    /// A stage thread: leaf 0 ends at its put into the next queue, leaf 1 at its wait on an empty
    /// queue, leaf 2 at the take the wait ended in. A loop thread's leaf 3 put the item.
    fn stage() -> Graph {
        let mut b = GraphBuilder::new();
        let t = b.leaf_type("x", None);
        let (s, l) = (b.thread("stage"), b.thread("loop"));
        for at in [0, 10, 20] {
            b.leaf(s, t, at, at + 5);
        }
        b.leaf(l, t, 12, 15);
        b.build()
    }

    fn order(weak: Vec<bool>) -> WeakOrder {
        let head = vec![false; weak.len()];
        WeakOrder {
            passed: head.clone(),
            weak,
            head,
            head_site: None,
        }
    }

    #[test]
    fn a_take_that_waited_begins_new_work_after_its_wait() {
        let g = stage();
        let weak = handoff_weak(
            &g,
            &[],
            order(vec![false; 4]),
            (&[(1, 2)], &[false; 4]),
            None,
        );
        assert_eq!(weak, vec![false, true, false, false]);
    }

    #[test]
    fn a_take_already_begun_as_new_work_gets_no_second_cut() {
        // The edge into the leaf the take began in is weak already (a semaphore waited on
        // before the lock, or the loop head's guess): the wait inside the take is no new cut.
        let g = stage();
        let weak = handoff_weak(
            &g,
            &[],
            order(vec![true, false, false, false]),
            (&[(1, 2)], &[false; 4]),
            None,
        );
        assert_eq!(weak, vec![true, false, false, false]);
        // Unless that cut is one the merge undoes (a wait for room in the next queue).
        let merged = [true, false, false, false];
        let weak = handoff_weak(
            &g,
            &[],
            order(vec![true, false, false, false]),
            (&[(1, 2)], &merged),
            None,
        );
        assert_eq!(weak, vec![true, true, false, false]);
    }

    #[test]
    fn a_guessed_head_no_waited_take_reached_is_dropped() {
        // A stage thread: leaf 1 ends at a wait for a group commit, the guessed head (its first
        // repeated wait); leaf 3 at a wait for its queue, which leaf 4 took an item in.
        let mut b = GraphBuilder::new();
        let t = b.leaf_type("x", None);
        let s = b.thread("stage");
        for at in [0, 10, 20, 30, 40] {
            b.leaf(s, t, at, at + 5);
        }
        let g = b.build();
        let guess = vec![false, true, false, false, false];
        let order = WeakOrder {
            weak: guess.clone(),
            head: guess,
            passed: vec![false; 5],
            head_site: None,
        };
        let weak = handoff_weak(&g, &[], order, (&[(3, 4)], &[false; 5]), None);
        assert_eq!(weak, vec![false, false, false, true, false]);
    }

    #[test]
    fn a_guess_an_earlier_window_dropped_stays_dropped() {
        // The same stage in a later window of its trace: no take in it, so nothing tests the
        // guess here; the window that held its takes dropped it.
        let mut b = GraphBuilder::new();
        let t = b.leaf_type("x", None);
        let s = b.thread("stage");
        for at in [0, 10, 20] {
            b.leaf(s, t, at, at + 5);
        }
        let g = b.build();
        let guess = || WeakOrder {
            weak: vec![false, true, false],
            head: vec![false, true, false],
            passed: vec![false; 3],
            head_site: None,
        };
        let none: (&[(u32, u32)], &[bool]) = (&[], &[false; 3]);
        assert_eq!(handoff_weak(&g, &[], guess(), none, None), guess().weak);
        let t = &g.threads[0];
        let mut earlier = AHashMap::from_iter([((t.pid, t.tid), false)]);
        let weak = handoff_weak(&g, &[], guess(), none, Some(&mut earlier));
        assert_eq!(weak, vec![false; 3]);
        // A window whose takes began at the guess keeps it, and so do the windows after.
        earlier.insert((t.pid, t.tid), true);
        assert_eq!(
            handoff_weak(&g, &[], guess(), none, Some(&mut earlier)),
            guess().weak
        );
    }
}
