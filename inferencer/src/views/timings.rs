//! The phase timings `--timings` prints: one line per phase, then the whole run.

use std::io::{self, Write};

use crate::progress::Timings;

/// Writes `t` as aligned lines: `  graph              1.234 s  12.3%`, then the total.
pub fn write_timings(w: &mut impl Write, t: &Timings) -> io::Result<()> {
    let total = t.total().as_secs_f64();
    let width = t.phases.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
    writeln!(w, "timings:")?;
    for (name, d) in &t.phases {
        let s = d.as_secs_f64();
        let share = if total > 0.0 { 100.0 * s / total } else { 0.0 };
        writeln!(w, "  {name:<width$}  {s:>8.3} s  {share:>5.1}%")?;
    }
    writeln!(w, "  {:<width$}  {total:>8.3} s", "total")
}
