//! A consumer's notice to its producer about an *earlier* item frees room; it does not cause the
//! producer's next item.
//!
//! A queue's producer that runs out of room (every worker of a pool busy, a bounded buffer full)
//! stops handing out work until a consumer tells it that one is free: a byte on a wake-up pipe,
//! an eventfd, a semaphore (Apache's listener stops accepting while no worker is idle, and a
//! worker that goes idle writes to the listener's wake-up pipe). As an edge, that notice joined
//! the consumer's item to whatever the producer did next: its next put (a later item, which
//! came from elsewhere), an accept, or a return to its wait that glued several consumers' items
//! together. Under load (the more often the producer ran out of room) it chained items into
//! runs of every length, each run a task type: Apache recorded on a busy machine gave 13 to 19
//! types for 95% of the leaves, against 4 on an idle one.
//!
//! The rule. Take a queue of `queues`' FIFO pairing whose producers only put and whose
//! consumers only take. An edge from a consumer's leaf into a producer's leaf is room when
//! - it is a notice (a wake-up or bytes, not a hand-off of the queue's own condition: a reply
//!   put on a queue the producer takes from is an item);
//! - the producer's leaf ends at a put on the queue or at a dispatch (an epoll, poll or select
//!   wait, an accept): it went on to a next item, not to the consumer's result;
//! - and the consumer's latest item is *older* than the producer's latest put before the leaf.
//!   The producer had moved on; it was not waiting for that item. A driver with one item in
//!   flight (it puts, waits for the result, puts the next) gets the result of the item it put
//!   last, and that edge stays a cause (the wakeups sample's readiness part).
//!
//! The edge becomes a wait of the producer's leaf that waited (the one before the woken leaf
//! on its thread) with the consumer's leaf as its holder, as a lock's contended acquisition is,
//! so the wait-for graph and the rollups still see it; the merge then joins the two leaves
//! around the wait when no other cause met it.
//!
//! What it assumes: a put is caused by where its item came from. A producer that, with several
//! items in flight, handles a consumer's result in the leaf that ends at its next put (or at its
//! dispatch wait) loses that result's edge: it becomes a wait of the next item.

use ahash::{AHashMap, AHashSet};
use scalpel_model::graph::{Edge, EdgeKind, Graph, LockWait, ThreadId};

use super::event::dispatches;
use super::queues::Take;
use super::waits::wait_of;

/// One queue with pure roles: per consumer and producer, the consumer's takes of that
/// producer's items (pop leaf, put leaf); per producer, its put leaves; all sorted by leaf (a
/// thread's leaves are in time order; leaves of two threads are not comparable).
#[derive(Default)]
struct Queue {
    takes: AHashMap<(ThreadId, ThreadId), Vec<(u32, u32)>>,
    puts: AHashMap<ThreadId, Vec<u32>>,
}

impl Queue {
    /// Whether the consumer's latest item from the producer, taken by leaf `at`, was put before
    /// the producer's latest put before leaf `woken`.
    fn older(&self, consumer: ThreadId, at: u32, producer: ThreadId, woken: u32) -> bool {
        let latest = |v: &[u32], before: u32| v.partition_point(|&l| l < before).checked_sub(1);
        let Some(puts) = self.puts.get(&producer) else {
            return false;
        };
        let Some(last_put) = latest(puts, woken).map(|i| puts[i]) else {
            return false;
        };
        let Some(takes) = self.takes.get(&(consumer, producer)) else {
            return false;
        };
        let taken = takes.partition_point(|&(to, _)| to <= at).checked_sub(1);
        taken.is_some_and(|i| takes[i].1 < last_put)
    }

    /// Whether leaf `l` ends at one of the producer's puts.
    fn is_put(&self, producer: ThreadId, l: u32) -> bool {
        self.puts
            .get(&producer)
            .is_some_and(|v| v.binary_search(&l).is_ok())
    }
}

