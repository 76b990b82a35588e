//! A latency distribution added up from many parts (the windows of one trace, see
//! [`super::merge`]) in memory that does not grow with the trace: every value is kept while
//! there are few, and past [`EXACT_VALUES`] they go into a sketch (HdrHistogram, three
//! significant digits). The mean and the longest stay exact either way.

use hdrhistogram::Histogram;

use super::stats::Latency;

/// Values a distribution keeps one by one before it becomes a sketch: 64 Ki of them (512 KiB).
/// Below it the percentiles are the ones [`Latency::of`] gives on all the values.
pub const EXACT_VALUES: usize = 1 << 16;

/// Significant decimal digits the sketch keeps: a percentile is within 0.1% of the value it
/// stands for.
const SIGFIG: u8 = 3;

/// Latencies added up: exact while small, a sketch once large.
#[derive(Clone, Debug, Default)]
pub(crate) struct Dist {
    /// The values, while the distribution is exact.
    exact: Vec<u64>,
    /// The sketch, once there are more than [`EXACT_VALUES`].
    sketch: Option<Histogram<u64>>,
    count: u64,
    sum: u128,
    max: u64,
}

impl Dist {
    /// Adds `values`.
    pub(crate) fn add(&mut self, values: &[u64]) {
        for &v in values {
            self.count += 1;
            self.sum += u128::from(v);
            self.max = self.max.max(v);
        }
        match &mut self.sketch {
            Some(h) => record_all(h, values),
            None => {
                self.exact.extend_from_slice(values);
                if self.exact.len() > EXACT_VALUES {
                    self.become_sketch();
                }
            }
        }
    }

    /// Moves the values kept one by one into a sketch. If the sketch cannot be made (it
    /// always can with the constant digits), the values stay exact.
    fn become_sketch(&mut self) {
        let Ok(mut h) = Histogram::<u64>::new(SIGFIG) else {
            return;
        };
        record_all(&mut h, &self.exact);
        self.exact = Vec::new();
        self.sketch = Some(h);
    }

    /// Whether the percentiles are exact.
    #[cfg(test)]
    fn is_exact(&self) -> bool {
        self.sketch.is_none()
    }

    /// The percentiles (nearest rank, as [`Latency::of`]), the mean and the longest.
    pub(crate) fn latency(&self) -> Latency {
        let Some(h) = &self.sketch else {
            return Latency::of(&mut self.exact.clone());
        };
        if self.count == 0 {
            return Latency::default();
        }
        // A sketch's value is the top of its bucket, which can pass the longest seen.
        let at = |q: f64| h.value_at_quantile(q).min(self.max);
        Latency {
            mean_ns: (self.sum / u128::from(self.count)) as u64,
            p50_ns: at(0.50),
            p90_ns: at(0.90),
            p99_ns: at(0.99),
            max_ns: self.max,
        }
    }
}

/// Records `values` in `h`, each clamped to what it can hold when it cannot grow to it.
fn record_all(h: &mut Histogram<u64>, values: &[u64]) {
    for &v in values {
        if h.record(v).is_err() {
            h.saturating_record(v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_distributions_are_exact() {
        let mut d = Dist::default();
        d.add(&[5, 1, 9]);
        d.add(&[3]);
        assert!(d.is_exact());
        assert_eq!(d.latency(), Latency::of(&mut [5, 1, 9, 3]));
    }

    #[test]
    fn large_ones_are_within_a_thousandth() {
        let values: Vec<u64> = (0..200_000u64)
            .map(|i| 1_000 + (i * 7919) % 1_000_003)
            .collect();
        let mut d = Dist::default();
        for part in values.chunks(30_000) {
            d.add(part);
        }
        assert!(!d.is_exact());
        let exact = Latency::of(&mut values.clone());
        let got = d.latency();
        assert_eq!(got.mean_ns, exact.mean_ns);
        assert_eq!(got.max_ns, exact.max_ns);
        for (g, e) in [
            (got.p50_ns, exact.p50_ns),
            (got.p90_ns, exact.p90_ns),
            (got.p99_ns, exact.p99_ns),
        ] {
            assert!(
                g >= e && (g - e) as f64 <= e as f64 * 1e-3,
                "{g} against {e}"
            );
        }
    }
}
