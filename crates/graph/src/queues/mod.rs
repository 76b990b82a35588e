//! Queues under a mutex: the hand-off of an item that its taker found without waiting.
//!
//! A producer pushes under mutex M and signals condition C; a consumer takes M, waits on C only
//! while the queue is empty, pops, and unlocks. When the producer floods the queue, consumers
//! always find an item and never wait, so no notification edge shows the hand-off, and the work
//! of one item splits into two unrelated tasks.
//!
//! The rule. C is a queue's "not empty" condition on M when some thread waits on C with M and
//! some other thread signals C while holding M. A consumer's dequeue sites are the call sites
//! (the stack of the lock call) of its critical sections on M in which it waited on C. Walking
//! M's critical sections in their order (the mutex's sequence numbers), every `cond_signal` of C
//! puts one item, and every critical section at a dequeue site takes the oldest item not yet
//! taken. A take that did not wait gets an edge (kind `queue`) from the leaf that ended at the
//! item's signal to the leaf in which the taker popped it (the one open when it took the lock),
//! as a wait's `cond` edge goes to the leaf the wait started; a take that waited already has
//! its `cond` edge, unless that edge credits it with an item another take got: with several
//! takers, a signal wakes one waiter while a taker that did not wait pops the item, and the
//! waiter pops the next one. Its `cond` edge then comes from the signal of the item it popped.
//!
//! The same holds for a queue whose items are counted by a futex word outside the mutex (a
//! producer unlocks, then wakes the word; a consumer waits on the word only when the count is
//! zero, then locks and pops): the wake right after a section is that section's put, and a
//! section right after a wait on the word waited for it, unless the wait returned `EAGAIN`: the
//! word had changed before the wait began (the item was counted already), so the taker never
//! slept, no wake ended its wait, and it found its item as a take without a wait does (corpus
//! case `gen-futex-nowait`).
//!
//! A consumer that empties the queue (or a buffer its producer appends to) in one section takes
//! every item put since its last take, not one: a log's group commit, xz's workers reading the
//! input the main thread appended. Which kind a queue is shows at its waits: a consumer waits
//! only on an empty queue, so when one-item-per-take pairing still holds an item put before a
//! take's wait began, and some take did not wait, the takes drain the queue, and each item goes
//! to the first take after it. Pairing one per take there drifted without bound (xz: the input
//! of block i went to the worker's leaf of block i + 50, 1.2 s later). A condition used as a
//! lock (three or more takers that all signal it, see `condlocks`) passes one token per signal
//! and keeps the one-per-take pairing.
//!
//! A consumer waits only on an empty queue, so an item put before a take's wait began is not
//! that take's, whatever the kind: by the pairing it is still there only because a take the
//! graph does not show took it (a window of the trace that began while its taker waited holds
//! the put but not the take's section), and it is dropped. Kept, it went to the next take, and
//! every take after it got the item before its own.
//!
//! What it assumes: the queue is FIFO; one signal per item put (a `cond_broadcast` puts
//! nothing: it is usually a shutdown). A stack (LIFO) gets the right counts but wrong pairs once
//! several items wait. Mutex order alone never becomes an edge: a lock with no condition waited
//! on it (a statistics lock) is not a queue, and sections of a thread that never waited on C at
//! that site are not takes, but for the loop's peeled first take (`peeled`): a worker started
//! after its first item was put finds it without waiting, at a copy of the loop's call.

use ahash::{AHashMap, AHashSet};
use scalpel_model::format::Op;
use scalpel_model::graph::{Edge, EdgeKind, Graph, LockWait, NodeId, ObjId, ThreadId};
use scalpel_model::lists::Lists;

use super::service::is_wakeup;
use super::waits::wait_of;
use std::collections::VecDeque;

mod tracker;

#[cfg(test)]
mod tests;

pub(super) use tracker::{Counter, Section, Step, Tracker, ANY_MUTEX};

/// Which mutexes conditions were used with (global ids, after assembly).
#[derive(Default)]
pub(super) struct CondMutexes {
    /// Per condition: how many times it was signalled.
    pub signals: AHashMap<u32, u32>,
    /// Per (condition, mutex): how many of those signals were made while that mutex was held.
    pub held: AHashMap<(u32, u32), u32>,
    /// Per condition: the mutexes it was waited on with.
    pub waited_with: AHashMap<u32, AHashSet<u32>>,
}

