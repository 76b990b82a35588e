//! A type's latencies in order of start, added up over the windows of a trace in memory that
//! does not grow with it: every value while there are few, then every second, fourth, … (a
//! regular sample, the stride doubled each time the values kept pass [`EXACT_VALUES`]). It
//! stands for [`TypeStats::by_start_ns`](super::TypeStats::by_start_ns), which `diff` cuts into
//! batches of neighbours: each batch's median then comes from a regular sample of its
//! instances rather than from all of them.

use super::dist::EXACT_VALUES;

/// Latencies in order of start, thinned to a regular sample once many.
#[derive(Clone, Debug)]
pub(crate) struct Thinned {
    /// The values at every `stride`-th place.
    values: Vec<u64>,
    stride: u64,
    /// Values offered so far.
    seen: u64,
}

impl Default for Thinned {
    fn default() -> Self {
        Thinned {
            values: Vec::new(),
            stride: 1,
            seen: 0,
        }
    }
}

impl Thinned {
    /// Adds `values`, which start after every value added before.
    pub(crate) fn add(&mut self, values: &[u64]) {
        for &v in values {
            if self.seen.is_multiple_of(self.stride) {
                self.values.push(v);
                if self.values.len() > EXACT_VALUES {
                    // The kept values at even places are those at every 2·stride-th place.
                    let mut i = 0usize;
                    self.values.retain(|_| {
                        i += 1;
                        i % 2 == 1
                    });
                    self.stride *= 2;
                }
            }
            self.seen += 1;
        }
    }

    /// The values kept, in order.
    pub(crate) fn values(&self) -> &[u64] {
        &self.values
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn few_values_are_all_kept_and_many_a_regular_sample() {
        let mut t = Thinned::default();
        t.add(&[3, 1, 2]);
        t.add(&[9]);
        assert_eq!(t.values(), [3, 1, 2, 9]);
        let n = 3 * EXACT_VALUES as u64;
        let all: Vec<u64> = (0..n).collect();
        let mut t = Thinned::default();
        for part in all.chunks(10_000) {
            t.add(part);
        }
        // Every fourth value from the first: 3 · 2^16 values kept at a stride of 4.
        assert!(t.values().len() <= EXACT_VALUES, "{}", t.values().len());
        assert!(t
            .values()
            .iter()
            .enumerate()
            .all(|(i, &v)| v == 4 * i as u64));
        assert_eq!(t.values().len() as u64, n.div_ceil(4));
    }
}
