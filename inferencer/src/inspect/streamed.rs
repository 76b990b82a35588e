//! `scalpel dump` per thread without loading the trace's events: a first read keeps each file's
//! objects, stacks and clock and counts its events; each thread's events are then decoded again
//! as they are printed. Memory follows a file's objects and stacks, not the trace: a loaded
//! 5-second memcached trace (17.5 million events) took 3.7 GB. Merged by time, a dump needs
//! every event at once and loads the trace ([`super::dump`]).

use std::collections::HashMap;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use scalpel_model::read::{
    read_dir_with, read_file_streaming, Event, FileSink, FileTrace, ProcessTrace, ReadError, Ready,
    TraceDir,
};

use super::dump::{DumpOptions, DumpStats, Filter, ObjectFilter};
use super::events::{event_line, heading, Identities};
use super::stacks::write_stack;
use crate::symbols::Symbolizer;

/// What the first read keeps of a file's events: how many, and the earliest clock reading.
#[derive(Clone, Copy, Debug, Default)]
struct Tally {
    events: usize,
    first_ticks: Option<u64>,
}

/// The first read's sink: tallies a file's events and drops them.
struct Tallying {
    path: PathBuf,
    tally: Tally,
}

impl FileSink for Tallying {
    fn event(&mut self, e: &Event) {
        self.tally.events += 1;
        self.tally.first_ticks = Some(self.tally.first_ticks.map_or(e.ticks, |t| t.min(e.ticks)));
    }
}

/// A trace directory read for a dump, without its events.
pub struct DumpDir {
    trace: TraceDir,
    tallies: HashMap<PathBuf, Tally>,
}

impl DumpDir {
    /// Reads `dir` once, keeping no events. Errors as [`scalpel_model::read::read_dir`]'s.
    pub fn read(dir: &Path) -> Result<DumpDir, ReadError> {
        let (trace, sinks) = read_dir_with(dir, |p| Tallying {
            path: p.to_path_buf(),
            tally: Tally::default(),
        })?;
        let tallies = sinks
            .into_iter()
            .flat_map(|p| p.process.into_iter().chain(p.threads))
            .map(|s| (s.path, s.tally))
            .collect();
        Ok(DumpDir { trace, tallies })
    }

    /// The trace as read (its files hold no events), for its warnings.
    pub fn trace(&self) -> &TraceDir {
        &self.trace
    }

    /// Writes the events selected by `opts`, grouped per thread, to `out`: the same text as
    /// [`super::dump`] of the loaded trace (`opts.merged` is not looked at). A file that can no
    /// longer be read is an error of kind `Other` naming it.
    pub fn write(&self, opts: &DumpOptions, out: &mut dyn Write) -> io::Result<DumpStats> {
        let filter = Filter {
            opts,
            object: opts.object.as_deref().map(ObjectFilter::new),
        };
        // Whether events are selected one by one, so each file needs a count before its heading.
        let picks = !opts.ops.is_empty() || opts.object.is_some();
        let ids = self.trace.identities();
        let tally = |f: &FileTrace| self.tallies.get(&f.path).copied().unwrap_or_default();
        // Times are relative to the trace's first event; the clock is monotonic, so it is the
        // first reading's time.
        let first = self
            .trace
            .files()
            .filter_map(|(_, f)| tally(f).first_ticks.map(|t| f.clock.ns(t)))
            .min()
            .unwrap_or(0);
        let limit = opts.limit.unwrap_or(usize::MAX);
        let mut stats = DumpStats::default();
        let mut sym = Symbolizer::new();
        for (p, f) in self.trace.files() {
            if !filter.file(p, f) {
                continue;
            }
            let total = tally(f).events;
            let shown = if picks {
                let mut c = Counting {
                    filter: &filter,
                    ids: &ids,
                    n: 0,
                };
                reread(f, &mut c)?;
                c.n.min(total)
            } else {
                total
            };
            // Process files normally hold no events; threads are shown even when empty unless
            // a filter is active.
            if shown == 0 && (filter.is_active() || f.header.tid == 0) {
                continue;
            }
            if stats.events == limit {
                stats.truncated = true;
                break;
            }
            writeln!(out, "{}", heading(p, f, total, shown))?;
            let mut printing = Printing {
                filter: &filter,
                ids: &ids,
                p,
                f,
                first,
                stacks: opts.stacks,
                sym: &mut sym,
                out: &mut *out,
                pending: None,
                // The count said how many: a file that grew since is not printed past it.
                left: shown,
                stats: &mut stats,
                limit,
                error: None,
            };
            reread(f, &mut printing)?;
            printing.flush();
            if let Some(e) = printing.error {
                return Err(e);
            }
            if stats.truncated {
                break;
            }
        }
        stats.module_warnings = sym.warnings().to_vec();
        Ok(stats)
    }
}

/// Decodes `f` again into `sink`.
fn reread(f: &FileTrace, sink: &mut dyn FileSink) -> io::Result<()> {
    read_file_streaming(&f.path, sink)
        .map(|_| ())
        .map_err(io::Error::other)
}

/// Counts the events the filter selects.
struct Counting<'a> {
    filter: &'a Filter<'a>,
    ids: &'a Identities<'a>,
    n: usize,
}

impl FileSink for Counting<'_> {
    fn event(&mut self, e: &Event) {
        self.n += usize::from(self.filter.event(e, self.ids));
    }
}

/// Prints the events the filter selects, each once the record after it is known (a READY
/// record belongs to the event before it).
struct Printing<'a, 'w> {
    filter: &'a Filter<'a>,
    ids: &'a Identities<'a>,
    p: &'a ProcessTrace,
    f: &'a FileTrace,
    first: u64,
    stacks: bool,
    sym: &'a mut Symbolizer,
    out: &'w mut dyn Write,
    pending: Option<Event>,
    left: usize,
    stats: &'a mut DumpStats,
    limit: usize,
    error: Option<io::Error>,
}

impl Printing<'_, '_> {
    /// Prints the event held back, if any.
    fn flush(&mut self) {
        let Some(e) = self.pending.take() else { return };
        if self.error.is_some() {
            return;
        }
        let r = writeln!(
            self.out,
            "{}",
            event_line(self.first, self.p, self.f, &e, self.ids)
        )
        .and_then(|()| {
            if self.stacks {
                write_stack(self.out, self.sym, self.p, self.f, &e)
            } else {
                Ok(())
            }
        });
        if let Err(err) = r {
            self.error = Some(err);
        }
    }
}

impl FileSink for Printing<'_, '_> {
    fn event(&mut self, e: &Event) {
        self.flush();
        if self.left == 0 || self.error.is_some() || !self.filter.event(e, self.ids) {
            return;
        }
        if self.stats.events == self.limit {
            self.stats.truncated = true;
            self.left = 0;
            return;
        }
        self.left -= 1;
        self.stats.events += 1;
        let mut e = e.clone();
        e.ts_ns = self.f.clock.ns(e.ticks);
        e.dur_ns = self.f.clock.dur_ns(e.dur_ticks);
        self.pending = Some(e);
    }

    fn ready(&mut self, r: &Ready) {
        if let Some(e) = self.pending.as_mut() {
            e.ready = Some(Box::new(r.clone()));
        }
    }
}
