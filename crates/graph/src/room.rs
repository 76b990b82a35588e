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
//! The rule. A queue here is any channel of items between threads: a queue under a mutex
//! (`queues`' FIFO pairing, which also knows the items nobody waited for), a semaphore, an
//! eventfd, a pipe; on one, a thread that only puts is a producer and one that only takes is a
//! consumer. An edge from a consumer's leaf into a producer's leaf is room when
//! - it is a notice (a wake-up or bytes; not program order, a thread's start or end, or a
//!   connection handed over);
//! - the producer is an event loop (it waits in epoll): its puts hand on what its waits
//!   reported (a new connection, a connection ready again), so a put has that as its source;
//! - the producer's leaf ends at a put on the queue or at a dispatch (an epoll, poll or select
//!   wait, an accept): it went on to a next item, not to the consumer's result, which
//!   `completions` has by then moved to the leaf that handled it;
//! - and the consumer's latest item from that producer is *older* than the producer's latest
//!   put before the leaf: the producer had moved on and was not waiting for that item. A loop
//!   with one item in flight (it puts, waits for the result, puts the next) gets the result of
//!   the item it put last, and that edge stays a cause (the wakeups sample's readiness part).
//!
//! The edge becomes a wait of the producer's leaf that waited (the one before the woken leaf
//! on its thread) with the consumer's leaf as its holder, as a lock's contended acquisition is,
//! so the wait-for graph and the rollups still see it; the merge then joins the two leaves
//! around the wait when no other cause met it.
//!
//! What it assumes: an event loop's put is caused by what its wait reported. A loop that, with
//! several items in flight, reads a consumer's result in the leaf that ends at its next put (or
//! at its dispatch wait) loses that result's edge: it becomes a wait of the next item. A client
//! that is no event loop and keeps a window of requests in flight (the fanout sample) reads
//! each answer and writes its next request in one leaf, and keeps that edge: from sync calls
//! alone, its answers and a wake-up pipe's bytes look alike.

use ahash::{AHashMap, AHashSet};
use scalpel_model::format::ChanKind;
use scalpel_model::graph::{Edge, EdgeKind, Graph, LockWait, ThreadId};

