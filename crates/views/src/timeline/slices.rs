//! The events of one graph in a timeline: its leaf slices with the calls inside them, its flow
//! arrows and its task instances (see [`super`]).

use std::io::{self, Write};

use scalpel_analysis::rollup::{BlockKind, LockHolders, TaskSpan};
use scalpel_model::graph::{Graph, LeafId};
use scalpel_model::task::Model;

use super::{js, slice_end, TimelineWriter};

/// Microseconds with three decimals.
struct Us(u64);

impl std::fmt::Display for Us {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{:03}", self.0 / 1000, self.0 % 1000)
    }
}

/// `name (tid)` of a leaf's thread.
fn thread_label(g: &Graph, leaf: LeafId) -> String {
    g.leaves
        .get(leaf.index())
        .and_then(|l| g.threads.get(l.thread.index()))
        .map_or_else(|| "?".to_owned(), |t| format!("{} ({})", t.name, t.tid))
}

/// The process id of leaf `leaf`'s thread.
fn pid(g: &Graph, leaf: usize) -> u32 {
    g.threads[g.leaves[leaf].thread.index()].pid
}

/// The thread id of leaf `leaf`'s thread.
fn tid(g: &Graph, leaf: usize) -> u32 {
    g.threads[g.leaves[leaf].thread.index()].tid
}

impl<W: Write> TimelineWriter<'_, W> {
    /// Times as the timeline shows them: from where they count.
    fn clock(&self) -> impl Fn(u64) -> Us + Copy {
        let base = self.base.unwrap_or(0);
        move |t| Us(t.saturating_sub(base))
    }
}

/// The name of leaf `leaf`'s type.
fn type_name(g: &Graph, leaf: usize) -> &str {
    g.types
        .get(g.leaves[leaf].ty.index())
        .map_or("leaf", |t| t.name.as_str())
}

