//! A worker that tells its producer it is free, and is handed its next item: the wake-up is
//! room, not the cause of that item.
//!
//! A producer that feeds a fixed set of workers (each with its own queue, or one shared) waits
//! when every worker is busy, and a worker that finishes wakes it. What the producer does on
//! waking is hand that worker its next item, which came from the producer's input, not from the
//! worker's last one. As an edge, the wake-up joined each item to the item that worker took next,
//! so every item of a run was one occurrence (`xz -T2`: a block's compression joined to the
//! block that worker compressed after it, 165 blocks in 24 chains).
//!
//! The rule, for producers that are no event loop (`room`'s rule covers those): an edge is an
//! idle notice when
//! - it is a wake-up without bytes (a condition, a futex, a semaphore, an eventfd), or the
//!   producer's take of a worker that put itself on a queue of free workers without waking it:
//!   bytes are an answer the producer reads (a client's window of requests keeps its answers
//!   as causes);
//! - its sender is a pure consumer of a queue whose pure producer it wakes, and two or more
//!   such consumers (the producer's workers) notify the producer on that object: it waits for
//!   whichever worker is free first, not for the answer to the item it handed over (a client
//!   that waits on its own reply object for each answer keeps the answer as a cause);
//! - the woken leaf ends at a put on a queue one of those workers takes: the producer woke to
//!   hand a free worker its next item (not always the one whose notice woke it: two workers
//!   that finish together both notify, and which notice the wait took is a guess);
//! - and that is what most of the notices on that object into that producer led to: a client
//!   that waits for all the answers of a round before it sends the next round hands a worker
//!   its next item only after the round's last answer.
//!
//! The notice becomes a wait of the producer's leaf that waited, with the worker's leaf as its
//! holder, as `room`'s do (a take without a wake-up is no wait: its edge goes). The build then
//! merges the two leaves around the wait, as room's, so a hand-off that waited for a free worker
//! and one that did not are one leaf type; except where the producer's program edge at the wait
//! is weak: there it went back for its next item, and the leaf before the wait ended one
//! item's work (`xz`'s main thread hands a block's last input to its worker, then waits for a
//! free worker for a later block).

use ahash::{AHashMap, AHashSet};
use scalpel_model::graph::{Edge, EdgeKind, Graph, LockWait, ThreadId};

use super::{waits_of, Pairs};

/// Takes the idle notices (see the module docs) out of `edges` and returns them as waits.
/// `by_pair`: per (consumer, producer), the channels of items with pure roles both are on, for
/// producers that are no event loop.
pub(super) fn idle_waits(
    graph: &Graph,
    edges: &mut Vec<Edge>,
    by_pair: &Pairs<'_>,
) -> Vec<LockWait> {
    let thread = |leaf: u32| graph.leaves.get(leaf as usize).map(|l| l.thread);
    if by_pair.is_empty() {
        return Vec::new();
    }
    // A leaf of producer `p` that ends at a put one of `workers` takes.
    let hands_to = |l: u32, p: ThreadId, workers: &AHashSet<ThreadId>| {
        workers.iter().any(|&c| {
            by_pair
                .get(&(c, p))
                .is_some_and(|qs| qs.iter().any(|q| q.is_put_to(p, c, l)))
        })
    };
    // Per (object, producer): the consumers whose wake-ups reach the producer on it (its
    // workers), those wake-ups, and how many of them it answered by handing a worker an item.
    let mut on: AHashMap<(u32, ThreadId), Told> = AHashMap::new();
    for e in edges.iter().filter(|e| notice(e.kind)) {
        if let (Some(c), Some(p), Some(o)) = (thread(e.from.get()), thread(e.to.get()), e.obj) {
            if by_pair.contains_key(&(c, p)) {
                let t = on.entry((o.get(), p)).or_default();
                t.senders.insert(c);
                t.woken.push(e.to.get());
            }
        }
    }
    for (&(_, p), t) in &mut on {
        t.handed_on = t
            .woken
            .iter()
            .filter(|&&l| hands_to(l, p, &t.senders))
            .count();
    }
    let idle = |e: &Edge| {
        let (Some(p), Some(o)) = (thread(e.to.get()), e.obj) else {
            return false;
        };
        notice(e.kind)
            && on.get(&(o.get(), p)).is_some_and(|t| {
                t.frees_workers()
                    && thread(e.from.get()).is_some_and(|c| t.senders.contains(&c))
                    && hands_to(e.to.get(), p, &t.senders)
            })
    };
    // A worker found free without a wait is no wait of the producer's: its edge goes.
    edges.retain(|e| !(e.kind == EdgeKind::Queue && idle(e)));
    waits_of(graph, edges, idle)
}

/// The wake-ups on one object into one producer.
#[derive(Default)]
struct Told {
    senders: AHashSet<ThreadId>,
    /// The leaves the wake-ups woke.
    woken: Vec<u32>,
    handed_on: usize,
}

impl Told {
    /// Two or more workers tell the producer, and most wake-ups send one of them an item: the
    /// producer waits there for a free worker (a client that waits for every answer of a round
    /// and then sends the next round hands a worker an item after the round's last answer
    /// only).
    fn frees_workers(&self) -> bool {
        self.senders.len() >= 2 && 2 * self.handed_on > self.woken.len()
    }
}

/// The edges a worker tells its producer it is free on: wake-ups that hand no bytes, and the
/// producer's takes of a worker that put itself on a queue of free workers without waking it.
fn notice(k: EdgeKind) -> bool {
    matches!(
        k,
        EdgeKind::Cond | EdgeKind::Sem | EdgeKind::Futex | EdgeKind::Eventfd | EdgeKind::Queue
    )
}
