//! One channel of items with pure roles.

use ahash::AHashMap;
use scalpel_model::graph::ThreadId;

/// A channel's items with pure roles: per (consumer, producer), how many of that producer's
/// items the consumer took; per producer, its put leaves, sorted.
#[derive(Default)]
pub(super) struct Queue {
    pub(super) takes: AHashMap<(ThreadId, ThreadId), usize>,
    pub(super) puts: AHashMap<ThreadId, Vec<u32>>,
    /// Per (producer, consumer), the producer's put leaves that consumer took, sorted.
    puts_to: AHashMap<(ThreadId, ThreadId), Vec<u32>>,
}

impl Queue {
    /// A queue of `handoffs` (producer, consumer, put leaf, take leaf), every one by a pure
    /// producer to a pure consumer.
    pub(super) fn new(handoffs: &[(ThreadId, ThreadId, u32, u32)]) -> Queue {
        let mut q = Queue::default();
        for &(p, c, from, _) in handoffs {
            *q.takes.entry((c, p)).or_default() += 1;
            q.puts.entry(p).or_default().push(from);
            q.puts_to.entry((p, c)).or_default().push(from);
        }
        for v in q.puts.values_mut().chain(q.puts_to.values_mut()) {
            v.sort_unstable();
            v.dedup();
        }
        q
    }

    /// How many of the producer's items the consumer took.
    pub(super) fn taken(&self, consumer: ThreadId, producer: ThreadId) -> usize {
        self.takes.get(&(consumer, producer)).copied().unwrap_or(0)
    }

    /// Whether leaf `l` ends at one of the producer's puts.
    pub(super) fn is_put(&self, producer: ThreadId, l: u32) -> bool {
        self.puts
            .get(&producer)
            .is_some_and(|v| v.binary_search(&l).is_ok())
    }

    /// Whether leaf `l` ends at one of the producer's puts that `consumer` took.
    pub(super) fn is_put_to(&self, producer: ThreadId, consumer: ThreadId, l: u32) -> bool {
        self.puts_to
            .get(&(producer, consumer))
            .is_some_and(|v| v.binary_search(&l).is_ok())
    }
}
