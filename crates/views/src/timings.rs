//! The phase timings `--timings` prints: one line per phase, with the resident set after it and
//! the peak so far when Linux tells them, then the whole run.

use std::io::{self, Write};

use scalpel_model::progress::Timings;

/// Writes `t` as aligned lines, `  graph   1.234 s  12.3%  rss 40.1 MiB  peak 45.6 MiB`, then
/// the total with the run's peaks: resident, and address space (what `ulimit -v` limits).
pub fn write_timings(w: &mut impl Write, t: &Timings) -> io::Result<()> {
    let total = t.total().as_secs_f64();
    let width = t.phases.iter().map(|p| p.name.len()).max().unwrap_or(0);
    writeln!(w, "timings:")?;
    for p in &t.phases {
        let s = p.time.as_secs_f64();
        let share = if total > 0.0 { 100.0 * s / total } else { 0.0 };
        let name = p.name;
        let memory = p
            .memory
            .map(|m| format!("  rss {:>10}  peak {:>10}", mib(m.rss), mib(m.peak)))
            .unwrap_or_default();
        writeln!(w, "  {name:<width$}  {s:>8.3} s  {share:>5.1}%{memory}")?;
    }
    let peak = t
        .peak_memory()
        .map(|m| format!("  peak {}  address space {}", mib(m.peak), mib(m.space)))
        .unwrap_or_default();
    writeln!(w, "  {:<width$}  {total:>8.3} s{peak}", "total")?;
    let summed: f64 = t.phases.iter().map(|p| p.time.as_secs_f64()).sum();
    // Windows mined side by side: each phase is the sum of its runs, the total the wall clock.
    if summed > total * 1.01 {
        writeln!(
            w,
            "  (the phases add up to {summed:.3} s: some ran side by side)"
        )?;
    }
    Ok(())
}

/// Bytes in MiB, one decimal (one unit, so that the column compares at a glance).
fn mib(b: u64) -> String {
    format!("{:.1} MiB", b as f64 / f64::from(1 << 20))
}
