//! Shared work is a wait, not a join.
//!
//! A service thread's leaf that wakes several threads in the middle of their own work (a group
//! commit's flusher broadcasting that the log holds everything asked so far, a cache filler
//! answering every thread that waited for one key) serves several requests at once. Its edges
//! joined those requests, and the requests that called into it, into one occurrence, and every
//! combination of them became a task type. So a leaf type is a *service* when one of its leaves
//! wakes two or more other threads each of which goes on with the work it was doing (the
//! program edge into the woken leaf is strong: the wait was not where the thread fetches new
//! work). The objects it answers on and is called on, on its thread, are the service's: every
//! wake-up from that thread on an answer object into a thread that goes on with its work
//! becomes a wait of the leaf that waited, with the waking leaf as its holder, as a lock's
//! contended acquisition is; every wake-up into that thread on a call object (the call into the
//! service) is dropped. The service's own leaves stay a task of their own; the callers' waits
//! stay visible to the rollups and the wait-for graph through the lock waits.
//!
//! A pool's workers are woken where they fetch new work (weak program order), so a dispatcher
//! that wakes several workers is no service: its hand-offs stay edges.

use ahash::AHashSet;
use scalpel_model::graph::{Edge, EdgeKind, Graph, LockWait};

use super::waits::{continues, wait_of};

/// What [`shared_work`] found.
#[derive(Default)]
pub(super) struct Service {
    /// The callers' waits for a service leaf.
    pub waits: Vec<LockWait>,
    /// Leaves that ended at a call into a service (their wake-up edge was dropped).
    pub callers: Vec<u32>,
}

/// The kinds of edge a wake-up makes.
pub(super) fn is_wakeup(k: EdgeKind) -> bool {
    matches!(
        k,
        EdgeKind::Cond | EdgeKind::Sem | EdgeKind::Futex | EdgeKind::Eventfd | EdgeKind::Queue
    )
}

/// Finds the service leaf types and turns their wake-ups into waits (see the module docs).
/// `weak[i]`: the program edge out of leaf `i` is weak.
pub(super) fn shared_work(graph: &Graph, edges: &mut Vec<Edge>, weak: &[bool]) -> Service {
    let leaves = &graph.leaves;
    let n = leaves.len();
    let continuing = |to: usize| continues(graph, weak, to);
    let other_thread = |a: usize, b: usize| a < n && b < n && leaves[a].thread != leaves[b].thread;
    // Per waking leaf, the distinct threads it woke that went on with their work.
    let mut woke: Vec<(u32, u32)> = edges
        .iter()
        .filter(|e| is_wakeup(e.kind))
        .map(|e| (e.from.index(), e.to.index()))
        .filter(|&(f, t)| other_thread(f, t) && continuing(t))
        .map(|(f, t)| (f as u32, leaves[t].thread.get()))
        .collect();
    woke.sort_unstable();
    woke.dedup();
    let mut services: AHashSet<u32> = AHashSet::new();
    for group in woke.chunk_by(|a, b| a.0 == b.0) {
        if group.len() >= 2 {
            services.insert(leaves[group[0].0 as usize].ty.get());
        }
    }
    let mut out = Service::default();
    if services.is_empty() {
        return out;
    }
    // The service's channels: the (thread, object) pairs its leaves answered on and were
    // called on. Every wake-up on them is the service's, whichever of the thread's leaves (a
    // flusher that found more to flush without waiting is another leaf type) it met.
    let service = |l: usize| l < n && services.contains(&leaves[l].ty.get());
    let mut answers: AHashSet<(u32, u32)> = AHashSet::new();
    let mut calls: AHashSet<(u32, u32)> = AHashSet::new();
    for e in edges.iter().filter(|e| is_wakeup(e.kind)) {
        let (f, t) = (e.from.index(), e.to.index());
        let Some(obj) = e.obj.filter(|_| other_thread(f, t)) else {
            continue;
        };
        if service(f) && continuing(t) {
            answers.insert((leaves[f].thread.get(), obj.get()));
        } else if service(t) {
            calls.insert((leaves[t].thread.get(), obj.get()));
        }
    }
    edges.retain(|e| {
        let (f, t) = (e.from.index(), e.to.index());
        let Some(obj) = e.obj.filter(|_| is_wakeup(e.kind) && other_thread(f, t)) else {
            return true;
        };
        if continuing(t) && answers.contains(&(leaves[f].thread.get(), obj.get())) {
            out.waits.extend(wait_of(graph, f, t, obj));
            return false;
        }
        if calls.contains(&(leaves[t].thread.get(), obj.get())) {
            out.callers.push(f as u32);
            return false;
        }
        true
    });
    // A call that woke nobody (the service was busy and found the work when it looked again)
    // drew no edge, but is the same call: every leaf of another thread that ends on a call
    // object is a caller.
    let call_objs: AHashSet<u32> = calls.iter().map(|&(_, o)| o).collect();
    let serving: AHashSet<u32> = calls.iter().map(|&(t, _)| t).collect();
    for (i, l) in leaves.iter().enumerate() {
        let on_call = l.end_obj.is_some_and(|o| call_objs.contains(&o.get()));
        if on_call && !serving.contains(&l.thread.get()) {
            out.callers.push(i as u32);
        }
    }
    out
}

/// The leaves whose ending call is a wait inside its work, now that the edges are known: the
/// waiter of each of `waits` (its wake-up was a wait, not a cause) and each of `callers` (a
/// service's), when no other causal edge meets that call (into the leaf after a wait, out of a
/// caller's leaf), and each of `helper_calls` (whose call edge moves to the merged leaf).
pub(super) fn uncut(
    graph: &Graph,
    edges: &[Edge],
    waits: &[LockWait],
    callers: &[u32],
    helper_calls: &[u32],
) -> Vec<u32> {
    let same_thread = |a: usize| {
        a + 1 < graph.leaves.len() && graph.leaves[a].thread == graph.leaves[a + 1].thread
    };
    let ended_at =
        |w: &LockWait| graph.leaves.get(w.waiter.index()).and_then(|l| l.end_obj) == Some(w.obj);
    // The candidates first, then one pass over the edges for those alone (a set of every
    // edge's ends cost a fifth more peak memory on a 10^6-leaf trace).
    let waiters: AHashSet<u32> = waits
        .iter()
        .filter(|w| ended_at(w))
        .map(|w| w.waiter.get())
        .filter(|&w| same_thread(w as usize))
        .collect();
    let signallers: AHashSet<u32> = callers
        .iter()
        .copied()
        .filter(|&c| same_thread(c as usize))
        .collect();
    let causal = |k: EdgeKind| !matches!(k, EdgeKind::Program | EdgeKind::ProgramWeak);
    let mut blocked: AHashSet<u32> = AHashSet::new();
    for e in edges.iter().filter(|e| causal(e.kind)) {
        let (f, t) = (e.from.get(), e.to.get());
        if t > 0 && waiters.contains(&(t - 1)) {
            blocked.insert(t - 1);
        }
        if signallers.contains(&f) {
            blocked.insert(f);
        }
    }
    let mut v: Vec<u32> = waiters
        .into_iter()
        .chain(signallers)
        .filter(|l| !blocked.contains(l))
        .chain(
            helper_calls
                .iter()
                .copied()
                .filter(|&c| same_thread(c as usize)),
        )
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}
