//! One channel of items with pure roles.

use ahash::AHashMap;
use scalpel_model::graph::ThreadId;

/// A channel's items with pure roles: per (consumer, producer), the consumer's takes of that
/// producer's items (take leaf, put leaf); per producer, its put leaves; sorted by leaf.
#[derive(Default)]
pub(super) struct Queue {
    pub(super) takes: AHashMap<(ThreadId, ThreadId), Vec<(u32, u32)>>,
    pub(super) puts: AHashMap<ThreadId, Vec<u32>>,
}

impl Queue {
    /// A queue of `handoffs` (producer, consumer, put leaf, take leaf), every one by a pure
    /// producer to a pure consumer.
    pub(super) fn new(handoffs: &[(ThreadId, ThreadId, u32, u32)]) -> Queue {
        let mut q = Queue::default();
        for &(p, c, from, to) in handoffs {
            q.takes.entry((c, p)).or_default().push((to, from));
            q.puts.entry(p).or_default().push(from);
        }
        for v in q.takes.values_mut() {
            v.sort_unstable();
        }
        for v in q.puts.values_mut() {
            v.sort_unstable();
            v.dedup();
        }
        q
    }

    /// How many of the producer's items the consumer took.
    pub(super) fn taken(&self, consumer: ThreadId, producer: ThreadId) -> usize {
        self.takes.get(&(consumer, producer)).map_or(0, Vec::len)
    }

    /// Whether leaf `l` ends at one of the producer's puts.
    pub(super) fn is_put(&self, producer: ThreadId, l: u32) -> bool {
        self.puts
            .get(&producer)
            .is_some_and(|v| v.binary_search(&l).is_ok())
    }
}
