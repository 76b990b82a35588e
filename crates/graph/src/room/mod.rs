//! A notice that a consumer sends its producer only when asked frees room; it does not cause
//! the producer's next item.
//!
//! A queue's producer that runs out of room (every worker of a pool busy, a bounded buffer
//! full) stops handing out work until a consumer tells it that one is free: a byte on a wake-up
//! pipe, an eventfd, a semaphore (Apache's listener stops accepting while no worker is idle, and
//! a worker that goes idle writes to the listener's wake-up pipe). As an edge, that notice
//! joined the consumer's item to whatever the producer did next: its next put (a later item,
//! which came from elsewhere), an accept, or a return to its wait that glued several consumers'
//! items together. Under load (the more often the producer ran out of room) it chained items
//! into runs of every length, each run a task type: Apache recorded on a busy machine gave 13
//! to 19 types for 95% of the leaves, against 4 on an idle one.
//!
//! The rule. A queue here is any channel of items between threads: a queue under a mutex
//! (`queues`' FIFO pairing, which also knows the items nobody waited for), a semaphore, an
//! eventfd, a pipe; on one, a thread that only puts is a producer and one that only takes is a
//! consumer. An edge from a consumer's leaf into a producer's leaf is room when
//! - it is a notice (a wake-up or bytes; not program order, a thread's start or end, or a
//!   connection handed over);
//! - the consumer sent fewer notices on that object to that producer than it took items from
//!   it: it tells the producer only sometimes, when the producer asked (it waited for room). A
//!   result is sent for every item (a completion written to an eventfd, an answer on a pipe),
//!   and stays a cause however many items are in flight;
//! - the producer is an event loop (it waits in epoll): its puts hand on what its waits
//!   reported (a new connection, a connection ready again), so a put has that as its source;
//! - and the producer's leaf ends at a put on the queue or at a dispatch (an epoll, poll or
//!   select wait, an accept): it went on to a next item, not to the consumer's result, which
//!   `completions` has by then moved to the leaf that handled it.
//!
//! The edge becomes a wait of the producer's leaf that waited (the one before the woken leaf
//! on its thread) with the consumer's leaf as its holder, as a lock's contended acquisition is,
//! so the wait-for graph and the rollups still see it; the merge then joins the two leaves
//! around the wait when no other cause met it.
//!
//! What it assumes: a notice for some items only is a request the producer made, not a result.
//! A consumer that reports results only for some items (errors, say) to an event loop that
//! then puts its next item loses those edges. A producer that is no event loop keeps every
//! edge: a client keeping a window of requests in flight (the fanout sample) reads each answer
//! and writes its next request in one leaf, and from sync calls alone its answers and a wake-up
//! pipe's bytes look alike.

mod idle;
mod queue;

use ahash::{AHashMap, AHashSet};
use scalpel_model::format::ChanKind;
use scalpel_model::graph::{Edge, EdgeKind, Graph, LockWait, ThreadId};

use super::event::dispatches;
use super::eventloop::epoll_threads;
use super::queues::Take;
use super::waits::wait_of;
use queue::Queue;

/// The notices that free room, as waits.
pub(super) struct RoomWaits {
    /// An event loop's (see the module docs): the leaves around each wait are merged.
    pub room: Vec<LockWait>,
    /// A worker's notice that it is free to a producer that hands a worker its next item
    /// (`idle`): the leaves around each wait are merged only where the producer's program edge
    /// is strong, which the build knows later.
    pub idle: Vec<LockWait>,
}

/// Takes the notices that free room out of `edges` (see the module docs and `idle`'s) and
/// returns them as waits. `takes`: the queues under a mutex, paired.
pub(super) fn room_waits(graph: &Graph, edges: &mut Vec<Edge>, takes: &[Take]) -> RoomWaits {
    let mut handoffs: Vec<(u32, u32, u32)> = takes.iter().map(|t| (t.from, t.to, t.cond)).collect();
    handoffs.extend(edges.iter().filter_map(|e| item(graph, e)));
    let queues = pure_queues(graph, &handoffs);
    let looping = epoll_threads(graph);
    let room = loop_room(graph, edges, &pairs(&queues, &looping, true));
    let idle = idle::idle_waits(graph, edges, &pairs(&queues, &looping, false));
    RoomWaits { room, idle }
}

/// Per (consumer, producer), the queues both are on.
type Pairs<'q> = AHashMap<(ThreadId, ThreadId), Vec<&'q Queue>>;

