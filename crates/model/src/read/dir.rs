//! Reading a whole trace directory: every process incarnation and its thread files, in parallel.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rayon::prelude::*;

use super::clock::Clock;
use super::decode::FileCursor;
use super::error::ReadError;
use super::file::{read_opened_span, Span};
use super::filetrace::{FileSink, FileTrace};
use super::host::HostIdentity;
use super::identity::Identity;
use super::types::{Calibration, Event};
use crate::format::{shared_loss, FileKind, PROCESS_FILE, SHARED_TABLE, TRACE_EXT};
use crate::open::{Dir, OpenError};

/// One process incarnation (`<pid>.<n>/`).
#[derive(Debug)]
pub struct ProcessTrace {
    /// Process id.
    pub pid: u32,
    /// Incarnation number (a new one per exec).
    pub incarnation: u32,
    /// The process directory.
    pub dir: PathBuf,
    /// `process.trace`, when present and readable.
    pub process: Option<FileTrace>,
    /// Thread files, sorted by tid, then reuse number.
    pub threads: Vec<FileTrace>,
    /// The machine it ran on: the first, unless traces of several were merged.
    pub host: crate::ids::HostId,
}

impl ProcessTrace {
    /// The executable: from the process file, else from the first thread file.
    pub fn exe(&self) -> Option<PathBuf> {
        self.files().find_map(|f| f.exe_path())
    }

    /// The command line from the process file.
    pub fn cmdline(&self) -> Option<&[String]> {
        self.process.as_ref()?.cmdline.as_deref()
    }

    /// The name the process gave itself, when it differs from its command line: of the titles
    /// its TITLE records show (a server that overwrites argv, such as PostgreSQL's `postgres:
    /// walwriter`), the one it held longest, each held from its record to the next title or to
    /// the last time any of its files shows; the earliest on a tie. The first title counts from
    /// the process's start: servers retitle a process as soon as they fork it, and an idle one
    /// (PostgreSQL's checkpointer) makes the calls that let the agent notice only much later. Not
    /// simply the latest: nginx's workers and PostgreSQL's checkpointer retitle themselves as
    /// they shut down. Arguments are joined by spaces and trimmed.
    pub fn title(&self) -> Option<String> {
        let mut titles: Vec<(u64, String)> = self
            .files()
            .flat_map(|f| f.titles.iter())
            .map(|t| (t.ticks, t.args.join(" ").trim().to_string()))
            .collect();
        // Stable: records of one instant keep their file order.
        titles.sort_by_key(|t| t.0);
        let end = self
            .files()
            .flat_map(|f| {
                let events = f.events.last().map(|e| e.ticks);
                let calibrations = f.calibrations.iter().map(|c| c.ticks);
                calibrations.chain(events)
            })
            .chain(titles.iter().map(|t| t.0))
            .max()?;
        let start = self
            .files()
            .map(|f| f.header.clock0)
            .filter(|&t| t > 0)
            .min()
            .unwrap_or(0);
        // (title, ticks held, first seen), in order of first sight.
        let mut held: Vec<(&str, u64, usize)> = Vec::new();
        for (i, (at, text)) in titles.iter().enumerate() {
            let until = titles.get(i + 1).map_or(end, |n| n.0).max(*at);
            let at = if i == 0 { &start.min(*at) } else { at };
            match held.iter_mut().find(|h| h.0 == text) {
                Some(h) => h.1 += until - at,
                None => held.push((text, until - at, i)),
            }
        }
        let best = held
            .into_iter()
            .max_by(|a, b| a.1.cmp(&b.1).then(b.2.cmp(&a.2)))?
            .0;
        let cmdline = self.cmdline().map(|c| c.join(" ")).unwrap_or_default();
        (!best.is_empty() && best != cmdline.trim()).then(|| best.to_string())
    }

    /// The process file (if any), then the thread files.
    pub fn files(&self) -> impl Iterator<Item = &FileTrace> {
        self.process.iter().chain(self.threads.iter())
    }

    /// [`ProcessTrace::files`], to change.
    pub fn files_mut(&mut self) -> impl Iterator<Item = &mut FileTrace> {
        self.process.iter_mut().chain(self.threads.iter_mut())
    }
}