/// The mutexes each condition was signalled under (from the signal holds, global ids) and
/// waited with (from the sections).
pub(super) fn cond_mutexes(sections: &[Section], holds: &[(u32, u32)]) -> CondMutexes {
    let mut m = CondMutexes::default();
    for &(c, mutex) in holds {
        if mutex == ANY_MUTEX {
            *m.signals.entry(c).or_default() += 1;
        } else {
            *m.held.entry((c, mutex)).or_default() += 1;
        }
    }
    for s in sections {
        if let Some(c) = s.waited {
            m.waited_with.entry(c).or_default().insert(s.obj);
        }
    }
    m
}

/// One take from a queue: the leaf that ended at the item's signal, the leaf the taker popped
/// it in, the condition, and whether the taker waited on the condition first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Take {
    pub from: u32,
    pub to: u32,
    pub cond: u32,
    pub waited: bool,
}

/// Every take of every queue by another thread than the item's producer, in the FIFO pairing
/// (see the module docs). A take that did not wait becomes a `queue` edge; one that waited
/// already has its wakeup's `cond` edge, which [`add_edges`] checks against it.
pub(super) fn takes(mut sections: Vec<Section>, graph: &Graph) -> (Vec<Take>, AHashSet<u32>) {
    let thread = |leaf: u32| graph.leaves.get(leaf as usize).map(|l| l.thread);
    sections.sort_by_key(|s| (s.obj, s.order));
    let mut out = Vec::new();
    let mut capacity = AHashSet::new();
    for group in sections.chunk_by(|a, b| a.obj == b.obj) {
        // Per condition: its dequeue sites (thread, stack) and the threads that signalled it.
        let mut sites: AHashMap<u32, AHashSet<(u32, u32)>> = AHashMap::new();
        let mut signallers: AHashMap<u32, AHashSet<u32>> = AHashMap::new();
        for s in group {
            let Some(t) = thread(s.leaf) else { continue };
            if let Some(c) = s.waited {
                sites.entry(c).or_default().insert((t.get(), s.stack));
            }
            for &(c, _, _) in &s.signals {
                signallers.entry(c).or_default().insert(t.get());
            }
        }
        let mut conds: Vec<u32> = sites
            .iter()
            .filter(|(c, at)| {
                signallers
                    .get(c)
                    .is_some_and(|by| by.iter().any(|t| at.iter().any(|&(w, _)| w != *t)))
            })
            .map(|(&c, _)| c)
            .collect();
        conds.sort_unstable();
        // Whether condition `c` has a partner on the same mutex that flows the other way: its
        // waiters signal the partner and its signallers wait on it, as a bounded queue's "not
        // full" and "not empty" do.
        let waiters = |c: u32| -> AHashSet<u32> {
            sites
                .get(&c)
                .map(|s| s.iter().map(|&(t, _)| t).collect())
                .unwrap_or_default()
        };
        let paired = |c: u32| {
            let (w, by) = (waiters(c), signallers.get(&c).cloned().unwrap_or_default());
            signallers
                .iter()
                .any(|(&c2, by2)| c2 != c && !w.is_disjoint(by2) && !by.is_disjoint(&waiters(c2)))
        };
        for c in conds {
            let at = &sites[&c];
            // Takes at their section's place in the mutex's order, puts at their signal's; at
            // one place a take comes first (a taker that signals after it took).
            let mut steps: Vec<(u64, bool, &Section, u32)> = Vec::new();
            for s in group {
                steps.push((s.order, false, s, 0));
                for &(sc, leaf, order) in &s.signals {
                    if sc == c {
                        steps.push((order, true, s, leaf));
                    }
                }
            }
            steps.sort_by_key(|&(order, put, _, _)| (order, put));
            let walk = |drains| pair(&steps, c, at, drains, &thread);
            let mut w = walk(false);
            // A lock built from the condition hands over one token at a time: its waits say
            // nothing of how much a take took.
            let by = signallers.get(&c).cloned().unwrap_or_default();
            let lock = is_lock(&waiters(c), &by);
            if w.drained && w.polled && !lock {
                w = walk(true);
            }
            // A take that did not wait, before the first put, took something nobody
            // signalled: a free slot the queue had from the start. The condition counts room, not items. (One that is only
            // ever broadcast has no puts at all: not a queue of either kind.)
            if w.ran_ahead && w.put_yet && paired(c) {
                capacity.insert(c);
            } else {
                out.extend(w.found);
            }
        }
    }
    out.sort_unstable();
    (out, capacity)
}

