//! The short summary of a trace directory that `scalpel record` and `scalpel summary` print.

use std::fmt;
use std::path::{Path, PathBuf};

use scalpel_model::format::FileKind;
use scalpel_model::read::{
    read_dir_with, Event, FileSink, ReadError, Ready, RecordingLosses, TraceDir,
};
use scalpel_model::text::escape_control;
use scalpel_model::wire::varint_len;

use scalpel_views::units::bytes;

use super::clockfit::ClockFit;

/// Counts over a whole trace directory.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// The trace directory.
    pub dir: PathBuf,
    /// Process incarnations.
    pub processes: usize,
    /// Thread files.
    pub threads: usize,
    /// Events decoded.
    pub events: u64,
    /// Header and record bytes decoded, over all files.
    pub bytes: u64,
    /// Size of the files on disk (windows the writer mapped but did not fill included).
    pub disk_bytes: u64,
    /// Events counted by LOST records.
    pub lost: u64,
    /// Events the writers reported dropped in their headers.
    pub dropped: u64,
    /// Warnings about damaged or unreadable files.
    pub warnings: usize,
    /// Distinct stacks (per thread file).
    pub stacks: u64,
    /// Events carrying a stack.
    pub stacked_events: u64,
    /// Stack cache answers checked against a full walk (`--stack-cache check`).
    pub stack_checked: u64,
    /// Of those, how many disagreed.
    pub stack_mismatched: u64,
    /// Events whose call stack the agent could not take.
    pub stacks_missed: u64,
    /// Events carrying their thread's CPU time (`--cpu-time`).
    pub cpu_events: u64,
    /// On-CPU samples (`--sample`).
    pub samples: u64,
    /// The thread CPU time they stand for, ns.
    pub sampled_ns: u64,
    /// Samples taken inside the agent.
    pub samples_in_agent: u64,
    /// Samples with no stack (a thread whose stack bounds are unknown).
    pub samples_unstacked: u64,
    /// What no thread file holds: threads and processes the agent could not give a file.
    pub unrecorded: RecordingLosses,
    /// Readiness waits that listed what they reported (READY records).
    pub ready_lists: u64,
    /// The bytes of those records.
    pub ready_bytes: u64,
    /// Processes that renamed themselves: pid and the title held longest.
    pub titles: Vec<(u32, String)>,
    /// The fitted clock against the calibration points.
    pub clock: ClockFit,
}

/// The most renamed processes `Display` lists.
const TITLES_SHOWN: usize = 12;

/// The most characters of a title `Display` prints: a linker's title is its whole command line
/// (531 characters for one `ld` under `make`), and one line of the summary should stay one line.
const TITLE_CHARS: usize = 100;

/// Bytes of a READY record: kind, length, form, two counts, the values.
fn ready_record_len(r: &Ready) -> u64 {
    let payload = 1
        + varint_len(r.reported)
        + varint_len(r.values.len() as u64)
        + r.values.iter().map(|&v| varint_len(v)).sum::<usize>();
    (1 + varint_len(payload as u64) + payload) as u64
}

/// What the summary counts of a file's events: kept from a loaded file's events, or counted
/// as a streamed file is decoded (see [`Summary::read`]).
#[derive(Clone, Copy, Debug, Default)]
struct EventCounts {
    events: u64,
    stacked: u64,
    cpu: u64,
    ready_lists: u64,
    ready_bytes: u64,
}

impl FileSink for EventCounts {
    fn event(&mut self, e: &Event) {
        self.events += 1;
        self.stacked += u64::from(e.stack.is_some());
        self.cpu += u64::from(e.cpu_ns.is_some());
        if let Some(r) = e.ready.as_deref() {
            self.ready(r);
        }
    }

    fn ready(&mut self, r: &Ready) {
        self.ready_lists += 1;
        self.ready_bytes += ready_record_len(r);
    }
}

impl Summary {
    /// Reads the trace directory `dir` and summarizes it, counting the events as they are
    /// decoded instead of keeping them: a summary must not need memory in proportion to the
    /// trace (`scalpel record` prints one after every recording; keeping a 5-second memcached
    /// trace's 17.5 million events took 3.9 GB). Returns the trace read, without its events,
    /// for its warnings.
    pub fn read(dir: &Path) -> Result<(Summary, TraceDir), ReadError> {
        let (trace, sinks) = read_dir_with(dir, |_| EventCounts::default())?;
        let mut s = Summary::of(&trace);
        for c in sinks
            .iter()
            .flat_map(|p| p.process.iter().chain(&p.threads))
        {
            s.add(c);
        }
        Ok((s, trace))
    }

    fn add(&mut self, c: &EventCounts) {
        self.events += c.events;
        self.stacked_events += c.stacked;
        self.cpu_events += c.cpu;
        self.ready_lists += c.ready_lists;
        self.ready_bytes += c.ready_bytes;
    }

