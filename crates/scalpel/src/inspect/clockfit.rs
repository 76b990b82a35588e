//! How closely a trace's fitted clock follows its calibration points: the `clock:` line of the
//! summary, for a reader deciding how far to trust the order of events nanoseconds apart on
//! different threads.

use std::fmt;

use scalpel_model::read::TraceDir;

/// The calibration points that record their bracket's width, and the fitted clock against them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClockFit {
    /// Points with a known width (TSC-clocked files of agents that write it).
    pub points: u64,
    /// Their median bracket, ns.
    pub median_width_ns: u64,
    /// The largest distance of the fitted clock from a tight point's reading (one at most twice
    /// the median width), ns.
    pub tight_off_ns: u64,
    /// The largest distance from any point's reading, ns.
    pub any_off_ns: u64,
}

impl ClockFit {
    /// Over every TSC-clocked file of `trace`; all zero when no point has a width.
    pub fn of(trace: &TraceDir) -> ClockFit {
        // (width ns, distance ns) per point.
        let mut rows: Vec<(u64, u64)> = Vec::new();
        for (_, f) in trace.files() {
            if !f.header.is_tsc() {
                continue;
            }
            let tps = u128::from(f.header.ticks_per_sec.max(1));
            for c in &f.calibrations {
                let Some(w) = c.width else { continue };
                let w_ns = u64::try_from(u128::from(w) * 1_000_000_000 / tps).unwrap_or(u64::MAX);
                rows.push((w_ns, f.clock.ns(c.ticks).abs_diff(c.mono_ns)));
            }
        }
        let mut widths: Vec<u64> = rows.iter().map(|r| r.0).collect();
        widths.sort_unstable();
        let Some(&median) = widths.get(widths.len() / 2) else {
            return ClockFit::default();
        };
        let tight = rows.iter().filter(|r| r.0 <= median.saturating_mul(2));
        ClockFit {
            points: rows.len() as u64,
            median_width_ns: median,
            tight_off_ns: tight.map(|r| r.1).max().unwrap_or(0),
            any_off_ns: rows.iter().map(|r| r.1).max().unwrap_or(0),
        }
    }
}

impl fmt::Display for ClockFit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} calibration points, median bracket {} ns; the fitted clock within {} ns of the \
             tight ones' readings, {} ns of all",
            self.points, self.median_width_ns, self.tight_off_ns, self.any_off_ns
        )
    }
}
