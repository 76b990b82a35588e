//! `scalpel timeline`: a Perfetto (Chrome trace-event) timeline.

use std::cell::RefCell;
use std::io::{self, Write};
use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use scalpel::pipeline::is_windowed;
use scalpel::Pipeline;
use scalpel_analysis::rollup::task_spans;
use scalpel_model::progress::Timings;
use scalpel_views::timeline::{write_timeline, TimelineCounts, TimelineOptions, TimelineWriter};

use crate::args::SourceArgs;
use crate::output::{broken_pipe_is_fine, print_timings};
use crate::source::{output_path, Source};
use crate::spinner::Spinner;

#[derive(Args, Debug)]
pub(crate) struct TimelineArgs {
    #[command(flatten)]
    pub source: SourceArgs,
    /// The JSON file to write [default: timeline.json beside the model, or in DIR/model].
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Only what overlaps the window starting this many seconds after the first leaf.
    #[arg(long, value_name = "SECONDS", value_parser = seconds)]
    pub from: Option<u64>,
    /// … and ending this many seconds after it.
    #[arg(long, value_name = "SECONDS", value_parser = seconds)]
    pub to: Option<u64>,
}

/// Seconds (a decimal number, at least 0) as nanoseconds.
fn seconds(s: &str) -> Result<u64, String> {
    let v: f64 = s
        .parse()
        .map_err(|_| format!("`{s}` is not a number of seconds"))?;
    if (0.0..1e9).contains(&v) {
        Ok((v * 1e9).round() as u64)
    } else {
        Err(format!("{s} is not a time from 0 seconds on"))
    }
}

/// `timeline` in the library's terms.
#[derive(Debug)]
pub(crate) struct Timeline {
    pub source: Source,
    pub output: Option<PathBuf>,
    pub window: TimelineOptions,
}

impl TimelineArgs {
    pub(crate) fn options(self) -> Result<Timeline> {
        if let (Some(f), Some(t)) = (self.from, self.to) {
            anyhow::ensure!(f <= t, "--from must not be after --to");
        }
        Ok(Timeline {
            source: self.source.options(),
            output: self.output,
            window: TimelineOptions {
                from_ns: self.from,
                to_ns: self.to,
            },
        })
    }
}

/// Writes the timeline and says where, with what it holds.
pub(crate) fn run(a: &Timeline) -> Result<()> {
    let mut t = Timings::new();
    let spinner = Spinner::new();
    let (path, counts) = if a.source.more.is_empty() && is_windowed(&a.source.path) {
        windows(a, &mut t, &spinner)?
    } else {
        let (_, l) = a.source.load(&mut t, &spinner)?;
        let spans = t.phase("task instances", &spinner, || {
            task_spans(&l.graph, &l.model)
        });
        let out = output_path(a.output.as_ref(), &l.from, "timeline.json")?;
        let counts = t.phase("writing the timeline", &spinner, || {
            out.write(|w| write_timeline(w, &l.graph, &l.model, &spans, &a.window))
        })?;
        (out.path, counts)
    };
    print_timings(a.source.timings, &t);
    broken_pipe_is_fine(writeln!(
        io::stdout(),
        "wrote {}: {} leaf slices, {} calls inside them, {} flow arrows, {} task instances \
         (open it in https://ui.perfetto.dev or chrome://tracing)",
        path.display(),
        counts.leaves,
        counts.calls,
        counts.flows,
        counts.tasks
    ))
}

/// The timeline of a trace inferred in windows: the windows that hold any of the time asked
/// for, read one at a time into one document (`--from` and `--to` count from the first
/// window's first leaf).
fn windows(a: &Timeline, t: &mut Timings, sp: &Spinner) -> Result<(PathBuf, TimelineCounts)> {
    let pipeline = Pipeline::new(a.source.pipeline.clone())?;
    let dir = &a.source.path;
    let out = output_path(
        a.output.as_ref(),
        &dir.join("windows.json"),
        "timeline.json",
    )?;
    let counts = out.write(|w| {
        let writer = RefCell::new(TimelineWriter::new(w, a.window)?);
        pipeline
            .each_window_where(
                dir,
                sp,
                t,
                |b| writer.borrow().wants(b.start_ns, b.end_ns),
                |b, g, m, wt| -> Result<()> {
                    let spans = wt.phase("task instances", sp, || task_spans(g, m));
                    wt.phase("writing the timeline", sp, || {
                        writer.borrow_mut().add(g, m, &spans, Some(b.index))
                    })?;
                    Ok(())
                },
            )
            // The file is not kept when a window cannot be read.
            .map_err(|e| io::Error::other(format!("{e:#}")))?;
        writer.into_inner().finish()
    })?;
    Ok((out.path, counts))
}
