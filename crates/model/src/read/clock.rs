//! Conversion of clock ticks to CLOCK_MONOTONIC nanoseconds with a file's calibration points.

use std::sync::Arc;

use super::header::Header;
use super::types::{Calibration, Event};

const NS_PER_SEC: u64 = 1_000_000_000;
/// The last segment's slope is trusted for extrapolation only when it spans more than this.
const MIN_SLOPE_SPAN_NS: u64 = 10_000_000;
/// A fitted clock has a knot in each stretch of this many nanoseconds that holds points (the
/// agent's `CALIBRATION_GAP_NS`: a busy thread writes a point each millisecond).
const KNOT_NS: u64 = 1_000_000;

/// Piecewise-linear map from ticks to nanoseconds.
///
/// Between two calibration points, time is interpolated; before the first and after the last it
/// is extrapolated with the header's ticks-per-second, or after the last with the last
/// segment's slope when that segment spans more than 10 ms. When the header does not set
/// [`crate::format::flags::CLOCK_TSC`], ticks already are nanoseconds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Clock {
    tsc: bool,
    ticks_per_sec: u64,
    /// Sorted by ticks, no two with the same ticks. Shared: every file of a trace holds the
    /// trace's fitted clock, a knot a millisecond.
    points: Arc<[(u64, u64)]>,
    /// Another machine's clock these times are put on, when traces of several are merged.
    shift: Option<Shift>,
}

/// A machine's monotonic clock on another's: `t + offset_ns + (t - start_ns) * drift_ppb / 1e9`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shift {
    /// Added at `start_ns`.
    pub offset_ns: i64,
    /// Parts per billion by which the other clock runs faster.
    pub drift_ppb: i64,
    /// Where `offset_ns` holds, on this machine's clock.
    pub start_ns: u64,
}

impl Shift {
    /// `ns` of this machine's clock on the other's.
    pub fn apply(&self, ns: u64) -> u64 {
        let t = i128::from(ns);
        let since = t - i128::from(self.start_ns);
        clamp(
            t + i128::from(self.offset_ns)
                + since * i128::from(self.drift_ppb) / i128::from(NS_PER_SEC),
        )
    }

    fn scale(&self, dur: u64) -> u64 {
        let d = i128::from(dur);
        clamp(d + d * i128::from(self.drift_ppb) / i128::from(NS_PER_SEC))
    }
}

/// `x` rounded to the nearest integer, saturating: negative and NaN give 0.
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "a float-to-integer `as` saturates, which is what is wanted here"
)]
fn round_u64(x: f64) -> u64 {
    x.round() as u64
}

fn clamp(v: i128) -> u64 {
    u64::try_from(v.clamp(0, i128::from(u64::MAX))).unwrap_or(u64::MAX)
}

/// `base + delta * num / den`, saturating, never panicking (`den` is non-zero).
///
/// Why the 64-bit path: this runs twice per event, and a 128-bit division is a library call
/// several times slower than the machine's. When the operands and the product fit in 64 bits,
/// both divisions truncate toward zero and give the same quotient, bit for bit.
fn lerp(base: u64, delta: i128, num: i128, den: i128) -> u64 {
    if let (Ok(d), Ok(n), Ok(q)) = (i64::try_from(delta), i64::try_from(num), i64::try_from(den)) {
        if let Some(quot) = d.checked_mul(n).and_then(|p| p.checked_div(q)) {
            return clamp(i128::from(base) + i128::from(quot));
        }
    }
    // The one quotient that overflows, i128::MIN / -1, saturates like the rest.
    let q = delta
        .saturating_mul(num)
        .checked_div(den)
        .unwrap_or(i128::MAX);
    clamp(i128::from(base).saturating_add(q))
}

impl Clock {
    /// The clock of a file: its header's point plus `calibrations`.
    pub fn new(header: &Header, calibrations: &[Calibration]) -> Clock {
        let mut points: Vec<(u64, u64)> = std::iter::once((header.clock0, header.mono0))
            .chain(calibrations.iter().map(|c| (c.ticks, c.mono_ns)))
            .collect();
        points.sort_by_key(|p| p.0);
        points.dedup_by_key(|p| p.0);
        Clock {
            tsc: header.is_tsc(),
            ticks_per_sec: if header.ticks_per_sec == 0 {
                NS_PER_SEC
            } else {
                header.ticks_per_sec
            },
            points: points.into(),
            shift: None,
        }
    }