use super::event::dispatches;
use super::eventloop::epoll_threads;
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
/// waits. `takes`: the queues under a mutex, paired.
pub(super) fn room_waits(graph: &Graph, edges: &mut Vec<Edge>, takes: &[Take]) -> Vec<LockWait> {
    let thread = |leaf: u32| graph.leaves.get(leaf as usize).map(|l| l.thread);
    let mut handoffs: Vec<(u32, u32, u32)> = takes.iter().map(|t| (t.from, t.to, t.cond)).collect();
    handoffs.extend(edges.iter().filter_map(|e| item(graph, e)));
    let queues = pure_queues(graph, &handoffs);
    let looping = epoll_threads(graph);
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
            && looping.get(p.index()).copied().unwrap_or(false)
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
        let mut q = Queue::default();
        for &(p, c, from, to) in list {
            if !consumers.contains(&p) && !producers.contains(&c) {
                q.takes.entry((c, p)).or_default().push((to, from));
                q.puts.entry(p).or_default().push(from);
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
mod tests {
    use scalpel_model::format::Op;
    use scalpel_model::graph::{EdgeKind, Graph, Leaf, ObjId, ThreadId};
    use scalpel_model::testgraph::{At, GraphBuilder};

    use super::room_waits;

    /// Adds leaves running `steps` (start and end call) to `thread`, 1 µs apart from `t0`.
    fn steps(b: &mut GraphBuilder, thread: ThreadId, t0: u64, steps: &[(Op, Op)]) -> Vec<At> {
        let ty = b.leaf_type("step", None);
        let mut out = Vec::new();
        for (i, &(from, to)) in steps.iter().enumerate() {
            let t = t0 + 1_000 * i as u64;
            let mut l = Leaf::new(thread, ty, t, t + 10);
            l.start_op = Some(from.into());
            l.end_op = Some(to.into());
            out.push(b.push(thread, l));
        }
        out
    }

    /// Items handed over by semaphore posts (object 1), notices written back (object 2).
    fn graph(b: GraphBuilder) -> Graph {
        let mut g = b.build();
        for e in &mut g.edges {
            e.obj = Some(ObjId::new(if e.kind == EdgeKind::Sem { 1 } else { 2 }));
        }
        g
    }

    /// An event loop puts items A and B for two workers; each worker's notice, about an item
    /// older than the loop's latest put, wakes the loop into its next put: room, both.
    #[test]
    fn a_notice_about_an_older_item_is_room() {
        use Op::*;
        let mut b = GraphBuilder::new();
        let (lp, w1, w2, w3) = (
            b.thread("loop"),
            b.thread("w1"),
            b.thread("w2"),
            b.thread("w3"),
        );
        let l = steps(
            &mut b,
            lp,
            0,
            &[
                (EpollWait, SemPost),
                (SemPost, SemPost),
                (SemPost, EpollWait),
                (EpollWait, Read),
                (Read, SemPost),
                (SemPost, EpollWait),
                (EpollWait, Read),
                (Read, SemPost),
            ],
        );
        let a = steps(&mut b, w1, 500, &[(SemWait, Write)]);
        let bb = steps(&mut b, w2, 1_500, &[(SemWait, Write)]);
        // A third worker takes the loop's later items, C and D.
        let c = steps(&mut b, w3, 4_500, &[(SemWait, SemWait), (SemWait, SemWait)]);
        b.edge(l[0], a[0], EdgeKind::Sem);
        b.edge(l[1], bb[0], EdgeKind::Sem);
        b.edge(l[4], c[0], EdgeKind::Sem);
        b.edge(l[7], c[1], EdgeKind::Sem);
        b.edge(a[0], l[4], EdgeKind::Stream);
        b.edge(bb[0], l[7], EdgeKind::Stream);
        let (ids, mut g) = ([b.id(l[3]), b.id(l[6]), b.id(a[0]), b.id(bb[0])], graph(b));
        let mut edges = std::mem::take(&mut g.edges);
        let waits = room_waits(&g, &mut edges, &[]);
        let got: Vec<(u32, Option<u32>)> = waits
            .iter()
            .map(|w| (w.waiter.get(), w.holder.map(|h| h.get())))
            .collect();
        assert_eq!(got, [(ids[0], Some(ids[2])), (ids[1], Some(ids[3]))]);
        assert!(edges.iter().all(|e| e.kind != EdgeKind::Stream));
    }

    /// A loop gets the result of the item it put last (B): a cause. A notice about an older item
    /// (A) is room in a loop, and a cause for a producer that is no event loop.
    #[test]
    fn the_latest_item_s_result_and_a_producer_outside_a_loop_keep_their_edges() {
        use Op::*;
        for (start, about) in [(EpollWait, 1), (Read, 1), (Read, 0), (EpollWait, 0)] {
            let mut b = GraphBuilder::new();
            let (lp, w, w2) = (b.thread("loop"), b.thread("w"), b.thread("w2"));
            let l = steps(
                &mut b,
                lp,
                0,
                &[
                    (start, SemPost),
                    (SemPost, SemPost),
                    (SemPost, EpollWait),
                    (start, Read),
                    (Read, SemPost),
                ],
            );
            let x = steps(&mut b, w, 500, &[(SemWait, Write), (Write, SemWait)]);
            let y = steps(&mut b, w2, 4_500, &[(SemWait, SemWait)]);
            b.edge(l[0], x[0], EdgeKind::Sem);
            b.edge(l[1], x[1], EdgeKind::Sem);
            b.edge(l[4], y[0], EdgeKind::Sem);
            // The notice about B, the latest put, is no room; about A, in a loop, it is.
            b.edge(x[about], l[4], EdgeKind::Stream);
            let mut g = graph(b);
            let mut edges = std::mem::take(&mut g.edges);
            let room = start == EpollWait && about == 0;
            let waits = room_waits(&g, &mut edges, &[]);
            assert_eq!(waits.len(), usize::from(room), "{start:?} {about}");
            assert_eq!(edges.len(), 4 - usize::from(room));
        }
    }
}
