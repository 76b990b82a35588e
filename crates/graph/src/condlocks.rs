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
//! The rule: a condition that three or more threads use, whose woken threads (the targets of its
//! `cond` and `queue` edges) are two or more and all signal it too (the sources), is a lock: in
//! a queue the takers do not put. Two woken are enough because which of a lock's users ever had
//! to wait for it is timing (a generated interpreter lock of four threads, only two of which
//! waited in one run, corpus case `gen-lock-two-waited`). A thread may only signal (one that lets the lock go and never had to wait for it: a
//! Python server's main thread). Between two threads the same pattern is a dialogue (each wakes
//! the other for its turn, as a ping-pong does), and stays edges. A lock's edges become waits of
//! the leaf that waited, with the leaf that signalled as the holder, as a mutex's contended
//! acquisitions are; the waits and the signals are then no cuts (`super::merge`). A barrier
//! (each thread waits, the last to arrive wakes the others) is the same: each thread's work goes
//! on after it, caused by none of the others.
//!
//! A condition that is only ever signalled while such a lock's mutex is held is the lock's
//! bookkeeping, and its signals no cuts, when no edge crossed it anywhere in the trace (it
//! handed nothing over), or when every thread it woke signals it too: then it is part of the
//! lock, and its edges are waits as the lock's are. CPython's GIL signals its switch condition
//! at every take; a thread asked to let the GIL go waits on it until another thread has taken
//! the GIL (a forced switch), a wait for the lock's hand-over. One forced switch in a run
//! used to make every take's signal a cut (7,722 of them in one recording of a Python server).
//! A queue whose condition is signalled under the same mutex is not: its takers do not put.

use ahash::{AHashMap, AHashSet};
use scalpel_model::format::Op;
use scalpel_model::graph::{Edge, EdgeKind, Graph, LockWait};

use super::queues::{is_lock, CondMutexes};
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
        .filter(|(_, (by, on))| is_lock(on, by))
        .map(|(&o, _)| o)
        .collect();
    // The lock's bookkeeping conditions: every signal made under one of its mutexes (see the
    // module docs for when one is part of the lock).
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

#[cfg(test)]
mod tests {
    use scalpel_model::format::Op;
    use scalpel_model::graph::{Edge, EdgeKind, Leaf, NodeId, ObjId};
    use scalpel_model::testgraph::GraphBuilder;

    use super::super::queues::CondMutexes;
    use super::cond_locks;

    const MUTEX: u32 = 0;
    const TOKEN: u32 = 1;
    const SWITCH: u32 = 2;
    const QUEUE: u32 = 3;

    fn cond_edge(from: u32, to: u32, obj: u32) -> Edge {
        Edge {
            from: NodeId::new(from),
            to: NodeId::new(to),
            kind: EdgeKind::Cond,
            obj: Some(ObjId::new(obj)),
        }
    }

    /// Three threads pass a token (a condition all three signal and wait on) under `MUTEX`;
    /// each take signals `SWITCH` under `MUTEX`, and once thread 0 waited on `SWITCH` until
    /// thread 1 had taken the token (a forced switch). Thread 1 also puts an item on `QUEUE`,
    /// signalled under `MUTEX` too, which thread 2 waits for and never signals. The switch's
    /// edge becomes a wait and its signals no cuts; the queue's edge stays.
    #[test]
    fn a_forced_switch_is_part_of_the_lock_and_a_queue_under_its_mutex_is_not() {
        let mut b = GraphBuilder::new();
        let ty = b.leaf_type("step", None);
        let th: Vec<_> = (0..3).map(|i| b.thread(&format!("t{i}"))).collect();
        // Per thread: (end op, object) of each leaf, in order.
        let plan: [&[(Op, u32)]; 3] = [
            &[
                (Op::CondSignal, SWITCH),
                (Op::CondWait, TOKEN),
                (Op::CondWait, SWITCH),
                (Op::CondSignal, TOKEN),
            ],
            &[
                (Op::CondWait, TOKEN),
                (Op::CondSignal, SWITCH),
                (Op::CondSignal, QUEUE),
                (Op::CondSignal, TOKEN),
            ],
            &[
                (Op::CondWait, TOKEN),
                (Op::CondSignal, SWITCH),
                (Op::CondWait, QUEUE),
                (Op::CondSignal, TOKEN),
            ],
        ];
        for (t, steps) in plan.iter().enumerate() {
            for (i, &(op, obj)) in steps.iter().enumerate() {
                let s = 1_000 * i as u64 + 100 * t as u64;
                let mut l = Leaf::new(th[t], ty, s, s + 10);
                l.end_op = Some(op.into());
                l.end_obj = Some(ObjId::new(obj));
                b.push(th[t], l);
            }
        }
        let g = b.build();
        // Leaves: t0 0..4, t1 4..8, t2 8..12. The token woke each thread once; thread 1's
        // take (leaf 5) ended thread 0's switch wait (leaf 2); the queue woke thread 2.
        let mut edges = vec![
            cond_edge(3, 5, TOKEN),
            cond_edge(7, 9, TOKEN),
            cond_edge(11, 2, TOKEN),
            cond_edge(5, 3, SWITCH),
            cond_edge(6, 11, QUEUE),
        ];
        let mut m = CondMutexes::default();
        for (c, n) in [(SWITCH, 3), (QUEUE, 1), (TOKEN, 3)] {
            m.signals.insert(c, n);
            m.held.insert((c, MUTEX), n);
        }
        m.waited_with.entry(TOKEN).or_default().insert(MUTEX);
        m.waited_with.entry(QUEUE).or_default().insert(MUTEX);
        let found = cond_locks(&g, &mut edges, &m);
        assert_eq!(edges, vec![cond_edge(6, 11, QUEUE)]);
        assert_eq!(found.waits.len(), 4);
        let mut signals = found.signals.clone();
        signals.sort_unstable();
        // Every leaf ending at the token or the switch; none at the queue.
        assert_eq!(signals, vec![0, 1, 2, 3, 4, 5, 7, 8, 9, 11]);
    }

    /// Which conditions are locks by who was woken on them and who signalled them.
    #[test]
    fn a_lock_needs_three_users_and_every_one_woken_signalling() {
        use super::super::queues::is_lock;
        let set = |v: &[u32]| v.iter().copied().collect::<ahash::AHashSet<u32>>();
        // Four users of an interpreter lock, two of which ever waited for it: a lock.
        assert!(is_lock(&set(&[1, 3]), &set(&[1, 2, 3, 4])));
        assert!(is_lock(&set(&[1, 2, 3]), &set(&[1, 2, 3])));
        // Two threads waking each other in turn: a dialogue, not a lock.
        assert!(!is_lock(&set(&[1, 2]), &set(&[1, 2])));
        // A queue: its takers do not put.
        assert!(!is_lock(&set(&[3, 4]), &set(&[1, 2, 3])));
        assert!(!is_lock(&set(&[2, 3, 4]), &set(&[1])));
        // One thread woken by three: a hand-off to one consumer.
        assert!(!is_lock(&set(&[1]), &set(&[1, 2, 3])));
    }
}