    /// The same clock with its times put on another machine's clock by `shift`.
    pub fn shifted(self, shift: Shift) -> Clock {
        Clock {
            shift: Some(shift),
            ..self
        }
    }

    /// One clock for every TSC-clocked file of a trace, from all their calibration points.
    /// Files converted with separate piecewise clocks can disagree by the noise of their points
    /// (tens of nanoseconds), enough to invert the order of a write and the read of its bytes on
    /// two threads; one shared, strictly increasing function keeps the TSC's own order, which is
    /// exact across cores and processes.
    ///
    /// The function is a straight line fitted by least squares, bent at a knot in each
    /// millisecond that holds points by their distances from the line (as far as their brackets'
    /// widths let them: see `knots`). Why the
    /// knots: the kernel slews CLOCK_MONOTONIC against the TSC (NTP, a virtual machine's clock),
    /// by up to 500 parts per million, and a straight line over a run of seconds then misses
    /// CLOCK_MONOTONIC by hundreds of microseconds. Knots a millisecond apart move by far less
    /// than a millisecond, so the function stays increasing. `fallback` (ticks per second,
    /// reference ticks, reference ns) is used when the points span less than 10 ms.
    pub fn fitted(points: &[Calibration], fallback: (u64, u64, u64)) -> Clock {
        let line = |tps: u64, t: u64, m: u64| Clock {
            tsc: true,
            ticks_per_sec: tps.max(1),
            points: Arc::new([(t, m)]),
            shift: None,
        };
        let (tmin, tmax) = points.iter().fold((u64::MAX, 0), |(lo, hi), p| {
            (lo.min(p.ticks), hi.max(p.ticks))
        });
        let (mmin, mmax) = points.iter().fold((u64::MAX, 0), |(lo, hi), p| {
            (lo.min(p.mono_ns), hi.max(p.mono_ns))
        });
        if points.len() < 2 || tmax <= tmin || mmax.saturating_sub(mmin) < MIN_SLOPE_SPAN_NS {
            return line(fallback.0, fallback.1, fallback.2);
        }
        let n = points.len() as f64;
        let tmean = points.iter().map(|p| (p.ticks - tmin) as f64).sum::<f64>() / n;
        let mmean = points
            .iter()
            .map(|p| (p.mono_ns - mmin) as f64)
            .sum::<f64>()
            / n;
        let (mut sxy, mut sxx) = (0.0f64, 0.0f64);
        for p in points {
            let x = (p.ticks - tmin) as f64 - tmean;
            let y = (p.mono_ns as f64 - mmin as f64) - mmean;
            sxy += x * y;
            sxx += x * x;
        }
        let ns_per_tick = sxy / sxx;
        if !(ns_per_tick.is_finite() && ns_per_tick > 0.0) {
            return line(fallback.0, fallback.1, fallback.2);
        }
        let tps = round_u64(NS_PER_SEC as f64 / ns_per_tick);
        let straight = line(tps, tmin + round_u64(tmean), mmin + round_u64(mmean));
        let span = lerp(
            0,
            i128::from(KNOT_NS),
            i128::from(straight.ticks_per_sec),
            i128::from(NS_PER_SEC),
        );
        // A knot that would not be later than the one before is left out, so the clock
        // increases.
        let mut knots: Vec<(u64, u64)> = Vec::new();
        for (mid, off) in super::knots::knots(points, span, |t| straight.own_ns(t), tps) {
            let at = clamp(i128::from(straight.own_ns(mid)) + off);
            if knots.last().is_none_or(|&(_, m)| at > m) {
                knots.push((mid, at));
            }
        }
        if knots.is_empty() {
            return straight;
        }
        Clock {
            points: knots.into(),
            ..straight
        }
    }

    /// CLOCK_MONOTONIC nanoseconds at `ticks` (on the machine the clock is shifted to, if any).
    pub fn ns(&self, ticks: u64) -> u64 {
        let ns = self.own_ns(ticks);
        self.shift.map_or(ns, |s| s.apply(ns))
    }

