//! The top-down view as a text table or CSV (JSON is its serde form).

use std::fmt::Write;

use super::view::{TaskRow, TopView};

/// A duration for people: `812 ns`, `3.41 ms`, `1.02 s`.
pub fn duration(ns: u64) -> String {
    let f = ns as f64;
    if ns < 1_000 {
        format!("{ns} ns")
    } else if ns < 1_000_000 {
        format!("{:.1} us", f / 1e3)
    } else if ns < 1_000_000_000 {
        format!("{:.2} ms", f / 1e6)
    } else {
        format!("{:.2} s", f / 1e9)
    }
}

/// A byte count or rate for people.
pub(super) fn bytes(b: f64) -> String {
    if b < 1024.0 {
        format!("{b:.0} B")
    } else if b < 1024.0 * 1024.0 {
        format!("{:.1} KiB", b / 1024.0)
    } else {
        format!("{:.1} MiB", b / (1024.0 * 1024.0))
    }
}

/// A share as a percentage.
pub(super) fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

/// The three largest blocked shares: `sleep 80.0%, cond 5.1%, …`.
pub(super) fn blocked_shares(r: &TaskRow) -> String {
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

fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n - 1).collect();
        t.push('…');
        t
    }
}

const NAME: usize = 56;

fn task_header(o: &mut String, first: &str) {
    let _ = writeln!(
        o,
        "{first:<NAME$} {:>7} {:>10} {:>10} {:>10} {:>10} {:>10} {:>9} {:>10}  critical path",
        "count", "total", "mean", "p50", "p99", "max", "per s", "bandwidth"
    );
}

fn task_line(o: &mut String, name: &str, r: &TaskRow) {
    let _ = writeln!(
        o,
        "{:<NAME$} {:>7} {:>10} {:>10} {:>10} {:>10} {:>10} {:>9.1} {:>10}  {}",
        clip(name, NAME),
        r.count,
        duration(r.total_ns),
        duration(r.latency.mean_ns),
        duration(r.latency.p50_ns),
        duration(r.latency.p99_ns),
        duration(r.latency.max_ns),
        r.per_second,
        format!("{}/s", bytes(r.bandwidth)),
        blocked(r)
    );
}

/// The view as text tables.
pub fn table(v: &TopView) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{} processes, {} threads, {} leaves over {}",
        v.processes,
        v.threads,
        v.leaves,
        duration(v.span_ns)
    );
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
        let _ = writeln!(o, "bytes: {}", chans.join("; "));
    }
    match &v.expanded {
        None => {
            let _ = writeln!(o, "\ntop-level tasks by total time:");
            task_header(&mut o, "task");
            for r in &v.tasks {
                task_line(&mut o, &r.name, r);
            }
        }
        Some(e) => {
            let t = &e.task;
            let _ = writeln!(
                o,
                "\n{} ({:?}, level {}): {} instances, latency mean {} p50 {} p90 {} p99 {} max {}",
                t.name,
                t.kind,
                t.level,
                t.count,
                duration(t.latency.mean_ns),
                duration(t.latency.p50_ns),
                duration(t.latency.p90_ns),
                duration(t.latency.p99_ns),
                duration(t.latency.max_ns)
            );
            let cpu = t
                .cpu_mean_ns
                .map(|c| format!("CPU {} per instance; ", duration(c)))
                .unwrap_or_default();
            let _ = writeln!(
                o,
                "  {:.1} per second, {} in, {} out, {}/s; {cpu}critical path {} per instance: {}",
                t.per_second,
                bytes(t.bytes_in as f64),
                bytes(t.bytes_out as f64),
                bytes(t.bandwidth),
                duration(e.critical_ns),
                blocked(t)
            );
            if !e.children.is_empty() {
                let _ = writeln!(
                    o,
                    "\nchildren (share of the parent's latency / critical path):"
                );
                task_header(&mut o, "child");
                for c in &e.children {
                    let label = format!(
                        "{} [x{:.2}, {} / {}]",
                        c.task.name,
                        c.per_parent,
                        pct(c.latency_share),
                        pct(c.critical_share)
                    );
                    task_line(&mut o, &label, &c.task);
                }
            }
            let _ = writeln!(o, "\nwhere the critical path went (per instance):");
            for c in &e.contributors {
                let queued = c
                    .while_queued
                    .as_ref()
                    .map(|q| format!("  (while {q} waited for this thread)"))
                    .unwrap_or_default();
                let _ = writeln!(
                    o,
                    "  {:>6}  {:>10}  {:<8} {}{queued}",
                    pct(c.share),
                    duration(c.per_instance_ns),
                    c.what,
                    c.leaf
                );
                for k in &c.calls {
                    let peer = k
                        .peer
                        .as_ref()
                        .map(|p| format!(", woken/held by {p}"))
                        .unwrap_or_default();
                    let _ = writeln!(
                        o,
                        "            {} x{} on {} in {} (total {}, max {}){peer}",
                        k.call,
                        k.count,
                        k.object,
                        k.function.as_deref().unwrap_or("?"),
                        duration(k.total_ns),
                        duration(k.max_ns)
                    );
                    for f in &k.stack {
                        let _ = writeln!(o, "                at {f}");
                    }
                }
            }
        }
    }
    o
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The view as CSV: one row per task, child or contributor, `section` telling which.
pub fn csv(v: &TopView) -> String {
    let mut o = String::from(
        "section,name,what,count,total_ns,mean_ns,p50_ns,p90_ns,p99_ns,max_ns,per_second,bytes_in,bytes_out,bandwidth,share,critical_share,while_queued,cpu_mean_ns\n",
    );
    let task = |o: &mut String, section: &str, r: &TaskRow, share: f64, crit: f64| {
        let _ = writeln!(
            o,
            "{section},{},{:?},{},{},{},{},{},{},{},{:.3},{},{},{:.1},{:.4},{:.4},,{}",
            csv_field(&r.name),
            r.kind,
            r.count,
            r.total_ns,
            r.latency.mean_ns,
            r.latency.p50_ns,
            r.latency.p90_ns,
            r.latency.p99_ns,
            r.latency.max_ns,
            r.per_second,
            r.bytes_in,
            r.bytes_out,
            r.bandwidth,
            share,
            crit,
            r.cpu_mean_ns.map(|c| c.to_string()).unwrap_or_default()
        );
    };
    match &v.expanded {
        None => v
            .tasks
            .iter()
            .for_each(|r| task(&mut o, "task", r, 1.0, 1.0)),
        Some(e) => {
            task(&mut o, "task", &e.task, 1.0, 1.0);
            for c in &e.children {
                task(&mut o, "child", &c.task, c.latency_share, c.critical_share);
            }
            for c in &e.contributors {
                let _ = writeln!(
                    o,
                    "contributor,{},{},,,{},,,,,,,,,{:.4},{:.4},{},",
                    csv_field(&c.leaf),
                    c.what,
                    c.per_instance_ns,
                    c.share,
                    c.share,
                    csv_field(c.while_queued.as_deref().unwrap_or(""))
                );
            }
        }
    }
    o
}