/// Whether a condition whose waiters are the threads `woken` and whose signallers are `by` is a
/// lock built from it (`condlocks`): three or more threads take part, two or more of them were
/// woken, and every one woken signals it too (in a queue the takers do not put; between two
/// threads it is a dialogue). Why not three woken: which of a lock's users ever had to wait for
/// it is timing, and a run where only two of four did (a generated interpreter lock under the
/// optimized agent) kept its hand-overs as edges that joined unrelated requests.
pub(super) fn is_lock(woken: &AHashSet<u32>, by: &AHashSet<u32>) -> bool {
    // Every woken thread signals too, so the signallers are all the threads that take part.
    woken.len() >= 2 && by.len() >= 3 && woken.is_subset(by)
}

/// What one walk of a condition's puts and takes found.
struct Walk {
    found: Vec<Take>,
    put_yet: bool,
    ran_ahead: bool,
    /// A take waited while items put before its wait began were still there by the pairing:
    /// the takes before it took more than one item each.
    drained: bool,
    /// Some take did not wait.
    polled: bool,
}

/// Pairs condition `c`'s puts with its takes (`steps` in the mutex's order; `at` the dequeue
/// sites). One item per take, oldest first, unless `drains`: then a take takes every item put
/// since the one before it (see the module docs).
fn pair(
    steps: &[(u64, bool, &Section, u32)],
    c: u32,
    at: &AHashSet<(u32, u32)>,
    drains: bool,
    thread: &dyn Fn(u32) -> Option<ThreadId>,
) -> Walk {
    let mut items: VecDeque<(u32, u64)> = VecDeque::new();
    let mut w = Walk {
        found: Vec::new(),
        put_yet: false,
        ran_ahead: false,
        drained: false,
        polled: false,
    };
    for &(order, put, s, leaf) in steps {
        if put {
            items.push_back((leaf, order));
            w.put_yet = true;
            continue;
        }
        let Some(t) = thread(s.leaf) else { continue };
        if !at.contains(&(t.get(), s.stack)) {
            continue;
        }
        // Sections are ordered by their last unlock: a section that waited was ordered after
        // the put that woke it only if the putter's section ended first, which a putter that
        // then waits itself (a call to a service) does not. So only a take that did not wait
        // counts, and only on a condition paired with one flowing the other way (a bounded
        // queue's two).
        let waited = s.waited == Some(c);
        w.ran_ahead |= !w.put_yet && !waited;
        w.polled |= !waited;
        let stale = |&(_, o): &(u32, u64)| waited && s.wait_from.is_some_and(|from| o < from);
        w.drained |= items.front().is_some_and(stale);
        // Put before the taker found the queue empty, and taken by no take seen: not this
        // take's item. In a queue drained whole, a notice nobody was waiting for; in one taken
        // an item at a time, one taken where this graph does not show it (a window that began
        // while its taker waited: kept, it went to the next take, and every take after it got
        // the item before its own).
        while items.front().is_some_and(stale) {
            items.pop_front();
        }
        let n = if drains { items.len() } else { 1 };
        // The oldest item is the one whose signal woke a take that waited.
        for (i, (from, _)) in items.drain(..n.min(items.len())).enumerate() {
            if thread(from) != Some(t) {
                w.found.push(Take {
                    from,
                    to: s.leaf,
                    cond: c,
                    waited: waited && i == 0,
                });
            }
        }
    }
    w
}

