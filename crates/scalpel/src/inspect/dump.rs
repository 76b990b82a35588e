//! `scalpel dump`: the events of a trace directory as text, per thread or merged by time.

use std::io::{self, Write};

use scalpel_model::format::Op;
use scalpel_model::read::{Event, FileTrace, ProcessTrace, TraceDir};

use super::events::{event_line, object_text, thread_heading, Identities};
use super::stacks::write_stack;
use scalpel_symbols::{ModuleWarning, Symbolizer};

/// What `scalpel dump` prints. `DumpOptions::default()` prints every event, grouped per thread.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DumpOptions {
    /// Print all events merged by time instead of grouped per thread. Default: `false`.
    pub merged: bool,
    /// Only events of these process ids. Default: empty, meaning every process.
    pub pids: Vec<u32>,
    /// Only events of these thread ids. Default: empty, meaning every thread.
    pub tids: Vec<u32>,
    /// Only these operations. Default: empty, meaning every operation.
    pub ops: Vec<Op>,
    /// Only events on a matching object: the object key as a number (`0x1f`, `1f` or `31`), or
    /// a case-insensitive substring of the object text (`mutex:0x1f [tcp 1.2.3.4:80->...]`).
    /// Default: `None`, meaning every event, with or without an object.
    pub object: Option<String>,
    /// Print at most this many events. Default: `None`, no limit.
    pub limit: Option<usize>,
    /// Print each event's call stack, symbolized, under it (when the trace has stacks).
    /// Default: `true`.
    pub stacks: bool,
}

impl Default for DumpOptions {
    fn default() -> Self {
        DumpOptions {
            merged: false,
            pids: Vec::new(),
            tids: Vec::new(),
            ops: Vec::new(),
            object: None,
            limit: None,
            stacks: true,
        }
    }
}

/// Invalid dump options.
#[derive(Debug, thiserror::Error)]
pub enum DumpError {
    /// An `--op` name that is not an operation.
    #[error("unknown operation `{name}`; valid operations: {valid}")]
    UnknownOp {
        /// The name given.
        name: String,
        /// Every valid name, comma-separated.
        valid: String,
    },
}

/// Parses an operation name as `scalpel dump` prints it (see [`Op::name`]).
pub fn parse_op(name: &str) -> Result<Op, DumpError> {
    Op::ALL
        .iter()
        .copied()
        .find(|op| op.name() == name)
        .ok_or_else(|| DumpError::UnknownOp {
            name: name.to_string(),
            valid: Op::ALL
                .iter()
                .map(|op| op.name())
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// The object filter, parsed once.
struct ObjectFilter {
    text: String,
    keys: Vec<u64>,
}

impl ObjectFilter {
    fn new(s: &str) -> Self {
        let lower = s.trim().to_ascii_lowercase();
        let hex = lower.strip_prefix("0x").unwrap_or(&lower);
        let keys = [u64::from_str_radix(hex, 16).ok(), lower.parse().ok()];
        ObjectFilter {
            keys: keys.into_iter().flatten().collect(),
            text: lower,
        }
    }

    fn matches(&self, e: &Event, ids: &Identities<'_>) -> bool {
        let Some(o) = &e.obj else { return false };
        self.keys.contains(&o.key)
            || object_text(o, ids)
                .to_ascii_lowercase()
                .contains(&self.text)
    }
}

/// Applies the options' filters.
pub(super) struct Filter<'o> {
    opts: &'o DumpOptions,
    object: Option<ObjectFilter>,
}

impl<'o> Filter<'o> {
    /// The filters `opts` asks for.
    pub(super) fn new(opts: &'o DumpOptions) -> Self {
        Filter {
            opts,
            object: opts.object.as_deref().map(ObjectFilter::new),
        }
    }

    pub(super) fn file(&self, p: &ProcessTrace, f: &FileTrace) -> bool {
        (self.opts.pids.is_empty() || self.opts.pids.contains(&p.pid))
            && (self.opts.tids.is_empty() || self.opts.tids.contains(&f.header.tid))
    }

    pub(super) fn event(&self, e: &Event, ids: &Identities<'_>) -> bool {
        (self.opts.ops.is_empty() || e.op.is_some_and(|op| self.opts.ops.contains(&op)))
            && match &self.object {
                Some(o) => o.matches(e, ids),
                None => true,
            }
    }

    pub(super) fn is_active(&self) -> bool {
        let o = self.opts;
        !(o.pids.is_empty() && o.tids.is_empty() && o.ops.is_empty() && o.object.is_none())
    }
}

/// What a dump printed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DumpStats {
    /// Event lines printed.
    pub events: usize,
    /// True when `limit` cut the output short.
    pub truncated: bool,
    /// Modules whose frames could not be symbolized, with the reason (one line each).
    pub module_warnings: Vec<ModuleWarning>,
}

/// Writes the events of `trace` selected by `opts` to `out`. Times are relative to the earliest
/// event of the whole trace. The output depends only on the trace and the options.
pub fn dump(trace: &TraceDir, opts: &DumpOptions, out: &mut dyn Write) -> io::Result<DumpStats> {
    let filter = Filter::new(opts);
    let ids = trace.identities();
    let first = trace.first_ts().unwrap_or(0);
    let limit = opts.limit.unwrap_or(usize::MAX);
    let mut stats = DumpStats::default();
    let mut sym = Symbolizer::new();
    if opts.merged {
        for r in trace.events_by_time() {
            if !filter.file(r.process, r.file) || !filter.event(r.event, &ids) {
                continue;
            }
            if stats.events == limit {
                stats.truncated = true;
                break;
            }
            writeln!(
                out,
                "{}",
                event_line(first, r.process, r.file, r.event, &ids)
            )?;
            if opts.stacks {
                write_stack(out, &mut sym, r.process, r.file, r.event)?;
            }
            stats.events += 1;
        }
        return Ok(stats);
    }
    for (p, f) in trace.files() {
        if !filter.file(p, f) {
            continue;
        }
        let selected: Vec<&Event> = f.events.iter().filter(|e| filter.event(e, &ids)).collect();
        // Process files normally hold no events; threads are shown even when empty unless a
        // filter is active.
        if selected.is_empty() && (filter.is_active() || f.header.tid == 0) {
            continue;
        }
        if stats.events == limit {
            stats.truncated = true;
            break;
        }
        writeln!(out, "{}", thread_heading(p, f, selected.len()))?;
        for e in selected {
            if stats.events == limit {
                stats.truncated = true;
                break;
            }
            writeln!(out, "{}", event_line(first, p, f, e, &ids))?;
            if opts.stacks {
                write_stack(out, &mut sym, p, f, e)?;
            }
            stats.events += 1;
        }
    }
    stats.module_warnings = sym.warnings().to_vec();
    Ok(stats)
}
