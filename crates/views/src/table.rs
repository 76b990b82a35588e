//! The top-down view (`scalpel top`) as text tables.

use std::io::{self, Write};

use super::units::{bytes, count, cut, duration, pct, wrap};
use scalpel_analysis::rollup::{TaskRow, TopView};
use scalpel_model::graph::HostInfo;

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

/// How `top`'s tables are laid out. `Default`: 120 columns, the narrow columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableOptions {
    /// Columns the narrow layout fits in (at least [`MIN_WIDTH`]).
    pub width: usize,
    /// Every column (mean, rate and bandwidth too) and lines as long as they come.
    pub wide: bool,
}

impl Default for TableOptions {
    fn default() -> Self {
        TableOptions {
            width: 120,
            wide: false,
        }
    }
}

/// The narrowest layout: the name and figure columns and a little of the critical path.
pub const MIN_WIDTH: usize = 100;

/// Width of the name column: wide, and narrow. A longer name is printed whole on a line of its
/// own, with its figures on the next: `--expand` takes the name exactly as printed, `#`
/// suffix and all.
const NAME: usize = 56;
const NAME_NARROW: usize = 34;

/// Fewest instances for a rate: "63680.7 per second" for a task seen 3 times says nothing.
const MIN_FOR_RATE: u64 = 10;

impl TableOptions {
    fn width(self) -> usize {
        self.width.max(MIN_WIDTH)
    }

    fn name_width(self) -> usize {
        if self.wide {
            NAME
        } else {
            NAME_NARROW
        }
    }

    /// A line of prose, wrapped to the width unless wide.
    fn prose(self, o: &mut impl Write, text: &str, indent: usize) -> io::Result<()> {
        if self.wide {
            return writeln!(o, "{text}");
        }
        for line in wrap(text, self.width(), indent) {
            writeln!(o, "{line}")?;
        }
        Ok(())
    }

    fn header(self, o: &mut impl Write, first: &str) -> io::Result<()> {
        if self.wide {
            return writeln!(
                o,
                "{first:<NAME$} {:>7} {:>10} {:>10} {:>10} {:>10} {:>10} {:>9} {:>10}  critical path",
                "count", "summed", "mean", "p50", "p99", "max", "per s", "bandwidth"
            );
        }
        writeln!(
            o,
            "{first:<NAME_NARROW$} {:>7} {:>9} {:>9} {:>9} {:>9}  critical path",
            "count", "summed", "p50", "p99", "max"
        )
    }

    fn line(self, o: &mut impl Write, name: &str, r: &TaskRow) -> io::Result<()> {
        let name = if name.chars().count() > self.name_width() {
            // Whole even past the width: `--expand` takes it as printed.
            writeln!(o, "{name}")?;
            "  ↳"
        } else {
            name
        };
        if self.wide {
            let rate = if r.count >= MIN_FOR_RATE {
                format!("{:.1}", r.per_second)
            } else {
                "-".to_owned()
            };
            return writeln!(
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
            );
        }
        let figures = format!(
            "{:<NAME_NARROW$} {:>7} {:>9} {:>9} {:>9} {:>9}  ",
            name,
            r.count,
            duration(r.total_ns),
            duration(r.latency.p50_ns),
            duration(r.latency.p99_ns),
            duration(r.latency.max_ns),
        );
        let room = self.width().saturating_sub(figures.chars().count());
        writeln!(o, "{figures}{}", cut(&blocked(r), room))
    }
}

/// When the graph holds processes or threads with no leaf, how many: `infer` counts every
/// process recorded, `top` those with leaves, and a reader comparing the two should not have
/// to guess why they differ.
pub(crate) fn recorded_note(v: &TopView) -> Option<String> {
    let (p, t) = (
        v.processes_recorded.saturating_sub(v.processes),
        v.threads_recorded.saturating_sub(v.threads),
    );
    (p > 0 || t > 0).then(|| {
        format!(
            "  ({} and {} recorded; {} and {} of them have no leaf: they made no call that ends \
             one, or a filter left it out)",
            count(v.processes_recorded as u64, "process", "processes"),
            count(v.threads_recorded as u64, "thread", "threads"),
            p,
            t
        )
    })
}