/// A whole trace directory.
#[derive(Debug)]
pub struct TraceDir {
    /// The directory.
    pub path: PathBuf,
    /// Process incarnations sorted by pid, then incarnation.
    pub processes: Vec<ProcessTrace>,
    /// Files that could not be read at all, and directories that could not be listed.
    pub warnings: Vec<ReadError>,
    /// What the recording lost outside any thread file (from `shared.tbl`).
    pub losses: RecordingLosses,
    /// The machine it was recorded on (from `host.id`), when the recorder wrote one.
    pub host: Option<HostIdentity>,
}

/// Losses no thread file holds, counted by the agent in `shared.tbl` (zero when the file is
/// missing or too short to hold them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecordingLosses {
    /// Threads that could not get a trace file: their events are missing altogether.
    pub threads_without_file: u64,
    /// Processes that could not get a process directory: nothing of them was recorded.
    pub processes_without_dir: u64,
    /// Files the recorder made that their process never began (it died or lost its recording
    /// at once); the recorder removed them.
    pub unfinished_files: u64,
}

impl RecordingLosses {
    /// Reads the counters from the `shared.tbl` in `dir`: zero when it is missing or too short,
    /// an error when it is not a regular file (a FIFO there used to hang every reader).
    fn read(dir: &Dir) -> Result<RecordingLosses, ReadError> {
        use std::os::unix::fs::FileExt;
        let mut buf = [0u8; 8 * shared_loss::COUNT];
        // Only these bytes are read, at their offset, whatever the file's length.
        let f = match dir.file(OsStr::new(SHARED_TABLE), u64::MAX) {
            Ok(f) => f,
            Err(e) if e.is_missing() => return Ok(RecordingLosses::default()),
            Err(e) => return Err(e.into()),
        };
        if f.file.read_exact_at(&mut buf, shared_loss::OFFSET).is_err() {
            return Ok(RecordingLosses::default());
        }
        let at = |i: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&buf[8 * i..8 * i + 8]);
            u64::from_le_bytes(b)
        };
        Ok(RecordingLosses {
            threads_without_file: at(shared_loss::THREADS_WITHOUT_FILE),
            processes_without_dir: at(shared_loss::PROCESSES_WITHOUT_DIR),
            unfinished_files: at(shared_loss::UNFINISHED_FILES),
        })
    }

    /// Whether anything was lost.
    pub fn any(&self) -> bool {
        self.threads_without_file > 0 || self.processes_without_dir > 0 || self.unfinished_files > 0
    }
}

impl std::fmt::Display for RecordingLosses {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} thread(s) without a trace file, {} process(es) without a directory",
            self.threads_without_file, self.processes_without_dir
        )?;
        if self.unfinished_files > 0 {
            write!(f, ", {} file(s) never begun", self.unfinished_files)?;
        }
        Ok(())
    }
}

/// An event with the file and process it comes from.
#[derive(Clone, Copy, Debug)]
pub struct EventRef<'a> {
    /// The process incarnation.
    pub process: &'a ProcessTrace,
    /// The file.
    pub file: &'a FileTrace,
    /// Index of the event in `file.events`.
    pub index: usize,
    /// The event.
    pub event: &'a Event,
}

impl TraceDir {
    /// Every file with its process, in directory order.
    pub fn files(&self) -> impl Iterator<Item = (&ProcessTrace, &FileTrace)> {
        self.processes
            .iter()
            .flat_map(|p| p.files().map(move |f| (p, f)))
    }

    /// Directory-level warnings, then every file's warnings, in directory order.
    pub fn all_warnings(&self) -> impl Iterator<Item = &ReadError> {
        self.warnings
            .iter()
            .chain(self.files().flat_map(|(_, f)| f.warnings.iter()))
    }

    /// Takes every warning out of the directory and its files, in [`Self::all_warnings`] order.
    pub fn take_warnings(&mut self) -> Vec<ReadError> {
        let mut out = std::mem::take(&mut self.warnings);
        for p in &mut self.processes {
            for f in p.process.iter_mut().chain(p.threads.iter_mut()) {
                out.append(&mut f.warnings);
            }
        }
        out
    }