/// Adds the queue edges to `edges` and matches the waiters' `cond` edges to the items they
/// popped ([`match_wakeups`]). No `queue` edge is added where the item is a connection whose
/// hand-off edge already leaves the same leaf for the taker's thread: the hand-off says where
/// the connection was first used (Apache's listener pushes accepted sockets onto its workers'
/// queue), and a second edge between the same pair of threads would only split the task by
/// whether the worker waited.
///
/// Returns the waits on capacity conditions (see [`capacity_waits`]), whose `cond` edges it
/// takes out, and the takes.
pub(super) fn add_edges(
    graph: &Graph,
    edges: &mut Vec<Edge>,
    sections: Vec<Section>,
) -> (Vec<LockWait>, Vec<Take>) {
    let thread = |n: NodeId| graph.leaves.get(n.index()).map(|l| l.thread);
    let handed = handed_to(graph, edges);
    let (takes, capacity) = takes(sections, graph);
    let waits = capacity_waits(graph, edges, &capacity);
    match_wakeups(graph, edges, &takes);
    let queued: Vec<Edge> = takes
        .iter()
        .filter(|t| !t.waited)
        .map(|t| Edge {
            from: NodeId::new(t.from),
            to: NodeId::new(t.to),
            kind: EdgeKind::Queue,
            obj: Some(ObjId::new(t.cond)),
        })
        .filter(|e| !handed.contains(&(e.from.get(), thread(e.to))))
        .collect();
    edges.extend(queued);
    (waits, takes)
}

/// The (leaf, thread) pairs a connection's hand-off edge joins: a queue item that is such a
/// connection, taken by that thread, is no new work of its own (see [`add_edges`]).
fn handed_to(graph: &Graph, edges: &[Edge]) -> AHashSet<(u32, Option<ThreadId>)> {
    let thread = |n: NodeId| graph.leaves.get(n.index()).map(|l| l.thread);
    edges
        .iter()
        .filter(|e| e.kind == EdgeKind::Handoff)
        .map(|e| (e.from.get(), thread(e.to)))
        .collect()
}