/// The view as text tables, 120 columns wide.
pub fn write_table(o: &mut impl Write, v: &TopView) -> io::Result<()> {
    write_table_with(o, v, TableOptions::default())
}

/// The machines and their clocks, when there are several: `machines: web (reference), db
/// (clock -1000.000 011 s ± 26.6 us, accurate)`.
pub(crate) fn hosts_line(hosts: &[HostInfo]) -> Option<String> {
    if hosts.is_empty() {
        return None;
    }
    let one = |h: &HostInfo| {
        let c = &h.clock;
        if c.reference {
            return format!("{} (reference)", h.host);
        }
        let bound = c
            .bound_ns
            .map_or_else(|| "no bound".to_string(), |b| format!("± {}", duration(b)));
        format!(
            "{} (clock {:+.9} s {bound}, {})",
            h.host,
            c.offset_ns as f64 / 1e9,
            c.grade
        )
    };
    let all: Vec<String> = hosts.iter().map(one).collect();
    Some(format!("machines: {}", all.join(", ")))
}

/// What a view of a trace's windows added up says of them.
fn windows_note(windows: usize) -> String {
    format!(
        "{windows} time windows of one trace added up by task name: a task a window's boundary \
         cut counts once in each window; percentiles of a type with more than {} instances are \
         within 0.1%; contributors are each window's {} largest added up",
        scalpel_analysis::rollup::EXACT_VALUES,
        scalpel_analysis::rollup::CONTRIBUTORS
    )
}

