//! A trace directory read in time windows, so that what a caller builds of the trace is bounded
//! by a window's events rather than the trace's.
//!
//! [`Windows::survey`] reads the directory once, keeping no event: every file's metadata
//! (stacks, module maps, names, calibration points), the trace-wide clock, and a sample of one
//! event time in [`SAMPLE_EVERY`]. From the sample it places the windows' boundaries so that
//! each holds about the same number of events. [`Windows::read_with`] then reads one window:
//! each thread file from where the previous window stopped (its decoding state kept in a
//! cursor, so nothing is decoded twice) up to the first event at or after the boundary. A
//! window's files carry the whole file's metadata and clock, so an event has the same time,
//! stack and object in a window as in the whole trace; what a window cannot have is the other
//! side of anything that crosses its boundary (a wake-up whose signal was before it, a leaf cut
//! in two). Process files hold no events and are read whole in every window.
//!
//! Non-goals: windows on traces of several machines (each is windowed on its own clock), and
//! putting back what crosses a boundary (the caller counts it).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::decode::FileCursor;
use super::dir::{read_dir_inner, read_dir_with, Ends, ProcessSinks, TraceDir, WindowRead};
use super::error::ReadError;
use super::file::Span;
use super::filetrace::{FileSink, FileTrace};
use super::types::Event;

/// One event time in this many is kept by the survey to place the boundaries.
pub const SAMPLE_EVERY: u64 = 256;

/// The survey's sink: counts a file's events and keeps every [`SAMPLE_EVERY`]th one's ticks.
#[derive(Default)]
struct Sampler {
    events: u64,
    ticks: Vec<u64>,
}

impl FileSink for Sampler {
    /// Each window's files have their own objects and those bound where they begin.
    fn keeps_objects(&self) -> bool {
        false
    }

    fn event(&mut self, e: &Event) {
        if self.events.is_multiple_of(SAMPLE_EVERY) {
            self.ticks.push(e.ticks);
        }
        self.events += 1;
    }
}

/// A trace directory read window by window (see the module docs).
#[derive(Debug)]
pub struct Windows {
    path: PathBuf,
    /// Every file's metadata and clock, without events.
    survey: TraceDir,
    /// Each window's first time but the first's (ns on the trace's clock), increasing.
    bounds: Vec<u64>,
    /// Per thread file, [`Self::bounds`] in the file's ticks.
    stops: HashMap<PathBuf, Vec<u64>>,
    /// The window whose reads begin at [`Self::starts`].
    at: usize,
    starts: HashMap<PathBuf, FileCursor>,
    /// Where the reads of window `at` stopped, once it was read.
    ends: Ends,
    events: u64,
}

impl Windows {
    /// Reads the directory at `path` once for its metadata and places windows of about
    /// `events_per_window` events each, the first and the last half that (at least one window;
    /// at most one per sampled event time).
    pub fn survey(path: impl AsRef<Path>, events_per_window: u64) -> Result<Windows, ReadError> {
        let path = path.as_ref().to_path_buf();
        let (survey, sinks) = read_dir_with(&path, |_| Sampler::default())?;
        let mut times = Vec::new();
        let mut events = 0u64;
        for (p, s) in survey.processes.iter().zip(&sinks) {
            for (f, s) in p.threads.iter().zip(&s.threads) {
                events = events.saturating_add(s.events);
                times.extend(s.ticks.iter().map(|&t| f.clock.ns(t)));
            }
        }
        times.sort_unstable();
        let bounds = place_bounds(&times, events, events_per_window.max(1));
        let stops = survey
            .processes
            .iter()
            .flat_map(|p| p.threads.iter())
            .map(|f| {
                (
                    f.path.clone(),
                    bounds.iter().map(|&b| ticks_at(f, b)).collect(),
                )
            })
            .collect();
        Ok(Windows {
            path,
            survey,
            bounds,
            stops,
            at: 0,
            starts: HashMap::new(),
            ends: HashMap::new(),
            events,
        })
    }

    /// How many windows there are.
    pub fn count(&self) -> usize {
        self.bounds.len() + 1
    }

    /// Events in the whole trace.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Where window `k` begins and ends, ns on the trace's clock (`None`: the trace's start or
    /// end).
    pub fn range(&self, k: usize) -> (Option<u64>, Option<u64>) {
        let start = k.checked_sub(1).and_then(|i| self.bounds.get(i).copied());
        (start, self.bounds.get(k).copied())
    }

    /// The survey: every file's metadata (its warnings go to the first window's files, which
    /// report them once, where the later windows' reads leave theirs out).
    pub fn survey_dir(&self) -> &TraceDir {
        &self.survey
    }

    /// Reads window `k` like [`super::read_dir_with`]: its events go to each file's sink, and
    /// every file carries the whole file's metadata and clock (see the module docs). Windows are
    /// read in order: `k` is the window read last (read again) or the one after it.
    pub fn read_with<S: FileSink + Send>(
        &mut self,
        k: usize,
        new_sink: impl Fn(&Path) -> S + Sync,
    ) -> Result<(TraceDir, Vec<ProcessSinks<S>>), ReadError> {
        self.move_to(k)?;
        let mut ends = Ends::new();
        let read = WindowRead {
            span: &|p: &Path| self.span(p),
            prepare: &|f: &mut FileTrace| self.give_metadata(f),
        };
        let (mut dir, sinks) =
            read_dir_inner(&self.path, Some(&new_sink), Some((&read, &mut ends)))?;
        self.ends = ends;
        if k == 0 {
            // The first window reports what the survey found wrong, each problem once.
            self.first_window_warnings(&mut dir);
            return Ok((dir, sinks));
        }
        // The first window reported every problem once.
        dir.warnings.clear();
        dir.losses = Default::default();
        Ok((dir, sinks))
    }