    /// Summarizes `trace`, with the events its files hold.
    pub fn of(trace: &TraceDir) -> Summary {
        let mut s = Summary {
            dir: trace.path.clone(),
            processes: trace.processes.len(),
            warnings: trace.all_warnings().count(),
            unrecorded: trace.losses,
            titles: trace
                .processes
                .iter()
                .filter_map(|p| Some((p.pid, p.title()?)))
                .collect(),
            clock: ClockFit::of(trace),
            ..Summary::default()
        };
        for (_, f) in trace.files() {
            if f.kind() == Some(FileKind::Thread) {
                s.threads += 1;
            }
            let mut counts = EventCounts::default();
            f.events.iter().for_each(|e| counts.event(e));
            s.add(&counts);
            s.bytes += u64::from(f.header.header_size) + f.decoded_len;
            s.disk_bytes += f.file_len;
            s.lost = s.lost.saturating_add(f.lost);
            s.dropped = s.dropped.saturating_add(f.header.dropped);
            s.stacks += f.stacks.len() as u64;
            s.samples += f.samples.len() as u64;
            s.sampled_ns += f.samples.iter().map(|x| x.weight_ns()).sum::<u64>();
            s.samples_in_agent += f.samples.iter().filter(|x| x.in_agent).count() as u64;
            s.samples_unstacked += f.samples.iter().filter(|x| x.stack == 0).count() as u64;
            s.stack_checked += u64::from(f.header.stack_checked);
            s.stack_mismatched += u64::from(f.header.stack_mismatched);
            s.stacks_missed = s.stacks_missed.saturating_add(f.header.stacks_missed);
        }
        s
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "trace:      {}", self.dir.display())?;
        writeln!(f, "processes:  {}", self.processes)?;
        writeln!(f, "threads:    {}", self.threads)?;
        writeln!(f, "events:     {}", self.events)?;
        writeln!(
            f,
            "bytes:      {} ({} on disk)",
            bytes(self.bytes as f64),
            bytes(self.disk_bytes as f64)
        )?;
        writeln!(f, "lost:       {} (dropped {})", self.lost, self.dropped)?;
        if self.unrecorded.any() {
            writeln!(f, "unrecorded: {}", self.unrecorded)?;
        }
        writeln!(
            f,
            "stacks:     {} events with stacks, {} distinct per thread",
            self.stacked_events, self.stacks
        )?;
        if self.stacks_missed > 0 {
            writeln!(
                f,
                "            {} events wanted a stack the agent could not take",
                self.stacks_missed
            )?;
        }
        if self.cpu_events > 0 {
            writeln!(f, "cpu times:  {} events carry one", self.cpu_events)?;
        }
        if self.samples > 0 {
            writeln!(
                f,
                "samples:    {} on-CPU samples for {:.1} ms of CPU; {} inside the agent, {} \
                 without a stack",
                self.samples,
                self.sampled_ns as f64 / 1e6,
                self.samples_in_agent,
                self.samples_unstacked
            )?;
        }
        if self.clock.points > 0 {
            writeln!(f, "clock:      {}", self.clock)?;
        }
        if self.ready_lists > 0 {
            writeln!(
                f,
                "readiness:  {} waits listed what they reported, {} ({:.2} B per event)",
                self.ready_lists,
                bytes(self.ready_bytes as f64),
                self.ready_bytes as f64 / self.events.max(1) as f64
            )?;
        }
        for (pid, title) in self.titles.iter().take(TITLES_SHOWN) {
            // The program chose its title: printed escaped (see `scalpel_model::text`).
            let shown = escape_control(title);
            let shown = match shown.char_indices().nth(TITLE_CHARS) {
                Some((cut, _)) => {
                    format!("{}… ({} characters)", &shown[..cut], title.chars().count())
                }
                None => shown.into_owned(),
            };
            writeln!(f, "title:      {pid} {shown}")?;
        }
        if self.titles.len() > TITLES_SHOWN {
            writeln!(
                f,
                "title:      ... and {} more renamed processes",
                self.titles.len() - TITLES_SHOWN
            )?;
        }
        if self.stack_checked > 0 {
            writeln!(
                f,
                "stack cache check: {} cached stacks re-walked, {} differed",
                self.stack_checked, self.stack_mismatched
            )?;
        }
        write!(f, "warnings:   {}", self.warnings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_title_is_cut_to_one_line_and_says_how_long_it_was() {
        let long = format!("ld {}", "-L/usr/lib/x86_64-linux-gnu ".repeat(20));
        let s = Summary {
            titles: vec![(7, long.clone()), (8, "postgres: walwriter".to_owned())],
            ..Summary::default()
        };
        let text = s.to_string();
        let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("title:")).collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(lines[0].chars().count() < 140, "{}", lines[0]);
        assert!(lines[0].ends_with(&format!("… ({} characters)", long.chars().count())));
        assert_eq!(lines[1], "title:      8 postgres: walwriter");
    }
}
