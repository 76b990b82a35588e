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
//! Times are microseconds from the first leaf's start, with three decimals (nanoseconds).
//! Slices on one thread never overlap: a leaf is cut at the next one's start, a call inside it
//! at the leaf's end, against clock jitter.

use std::io::{self, Write};

use scalpel_model::graph::{Graph, LeafId};
use scalpel_model::task::Model;

use scalpel_analysis::rollup::{BlockKind, LockHolders, TaskSpan};

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

/// Microseconds with three decimals.
struct Us(u64);

impl std::fmt::Display for Us {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{:03}", self.0 / 1000, self.0 % 1000)
    }
}

/// A JSON string.
fn js(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_owned())
}

/// `name (tid)` of a leaf's thread.
fn thread_label(g: &Graph, leaf: LeafId) -> String {
    g.leaves
        .get(leaf.index())
        .and_then(|l| g.threads.get(l.thread.index()))
        .map_or_else(|| "?".to_owned(), |t| format!("{} ({})", t.name, t.tid))
}

/// Writes the timeline of `g` (tasks from `model` and `spans`) to `o`.
pub fn write_timeline(
    o: &mut impl Write,
    g: &Graph,
    model: &Model,
    spans: &[TaskSpan],
    opts: &TimelineOptions,
) -> io::Result<TimelineCounts> {
    let base = g.leaves.iter().map(|l| l.start_ns).min().unwrap_or(0);
    let from = base + opts.from_ns.unwrap_or(0);
    let to = opts.to_ns.map_or(u64::MAX, |t| base + t);
    let rel = |t: u64| Us(t.saturating_sub(base));
    let n = g.leaves.len();
    // A leaf's slice: from its start to the return of its ending call, cut at its thread's next
    // leaf.
    let slice_end = |i: usize| -> u64 {
        let l = &g.leaves[i];
        let mut end = (l.end_ns + l.block_ns).max(l.start_ns);
        if let Some(next) = g.leaves.get(i + 1).filter(|x| x.thread == l.thread) {
            end = end.min(next.start_ns.max(l.start_ns));
        }
        end
    };
    let shown: Vec<bool> = (0..n)
        .map(|i| g.leaves[i].start_ns <= to && slice_end(i) >= from)
        .collect();
    let pid = |leaf: usize| g.threads[g.leaves[leaf].thread.index()].pid;
    let tid = |leaf: usize| g.threads[g.leaves[leaf].thread.index()].tid;
    let mut c = TimelineCounts::default();
    writeln!(o, "{{\"displayTimeUnit\":\"ns\",\"traceEvents\":[")?;
    // Names first; a process's later incarnation (after exec) names it.
    let mut first = true;
    let mut sep = |o: &mut dyn Write| -> io::Result<()> {
        if !std::mem::take(&mut first) {
            writeln!(o, ",")?;
        }
        Ok(())
    };
    for (i, p) in g.processes.iter().enumerate() {
        let mut name = p.title.clone().unwrap_or_else(|| p.cmdline.join(" "));
        if let Some(h) = g.hosts.get(p.host.index()) {
            name = format!("{}: {name}", h.host);
        }
        sep(o)?;
        write!(
            o,
            "{{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":{},\"tid\":{},\"args\":{{\"name\":{}}}}}",
            p.pid,
            p.pid,
            js(&name)
        )?;
        if !g.hosts.is_empty() {
            sep(o)?;
            write!(
                o,
                "{{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":{},\"tid\":{},\"args\":{{\"sort_index\":{}}}}}",
                p.pid,
                p.pid,
                p.host.index() * 1_000_000 + i
            )?;
        }
    }
    for t in &g.threads {
        sep(o)?;
        write!(
            o,
            "{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":{},\"tid\":{},\"args\":{{\"name\":{}}}}}",
            t.pid,
            t.tid,
            js(&t.name)
        )?;
    }
    let holders = LockHolders::new(g);
    // Wakers: the source of the first wake-up edge into a thread's next leaf.
    let idx = scalpel_analysis::rollup::GraphIndex::new(g);
    let mut inner: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (k, w) in g.inner_waits.iter().enumerate() {
        if let Some(v) = inner.get_mut(w.leaf.index()) {
            v.push(k);
        }
    }
    let type_name = |leaf: usize| {
        g.types
            .get(g.leaves[leaf].ty.index())
            .map_or("leaf", |t| t.name.as_str())
    };
    for i in (0..n).filter(|&i| shown[i]) {
        let l = &g.leaves[i];
        let end = slice_end(i);
        sep(o)?;
        write!(
            o,
            "{{\"name\":{},\"cat\":\"scalpel\",\"ph\":\"X\",\"ts\":{},\"dur\":{},\"pid\":{},\"tid\":{},\"args\":{{\"leaf\":{i}}}}}",
            js(type_name(i)),
            rel(l.start_ns),
            Us(end - l.start_ns),
            pid(i),
            tid(i)
        )?;
        c.leaves += 1;
        let inside_end = l.end_ns.clamp(l.start_ns, end);
        let mut last = l.start_ns;
        for &k in &inner[i] {
            let w = &g.inner_waits[k];
            let s = w.at_ns.clamp(last, inside_end);
            let e = (w.at_ns + w.ns).clamp(s, inside_end);
            last = e;
            let kind = BlockKind::inside(w.op.op());
            let holder = holders
                .of(LeafId::at(i), w.obj, w.ns)
                .map(|h| format!(",\"holder\":{}", js(&thread_label(g, h))))
                .unwrap_or_default();
            sep(o)?;
            write!(
                o,
                "{{\"name\":{},\"cat\":\"scalpel\",\"ph\":\"X\",\"ts\":{},\"dur\":{},\"pid\":{},\"tid\":{},\"args\":{{\"kind\":\"{}\"{holder}}}}}",
                js(&w.op.name()),
                rel(s),
                Us(e - s),
                pid(i),
                tid(i),
                kind.name()
            )?;
            c.calls += 1;
        }
        if let Some(op) = l.end_op {
            let s = l.end_ns.clamp(l.start_ns, end);
            let waker = idx
                .waker(g, i as u32)
                .map(|w| format!(",\"waker\":{}", js(&thread_label(g, LeafId::new(w)))))
                .unwrap_or_default();
            sep(o)?;
            write!(
                o,
                "{{\"name\":{},\"cat\":\"scalpel\",\"ph\":\"X\",\"ts\":{},\"dur\":{},\"pid\":{},\"tid\":{},\"args\":{{\"kind\":\"{}\"{waker}}}}}",
                js(&op.name()),
                rel(s),
                Us(end - s),
                pid(i),
                tid(i),
                BlockKind::of(op.op()).name()
            )?;
            c.calls += 1;
        }
    }
    // Flow arrows, after every slice they bind to.
    for e in &g.edges {
        let (Some(f), Some(t)) = (g.leaf_of(e.from), g.leaf_of(e.to)) else {
            continue;
        };
        let (f, t) = (f.index(), t.index());
        if e.kind.in_thread() || !shown[f] || !shown[t] || g.leaves[f].thread == g.leaves[t].thread
        {
            continue;
        }
        let at = g.leaves[f].end_ns.clamp(g.leaves[f].start_ns, slice_end(f));
        let id = c.flows;
        sep(o)?;
        write!(
            o,
            "{{\"name\":\"{}\",\"cat\":\"scalpel\",\"ph\":\"s\",\"id\":{id},\"ts\":{},\"pid\":{},\"tid\":{}}}",
            e.kind.name(),
            rel(if g.leaves[f].end_op.is_some() { at } else { g.leaves[f].start_ns }),
            pid(f),
            tid(f)
        )?;
        sep(o)?;
        write!(
            o,
            "{{\"name\":\"{}\",\"cat\":\"scalpel\",\"ph\":\"f\",\"bp\":\"e\",\"id\":{id},\"ts\":{},\"pid\":{},\"tid\":{}}}",
            e.kind.name(),
            rel(g.leaves[t].start_ns),
            pid(t),
            tid(t)
        )?;
        c.flows += 1;
    }
    // Task instances.
    for s in spans {
        let leaf = s.first_leaf.index();
        if leaf >= n || s.start_ns > to || s.end_ns < from {
            continue;
        }
        let name = model
            .types
            .get(s.ty.index())
            .map_or("task", |t| t.name.as_str());
        let path: Vec<String> = s
            .critical
            .iter()
            .take(16)
            .map(|&l| format!("{} @ {}", type_name(l.index()), thread_label(g, l)))
            .collect();
        let more = if s.critical.len() > 16 {
            " → …"
        } else {
            ""
        };
        let id = c.tasks;
        sep(o)?;
        write!(
            o,
            "{{\"name\":{},\"cat\":\"task\",\"ph\":\"b\",\"id\":{id},\"ts\":{},\"pid\":{},\"tid\":{},\"args\":{{\"type\":{},\"occurrence\":{},\"leaves\":{},\"critical_path\":{}}}}}",
            js(name),
            rel(s.start_ns),
            pid(leaf),
            tid(leaf),
            s.ty.index(),
            s.occurrence,
            s.leaves,
            js(&format!("{}{more}", path.join(" → ")))
        )?;
        sep(o)?;
        write!(
            o,
            "{{\"name\":{},\"cat\":\"task\",\"ph\":\"e\",\"id\":{id},\"ts\":{},\"pid\":{},\"tid\":{}}}",
            js(name),
            rel(s.end_ns.max(s.start_ns)),
            pid(leaf),
            tid(leaf)
        )?;
        c.tasks += 1;
    }
    writeln!(o, "\n]}}")?;
    Ok(c)
}
