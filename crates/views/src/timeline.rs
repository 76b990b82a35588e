//! A timeline that Perfetto's UI and Chrome's trace viewer open (`scalpel timeline`): the Chrome
//! trace-event JSON format, one event per line.
//!
//! - A track per thread, grouped by process (`process_name`, `thread_name` metadata; a process
//!   is named by its title when it renamed itself). Traces of several machines: each process's
//!   name begins with its machine's, and the processes are sorted machine by machine
//!   (`process_sort_index`).
//! - Each leaf is a complete slice (`"ph":"X"`) named by its leaf type, from its start to the
//!   return of the call that ended it; nested in it, each slow call inside it (a lock wait with
//!   the lock's holder, a sleep, file I/O) and the call that ended it (with its waker).
//! - Each causal edge between threads is a flow arrow (`"s"` on the sender's ending call, `"f"`
//!   with `"bp":"e"` on the receiver's leaf), named by its kind. Both ends carry the exact start
//!   time of the slice they belong to, which is how Chrome's viewer binds them; Perfetto binds to
//!   the innermost open slice, the same one.
//! - Each task instance (an occurrence of a group or loop type) is an async slice (`"b"`/`"e"`)
//!   on its first leaf's process, named by its type, with its critical path in its arguments.
//!
//! - A trace inferred in windows is one timeline: [`TimelineWriter::add`] takes one window after
//!   another, with the window's index in each leaf's arguments (leaf ids are the window's own),
//!   each process and thread named once, and flow and task ids numbered on across windows.
//!
//! Times are microseconds from the first leaf's start, with three decimals (nanoseconds).
//! Slices on one thread never overlap: a leaf is cut at the next one's start, a call inside it
//! at the leaf's end, against clock jitter.

use std::io::{self, Write};

use ahash::AHashMap;

use scalpel_model::graph::Graph;
use scalpel_model::task::Model;

use scalpel_analysis::rollup::TaskSpan;

mod slices;

/// What the timeline holds. `Default`: everything.
#[derive(Clone, Copy, Debug, Default)]
pub struct TimelineOptions {
    /// Only what overlaps the window from this many ns after the first leaf's start.
    pub from_ns: Option<u64>,
    /// … to this many.
    pub to_ns: Option<u64>,
}

/// How many events of each sort were written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TimelineCounts {
    /// Leaf slices.
    pub leaves: u64,
    /// Call slices inside leaves (slow inner calls and ending calls).
    pub calls: u64,
    /// Flow arrows (pairs of `s` and `f`).
    pub flows: u64,
    /// Task instances (pairs of `b` and `e`).
    pub tasks: u64,
}

/// Writes the timeline of `g` (tasks from `model` and `spans`) to `o`.
pub fn write_timeline(
    o: &mut impl Write,
    g: &Graph,
    model: &Model,
    spans: &[TaskSpan],
    opts: &TimelineOptions,
) -> io::Result<TimelineCounts> {
    let mut w = TimelineWriter::new(o, *opts)?;
    w.add(g, model, spans, None)?;
    w.finish()
}

/// The start of `g`'s first leaf (0 without leaves): where a timeline's times count from.
pub fn first_start(g: &Graph) -> u64 {
    g.leaves.iter().map(|l| l.start_ns).min().unwrap_or(0)
}

/// A timeline written one graph at a time: one graph, or each window of a trace inferred in
/// windows in order, into one document. Times count from the first graph's first leaf.
pub struct TimelineWriter<'w, W: Write> {
    o: &'w mut W,
    opts: TimelineOptions,
    /// Where times count from (ns), once the first graph is in.
    base: Option<u64>,
    /// No event written yet (no comma before the next).
    first: bool,
    /// The name last given to each process (by pid) and thread (by pid and tid).
    names: AHashMap<(u32, Option<u32>), String>,
    counts: TimelineCounts,
}

impl<'w, W: Write> TimelineWriter<'w, W> {
    /// Begins a timeline showing what `opts` asks for.
    pub fn new(o: &'w mut W, opts: TimelineOptions) -> io::Result<Self> {
        writeln!(o, "{{\"displayTimeUnit\":\"ns\",\"traceEvents\":[")?;
        Ok(TimelineWriter {
            o,
            opts,
            base: None,
            first: true,
            names: AHashMap::new(),
            counts: TimelineCounts::default(),
        })
    }

