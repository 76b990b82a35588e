//! `scalpel dump` without loading the trace's events: a first read keeps each file's objects,
//! stacks and clock and counts its events; the events are then decoded again as they are
//! printed, per thread one file after another, or merged by time from every file at once (each
//! file's events are in time order, so a merge of the files' streams is the trace's order).
//! Memory follows the files' objects and stacks, not the trace: a loaded 5-second memcached
//! trace (17.5 million events) took 3.7 GB.

use std::collections::HashMap;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use scalpel_model::read::{
    read_dir_with, read_file_streaming, Event, FileSink, FileTrace, ProcessTrace, ReadError, Ready,
    TraceDir,
};

use super::dump::{DumpOptions, DumpStats, Filter};
use super::events::{event_line, heading, Identities};
use super::stacks::write_stack;
use scalpel_symbols::Symbolizer;

/// What the first read keeps of a file's events: how many, the earliest clock reading, and
/// whether the readings ever went back (only a damaged file's can: each event's reading adds
/// a delta to the one before).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Tally {
    pub(super) events: usize,
    first_ticks: Option<u64>,
    last_ticks: u64,
    pub(super) went_back: bool,
}

/// The first read's sink: tallies a file's events and drops them.
struct Tallying {
    path: PathBuf,
    tally: Tally,
}

impl FileSink for Tallying {
    fn event(&mut self, e: &Event) {
        let t = &mut self.tally;
        t.events += 1;
        t.first_ticks = Some(t.first_ticks.map_or(e.ticks, |f| f.min(e.ticks)));
        t.went_back |= e.ticks < t.last_ticks;
        t.last_ticks = e.ticks;
    }
}

/// A trace directory read for a dump, without its events.
pub struct DumpDir {
    pub(super) trace: TraceDir,
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

    /// Writes the events selected by `opts` to `out`: the same text as [`super::dump`] of the
    /// loaded trace. A file that can no longer be read is an error of kind `Other` naming it.
    pub fn write(&self, opts: &DumpOptions, out: &mut dyn Write) -> io::Result<DumpStats> {
        if opts.merged {
            self.write_merged(opts, out)
        } else {
            self.write_grouped(opts, out)
        }
    }

    pub(super) fn tally(&self, f: &FileTrace) -> Tally {
        self.tallies.get(&f.path).copied().unwrap_or_default()
    }

    /// The time of the trace's first event, which a dump's times are relative to (the clock
    /// is monotonic, so it is the first reading's time).
    pub(super) fn first_ts(&self) -> u64 {
        self.trace
            .files()
            .filter_map(|(_, f)| self.tally(f).first_ticks.map(|t| f.clock.ns(t)))
            .min()
            .unwrap_or(0)
    }

    fn write_grouped(&self, opts: &DumpOptions, out: &mut dyn Write) -> io::Result<DumpStats> {
        let filter = Filter::new(opts);
        // Whether events are selected one by one, so each file needs a count before its heading.
        let picks = !opts.ops.is_empty() || opts.object.is_some();
        let ids = self.trace.identities();
        let first = self.first_ts();
        let limit = opts.limit.unwrap_or(usize::MAX);
        let mut stats = DumpStats::default();
        let mut sym = Symbolizer::new();
        for (p, f) in self.trace.files() {
            if !filter.file(p, f) {
                continue;
            }
            let total = self.tally(f).events;
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
pub(super) fn reread(f: &FileTrace, sink: &mut dyn FileSink) -> io::Result<()> {
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
        self.f.clock.time(&mut e);
        self.pending = Some(e);
    }

    fn ready(&mut self, r: &Ready) {
        if let Some(e) = self.pending.as_mut() {
            e.ready = Some(Box::new(r.clone()));
        }
    }
}
