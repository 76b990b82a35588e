//! A consumer's wake-up of its producer frees room; it does not cause the producer's next item.
//!
//! A queue's producer that runs out of room (a bounded queue is full, every worker of a pool is
//! busy) stops handing out work until a consumer tells it one is free: a `not full` condition,
//! a byte on a wake-up pipe or an eventfd (Apache's listener stops accepting while no worker is
//! idle, and a worker that goes idle writes to the listener's wake-up pipe). The producer's
//! next put is then a *later* item, which came from elsewhere (a new connection, the next
//! input); the consumer finished an earlier one. As an edge, that wake-up joined item `i`'s
//! consumer to item `j`'s producer, and under load (the more often the producer ran out of
//! room) chained items into runs of every length, each run a task type: an Apache recording on
//! a busy machine gave 13 to 19 types for 95% of the leaves, against 4 on an idle one.
//!
//! The rule: for a queue whose threads are either producers (they put, never take) or
//! consumers (they take, never put), found by the FIFO pairing of `queues`, an edge from a
//! consumer's leaf into a producer's leaf that ends at a put on that queue is room, not cause,
//! whatever carried it (a condition, a semaphore, a futex, an eventfd, bytes on a pipe or a
//! socket). It becomes a wait of the producer's leaf that waited (the one before the woken
//! leaf on its thread), with the consumer's leaf as its holder, as a lock's contended
//! acquisition is, so the wait-for graph and the rollups still see it; the merge then joins the
//! two leaves around the wait when no other cause met it, as for a condition counted as room.
//!
//! What it assumes: a producer's put is caused by where its item came from, not by a
//! consumer's notice. A driver that submits one item, waits for its result and submits the
//! next (a consumer's answer read in the leaf that puts the next item) loses that answer's
//! edge: the answer is then a wait of the next item, not the end of the previous one. A thread
//! that both puts and takes on the queue (a pool whose workers push sub-tasks) is neither role,
//! and its edges stay.

use ahash::{AHashMap, AHashSet};
use scalpel_model::graph::{Edge, EdgeKind, Graph, LockWait, ThreadId};

use super::event::dispatches;
use super::queues::Take;
use super::waits::wait_of;

/// One queue's roles: who put, who took, and the leaves that ended at a put.
#[derive(Default)]
struct Roles {
    producers: AHashSet<ThreadId>,
    consumers: AHashSet<ThreadId>,
    puts: AHashSet<u32>,
}

/// Takes the wake-ups that free room out of `edges` (see the module docs) and returns them as
/// waits.
pub(super) fn room_waits(graph: &Graph, edges: &mut Vec<Edge>, takes: &[Take]) -> Vec<LockWait> {
    let thread = |leaf: u32| graph.leaves.get(leaf as usize).map(|l| l.thread);
    let (freed_by, pairs) = roles(graph, takes);
    if pairs.is_empty() {
        return Vec::new();
    }
    let dispatch = |leaf: u32| {
        graph
            .leaves
            .get(leaf as usize)
            .and_then(|l| l.end_op?.op())
            .is_some_and(dispatches)
    };
    let mut waits = Vec::new();
    edges.retain(|e| {
        let (from, to) = (e.from.get(), e.to.get());
        let room = frees_room(e.kind)
            && thread(from).is_some_and(|f| match freed_by.get(&to) {
                Some(by) => by.contains(&f),
                None => dispatch(to) && thread(to).is_some_and(|t| pairs.contains(&(f, t))),
            });
        let wait = e
            .obj
            .filter(|_| room)
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

/// Per put leaf, the consumers that may free room for it (its queue's pure consumers, when its
/// thread is a pure producer); and every (pure consumer, pure producer) pair of a queue.
fn roles(
    graph: &Graph,
    takes: &[Take],
) -> (AHashMap<u32, AHashSet<ThreadId>>, AHashSet<(ThreadId, ThreadId)>) {
    let thread = |leaf: u32| graph.leaves.get(leaf as usize).map(|l| l.thread);
    let mut queues: AHashMap<u32, Roles> = AHashMap::new();
    for t in takes {
        let (Some(p), Some(c)) = (thread(t.from), thread(t.to)) else {
            continue;
        };
        let r = queues.entry(t.cond).or_default();
        r.producers.insert(p);
        r.consumers.insert(c);
        r.puts.insert(t.from);
    }
    let mut freed_by: AHashMap<u32, AHashSet<ThreadId>> = AHashMap::new();
    let mut pairs = AHashSet::new();
    for r in queues.values() {
        let consumers: Vec<ThreadId> = r.consumers.difference(&r.producers).copied().collect();
        let producers: AHashSet<ThreadId> = r.producers.difference(&r.consumers).copied().collect();
        for &put in &r.puts {
            if thread(put).is_some_and(|p| producers.contains(&p)) {
                freed_by.entry(put).or_default().extend(consumers.iter().copied());
            }
        }
        for &p in &producers {
            pairs.extend(consumers.iter().map(|&c| (c, p)));
        }
    }
    (freed_by, pairs)
}

/// The edges a notice can travel on: wake-ups and bytes, not program order, a thread's start
/// or end, or a connection or item handed over.
fn frees_room(k: EdgeKind) -> bool {
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