    /// What is shown, in absolute ns, once times count from `base`.
    fn span(&self, base: u64) -> (u64, u64) {
        let from = base + self.opts.from_ns.unwrap_or(0);
        let to = self.opts.to_ns.map_or(u64::MAX, |t| base.saturating_add(t));
        (from, to)
    }

    /// Whether a graph whose leaves lie between `start` and `end` (ns; none: unbounded) may
    /// have anything shown: always before the first graph is in, which sets where times count
    /// from.
    pub fn wants(&self, start: Option<u64>, end: Option<u64>) -> bool {
        let Some(base) = self.base else {
            return true;
        };
        let (from, to) = self.span(base);
        start.unwrap_or(0) <= to && end.unwrap_or(u64::MAX) >= from
    }

    /// Ends the document; returns what it holds.
    pub fn finish(self) -> io::Result<TimelineCounts> {
        writeln!(self.o, "\n]}}")?;
        Ok(self.counts)
    }

    /// A comma before every event but the first.
    fn sep(&mut self) -> io::Result<()> {
        if !std::mem::take(&mut self.first) {
            writeln!(self.o, ",")?;
        }
        Ok(())
    }

    /// Adds `g`'s leaves, flows and task instances (from `model` and `spans`); `window`: its
    /// index when `g` is one window of a trace inferred in windows.
    pub fn add(
        &mut self,
        g: &Graph,
        model: &Model,
        spans: &[TaskSpan],
        window: Option<usize>,
    ) -> io::Result<()> {
        let base = *self.base.get_or_insert_with(|| first_start(g));
        let (from, to) = self.span(base);
        let shown: Vec<bool> = (0..g.leaves.len())
            .map(|i| g.leaves[i].start_ns <= to && slice_end(g, i) >= from)
            .collect();
        if !shown.iter().any(|&s| s) {
            return Ok(());
        }
        self.name_tracks(g)?;
        self.leaves(g, &shown, window)?;
        self.flows(g, &shown)?;
        self.tasks(g, model, spans, (from, to))
    }

    /// Names each process and thread of `g` whose name is new.
    fn name_tracks(&mut self, g: &Graph) -> io::Result<()> {
        // A process's later incarnation (after exec) names it.
        for (i, p) in g.processes.iter().enumerate() {
            let mut name = p.title.clone().unwrap_or_else(|| p.cmdline.join(" "));
            if let Some(h) = g.hosts.get(p.host.index()) {
                name = format!("{}: {name}", h.host);
            }
            if self.names.get(&(p.pid, None)) == Some(&name) {
                continue;
            }
            self.sep()?;
            write!(
                self.o,
                "{{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":{},\"tid\":{},\"args\":{{\"name\":{}}}}}",
                p.pid,
                p.pid,
                js(&name)
            )?;
            if !g.hosts.is_empty() {
                self.sep()?;
                write!(
                    self.o,
                    "{{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":{},\"tid\":{},\"args\":{{\"sort_index\":{}}}}}",
                    p.pid,
                    p.pid,
                    p.host.index() * 1_000_000 + i
                )?;
            }
            self.names.insert((p.pid, None), name);
        }
        for t in &g.threads {
            if self.names.get(&(t.pid, Some(t.tid))) == Some(&t.name) {
                continue;
            }
            self.sep()?;
            write!(
                self.o,
                "{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":{},\"tid\":{},\"args\":{{\"name\":{}}}}}",
                t.pid,
                t.tid,
                js(&t.name)
            )?;
            self.names.insert((t.pid, Some(t.tid)), t.name.clone());
        }
        Ok(())
    }
}

/// A JSON string.
fn js(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_owned())
}

/// A leaf's slice ends at the return of its ending call, cut at its thread's next leaf.
fn slice_end(g: &Graph, i: usize) -> u64 {
    let l = &g.leaves[i];
    let mut end = (l.end_ns + l.block_ns).max(l.start_ns);
    if let Some(next) = g.leaves.get(i + 1).filter(|x| x.thread == l.thread) {
        end = end.min(next.start_ns.max(l.start_ns));
    }
    end
}