    /// Every event, merged by time. Ties are broken by pid, tid, then position in the directory
    /// and in the file, so the order is deterministic.
    pub fn events_by_time(&self) -> Vec<EventRef<'_>> {
        let mut all: Vec<(usize, EventRef<'_>)> = self
            .files()
            .enumerate()
            .flat_map(|(n, (process, file))| {
                file.events.iter().enumerate().map(move |(index, event)| {
                    let r = EventRef {
                        process,
                        file,
                        index,
                        event,
                    };
                    (n, r)
                })
            })
            .collect();
        all.sort_by_key(|(n, r)| (r.event.ts_ns, r.process.pid, r.file.header.tid, *n, r.index));
        all.into_iter().map(|(_, r)| r).collect()
    }

    /// The earliest event time, if there is any event.
    pub fn first_ts(&self) -> Option<u64> {
        self.files()
            .flat_map(|(_, f)| f.events.iter().map(|e| e.ts_ns))
            .min()
    }

    /// The identity of every object, by (kind, key); the first definition that says more than
    /// [`Identity::None`] wins.
    pub fn identities(&self) -> HashMap<(u8, u64), &Identity> {
        let mut map: HashMap<(u8, u64), &Identity> = HashMap::new();
        for (_, f) in self.files() {
            for o in &f.objects {
                let slot = map.entry((o.kind, o.key)).or_insert(&o.identity);
                if **slot == Identity::None {
                    *slot = &o.identity;
                }
            }
        }
        map
    }
}

/// Where a file goes in its process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Slot {
    Process,
    /// tid, reuse number (0 for `t<tid>.trace`).
    Thread(u32, u32),
}

fn parse_pair(s: &str) -> Option<(u32, u32)> {
    let (a, b) = s.split_once('.')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

fn parse_slot(name: &str) -> Option<Slot> {
    if name == PROCESS_FILE {
        return Some(Slot::Process);
    }
    let stem = name
        .strip_prefix('t')?
        .strip_suffix(TRACE_EXT)?
        .strip_suffix('.')?;
    match stem.split_once('.') {
        None => Some(Slot::Thread(stem.parse().ok()?, 0)),
        Some(_) => parse_pair(stem).map(|(tid, k)| Slot::Thread(tid, k)),
    }
}

/// Warns in `f` when its header disagrees with its name: a thread file whose header names
/// another thread, or a file whose kind is the other one's. The file is kept where its name puts
/// it.
fn name_mismatch(f: &mut FileTrace, slot: Slot) {
    let h = &f.header;
    let problem = match (slot, h.kind()) {
        (Slot::Thread(..), Some(FileKind::Process)) => Some((
            crate::format::hdr::FILE_KIND,
            "a process file under a thread file's name; read as a thread file".to_owned(),
        )),
        (Slot::Process, Some(FileKind::Thread)) => Some((
            crate::format::hdr::FILE_KIND,
            "a thread file under the process file's name; read as the process file".to_owned(),
        )),
        (Slot::Thread(tid, _), _) if h.tid != tid => Some((
            crate::format::hdr::TID,
            format!(
                "the header names thread {}, the file name thread {tid}; kept under its name",
                h.tid
            ),
        )),
        _ => None,
    };
    if let Some((offset, problem)) = problem {
        f.warnings.push(ReadError::Inconsistent {
            path: f.path.clone(),
            offset: offset as u64,
            problem,
        });
    }
}

/// Compares the files found with the recorder's list of what it made, when there is one (a
/// recording that ended normally): a listed file that is missing and a file not listed are
/// warnings, so a trace someone removed files from (or added to) does not pass without a word.
fn check_manifest(dir: &Dir, found: &[Job], warnings: &mut Vec<ReadError>) {
    use crate::format::{MANIFEST, MANIFEST_HEADER};
    use std::collections::BTreeSet;
    // A list longer than this is not one the recorder wrote for a trace we could read anyway.
    const MAX_LIST: u64 = 256 << 20;
    // The recorder writes the list whole, so a hole means someone else made it.
    let read = dir
        .file(OsStr::new(MANIFEST), MAX_LIST)
        .and_then(|f| f.refuse_holes().map(|()| f))
        .and_then(crate::open::read_all);
    let bytes = match read {
        Ok(b) => b,
        Err(e) if e.is_missing() => return,
        Err(e) => return warnings.push(e.into()),
    };
    let Ok(text) = String::from_utf8(bytes) else {
        return;
    };
    let mut lines = text.lines();
    if lines.next() != Some(MANIFEST_HEADER) {
        return;
    }
    let listed: BTreeSet<&str> = lines.filter(|l| !l.is_empty()).collect();
    let present: BTreeSet<String> = found
        .iter()
        .filter_map(|j| {
            let rel = j.path.strip_prefix(dir.path()).ok()?;
            Some(rel.to_string_lossy().into_owned())
        })
        .collect();
    for l in &listed {
        if !present.contains(*l) {
            let path = dir.path().join(l);
            warnings.push(ReadError::Missing { path });
        }
    }
    for p in &present {
        if !listed.contains(p.as_str()) {
            let path = dir.path().join(p);
            warnings.push(ReadError::Unlisted { path });
        }
    }
}

/// Sorted names of the entries of a directory that parse with `f`.
fn list<T: Ord>(dir: &Dir, f: impl Fn(&str) -> Option<T>) -> Result<Vec<(T, String)>, ReadError> {
    let mut out = Vec::new();
    for name in dir.names()? {
        if let Some(t) = name.to_str().and_then(&f) {
            out.push((t, name.to_string_lossy().into_owned()));
        }
    }
    out.sort();
    Ok(out)
}

/// A file to read: its process, where it goes, its directory and its name there.
struct Job {
    process: usize,
    slot: Slot,
    dir: Arc<Dir>,
    name: String,
    path: PathBuf,
}

/// The sinks [`read_dir_with`] fed, aligned with [`TraceDir::processes`]: `threads[i]` holds
/// the events of `processes[p].threads[i]`.
#[derive(Debug)]
pub struct ProcessSinks<S> {
    /// The process file's sink, when the file was read.
    pub process: Option<S>,
    /// One sink per thread file.
    pub threads: Vec<S>,
}

/// Reads a trace directory. Errors: the path is missing or not a directory, or no trace file in
/// it could be read. Unreadable files and process directories become warnings.
pub fn read_dir(path: impl AsRef<Path>) -> Result<TraceDir, ReadError> {
    let (dir, _) = read_dir_inner::<()>(path.as_ref(), None, None)?;
    Ok(dir)
}

/// Reads a trace directory like [`read_dir`], but hands every event of a file to that file's
/// own sink (made by `new_sink`, files in parallel) instead of keeping it, so that a caller can
/// reduce a large trace as it is decoded. The files' event lists stay empty; once this returns,
/// every file's [`FileTrace::clock`] is the trace-wide one.
pub fn read_dir_with<S: FileSink + Send>(
    path: impl AsRef<Path>,
    new_sink: impl Fn(&Path) -> S + Sync,
) -> Result<(TraceDir, Vec<ProcessSinks<S>>), ReadError> {
    read_dir_inner(path.as_ref(), Some(&new_sink), None)
}

/// How a windowed read decodes each thread file (see [`super::windows`]): the span of it to
/// decode, and what to give the file (the whole file's metadata) before its sink finishes.
pub(crate) struct WindowRead<'a> {
    pub span: &'a (dyn Fn(&Path) -> Span + Sync),
    pub prepare: &'a (dyn Fn(&mut FileTrace) + Sync),
}