    /// CLOCK_MONOTONIC nanoseconds at `ticks` on the recording machine.
    fn own_ns(&self, ticks: u64) -> u64 {
        if !self.tsc {
            return ticks;
        }
        let tps = i128::from(self.ticks_per_sec);
        let ns = i128::from(NS_PER_SEC);
        let i = self.points.partition_point(|p| p.0 <= ticks);
        let t = i128::from(ticks);
        match (
            i.checked_sub(1).and_then(|j| self.points.get(j)),
            self.points.get(i),
        ) {
            (None, Some(&(t0, m0))) => lerp(m0, t - i128::from(t0), ns, tps),
            (Some(&(t0, m0)), Some(&(t1, m1))) => lerp(
                m0,
                t - i128::from(t0),
                i128::from(m1) - i128::from(m0),
                i128::from(t1) - i128::from(t0),
            ),
            (Some(&(t1, m1)), None) => {
                let prev = i.checked_sub(2).and_then(|j| self.points.get(j));
                match prev {
                    Some(&(t0, m0)) if m1 > m0 && m1 - m0 > MIN_SLOPE_SPAN_NS => lerp(
                        m1,
                        t - i128::from(t1),
                        i128::from(m1 - m0),
                        i128::from(t1 - t0),
                    ),
                    _ => lerp(m1, t - i128::from(t1), ns, tps),
                }
            }
            (None, None) => ticks,
        }
    }

    /// Sets an event's nanosecond time and duration from its ticks; the duration is the
    /// distance between the converted start and end, so that the end is where [`Clock::ns`]
    /// puts it.
    pub fn time(&self, e: &mut Event) {
        e.ts_ns = self.ns(e.ticks);
        e.dur_ns = self
            .ns(e.ticks.saturating_add(e.dur_ticks))
            .saturating_sub(e.ts_ns);
    }

    /// Whether [`Clock::ns`] never decreases as ticks grow: true unless calibration points
    /// (damaged ones) go back in time, so that events in tick order are in time order.
    pub fn is_monotonic(&self) -> bool {
        !self.tsc || self.points.windows(2).all(|w| w[1].1 >= w[0].1)
    }

    /// Nanoseconds in a duration of `ticks` (as the clock it is shifted to counts them).
    pub fn dur_ns(&self, ticks: u64) -> u64 {
        let ns = self.own_dur_ns(ticks);
        self.shift.map_or(ns, |s| s.scale(ns))
    }

