//! A condition variable used as a lock is lock order, not cause.
//!
//! A lock built from a mutex and a condition (CPython's GIL, a home-made reader-writer lock, a
//! token passed among peers) hands the token over with a signal: the thread that lets it go
//! signals, a thread that wants it waits. Every thread that uses the condition does both, in
//! the middle of whatever it was doing, so its `cond` edges joined unrelated requests of every
//! thread into one occurrence (a Python server under load: 4,216 queue and 1,089 cond edges
//! between its request threads, 133 leaf types for 95% of the leaves). A queue's condition is
//! different: producers signal and consumers wait, two roles.
//!
//! The rule: a condition whose woken threads (the targets of its `cond` and `queue` edges) are
//! three or more and all signal it too (the sources) is a lock: in a queue the takers do not
//! put. A thread may only signal (one that lets the lock go and never had to wait for it: a
//! Python server's main thread). Between two threads the same pattern is a dialogue (each wakes
//! the other for its turn, as a ping-pong does), and stays edges. A lock's edges become waits of the leaf that waited, with the leaf that
//! signalled as the holder, as a mutex's contended acquisitions are; the waits and the signals
//! are then no cuts (`super::merge`). A barrier (each
//! thread waits, the last to arrive wakes the others) is the same: each thread's work goes on
//! after it, caused by none of the others. A signal on a condition that is only ever signalled
//! while such a lock's mutex is held, and that no edge crossed anywhere in the trace, is the
//! lock's bookkeeping and no cut either: it handed nothing over.

use ahash::{AHashMap, AHashSet};
use scalpel_model::format::Op;
use scalpel_model::graph::{Edge, EdgeKind, Graph, LockWait};

use super::queues::CondMutexes;
use super::waits::wait_of;

/// What [`cond_locks`] found.
#[derive(Default)]
pub(super) struct CondLocks {
    /// The waits for the lock.
    pub waits: Vec<LockWait>,
    /// Leaves that ended at a signal of such a condition (or of one nobody waited on), or at a
    /// wait on such a condition that no signal ended.
    pub signals: Vec<u32>,
}

/// Turns the edges of conditions used as locks into waits (see the module docs).
pub(super) fn cond_locks(graph: &Graph, edges: &mut Vec<Edge>, mutexes: &CondMutexes) -> CondLocks {
    let leaves = &graph.leaves;
    let thread = |l: usize| leaves.get(l).map(|x| x.thread.get());
    let is_cond = |e: &Edge| matches!(e.kind, EdgeKind::Cond | EdgeKind::Queue);
    // Per condition: the threads that signalled it and those that waited on it.
    let mut ends: AHashMap<u32, (AHashSet<u32>, AHashSet<u32>)> = AHashMap::new();
    for e in edges.iter().filter(|e| is_cond(e)) {
        let (Some(obj), Some(f), Some(t)) = (e.obj, thread(e.from.index()), thread(e.to.index()))
        else {
            continue;
        };
        let (by, on) = ends.entry(obj.get()).or_default();
        by.insert(f);
        on.insert(t);
    }
    let locks: AHashSet<u32> = ends
        .iter()
        .filter(|(_, (by, on))| on.len() >= 3 && on.is_subset(by))
        .map(|(&o, _)| o)
        .collect();
    // A signal on a lock's condition, or on one of its bookkeeping conditions, hands nothing
    // over. A condition signalled only while a lock condition's mutex is held is such
    // bookkeeping (CPython's GIL signals its switch condition, which nobody waits on unless a
    // switch is forced, at every take) when no edge ever crossed it, or when every thread it
    // woke signals it too: a thread that lets the lock go and waits until another has taken
    // it (a forced switch) waits for the lock's hand-over, as a waiter for the lock does.
    let lock_mutexes: AHashSet<u32> = locks
        .iter()
        .filter_map(|c| mutexes.waited_with.get(c))
        .flatten()
        .copied()
        .collect();
    let bookkeeping = |o: u32| {
        let n = mutexes.signals.get(&o).copied().unwrap_or(0);
        n > 0
            && lock_mutexes
                .iter()
                .any(|&m| mutexes.held.get(&(o, m)).copied().unwrap_or(0) >= n)
    };
    let signallers = signallers(graph, &ends);
    let part_of_lock: AHashSet<u32> = ends
        .iter()
        .filter(|&(o, (_, on))| {
            !locks.contains(o)
                && bookkeeping(*o)
                && signallers.get(o).is_some_and(|s| on.is_subset(s))
        })
        .map(|(&o, _)| o)
        .collect();
    let locks: AHashSet<u32> = locks.union(&part_of_lock).copied().collect();
    let mut out = CondLocks::default();
    edges.retain(|e| {
        let Some(obj) = e.obj.filter(|o| is_cond(e) && locks.contains(&o.get())) else {
            return true;
        };
        out.waits
            .extend(wait_of(graph, e.from.index(), e.to.index(), obj));
        false
    });
    let handed_nothing = |o: u32| locks.contains(&o) || (!ends.contains_key(&o) && bookkeeping(o));
    for (i, l) in leaves.iter().enumerate() {
        let op = l.end_op.and_then(|o| o.op());
        let signal = op.is_some_and(|o| matches!(o, Op::CondSignal | Op::CondBroadcast));
        // A wait for the lock that no signal ended (a timed wait that timed out and tried
        // again) is a wait for it all the same.
        let wait =
            op.is_some_and(|o| matches!(o, Op::CondWait | Op::CondTimedwait | Op::CondClockwait));
        let obj = l.end_obj.map(|o| o.get());
        let lock = obj.is_some_and(|o| locks.contains(&o));
        if (signal && obj.is_some_and(handed_nothing)) || (wait && lock) {
            out.signals.push(i as u32);
        }
    }
    out
}

/// The threads that signalled each condition some edge crossed, from the leaves that ended at
/// a signal: an edge's source is only the signal that woke someone.
fn signallers(
    graph: &Graph,
    ends: &AHashMap<u32, (AHashSet<u32>, AHashSet<u32>)>,
) -> AHashMap<u32, AHashSet<u32>> {
    let mut out: AHashMap<u32, AHashSet<u32>> = AHashMap::new();
    for l in &graph.leaves {
        let signal = l
            .end_op
            .and_then(|o| o.op())
            .is_some_and(|o| matches!(o, Op::CondSignal | Op::CondBroadcast));
        match l.end_obj.map(|o| o.get()) {
            Some(o) if signal && ends.contains_key(&o) => {
                out.entry(o).or_default().insert(l.thread.get());
            }
            _ => {}
        }
    }
    out
}
