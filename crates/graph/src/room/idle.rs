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
//! - it is a wake-up without bytes (a condition, a futex, a semaphore, an eventfd): bytes are
//!   an answer the producer reads (a client's window of requests keeps its answers as causes);
//! - its sender is a pure consumer of a queue whose pure producer it wakes;
//! - and the woken leaf ends at a put on that queue that the sender takes: the producer woke
//!   to hand the worker that told it its next item.
//!
//! The notice becomes a wait of the producer's leaf that waited, with the worker's leaf as its
//! holder, as `room`'s do. Unlike those, the two leaves around the wait stay apart (the waits
//! are not merged): the producer's wait is where it goes back for the next item, and a leaf
//! that took in one item's tail and the next item's head would join the two.

use ahash::AHashMap;
use scalpel_model::graph::{Edge, EdgeKind, Graph, LockWait, ThreadId};

use super::queue::Queue;
use super::waits_of;

/// Takes the idle notices (see the module docs) out of `edges` and returns them as waits.
/// `queues`: the channels of items with pure roles; `looping`: per thread, whether it is an
/// event loop.
pub(super) fn idle_waits(
    graph: &Graph,
    edges: &mut Vec<Edge>,
    queues: &[Queue],
    looping: &[bool],
) -> Vec<LockWait> {
    let thread = |leaf: u32| graph.leaves.get(leaf as usize).map(|l| l.thread);
    // Per (consumer, producer), the queues it is both on, for producers that are no event loop.
    let mut by_pair: AHashMap<(ThreadId, ThreadId), Vec<&Queue>> = AHashMap::new();
    for q in queues {
        for &pair in q.takes.keys() {
            if !looping.get(pair.1.index()).copied().unwrap_or(false) {
                by_pair.entry(pair).or_default().push(q);
            }
        }
    }
    if by_pair.is_empty() {
        return Vec::new();
    }
    let idle = |e: &Edge| {
        let (Some(c), Some(p)) = (thread(e.from.get()), thread(e.to.get())) else {
            return false;
        };
        wake_up(e.kind)
            && by_pair
                .get(&(c, p))
                .is_some_and(|qs| qs.iter().any(|q| q.is_put_to(p, c, e.to.get())))
    };
    waits_of(graph, edges, idle)
}

/// The edges that wake a thread without handing it bytes.
fn wake_up(k: EdgeKind) -> bool {
    matches!(
        k,
        EdgeKind::Cond | EdgeKind::Sem | EdgeKind::Futex | EdgeKind::Eventfd
    )
}