/// The view as text tables laid out as `t` says.
pub fn write_table_with(o: &mut impl Write, v: &TopView, t: TableOptions) -> io::Result<()> {
    writeln!(
        o,
        "{}, {}, {} over {}",
        count(v.processes as u64, "process", "processes"),
        count(v.threads as u64, "thread", "threads"),
        count(v.leaves as u64, "leaf", "leaves"),
        duration(v.span_ns)
    )?;
    if let Some(note) = recorded_note(v) {
        t.prose(o, &note, 2)?;
    }
    if v.windows > 0 {
        t.prose(o, &windows_note(v.windows), 2)?;
    }
    if let Some(line) = hosts_line(&v.hosts) {
        t.prose(o, &line, 2)?;
    }
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
        t.prose(o, &format!("bytes: {}", chans.join("; ")), 2)?;
    }
    match &v.expanded {
        None => {
            writeln!(o)?;
            t.prose(
                o,
                &format!(
                    "top-level tasks by summed latency (instances that stand alone; an instance \
                     inside another task counts in its parent; instances overlap, so a sum can \
                     pass the trace's span of {}):",
                    duration(v.span_ns)
                ),
                0,
            )?;
            t.header(o, "task")?;
            for r in &v.tasks {
                t.line(o, &r.name, r)?;
            }
        }
        Some(e) => {
            let task = &e.task;
            writeln!(o)?;
            t.prose(
                o,
                &format!(
                    "{} ({:?}, level {}): {}, latency mean {} p50 {} p90 {} p99 {} max {}",
                    task.name,
                    task.kind,
                    task.level,
                    count(task.count, "instance", "instances"),
                    duration(task.latency.mean_ns),
                    duration(task.latency.p50_ns),
                    duration(task.latency.p90_ns),
                    duration(task.latency.p99_ns),
                    duration(task.latency.max_ns)
                ),
                2,
            )?;
            let cpu = task
                .cpu_mean_ns
                .map(|c| format!("CPU {} per instance; ", duration(c)))
                .unwrap_or_default();
            t.prose(
                o,
                &format!(
                    "  {:.1} per second, {} in, {} out, {}/s; {cpu}critical path {} per \
                     instance: {}",
                    task.per_second,
                    bytes(task.bytes_in as f64),
                    bytes(task.bytes_out as f64),
                    bytes(task.bandwidth),
                    duration(e.critical_ns),
                    blocked(task)
                ),
                4,
            )?;
            if !e.children.is_empty() {
                writeln!(
                    o,
                    "\nchildren (share of the parent's latency / critical path):"
                )?;
                t.header(o, "child")?;
                for c in &e.children {
                    let label = format!(
                        "{} [x{:.2}, {} / {}]",
                        c.task.name,
                        c.per_parent,
                        pct(c.latency_share),
                        pct(c.critical_share)
                    );
                    t.line(o, &label, &c.task)?;
                }
            }
            writeln!(o, "\nwhere the critical path went (per instance):")?;
            for c in &e.contributors {
                let queued = c
                    .while_queued
                    .as_ref()
                    .map(|q| format!("  (while {q} waited for this thread)"))
                    .unwrap_or_default();
                t.prose(
                    o,
                    &format!(
                        "  {:>6}  {:>10}  {:<8} {}{queued}",
                        pct(c.share),
                        duration(c.per_instance_ns),
                        c.what,
                        c.leaf
                    ),
                    32,
                )?;
                for k in &c.calls {
                    let peer = k
                        .peer
                        .as_ref()
                        .map(|p| format!(", woken/held by {p}"))
                        .unwrap_or_default();
                    t.prose(
                        o,
                        &format!(
                            "            {} x{} on {} in {} (total {}, max {}){peer}",
                            k.call,
                            k.count,
                            k.object,
                            k.function.as_deref().unwrap_or("?"),
                            duration(k.total_ns),
                            duration(k.max_ns)
                        ),
                        16,
                    )?;
                    for f in &k.stack {
                        let frame = format!("                at {f}");
                        match t.wide {
                            true => writeln!(o, "{frame}")?,
                            false => writeln!(o, "{}", cut(&frame, t.width()))?,
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(processes: usize, recorded: usize) -> TopView {
        TopView {
            processes,
            threads: processes * 2,
            processes_recorded: recorded,
            threads_recorded: recorded * 2,
            leaves: 10,
            span_ns: 1_000,
            channels: Vec::new(),
            tasks: Vec::new(),
            expanded: None,
            hosts: Vec::new(),
            windows: 0,
        }
    }

    #[test]
    fn windows_added_up_say_so_and_what_is_approximate() {
        let mut v = view(1, 1);
        let mut out = Vec::new();
        write_table(&mut out, &v).unwrap();
        assert!(!String::from_utf8(out).unwrap().contains("windows"));
        v.windows = 3;
        let mut out = Vec::new();
        write_table(&mut out, &v).unwrap();
        let text = String::from_utf8(out).unwrap().replace("\n  ", " ");
        assert!(
            text.contains("3 time windows of one trace added up by task name")
                && text.contains("more than 65536 instances are within 0.1%"),
            "{text}"
        );
    }

    #[test]
    fn several_machines_are_named_with_their_clocks() {
        use scalpel_model::graph::{ClockGrade, HostClock};
        let mut v = view(2, 2);
        let host = |name: &str, clock: HostClock| HostInfo {
            host: name.into(),
            trace: format!("t-{name}"),
            start_ns: 1,
            addresses: Vec::new(),
            clock,
        };
        v.hosts = vec![
            host("web", HostClock::reference()),
            host(
                "db",
                HostClock {
                    reference: false,
                    offset_ns: -1_000_000_002_116,
                    drift_ppb: 0,
                    drift_bound_ppb: Some(100),
                    bound_ns: Some(29_355),
                    pairs: 1200,
                    grade: ClockGrade::Accurate,
                },
            ),
        ];
        let mut out = Vec::new();
        write_table(&mut out, &v).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains(
                "machines: web (reference), db (clock -1000.000002116 s ± 29.4 us, accurate)"
            ),
            "{text}"
        );
        let mut out = Vec::new();
        write_table(&mut out, &view(2, 2)).unwrap();
        assert!(!String::from_utf8(out).unwrap().contains("machines"));
    }

    #[test]
    fn processes_without_leaves_are_counted_beside_those_with() {
        let mut out = Vec::new();
        write_table(&mut out, &view(58, 71)).unwrap();
        let text = String::from_utf8(out).unwrap();
        let mut lines = text.lines();
        assert_eq!(
            lines.next(),
            Some("58 processes, 116 threads, 10 leaves over 1.0 us")
        );
        let note = lines.next().unwrap();
        assert!(
            note.starts_with("  (71 processes and 142 threads recorded; 13 and 26 of them"),
            "{note}"
        );
        assert_eq!(recorded_note(&view(3, 3)), None);
    }
}