/// Where each thread file's windowed read stopped (`None`: at its end), by path.
pub(crate) type Ends = HashMap<PathBuf, Option<FileCursor>>;

pub(crate) fn read_dir_inner<S: FileSink + Send>(
    path: &Path,
    streaming: Option<&(dyn Fn(&Path) -> S + Sync)>,
    window: Option<(&WindowRead<'_>, &mut Ends)>,
) -> Result<(TraceDir, Vec<ProcessSinks<S>>), ReadError> {
    let (window, ends) = match window {
        Some((w, e)) => (Some(w), Some(e)),
        None => (None, None),
    };
    // Every entry is opened relative to its directory's descriptor, without following links
    // (see `crate::open`): the user named the trace directory, not what is planted in it.
    let top = Dir::open(path).map_err(|e| match e {
        OpenError::Type { .. } => ReadError::NotADirectory {
            path: path.to_path_buf(),
        },
        e => e.into(),
    })?;
    let mut warnings = Vec::new();
    let mut processes = Vec::new();
    let mut jobs: Vec<Job> = Vec::new();
    for ((pid, incarnation), name) in list(&top, parse_pair)? {
        let sub = match top.subdir(OsStr::new(&name)) {
            Ok(sub) => Arc::new(sub),
            // A plain file under a process directory's name is not part of the trace.
            Err(OpenError::Type {
                found: "a regular file",
                ..
            }) => continue,
            Err(e) => {
                warnings.push(e.into());
                continue;
            }
        };
        match list(&sub, parse_slot) {
            Ok(files) => {
                let n = processes.len();
                jobs.extend(files.into_iter().map(|(slot, f)| Job {
                    process: n,
                    slot,
                    dir: Arc::clone(&sub),
                    path: sub.path().join(&f),
                    name: f,
                }));
                processes.push(ProcessTrace {
                    pid,
                    incarnation,
                    dir: sub.path().to_path_buf(),
                    process: None,
                    threads: Vec::new(),
                    host: crate::ids::HostId::default(),
                });
            }
            Err(e) => warnings.push(e),
        }
    }
    check_manifest(&top, &jobs, &mut warnings);
    let results: Vec<_> = jobs
        .into_par_iter()
        .map(|j| {
            // Trace files have no length limit: they are streamed in bounded chunks.
            let opened = j.dir.file(OsStr::new(&j.name), u64::MAX);
            let mut span = match (window, j.slot) {
                (Some(w), Slot::Thread(..)) => Some((w.span)(&j.path)),
                _ => None,
            };
            let prepare = |f: &mut FileTrace| {
                if let Some(w) = window {
                    (w.prepare)(f);
                }
            };
            let r = match (opened, streaming) {
                (Err(e), _) => Err(e.into()),
                (Ok(o), None) => read_opened_span(o, None, span.as_mut()).map(|mut f| {
                    prepare(&mut f);
                    (f, None)
                }),
                (Ok(o), Some(new_sink)) => {
                    let mut sink = new_sink(&j.path);
                    read_opened_span(o, Some(&mut sink), span.as_mut()).map(|mut f| {
                        prepare(&mut f);
                        sink.finish(&f);
                        (f, Some(sink))
                    })
                }
            };
            let end = span.map(|s| (j.path.clone(), s.end));
            (j.process, j.slot, r, end)
        })
        .collect();
    let mut sinks: Vec<ProcessSinks<S>> = processes
        .iter()
        .map(|_| ProcessSinks {
            process: None,
            threads: Vec::new(),
        })
        .collect();
    let mut found_ends = Vec::new();
    for (n, slot, r, end) in results {
        found_ends.extend(end);
        let r = r.map(|(mut f, s)| {
            name_mismatch(&mut f, slot);
            (f, s)
        });
        match (r, slot) {
            (Ok((f, s)), Slot::Process) => {
                processes[n].process = Some(f);
                sinks[n].process = s;
            }
            (Ok((f, s)), Slot::Thread(..)) => {
                processes[n].threads.push(f);
                sinks[n].threads.extend(s);
            }
            (Err(e), _) => warnings.push(e),
        }
    }
    let keep: Vec<bool> = processes
        .iter()
        .map(|p| p.process.is_some() || !p.threads.is_empty())
        .collect();
    let mut k = keep.iter();
    sinks.retain(|_| *k.next().unwrap_or(&false));
    processes.retain(|p| p.process.is_some() || !p.threads.is_empty());
    if processes.is_empty() {
        return Err(ReadError::NoTraces {
            path: path.to_path_buf(),
            failures: warnings,
        });
    }
    match ends {
        Some(ends) => ends.extend(found_ends),
        // A window's files take the clock the whole trace gave them (see `super::windows`).
        None => retime(&mut processes),
    }
    let losses = RecordingLosses::read(&top).unwrap_or_else(|e| {
        warnings.push(e);
        RecordingLosses::default()
    });
    let host = HostIdentity::read(&top).unwrap_or_else(|e| {
        warnings.push(e);
        None
    });
    let dir = TraceDir {
        path: path.to_path_buf(),
        processes,
        warnings,
        losses,
        host,
    };
    Ok((dir, sinks))
}

/// A calibration point and where it came from: (process, file, offset); file 0 is the process
/// file, file i > 0 thread file i - 1.
/// A calibration point (a header's has no width) and the process and file it came from.
type Point = (Calibration, usize, usize);

/// Calibration points that disagree with the fitted line by more than this are dropped.
const MAX_RESIDUAL_NS: u64 = 1_000_000;

fn file_mut(p: &mut ProcessTrace, i: usize) -> Option<&mut FileTrace> {
    if i == 0 {
        p.process.as_mut()
    } else {
        p.threads.get_mut(i - 1)
    }
}

/// Puts every TSC-clocked file of the trace on one clock (see [`Clock::fitted`]), so that times
/// compare across threads and processes in the order the TSC gives them. A calibration point far
/// off the line the others agree on (a damaged record) is dropped with a warning on its file,
/// so it cannot rescale the whole trace.
fn retime(processes: &mut [ProcessTrace]) {
    let mut points: Vec<Point> = Vec::new();
    for (pi, p) in processes.iter().enumerate() {
        let files = p
            .process
            .iter()
            .map(|f| (0, f))
            .chain(p.threads.iter().enumerate().map(|(i, f)| (i + 1, f)));
        for (fi, f) in files.filter(|(_, f)| f.header.is_tsc()) {
            let header = Calibration {
                ticks: f.header.clock0,
                mono_ns: f.header.mono0,
                width: None,
                offset: crate::format::hdr::CLOCK0 as u64,
            };
            points.push((header, pi, fi));
            points.extend(f.calibrations.iter().map(|&c| (c, pi, fi)));
        }
    }
    let Some(first) = processes
        .iter()
        .flat_map(|p| p.files())
        .filter(|f| f.header.is_tsc())
        .min_by_key(|f| f.header.mono0)
    else {
        return;
    };
    let fallback = (
        first.header.ticks_per_sec,
        first.header.clock0,
        first.header.mono0,
    );
    let fit = |pts: &[Point]| {
        let mut xy: Vec<Calibration> = pts.iter().map(|p| p.0).collect();
        xy.sort_unstable_by_key(|c| (c.ticks, c.mono_ns, c.width));
        xy.dedup_by_key(|c| (c.ticks, c.mono_ns, c.width));
        Clock::fitted(&xy, fallback)
    };
    // Outliers are found against a robust line first: the median of the headers' measured
    // rates, through the median offset. Least squares alone would let one wild point tilt the
    // line until every point looked wrong.
    let mut rates: Vec<u64> = processes
        .iter()
        .flat_map(|p| p.files())
        .filter(|f| f.header.is_tsc() && f.header.ticks_per_sec > 0)
        .map(|f| f.header.ticks_per_sec)
        .collect();
    rates.sort_unstable();
    let rate = rates
        .get(rates.len() / 2)
        .copied()
        .unwrap_or(fallback.0)
        .max(1) as f64;
    let offset_of = |p: &Point| p.0.mono_ns as f64 - p.0.ticks as f64 * 1e9 / rate;
    let mut offsets: Vec<f64> = points.iter().map(offset_of).collect();
    offsets.sort_by(f64::total_cmp);
    let mid = offsets.get(offsets.len() / 2).copied().unwrap_or(0.0);
    let mut ticks: Vec<u64> = points.iter().map(|p| p.0.ticks).collect();
    ticks.sort_unstable();
    let mid_ticks = ticks.get(ticks.len() / 2).copied().unwrap_or(0);
    // 1 ms, plus 100 parts per million of the distance from the middle for the rates' error.
    let tolerance = |p: &Point| {
        MAX_RESIDUAL_NS as f64 + 1e-4 * p.0.ticks.abs_diff(mid_ticks) as f64 * 1e9 / rate
    };
    let (good, bad): (Vec<Point>, Vec<Point>) = points
        .iter()
        .partition(|p| (offset_of(p) - mid).abs() <= tolerance(p));
    let clock = fit(if good.is_empty() { &points } else { &good });
    if !good.is_empty() {
        for p in bad {
            let (
                Calibration {
                    ticks,
                    mono_ns: mono,
                    offset,
                    ..
                },
                pi,
                fi,
            ) = p;
            let off_by = (offset_of(&p) - mid).abs();
            if let Some(f) = file_mut(&mut processes[pi], fi) {
                f.warnings.push(ReadError::Inconsistent {
                    path: f.path.clone(),
                    offset,
                    problem: format!(
                        "a clock calibration point ({ticks} ticks = {mono} ns) is {:.3} ms off the \
                         line the trace's other points agree on; ignored",
                        off_by / 1e6
                    ),
                });
            }
        }
    }
    for p in processes.iter_mut() {
        for f in p.process.iter_mut().chain(p.threads.iter_mut()) {
            if f.header.is_tsc() {
                f.apply_clock(&clock);
            }
        }
    }
}
