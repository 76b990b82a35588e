//! One channel of items with pure roles, and what its producer had in flight when a consumer's
//! notice left.

use ahash::AHashMap;

/// Per (consumer, producer), when the consumer sent the producer a notice (its leaf's end),
/// sorted.
pub(super) type Notices = AHashMap<(ThreadId, ThreadId), Vec<u64>>;
use scalpel_model::graph::{Graph, ThreadId};

/// A channel's items with pure roles: per (consumer, producer), the consumer's takes of that
/// producer's items (take leaf, put leaf); per producer, its put leaves and its items in
/// flight. Leaves are compared within one thread only (a thread's leaves are in time order);
/// across threads, by time.
#[derive(Default)]
pub(super) struct Queue {
    pub(super) takes: AHashMap<(ThreadId, ThreadId), Vec<(u32, u32)>>,
    pub(super) puts: AHashMap<ThreadId, Vec<u32>>,
    flights: AHashMap<ThreadId, Flights>,
}

/// A producer's items by the time they were put, with, for each prefix, the two latest times
/// until which a consumer worked on one of them (the two from different consumers).
#[derive(Default)]
struct Flights {
    put_ns: Vec<u64>,
    latest: Vec<[(u64, Option<ThreadId>); 2]>,
}

impl Queue {
    /// A queue of `handoffs` (producer, consumer, put leaf, take leaf), every one by a pure
    /// producer to a pure consumer.
    /// `notices`: when each consumer sent each producer a notice.
    pub(super) fn new(
        graph: &Graph,
        handoffs: &[(ThreadId, ThreadId, u32, u32)],
        notices: &Notices,
    ) -> Queue {
        let mut q = Queue::default();
        let mut by_consumer: AHashMap<ThreadId, Vec<u32>> = AHashMap::new();
        for &(p, c, from, to) in handoffs {
            q.takes.entry((c, p)).or_default().push((to, from));
            q.puts.entry(p).or_default().push(from);
            by_consumer.entry(c).or_default().push(to);
        }
        for v in q.takes.values_mut() {
            v.sort_unstable();
        }
        for v in by_consumer.values_mut() {
            v.sort_unstable();
        }
        for v in q.puts.values_mut() {
            v.sort_unstable();
            v.dedup();
        }
        // Per item: put when its put leaf ended, worked on until its consumer told the
        // producer or began to wait for its next take (or its thread's last leaf ended).
        let mut items: AHashMap<ThreadId, Vec<(u64, u64, ThreadId)>> = AHashMap::new();
        for &(p, c, from, to) in handoffs {
            let put = graph.leaves.get(from as usize).map_or(0, |l| l.end_ns);
            // The consumer's first notice to the producer after the item was put (by time, not
            // by the take it was paired with: a pairing off by one would move it by an item).
            let told = notices
                .get(&(c, p))
                .and_then(|v| v.get(v.partition_point(|&t| t < put)))
                .copied()
                .unwrap_or(u64::MAX);
            let done = done_ns(graph, c, &by_consumer[&c], to).min(told);
            items.entry(p).or_default().push((put, done, c));
        }
        for (p, mut v) in items {
            v.sort_unstable();
            q.flights.insert(p, Flights::new(&v));
        }
        q
    }

    /// Whether the consumer's latest item from the producer, taken by leaf `at`, was put before
    /// the producer's latest put before leaf `woken`.
    pub(super) fn older(
        &self,
        consumer: ThreadId,
        at: u32,
        producer: ThreadId,
        woken: u32,
    ) -> bool {
        let Some(puts) = self.puts.get(&producer) else {
            return false;
        };
        let Some(last_put) = puts.partition_point(|&l| l < woken).checked_sub(1) else {
            return false;
        };
        let Some(takes) = self.takes.get(&(consumer, producer)) else {
            return false;
        };
        let taken = takes.partition_point(|&(to, _)| to <= at).checked_sub(1);
        taken.is_some_and(|i| takes[i].1 < puts[last_put])
    }

    /// Whether another consumer than `consumer` was working on an item of the producer at
    /// `at_ns`.
    pub(super) fn busy_elsewhere(
        &self,
        consumer: ThreadId,
        producer: ThreadId,
        at_ns: u64,
    ) -> bool {
        self.flights
            .get(&producer)
            .is_some_and(|f| f.busy_elsewhere(consumer, at_ns))
    }

    /// Whether leaf `l` ends at one of the producer's puts.
    pub(super) fn is_put(&self, producer: ThreadId, l: u32) -> bool {
        self.puts
            .get(&producer)
            .is_some_and(|v| v.binary_search(&l).is_ok())
    }
}

impl Flights {
    /// `items`: (put, done, consumer), sorted by put.
    fn new(items: &[(u64, u64, ThreadId)]) -> Flights {
        let mut latest = Vec::with_capacity(items.len());
        let mut best: [(u64, Option<ThreadId>); 2] = [(0, None); 2];
        for &(_, done, c) in items {
            if best[0].1 == Some(c) {
                best[0].0 = best[0].0.max(done);
            } else if done > best[0].0 {
                best = [(done, Some(c)), best[0]];
            } else if best[1].1 == Some(c) || done > best[1].0 {
                best[1] = (best[1].0.max(done), Some(c));
            }
            if best[1].0 > best[0].0 {
                best.swap(0, 1);
            }
            latest.push(best);
        }
        Flights {
            put_ns: items.iter().map(|i| i.0).collect(),
            latest,
        }
    }

    fn busy_elsewhere(&self, consumer: ThreadId, at_ns: u64) -> bool {
        let Some(i) = self.put_ns.partition_point(|&t| t < at_ns).checked_sub(1) else {
            return false;
        };
        self.latest[i]
            .iter()
            .any(|&(done, c)| c.is_some_and(|c| c != consumer) && done > at_ns)
    }
}

/// When consumer `c` was done with the item it took at leaf `to`: when it first called what
/// began its next take (its wait for the next item; a wake-up that found the item gone and
/// waited again is no work), or, after its last take, what began that one; else when the leaf
/// before its next take, or its last leaf, ended. `takes`: its take leaves, sorted.
fn done_ns(graph: &Graph, c: ThreadId, takes: &[u32], to: u32) -> u64 {
    let leaves = &graph.leaves;
    let last = graph
        .threads
        .get(c.index())
        .map_or(to, |t| (t.first_leaf.get() + t.leaves).saturating_sub(1));
    let next = takes.get(takes.partition_point(|&l| l <= to)).copied();
    let wait = leaves
        .get(next.unwrap_or(to) as usize)
        .and_then(|l| l.start_op);
    let end = next.map_or(last, |n| n.saturating_sub(1));
    let leaf = (to..=end)
        .find(|&i| leaves.get(i as usize).is_some_and(|l| l.end_op == wait))
        .unwrap_or(end);
    leaves
        .get(leaf as usize)
        .filter(|l| l.thread == c)
        .map_or(u64::MAX, |l| l.end_ns)
}