    /// Gives the first window's files the survey's warnings and dropped counts, and its
    /// directory the survey's warnings and losses, so that it reports what the whole read would.
    fn first_window_warnings(&mut self, dir: &mut TraceDir) {
        dir.warnings = std::mem::take(&mut self.survey.warnings);
        dir.losses = self.survey.losses;
        let files = dir.processes.iter_mut().flat_map(|p| p.files_mut());
        for f in files {
            let Some(s) = self
                .survey
                .processes
                .iter_mut()
                .flat_map(|p| p.files_mut())
                .find(|s| s.path == f.path)
            else {
                continue;
            };
            f.warnings = std::mem::take(&mut s.warnings);
            f.header.dropped = s.header.dropped;
        }
    }

    /// Reads the file at `path` in the window read last, handing its events to `sink` (for a
    /// second pass over one file; the sink is not finished, and the file returned carries the
    /// whole file's metadata, as [`Windows::read_with`]'s do).
    pub fn read_file_with(
        &self,
        path: &Path,
        sink: &mut dyn FileSink,
    ) -> Result<FileTrace, ReadError> {
        let opened = crate::open::open_path(path, u64::MAX)?;
        let mut span = self.span(path);
        let mut f = super::file::read_opened_span(opened, Some(sink), Some(&mut span))?;
        self.give_metadata(&mut f);
        Ok(f)
    }

    fn move_to(&mut self, k: usize) -> Result<(), ReadError> {
        if k == self.at + 1 && !self.ends.is_empty() {
            let ends = std::mem::take(&mut self.ends);
            self.starts = ends
                .into_iter()
                .filter_map(|(p, c)| Some((p, c?)))
                .collect();
            self.at = k;
        }
        if k != self.at || k >= self.count() {
            return Err(ReadError::WindowOrder {
                path: self.path.clone(),
                window: k,
                next: self.at,
            });
        }
        Ok(())
    }

    /// The span of window `at` in the file at `path`.
    fn span(&self, path: &Path) -> Span {
        let stop_at = self
            .stops
            .get(path)
            .and_then(|s| s.get(self.at).copied())
            .unwrap_or(u64::MAX);
        // A file the previous window read to its end is done: it starts past its end.
        let from = match self.starts.get(path) {
            Some(c) => Some(c.clone()),
            None if self.at > 0 => Some(FileCursor::past_end()),
            None => None,
        };
        Span {
            from,
            stop_at,
            end: None,
        }
    }

    /// The whole file's metadata and clock, from the survey.
    fn give_metadata(&self, f: &mut FileTrace) {
        let Some(s) = self.survey_file(&f.path) else {
            return;
        };
        f.stacks = s.stacks.clone();
        f.maps = s.maps.clone();
        f.calibrations = s.calibrations.clone();
        f.thread_names = s.thread_names.clone();
        f.titles = s.titles.clone();
        f.cmdline = s.cmdline.clone();
        f.exe = s.exe.clone();
        f.warnings.clear();
        f.header.dropped = 0;
        f.apply_clock(&s.clock);
    }

    fn survey_file(&self, path: &Path) -> Option<&FileTrace> {
        self.survey
            .processes
            .iter()
            .flat_map(|p| p.files())
            .find(|f| f.path == path)
    }
}

/// The boundaries that split `events` events, whose sampled times are `times` (sorted), into
/// windows of at most about `per_window`: increasing, none repeated. The first and the last
/// window hold half as many as the others, so that the two together, the sample the miner
/// learns its rules on (`scalpel_mine::MineInput::joined`), are one window's worth.
fn place_bounds(times: &[u64], events: u64, per_window: u64) -> Vec<u64> {
    if events <= per_window {
        return Vec::new();
    }
    // In half windows: one at each end, two for each window between.
    let halves = 2 * events.div_ceil(per_window);
    let mut bounds: Vec<u64> = (0..halves / 2)
        .filter_map(|j| {
            let i = u128::from(2 * j + 1) * times.len() as u128 / u128::from(halves);
            times.get(usize::try_from(i).ok()?).copied()
        })
        .collect();
    bounds.dedup();
    // The first sampled event opens the first window anyway.
    bounds.retain(|&b| Some(&b) != times.first());
    bounds
}

/// The first ticks of `f` at or after `ns` on its clock (which never runs backwards).
fn ticks_at(f: &FileTrace, ns: u64) -> u64 {
    let (mut lo, mut hi) = (0u64, u64::MAX);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if f.clock.ns(mid) >= ns {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

#[cfg(test)]
mod tests {
    use super::place_bounds;

    #[test]
    fn bounds_split_the_sample_evenly_and_never_repeat() {
        let times: Vec<u64> = (0..100).map(|i| i * 10).collect();
        // Four windows' worth: half a window at each end, three whole ones between.
        assert_eq!(
            place_bounds(&times, 100 * 256, 25 * 256),
            vec![120, 370, 620, 870]
        );
        assert_eq!(place_bounds(&times, 100, 1000), Vec::<u64>::new());
        let same = vec![7; 50];
        assert_eq!(place_bounds(&same, 50 * 256, 256), Vec::<u64>::new());
    }
}
