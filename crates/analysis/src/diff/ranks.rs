//! Whether two latency samples differ beyond noise: the Mann–Whitney U test (Wilcoxon rank
//! sum), two-sided, in its normal approximation with the correction for ties and for
//! continuity.
//!
//! Why this test: latencies are skewed and often multi-modal (a sleep or a flush taken by some
//! instances only), so a test on means would be led by the tail; ranks ask only whether one
//! run's instances tend to take longer than the other's. The normal approximation is exact
//! enough from a handful of instances on each side, which is all `diff` tests.

use serde::Serialize;

/// The test's outcome for one pair of samples.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct RankTest {
    /// U of the first sample: how many (first, second) pairs have the first larger, ties
    /// counting half.
    pub u: f64,
    /// The standard score of `u` (positive: the first sample tends to be larger).
    pub z: f64,
    /// Two-sided p-value.
    pub p_value: f64,
}

/// The Mann–Whitney U test of `a` against `b`, both sorted ascending. `None` when either is
/// empty.
pub fn mann_whitney(a: &[u64], b: &[u64]) -> Option<RankTest> {
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let n = na + nb;
    // One merge over both sorted samples: each run of equal values gets the mean of its ranks.
    let (mut i, mut j) = (0usize, 0usize);
    let (mut below, mut rank_sum_a, mut ties) = (0f64, 0f64, 0f64);
    while i < a.len() || j < b.len() {
        let v = match (a.get(i), b.get(j)) {
            (Some(&x), Some(&y)) => x.min(y),
            (Some(&x), None) => x,
            (None, Some(&y)) => y,
            (None, None) => unreachable!("the loop runs while a sample has values left"),
        };
        let ta = a[i..].iter().take_while(|&&x| x == v).count();
        let tb = b[j..].iter().take_while(|&&y| y == v).count();
        let t = (ta + tb) as f64;
        rank_sum_a += ta as f64 * (below + (t + 1.0) / 2.0);
        ties += t * t * t - t;
        below += t;
        i += ta;
        j += tb;
    }
    let u = rank_sum_a - na * (na + 1.0) / 2.0;
    let mean = na * nb / 2.0;
    let var = na * nb / 12.0 * ((n + 1.0) - ties / (n * (n - 1.0)).max(1.0));
    let d = u - mean;
    let z = if var <= 0.0 || d.abs() <= 0.5 {
        0.0
    } else {
        (d - 0.5 * d.signum()) / var.sqrt()
    };
    Some(RankTest {
        u,
        z,
        p_value: libm::erfc(z.abs() / std::f64::consts::SQRT_2).min(1.0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_samples_are_not_different() {
        let a = [1, 2, 2, 3, 5, 8];
        let t = mann_whitney(&a, &a).unwrap();
        assert_eq!(t.u, 18.0);
        assert_eq!(t.z, 0.0);
        assert_eq!(t.p_value, 1.0);
    }

    #[test]
    fn a_shifted_sample_is() {
        let a: Vec<u64> = (0..40).collect();
        let b: Vec<u64> = (30..70).collect();
        let t = mann_whitney(&a, &b).unwrap();
        // a above b: 30..39 over the b values below each (0 + 1 + … + 9 = 45), and 10 ties
        // worth a half each.
        assert_eq!(t.u, 50.0);
        assert!(t.z < -6.0, "{t:?}");
        assert!(t.p_value < 1e-9, "{t:?}");
        let back = mann_whitney(&b, &a).unwrap();
        assert_eq!(back.u, 40.0 * 40.0 - 50.0);
        assert!((back.z + t.z).abs() < 1e-12);
    }

    /// A worked example: n = 4 and 5 with no ties; 4 > 3 and 7 > 3, 5, 6, so U = 4; the normal
    /// approximation with continuity gives z = (4 − 10 + 0.5) / √(20 × 10 / 12) = −1.3472…,
    /// p = 0.1779…
    #[test]
    fn a_small_worked_example() {
        let t = mann_whitney(&[1, 2, 4, 7], &[3, 5, 6, 8, 9]).unwrap();
        assert_eq!(t.u, 4.0);
        assert!((t.z + 1.3472).abs() < 1e-4, "{t:?}");
        assert!((t.p_value - 0.1779).abs() < 1e-4, "{t:?}");
    }

    #[test]
    fn empty_samples_have_no_test() {
        assert_eq!(mann_whitney(&[], &[1]), None);
        assert_eq!(mann_whitney(&[1], &[]), None);
    }
}