/// Takes the notices that free room out of `edges` (see the module docs) and returns them as
/// waits.
pub(super) fn room_waits(graph: &Graph, edges: &mut Vec<Edge>, takes: &[Take]) -> Vec<LockWait> {
    let thread = |leaf: u32| graph.leaves.get(leaf as usize).map(|l| l.thread);
    let queues = pure_queues(graph, takes);
    // Per (consumer, producer), the queues it is both on.
    let mut by_pair: AHashMap<(ThreadId, ThreadId), Vec<&Queue>> = AHashMap::new();
    for q in &queues {
        for &pair in q.takes.keys() {
            by_pair.entry(pair).or_default().push(q);
        }
    }
    if by_pair.is_empty() {
        return Vec::new();
    }
    // A queue's own hand-offs are items (a reply put on a queue its producer takes from).
    let items: AHashSet<u32> = takes.iter().map(|t| t.cond).collect();
    let dispatch = |leaf: u32| {
        graph
            .leaves
            .get(leaf as usize)
            .and_then(|l| l.end_op?.op())
            .is_some_and(dispatches)
    };
    let room = |e: &Edge| {
        let (from, to) = (e.from.get(), e.to.get());
        let (Some(c), Some(p)) = (thread(from), thread(to)) else {
            return false;
        };
        notice(e.kind)
            && e.obj.is_some_and(|o| !items.contains(&o.get()))
            && by_pair.get(&(c, p)).is_some_and(|qs| {
                qs.iter()
                    .any(|q| (dispatch(to) || q.is_put(p, to)) && q.older(c, from, p, to))
            })
    };
    let mut waits = Vec::new();
    edges.retain(|e| {
        let wait = e
            .obj
            .filter(|_| room(e))
            .and_then(|o| wait_of(graph, e.from.index(), e.to.index(), o));
        match wait {
            Some(w) => {
                waits.push(w);
                false
            }
            None => true,
        }
    });
    waits
}

/// The queues of `takes` by condition, each with its pure consumers' takes and its pure
/// producers' puts (a thread that both puts and takes on a queue, a pool whose workers push
/// sub-tasks, has neither role).
fn pure_queues(graph: &Graph, takes: &[Take]) -> Vec<Queue> {
    let thread = |leaf: u32| graph.leaves.get(leaf as usize).map(|l| l.thread);
    let mut by_cond: AHashMap<u32, Vec<(ThreadId, ThreadId, &Take)>> = AHashMap::new();
    for t in takes {
        if let (Some(p), Some(c)) = (thread(t.from), thread(t.to)) {
            by_cond.entry(t.cond).or_default().push((p, c, t));
        }
    }
    let mut conds: Vec<u32> = by_cond.keys().copied().collect();
    conds.sort_unstable();
    let mut out = Vec::new();
    for cond in conds {
        let list = &by_cond[&cond];
        let producers: AHashSet<ThreadId> = list.iter().map(|x| x.0).collect();
        let consumers: AHashSet<ThreadId> = list.iter().map(|x| x.1).collect();
        let mut q = Queue::default();
        for &(p, c, t) in list {
            if !consumers.contains(&p) && !producers.contains(&c) {
                q.takes.entry((c, p)).or_default().push((t.to, t.from));
                q.puts.entry(p).or_default().push(t.from);
            }
        }
        for v in q.takes.values_mut() {
            v.sort_unstable();
        }
        for v in q.puts.values_mut() {
            v.sort_unstable();
            v.dedup();
        }
        if !q.takes.is_empty() {
            out.push(q);
        }
    }
    out
}

/// The edges a notice can travel on: wake-ups and bytes, not program order, a thread's start
/// or end, or a connection or item handed over.
fn notice(k: EdgeKind) -> bool {
    matches!(
        k,
        EdgeKind::Cond
            | EdgeKind::Sem
            | EdgeKind::Futex
            | EdgeKind::Eventfd
            | EdgeKind::Stream
            | EdgeKind::Ready
    )
}
