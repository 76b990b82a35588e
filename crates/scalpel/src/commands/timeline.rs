//! `scalpel timeline`: a Perfetto (Chrome trace-event) timeline.

use std::io::{self, Write};
use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use scalpel_analysis::rollup::task_spans;
use scalpel_model::progress::Timings;
use scalpel_views::timeline::{write_timeline, TimelineOptions};

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
    let (_, l) = a.source.load(&mut t, &spinner)?;
    let spans = t.phase("task instances", &spinner, || {
        task_spans(&l.graph, &l.model)
    });
    let out = output_path(a.output.as_ref(), &l.from, "timeline.json")?;
    let counts = t.phase("writing the timeline", &spinner, || {
        out.write(|w| write_timeline(w, &l.graph, &l.model, &spans, &a.window))
    })?;
    print_timings(a.source.timings, &t);
    broken_pipe_is_fine(writeln!(
        io::stdout(),
        "wrote {}: {} leaf slices, {} calls inside them, {} flow arrows, {} task instances \
         (open it in https://ui.perfetto.dev or chrome://tracing)",
        out.path.display(),
        counts.leaves,
        counts.calls,
        counts.flows,
        counts.tasks
    ))
}