impl<W: Write> TimelineWriter<'_, W> {
    /// The leaf slices of `g` that are shown, with the calls inside them.
    pub(super) fn leaves(
        &mut self,
        g: &Graph,
        shown: &[bool],
        window: Option<usize>,
    ) -> io::Result<()> {
        let rel = self.clock();
        let n = g.leaves.len();
        let window = window
            .map(|k| format!(",\"window\":{k}"))
            .unwrap_or_default();
        let holders = LockHolders::new(g);
        // Wakers: the source of the first wake-up edge into a thread's next leaf.
        let idx = scalpel_analysis::rollup::GraphIndex::new(g);
        let mut inner: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (k, w) in g.inner_waits.iter().enumerate() {
            if let Some(v) = inner.get_mut(w.leaf.index()) {
                v.push(k);
            }
        }
        for i in (0..n).filter(|&i| shown[i]) {
            let l = &g.leaves[i];
            let end = slice_end(g, i);
            self.sep()?;
            write!(
                self.o,
                "{{\"name\":{},\"cat\":\"scalpel\",\"ph\":\"X\",\"ts\":{},\"dur\":{},\"pid\":{},\"tid\":{},\"args\":{{\"leaf\":{i}{window}}}}}",
                js(type_name(g, i)),
                rel(l.start_ns),
                Us(end - l.start_ns),
                pid(g, i),
                tid(g, i)
            )?;
            self.counts.leaves += 1;
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
                self.sep()?;
                write!(
                    self.o,
                    "{{\"name\":{},\"cat\":\"scalpel\",\"ph\":\"X\",\"ts\":{},\"dur\":{},\"pid\":{},\"tid\":{},\"args\":{{\"kind\":\"{}\"{holder}}}}}",
                    js(&w.op.name()),
                    rel(s),
                    Us(e - s),
                    pid(g, i),
                    tid(g, i),
                    kind.name()
                )?;
                self.counts.calls += 1;
            }
            if let Some(op) = l.end_op {
                let s = l.end_ns.clamp(l.start_ns, end);
                let waker = idx
                    .waker(g, i as u32)
                    .map(|w| format!(",\"waker\":{}", js(&thread_label(g, LeafId::new(w)))))
                    .unwrap_or_default();
                self.sep()?;
                write!(
                    self.o,
                    "{{\"name\":{},\"cat\":\"scalpel\",\"ph\":\"X\",\"ts\":{},\"dur\":{},\"pid\":{},\"tid\":{},\"args\":{{\"kind\":\"{}\"{waker}}}}}",
                    js(&op.name()),
                    rel(s),
                    Us(end - s),
                    pid(g, i),
                    tid(g, i),
                    BlockKind::of(op.op()).name()
                )?;
                self.counts.calls += 1;
            }
        }
        Ok(())
    }

    /// A flow arrow for each edge between threads whose two leaves are shown.
    pub(super) fn flows(&mut self, g: &Graph, shown: &[bool]) -> io::Result<()> {
        let rel = self.clock();
        // Flow arrows, after every slice they bind to.
        for e in &g.edges {
            let (Some(f), Some(t)) = (g.leaf_of(e.from), g.leaf_of(e.to)) else {
                continue;
            };
            let (f, t) = (f.index(), t.index());
            if e.kind.in_thread()
                || !shown[f]
                || !shown[t]
                || g.leaves[f].thread == g.leaves[t].thread
            {
                continue;
            }
            let at = g.leaves[f]
                .end_ns
                .clamp(g.leaves[f].start_ns, slice_end(g, f));
            let id = self.counts.flows;
            self.sep()?;
            write!(
                self.o,
                "{{\"name\":\"{}\",\"cat\":\"scalpel\",\"ph\":\"s\",\"id\":{id},\"ts\":{},\"pid\":{},\"tid\":{}}}",
                e.kind.name(),
                rel(if g.leaves[f].end_op.is_some() { at } else { g.leaves[f].start_ns }),
                pid(g, f),
                tid(g, f)
            )?;
            self.sep()?;
            write!(
                self.o,
                "{{\"name\":\"{}\",\"cat\":\"scalpel\",\"ph\":\"f\",\"bp\":\"e\",\"id\":{id},\"ts\":{},\"pid\":{},\"tid\":{}}}",
                e.kind.name(),
                rel(g.leaves[t].start_ns),
                pid(g, t),
                tid(g, t)
            )?;
            self.counts.flows += 1;
        }
        Ok(())
    }

    /// An async slice for each task instance that overlaps what is shown.
    pub(super) fn tasks(
        &mut self,
        g: &Graph,
        model: &Model,
        spans: &[TaskSpan],
        (from, to): (u64, u64),
    ) -> io::Result<()> {
        let rel = self.clock();
        let n = g.leaves.len();
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
                .map(|&l| format!("{} @ {}", type_name(g, l.index()), thread_label(g, l)))
                .collect();
            let more = if s.critical.len() > 16 {
                " → …"
            } else {
                ""
            };
            let id = self.counts.tasks;
            self.sep()?;
            write!(
                self.o,
                "{{\"name\":{},\"cat\":\"task\",\"ph\":\"b\",\"id\":{id},\"ts\":{},\"pid\":{},\"tid\":{},\"args\":{{\"type\":{},\"occurrence\":{},\"leaves\":{},\"critical_path\":{}}}}}",
                js(name),
                rel(s.start_ns),
                pid(g, leaf),
                tid(g, leaf),
                s.ty.index(),
                s.occurrence,
                s.leaves,
                js(&format!("{}{more}", path.join(" → ")))
            )?;
            self.sep()?;
            write!(
                self.o,
                "{{\"name\":{},\"cat\":\"task\",\"ph\":\"e\",\"id\":{id},\"ts\":{},\"pid\":{},\"tid\":{}}}",
                js(name),
                rel(s.end_ns.max(s.start_ns)),
                pid(g, leaf),
                tid(g, leaf)
            )?;
            self.counts.tasks += 1;
        }
        Ok(())
    }
}