    fn own_dur_ns(&self, ticks: u64) -> u64 {
        if !self.tsc {
            return ticks;
        }
        lerp(
            0,
            i128::from(ticks),
            i128::from(NS_PER_SEC),
            i128::from(self.ticks_per_sec),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Calibration points of unknown width.
    fn points(pts: &[(u64, u64)]) -> Vec<Calibration> {
        pts.iter()
            .map(|&(ticks, mono_ns)| Calibration {
                ticks,
                mono_ns,
                width: None,
                offset: 0,
            })
            .collect()
    }

    /// A 3 GHz TSC and a point a millisecond read in a bracket of 60 ticks, and in every second
    /// millisecond two more read in brackets of 900 ticks whose monotonic readings came 140 ns
    /// before their middles (at the brackets' starts), as on a machine under load.
    fn with_wide_points(width: impl Fn(u64) -> Option<u64>) -> Vec<Calibration> {
        let point = |ticks: u64, late: u64, w: u64| Calibration {
            ticks,
            mono_ns: ticks / 3 + 8_000 - late,
            width: width(w),
            offset: 0,
        };
        let mut pts = Vec::new();
        for i in 0..60u64 {
            let t = 1_000 + i * 3_000_000;
            pts.push(point(t, 0, 60));
            if i % 2 == 1 {
                pts.push(point(t + 900_000, 140, 900));
                pts.push(point(t + 1_800_000, 140, 900));
            }
        }
        pts
    }

    /// How far a clock is, at most, from `ticks / 3 + 8_000` over the first 180 ms.
    fn worst(c: &Clock) -> u64 {
        (1_000..180_000_000u64)
            .step_by(9_973)
            .map(|t| c.ns(t).abs_diff(t / 3 + 8_000))
            .max()
            .unwrap_or(0)
    }

    #[test]
    fn a_lone_wide_point_bends_the_clock_only_as_far_as_its_bracket_needs() {
        // A point a millisecond, 60 ticks wide, but every third millisecond holds only one
        // 900 ticks wide whose reading came 140 ns before its middle.
        let pts = |width: &dyn Fn(u64) -> Option<u64>| -> Vec<Calibration> {
            (0..60u64)
                .map(|i| {
                    let ticks = 1_000 + i * 3_000_000 + 1_000_000;
                    let (late, w) = if i % 3 == 1 { (140, 900) } else { (0, 60) };
                    Calibration {
                        ticks,
                        mono_ns: ticks / 3 + 8_000 - late,
                        width: width(w),
                        offset: 0,
                    }
                })
                .collect()
        };
        let known = Clock::fitted(&pts(&Some), (1, 0, 0));
        assert!(worst(&known) <= 5, "{} ns off", worst(&known));
        let unknown = Clock::fitted(&pts(&|_| None), (1, 0, 0));
        assert!(worst(&unknown) >= 100, "{} ns off", worst(&unknown));
    }

    #[test]
    fn a_knot_follows_the_tightest_points_of_its_millisecond() {
        let known = Clock::fitted(&with_wide_points(Some), (1, 0, 0));
        assert!(worst(&known) <= 5, "{} ns off", worst(&known));
        // Without widths (earlier agents), the wide point moves the median of its millisecond.
        let unknown = Clock::fitted(&with_wide_points(|_| None), (1, 0, 0));
        assert!(worst(&unknown) >= 50, "{} ns off", worst(&unknown));
    }
    use crate::format::flags;

    fn tsc_header(tps: u64) -> Header {
        Header {
            flags: flags::CLOCK_TSC,
            clock0: 1000,
            mono0: 5_000_000_000,
            ticks_per_sec: tps,
            ..Header::default()
        }
    }

    #[test]
    fn a_shift_moves_and_stretches_times() {
        let c = Clock::new(&Header::default(), &[]).shifted(Shift {
            offset_ns: -1_000,
            drift_ppb: 50_000,
            start_ns: 10_000_000,
        });
        assert_eq!(c.ns(10_000_000), 9_999_000);
        // 1 s later: 50 µs more.
        assert_eq!(c.ns(1_010_000_000), 1_010_049_000);
        assert_eq!(c.dur_ns(1_000_000_000), 1_000_050_000);
    }

    #[test]
    fn monotonic_ticks_are_ns() {
        let c = Clock::new(&Header::default(), &[]);
        assert_eq!(c.ns(123), 123);
        assert_eq!(c.dur_ns(7), 7);
    }

    #[test]
    fn interpolates_and_extrapolates() {
        // 2 ticks per ns from the header, but the measured segment says 3 ticks per ns.
        let h = tsc_header(2_000_000_000);
        let cal = [Calibration {
            ticks: 1000 + 60_000_000,
            mono_ns: 5_020_000_000,
            width: None,
            offset: 0,
        }];
        let c = Clock::new(&h, &cal);
        assert_eq!(c.ns(1000), 5_000_000_000);
        assert_eq!(c.ns(1000 + 30_000_000), 5_010_000_000);
        // Before the first point: header rate.
        assert_eq!(c.ns(0), 5_000_000_000 - 500);
        // After the last (segment spans 20 ms): the segment's rate.
        assert_eq!(c.ns(1000 + 90_000_000), 5_030_000_000);
        assert_eq!(c.dur_ns(2000), 1000);
        // Short last segment: header rate.
        let cal = [Calibration {
            ticks: 1000 + 3000,
            mono_ns: 5_000_001_000,
            width: None,
            offset: 0,
        }];
        let c = Clock::new(&h, &cal);
        assert_eq!(c.ns(1000 + 5000), 5_000_002_000);
    }

    #[test]
    fn absurd_values_do_not_panic() {
        let h = tsc_header(0);
        let cal = [
            Calibration {
                ticks: u64::MAX,
                mono_ns: 0,
                width: None,
                offset: 0,
            },
            Calibration {
                ticks: 0,
                mono_ns: u64::MAX,
                width: None,
                offset: 0,
            },
        ];
        let c = Clock::new(&h, &cal);
        for t in [0, 1, 999, 1000, 1001, u64::MAX / 2, u64::MAX - 1, u64::MAX] {
            let _ = c.ns(t);
            let _ = c.dur_ns(t);
        }
    }

    #[test]
    fn fitted_line_is_shared_and_monotonic() {
        // 3 ticks per ns, with +-20 ns of noise on the monotonic readings.
        let pts: Vec<(u64, u64)> = (0..50u64)
            .map(|i| {
                (
                    1_000 + i * 3_000_000,
                    7_000_000_000 + i * 1_000_000 + (i % 3) * 20,
                )
            })
            .collect();
        let c = Clock::fitted(&points(&pts), (1, 0, 0));
        let tps = i64::try_from(c.ticks_per_sec).unwrap();
        assert!((tps - 3_000_000_000).abs() < 3_000, "{tps}");
        let mut last = 0;
        for t in (0..150_000_000u64).step_by(997) {
            let ns = c.ns(1_000 + t);
            assert!(ns >= last);
            last = ns;
        }
        assert!(c.ns(1_000).abs_diff(7_000_000_000) < 100);
        // Too short a span: the fallback line.
        let c = Clock::fitted(&points(&pts[..2]), (2_000_000_000, 10, 500));
        assert_eq!(c.ns(10), 500);
        assert_eq!(c.ns(2_010), 1_500);
    }

    /// CLOCK_MONOTONIC as a kernel slewing it would run against a 3 GHz TSC: true rate for
    /// the first second, 500 ppm fast for the next, 500 ppm slow after.
    fn slewed(ticks: u64) -> u64 {
        let ns = ticks / 3;
        let fast = ns.saturating_sub(1_000_000_000).min(1_000_000_000);
        let slow = ns.saturating_sub(2_000_000_000);
        ns + fast / 2_000 - slow / 2_000
    }

    #[test]
    fn a_fitted_clock_follows_a_slewed_monotonic_clock() {
        // A point every 0.9 ms for 3 s, from alternating threads whose readings are off by
        // -30 ns, 0 and +30 ns.
        let pts: Vec<(u64, u64)> = (0..3_400u64)
            .map(|i| {
                let t = 5_000 + i * 2_700_000;
                (t, slewed(t) + (i % 3) * 30 - 30 + 9_000_000_000)
            })
            .collect();
        let c = Clock::fitted(&points(&pts), (1, 0, 0));
        let mut last = 0;
        let mut worst = 0;
        for t in (5_000..9_000_000_000u64).step_by(99_991) {
            let ns = c.ns(t);
            assert!(ns > last, "goes back at {t} ticks");
            last = ns;
            worst = worst.max(ns.abs_diff(slewed(t) + 9_000_000_000));
        }
        // A straight line misses by 300 µs here.
        assert!(worst < 1_000, "{worst} ns off CLOCK_MONOTONIC");
    }

    #[test]
    fn knots_keep_a_fitted_clock_increasing_when_points_crowd() {
        // Points from many threads within a few ns of each other, and a damaged one that
        // reads 50 µs early among them.
        let mut pts: Vec<(u64, u64)> = (0..20_000u64)
            .map(|i| (i * 3_001, i * 1_000 + (i * 7919 % 13) * 10))
            .collect();
        pts[10_000].1 -= 50_000;
        let c = Clock::fitted(&points(&pts), (1, 0, 0));
        assert!(c.is_monotonic());
        let mut last = 0;
        for t in (0..60_000_000u64).step_by(1_001) {
            let ns = c.ns(t);
            assert!(ns >= last, "goes back at {t} ticks");
            last = ns;
        }
    }

    #[test]
    fn lerp_gives_the_128_bit_quotient_on_either_path() {
        // What the 128-bit arithmetic alone gives.
        let wide = |base: u64, d: i128, n: i128, q: i128| {
            let quot = d.saturating_mul(n).checked_div(q).unwrap_or(i128::MAX);
            clamp(i128::from(base).saturating_add(quot))
        };
        let edges: [i128; 12] = [
            0,
            1,
            -1,
            7,
            -7,
            999_999_937,
            -999_999_937,
            i128::from(i64::MAX),
            i128::from(i64::MIN),
            i128::from(i64::MAX) + 1,
            i128::from(u64::MAX),
            -i128::from(u64::MAX),
        ];
        for &d in &edges {
            for &n in &edges {
                for &q in edges.iter().filter(|&&q| q != 0) {
                    for base in [0, 12_345, u64::MAX / 2, u64::MAX] {
                        assert_eq!(
                            lerp(base, d, n, q),
                            wide(base, d, n, q),
                            "{base} {d} {n} {q}"
                        );
                    }
                }
            }
        }
    }
}
