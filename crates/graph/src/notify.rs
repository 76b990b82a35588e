//! Notification edges: who woke whom, matched per object by sequence number and time.
//!
//! Every object's cuts are taken in sequence-number order. A release's number is taken before
//! its call and an acquire's after its call returns, so everything that could have caused an
//! acquisition has a lower number than it.
//! - **cond**: a wait that returned 0 was woken by the earliest signal or broadcast issued after
//!   it began waiting (a signal wakes one thread that is already waiting; a signal made before
//!   the wait began cannot have woken it). A signal wakes one waiter, a broadcast all.
//! - **sem**: tokens are taken in order: the k-th successful wait takes the k-th post not yet
//!   taken. Waits left with no post took the initial value.
//! - **futex**: like cond, with each wake releasing at most as many waiters as it reported.
//!   A futex word whose every wait expects the value 2 is a lock (the "locked, with waiters"
//!   state of glibc's and Rust's futex mutexes) and gets no edges, as mutexes do not.
//! - **join**: the exit of the joined thread (the latest exit of that `pthread_t` before it).
//! - **create / fork**: the spawn object both sides name.

use std::collections::{BTreeMap, VecDeque};

use scalpel_model::format::Op;
use scalpel_model::graph::{
    Edge, EdgeKind, Leaf, LeafId, NodeId, ObjId, PeerOp, PeerTransfer, Unmatched,
};

use super::leaves::Bound;

/// What matching one object produced.
#[derive(Default)]
pub(super) struct GroupOut {
    /// Edges, with external nodes numbered by `(role, obj)` until they are placed.
    pub edges: Vec<Edge>,
    /// Edges to and from external nodes: (leaf, external is the source, object).
    pub external: Vec<(u32, bool, u32)>,
    /// Of those, the transfers another machine's trace may hold the other half of (a stream's
    /// with connection key 0, filled in and kept or not by [`crate::peers::keep`]).
    pub peers: Vec<PeerTransfer>,
    /// Counts of what did not pair up.
    pub unmatched: Unmatched,
}

impl GroupOut {
    /// Adds an edge through `obj`.
    pub(super) fn edge(&mut self, from: u32, to: u32, kind: EdgeKind, obj: u32) {
        self.edges.push(Edge {
            from: NodeId::new(from),
            to: NodeId::new(to),
            kind,
            obj: Some(ObjId::new(obj)),
        });
    }

    /// Notes a transfer whose other end is outside the trace.
    pub(super) fn peer(&mut self, leaf: u32, obj: u32, op: PeerOp, at: (u64, u64, u64)) {
        let (connection, offset, len) = at;
        self.peers.push(PeerTransfer {
            leaf: LeafId::new(leaf),
            obj: (obj != crate::event::NO_OBJ).then(|| ObjId::new(obj)),
            op,
            connection,
            offset,
            len,
        });
    }
}

fn op(b: &Bound) -> Option<Op> {
    b.op.op()
}

/// When the acquire `b` began waiting: the entry of its call, which ends the leaf before the
/// one it starts on its thread. Unknown (0: any release may be its waker) when that leaf is
/// not in the graph: the wait began before a window did, and the leaf before in the table is
/// another thread's.
fn wait_began(b: &Bound, leaves: &[Leaf]) -> u64 {
    let at = b.leaf as usize;
    let (Some(before), Some(this)) = (
        at.checked_sub(1).and_then(|i| leaves.get(i)),
        leaves.get(at),
    ) else {
        return 0;
    };
    if before.thread == this.thread {
        before.end_ns
    } else {
        0
    }
}

/// When the release `b` was issued: the entry of its call, which ends its leaf.
fn issued(b: &Bound, leaves: &[Leaf]) -> u64 {
    leaves.get(b.leaf as usize).map_or(0, |l| l.end_ns)
}

/// Condition variables. `group` holds one cond's cuts in sequence order.
pub(super) fn cond(group: &[Bound], obj: u32, leaves: &[Leaf], out: &mut GroupOut) {
    let mut signals: BTreeMap<(u64, u64), u32> = BTreeMap::new();
    let mut broadcasts: BTreeMap<(u64, u64), u32> = BTreeMap::new();
    for b in group {
        match op(b) {
            Some(Op::CondSignal) => {
                signals.insert((issued(b, leaves), b.seq), b.leaf);
            }
            Some(Op::CondBroadcast) => {
                broadcasts.insert((issued(b, leaves), b.seq), b.leaf);
            }
            Some(Op::CondWait | Op::CondTimedwait | Op::CondClockwait) if b.res == 0 => {
                let began = (wait_began(b, leaves), 0);
                let s = signals.range(began..).next().map(|(k, v)| (*k, *v));
                let c = broadcasts.range(began..).next().map(|(k, v)| (*k, *v));
                let from = match (s, c) {
                    (Some(s), Some(c)) if c.0 < s.0 => Some(c.1),
                    (Some(s), _) => {
                        signals.remove(&s.0);
                        Some(s.1)
                    }
                    (None, Some(c)) => Some(c.1),
                    (None, None) => None,
                };
                match from {
                    Some(from) => out.edge(from, b.leaf, EdgeKind::Cond, obj),
                    None => out.unmatched.cond_waits += 1,
                }
            }
            _ => {}
        }
    }
}

