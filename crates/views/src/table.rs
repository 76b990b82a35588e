//! The top-down view (`scalpel top`) as text tables.

use std::io::{self, Write};

use super::units::{bytes, count, duration, pct};
use scalpel_analysis::rollup::{TaskRow, TopView};

/// The three largest blocked shares: `sleep 80.0%, cond 5.1%, …`.
pub(crate) fn blocked_shares(r: &TaskRow) -> String {
    let parts: Vec<String> = r
        .blocked_shares
        .iter()
        .take(3)
        .map(|(k, s)| format!("{} {}", k.name(), pct(*s)))
        .collect();
    parts.join(", ")
}

fn blocked(r: &TaskRow) -> String {
    let run = format!("run {}", pct(r.running_share));
    match blocked_shares(r) {
        b if b.is_empty() => run,
        b => format!("{run}, {b}"),
    }
}

/// Width of the name column. A longer name is printed whole on a line of its own, with its
/// figures on the next: `--expand` takes the name exactly as printed, `#` suffix and all.
const NAME: usize = 56;

/// Fewest instances for a rate: "63680.7 per second" for a task seen 3 times says nothing.
const MIN_FOR_RATE: u64 = 10;

fn task_header(o: &mut impl Write, first: &str) -> io::Result<()> {
    writeln!(
        o,
        "{first:<NAME$} {:>7} {:>10} {:>10} {:>10} {:>10} {:>10} {:>9} {:>10}  critical path",
        "count", "summed", "mean", "p50", "p99", "max", "per s", "bandwidth"
    )
}

fn task_line(o: &mut impl Write, name: &str, r: &TaskRow) -> io::Result<()> {
    let name = if name.chars().count() > NAME {
        writeln!(o, "{name}")?;
        "  ↳"
    } else {
        name
    };
    let rate = if r.count >= MIN_FOR_RATE {
        format!("{:.1}", r.per_second)
    } else {
        "-".to_owned()
    };
    writeln!(
        o,
        "{:<NAME$} {:>7} {:>10} {:>10} {:>10} {:>10} {:>10} {:>9} {:>10}  {}",
        name,
        r.count,
        duration(r.total_ns),
        duration(r.latency.mean_ns),
        duration(r.latency.p50_ns),
        duration(r.latency.p99_ns),
        duration(r.latency.max_ns),
        rate,
        format!("{}/s", bytes(r.bandwidth)),
        blocked(r)
    )
}

/// The view as text tables.
pub fn write_table(o: &mut impl Write, v: &TopView) -> io::Result<()> {
    writeln!(
        o,
        "{}, {}, {} over {}",
        count(v.processes as u64, "process", "processes"),
        count(v.threads as u64, "thread", "threads"),
        count(v.leaves as u64, "leaf", "leaves"),
        duration(v.span_ns)
    )?;
    let chans: Vec<String> = v
        .channels
        .iter()
        .map(|c| {
            format!(
                "{} {} in, {} out ({}/s)",
                c.kind,
                bytes(c.bytes_in as f64),
                bytes(c.bytes_out as f64),
                bytes(c.bandwidth)
            )
        })
        .collect();
    if !chans.is_empty() {
        writeln!(o, "bytes: {}", chans.join("; "))?;
    }
    match &v.expanded {
        None => {
            writeln!(
                o,
                "\ntop-level tasks by summed latency (instances that stand alone; an instance \
                 inside another task counts in its parent; instances overlap, so a sum can pass \
                 the trace's span of {}):",
                duration(v.span_ns)
            )?;
            task_header(o, "task")?;
            for r in &v.tasks {
                task_line(o, &r.name, r)?;
            }
        }
        Some(e) => {
            let t = &e.task;
            writeln!(
                o,
                "\n{} ({:?}, level {}): {}, latency mean {} p50 {} p90 {} p99 {} max {}",
                t.name,
                t.kind,
                t.level,
                count(t.count, "instance", "instances"),
                duration(t.latency.mean_ns),
                duration(t.latency.p50_ns),
                duration(t.latency.p90_ns),
                duration(t.latency.p99_ns),
                duration(t.latency.max_ns)
            )?;
            let cpu = t
                .cpu_mean_ns
                .map(|c| format!("CPU {} per instance; ", duration(c)))
                .unwrap_or_default();
            writeln!(
                o,
                "  {:.1} per second, {} in, {} out, {}/s; {cpu}critical path {} per instance: {}",
                t.per_second,
                bytes(t.bytes_in as f64),
                bytes(t.bytes_out as f64),
                bytes(t.bandwidth),
                duration(e.critical_ns),
                blocked(t)
            )?;
            if !e.children.is_empty() {
                writeln!(
                    o,
                    "\nchildren (share of the parent's latency / critical path):"
                )?;
                task_header(o, "child")?;
                for c in &e.children {
                    let label = format!(
                        "{} [x{:.2}, {} / {}]",
                        c.task.name,
                        c.per_parent,
                        pct(c.latency_share),
                        pct(c.critical_share)
                    );
                    task_line(o, &label, &c.task)?;
                }
            }
            writeln!(o, "\nwhere the critical path went (per instance):")?;
            for c in &e.contributors {
                let queued = c
                    .while_queued
                    .as_ref()
                    .map(|q| format!("  (while {q} waited for this thread)"))
                    .unwrap_or_default();
                writeln!(
                    o,
                    "  {:>6}  {:>10}  {:<8} {}{queued}",
                    pct(c.share),
                    duration(c.per_instance_ns),
                    c.what,
                    c.leaf
                )?;
                for k in &c.calls {
                    let peer = k
                        .peer
                        .as_ref()
                        .map(|p| format!(", woken/held by {p}"))
                        .unwrap_or_default();
                    writeln!(
                        o,
                        "            {} x{} on {} in {} (total {}, max {}){peer}",
                        k.call,
                        k.count,
                        k.object,
                        k.function.as_deref().unwrap_or("?"),
                        duration(k.total_ns),
                        duration(k.max_ns)
                    )?;
                    for f in &k.stack {
                        writeln!(o, "                at {f}")?;
                    }
                }
            }
        }
    }
    Ok(())
}