/// The rule for producers that are event loops (the module docs), whose queues `by_pair` has.
fn loop_room(graph: &Graph, edges: &mut Vec<Edge>, by_pair: &Pairs<'_>) -> Vec<LockWait> {
    let thread = |leaf: u32| graph.leaves.get(leaf as usize).map(|l| l.thread);
    if by_pair.is_empty() {
        return Vec::new();
    }
    let dispatch = |leaf: u32| {
        graph
            .leaves
            .get(leaf as usize)
            .and_then(|l| l.end_op?.op())
            .is_some_and(dispatches)
    };
    let told = calls_on(graph, edges, by_pair);
    let room = |e: &Edge| {
        let (from, to) = (e.from.get(), e.to.get());
        let (Some(c), Some(p), Some(o)) = (thread(from), thread(to), e.obj) else {
            return false;
        };
        // Sent for some items only: the producer asked for it (it waited for room).
        let sometimes = |q: &Queue| told.get(&(c, o.get())).copied().unwrap_or(0) < q.taken(c, p);
        notice(e.kind)
            && by_pair.get(&(c, p)).is_some_and(|qs| {
                qs.iter()
                    .any(|q| (dispatch(to) || q.is_put(p, to)) && sometimes(q))
            })
    };
    waits_of(graph, edges, room)
}

/// Per (consumer, producer), the queues both are on, for producers that are event loops
/// (`loops`) or for those that are not.
fn pairs<'q>(queues: &'q [Queue], looping: &[bool], loops: bool) -> Pairs<'q> {
    let mut by_pair = Pairs::new();
    for q in queues {
        for &pair in q.takes.keys() {
            if looping.get(pair.1.index()).copied().unwrap_or(false) == loops {
                by_pair.entry(pair).or_default().push(q);
            }
        }
    }
    by_pair
}

/// Takes the edges `is_notice` holds out of `edges` and returns them as waits of the leaf
/// before the one each woke, with its sender as holder.
fn waits_of(
    graph: &Graph,
    edges: &mut Vec<Edge>,
    is_notice: impl Fn(&Edge) -> bool,
) -> Vec<LockWait> {
    let mut waits = Vec::new();
    edges.retain(|e| {
        let wait = e
            .obj
            .filter(|_| is_notice(e))
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

/// Per (consumer, object) that a notice into a queue's producer came from, how many of the
/// consumer's leaves ended at a call on that object: every notice it sent, whether or not one
/// became an edge (an edge-triggered wait reports two writes once). Only between threads a
/// queue joins: a server's every byte to its clients is no notice.
fn calls_on(
    graph: &Graph,
    edges: &[Edge],
    by_pair: &Pairs<'_>,
) -> AHashMap<(ThreadId, u32), usize> {
    let thread = |leaf: u32| graph.leaves.get(leaf as usize).map(|l| l.thread);
    let mut told: AHashMap<(ThreadId, u32), usize> = AHashMap::new();
    for e in edges.iter().filter(|e| notice(e.kind)) {
        if let (Some(c), Some(p), Some(o)) = (thread(e.from.get()), thread(e.to.get()), e.obj) {
            if by_pair.contains_key(&(c, p)) {
                told.insert((c, o.get()), 0);
            }
        }
    }
    for l in &graph.leaves {
        if let Some(n) = l.end_obj.and_then(|o| told.get_mut(&(l.thread, o.get()))) {
            *n += 1;
        }
    }
    told
}

/// The queues of `takes` by condition, each with its pure consumers' takes and its pure
/// producers' puts (a thread that both puts and takes on a queue, a pool whose workers push
/// sub-tasks, has neither role).
fn pure_queues(graph: &Graph, handoffs: &[(u32, u32, u32)]) -> Vec<Queue> {
    let thread = |leaf: u32| graph.leaves.get(leaf as usize).map(|l| l.thread);
    let mut by_cond: AHashMap<u32, Vec<(ThreadId, ThreadId, u32, u32)>> = AHashMap::new();
    for &(from, to, obj) in handoffs {
        if let (Some(p), Some(c)) = (thread(from), thread(to)) {
            if p != c {
                by_cond.entry(obj).or_default().push((p, c, from, to));
            }
        }
    }
    let mut conds: Vec<u32> = by_cond.keys().copied().collect();
    conds.sort_unstable();
    let mut out = Vec::new();
    for cond in conds {
        let list = &by_cond[&cond];
        let producers: AHashSet<ThreadId> = list.iter().map(|x| x.0).collect();
        let consumers: AHashSet<ThreadId> = list.iter().map(|x| x.1).collect();
        let pure: Vec<_> = list
            .iter()
            .copied()
            .filter(|&(p, c, _, _)| !consumers.contains(&p) && !producers.contains(&c))
            .collect();
        if !pure.is_empty() {
            out.push(Queue::new(&pure));
        }
    }
    out
}

/// An item handed from one thread to another by `e` (put leaf, take leaf, object): a
/// semaphore's post, an eventfd's write or a pipe's bytes. (Queues under a mutex come from
/// `queues`' pairing, which also knows the items nobody waited for.)
fn item(graph: &Graph, e: &Edge) -> Option<(u32, u32, u32)> {
    let obj = e.obj?;
    let pipe = || {
        graph
            .objects
            .get(obj.index())
            .and_then(|o| o.channel_kind()?.known())
            == Some(ChanKind::Pipe)
    };
    let handed = match e.kind {
        EdgeKind::Sem | EdgeKind::Eventfd => true,
        EdgeKind::Stream => pipe(),
        _ => false,
    };
    handed.then(|| (e.from.get(), e.to.get(), obj.get()))
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

#[cfg(test)]
mod tests;