/// Semaphores: tokens in order.
pub(super) fn sem(group: &[Bound], obj: u32, out: &mut GroupOut) {
    let mut posts: VecDeque<u32> = VecDeque::new();
    for b in group {
        match op(b) {
            Some(Op::SemPost) => posts.push_back(b.leaf),
            Some(Op::SemWait | Op::SemTimedwait | Op::SemClockwait | Op::SemTrywait)
                if b.res == 0 =>
            {
                match posts.pop_front() {
                    Some(from) => out.edge(from, b.leaf, EdgeKind::Sem, obj),
                    None => out.unmatched.sem_waits += 1,
                }
            }
            _ => {}
        }
    }
}

/// Futex words (those not used as locks).
pub(super) fn futex(group: &[Bound], obj: u32, leaves: &[Leaf], out: &mut GroupOut) {
    let waits = || group.iter().filter(|b| op(b) == Some(Op::FutexWait));
    let lock_like = waits().next().is_some() && waits().all(super::futexlocks::waits_like_a_lock);
    if lock_like {
        return;
    }
    let mut wakes: BTreeMap<(u64, u64), (u32, i32)> = BTreeMap::new();
    for b in group {
        match op(b) {
            Some(Op::FutexWake) if b.res > 0 => {
                wakes.insert((issued(b, leaves), b.seq), (b.leaf, b.res));
            }
            Some(Op::FutexWait) if b.res == 0 => {
                let began = (wait_began(b, leaves), 0);
                let found = wakes.range_mut(began..).next().map(|(k, v)| {
                    v.1 -= 1;
                    (*k, v.0, v.1)
                });
                match found {
                    Some((key, from, left)) => {
                        if left <= 0 {
                            wakes.remove(&key);
                        }
                        out.edge(from, b.leaf, EdgeKind::Futex, obj);
                    }
                    None => out.unmatched.futex_waits += 1,
                }
            }
            _ => {}
        }
    }
}

/// Thread handles: exit → join.
pub(super) fn join(group: &[Bound], obj: u32, out: &mut GroupOut) {
    let mut exits: BTreeMap<u64, u32> = BTreeMap::new();
    for b in group {
        match op(b) {
            Some(Op::ThreadExit) => {
                exits.insert(b.seq, b.leaf);
            }
            Some(Op::ThreadJoin) if b.res == 0 => {
                match exits.range(..b.seq).next_back().map(|(k, v)| (*k, *v)) {
                    Some((k, from)) => {
                        exits.remove(&k);
                        out.edge(from, b.leaf, EdgeKind::Join, obj);
                    }
                    None => out.unmatched.joins += 1,
                }
            }
            _ => {}
        }
    }
}

/// Spawn objects: create → start, fork → child.
pub(super) fn spawn(group: &[Bound], obj: u32, out: &mut GroupOut) {
    let parent = group
        .iter()
        .find(|b| matches!(op(b), Some(Op::ThreadCreate | Op::Fork)));
    for b in group {
        let kind = match op(b) {
            Some(Op::ThreadStart) => EdgeKind::Create,
            Some(Op::ForkChild) => EdgeKind::Fork,
            _ => continue,
        };
        match parent {
            Some(p) => out.edge(p.leaf, b.leaf, kind, obj),
            None => out.unmatched.starts += 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use scalpel_model::graph::{LeafTypeId, ThreadId};

    use super::*;

    fn leaf(thread: u32, start: u64, end: u64) -> Leaf {
        Leaf::new(ThreadId::new(thread), LeafTypeId::new(0), start, end)
    }

    fn bound(op: Op, seq: u64, leaf: u32) -> Bound {
        Bound {
            seq,
            x: 0,
            obj: 0,
            res: 0,
            leaf,
            op: op.into(),
            flags: 0,
        }
    }

    /// The edges (from, to) and the unmatched waits of a signal ending leaf 0 and a wait
    /// starting leaf 2, over `leaves`.
    fn signal_then_wait(leaves: &[Leaf]) -> (Vec<(usize, usize)>, u64) {
        let group = [bound(Op::CondSignal, 1, 0), bound(Op::CondWait, 2, 2)];
        let mut out = GroupOut::default();
        cond(&group, 7, leaves, &mut out);
        let edges = out.edges.iter().map(|e| (e.from.index(), e.to.index()));
        (edges.collect(), out.unmatched.cond_waits)
    }

    /// A window that begins while thread 1 waits on a cond: its first leaf in the window is the
    /// one the wait starts, and the leaf before it in the table is thread 0's last, which ended
    /// after the signal was issued. The wait began before the window, so the signal is its
    /// waker (before: the wait was taken to begin when thread 0's leaf ended, and had none).
    #[test]
    fn a_wait_that_began_before_the_graph_may_be_woken_by_any_signal() {
        let leaves = [leaf(0, 0, 100), leaf(0, 110, 500), leaf(1, 120, 130)];
        assert_eq!(signal_then_wait(&leaves), (vec![(0, 2)], 0));
    }

    /// On one thread, the leaf before is where the wait began: a signal issued before it
    /// cannot have woken the wait.
    #[test]
    fn a_signal_issued_before_the_wait_began_is_not_its_waker() {
        let leaves = [leaf(0, 0, 100), leaf(1, 0, 200), leaf(1, 250, 260)];
        assert_eq!(signal_then_wait(&leaves), (vec![], 1));
    }
}