/// Where takes that waited woke with their item, as (the leaf the take began in, the leaf it woke
/// in): the targets of `cond` edges from an item's signal to the thread that took it, at the
/// leaf its take popped the item in. The take began in the leaf that ended at its first wait:
/// the one before, and further back while the leaf before that ended at a wait on the same
/// condition too (a wake-up that found nothing and waited again). Taken from
/// the edges as they stand once every pass has run, so a wake-up that became a wait (room in a
/// bounded queue, a condition used as a lock) is none. As with `queue` edges ([`add_edges`]),
/// an item that is a connection whose hand-off edge leaves the same leaf for the taker's thread
/// is left out: the hand-off says where that thread's new work began. So is a thread that took
/// from the condition's queue once: going back for new work is a loop (a thread that waits once
/// for a condition, as for a start-up handshake, takes no work).
pub(super) fn woken_takes(graph: &Graph, edges: &[Edge], takes: &[Take]) -> Vec<(u32, u32)> {
    let thread = |leaf: u32| graph.leaves.get(leaf as usize).map(|l| l.thread);
    let handed = handed_to(graph, edges);
    let mut taken: AHashMap<(Option<ThreadId>, u32), u32> = AHashMap::new();
    for t in takes {
        *taken.entry((thread(t.to), t.cond)).or_default() += 1;
    }
    let began = by_leaf(
        takes
            .iter()
            .filter(|t| t.waited && taken[&(thread(t.to), t.cond)] >= 2)
            .map(|t| (t.from, t.to)),
    );
    let mut out: Vec<(u32, u32)> = edges
        .iter()
        .filter(|e| e.kind == EdgeKind::Cond)
        .filter_map(|e| {
            let to = e.to.get();
            if handed.contains(&(e.from.get(), thread(to))) {
                return None;
            }
            began
                .of(e.from.index())
                .iter()
                .any(|&b| b == to && thread(b).is_some())
                .then(|| (first_wait(graph, to), to))
        })
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// `pairs` of leaves grouped by the first.
fn by_leaf(pairs: impl Iterator<Item = (u32, u32)> + Clone) -> Lists<u32> {
    let keys = pairs
        .clone()
        .map(|(k, _)| k as usize + 1)
        .max()
        .unwrap_or(0);
    Lists::new(keys, pairs.map(|(k, v)| (k as usize, v)))
}

/// The first leaf of the run of leaves before `woke`, on its thread, that ended at a wait on
/// the condition the leaf before `woke` ended at; `woke` when there is none.
fn first_wait(graph: &Graph, woke: u32) -> u32 {
    let leaf = |i: u32| graph.leaves.get(i as usize);
    let (Some(w), Some(cond)) = (leaf(woke), woke.checked_sub(1).and_then(leaf)) else {
        return woke;
    };
    if cond.thread != w.thread || cond.end_obj.is_none() {
        return woke;
    }
    let mut first = woke - 1;
    while let Some(p) = first.checked_sub(1).and_then(leaf) {
        if p.thread != w.thread || p.end_obj != cond.end_obj || p.end_op != cond.end_op {
            break;
        }
        first -= 1;
    }
    first
}

/// Back-pressure is a wait, not a cause: a bounded queue's producer that waits for room is woken
/// by the consumer that took an earlier item, and that wake-up joined item `i`'s consumer to
/// item `i + capacity`'s producer, chaining every item of a flooded pipeline into one task. A
/// condition whose takes ran ahead of its puts (see [`takes`]) counts room; its `cond` edges
/// are taken out and each becomes a wait of the leaf that waited, with the leaf that freed the
/// room as its holder, as a lock's contended acquisition is: the wait-for graph and the
/// rollups still see who it waited for.
fn capacity_waits(graph: &Graph, edges: &mut Vec<Edge>, capacity: &AHashSet<u32>) -> Vec<LockWait> {
    if capacity.is_empty() {
        return Vec::new();
    }
    let mut waits = Vec::new();
    edges.retain(|e| {
        let Some(c) = e
            .obj
            .filter(|c| e.kind == EdgeKind::Cond && capacity.contains(&(c.index() as u32)))
        else {
            return true;
        };
        // The wait ended the leaf before the one its return started, on the same thread.
        waits.extend(wait_of(graph, e.from.index(), e.to.index(), c));
        false
    });
    waits
}

/// A waiter's `cond` edge names the signal that woke it; with several takers that need not be
/// the signal of the item it popped: a taker that did not wait can pop the item first. Then the
/// waiter either pops the next item, and its edge is moved to come from that item's signal, or
/// finds the queue empty and waits again, and its edge is dropped (it did no work). So each
/// item's hand-off is one edge. nginx's thread pool (4 threads, one signal per task): without
/// this, 2,638 of 20,001 tasks had two pool threads linked to one posting, and another task
/// none.
fn match_wakeups(graph: &Graph, edges: &mut Vec<Edge>, takes: &[Take]) {
    let popped: AHashMap<(u32, u32), u32> = takes
        .iter()
        .filter(|t| t.waited)
        .map(|t| ((t.to, t.cond), t.from))
        .collect();
    if popped.is_empty() {
        return;
    }
    // Per item's signal, the takes that popped it.
    let takers = by_leaf(takes.iter().map(|t| (t.from, t.to)));
    edges.retain_mut(|e| {
        // A condition's signal or a counter's post (the queue's own edges are added after).
        let Some(c) = e.obj.filter(|_| is_wakeup(e.kind)) else {
            return true;
        };
        let to = takers.of(e.from.index());
        let went_elsewhere = !to.is_empty() && !to.contains(&e.to.get());
        if !went_elsewhere {
            return true;
        }
        match popped.get(&(e.to.get(), c.index() as u32)) {
            Some(&item) => {
                e.from = NodeId::new(item);
                true
            }
            None => !waits_again(graph, e),
        }
    });
}

/// Whether the leaf a `cond` edge woke only waited again on the same condition: the wakeup
/// found nothing to do (its item went to another taker).
pub(super) fn waits_again(graph: &Graph, e: &Edge) -> bool {
    graph.leaves.get(e.to.index()).is_some_and(|l| {
        l.end_obj == e.obj
            && matches!(
                l.end_op.and_then(|o| o.op()),
                Some(Op::CondWait | Op::CondTimedwait | Op::CondClockwait)
            )
    })
}
