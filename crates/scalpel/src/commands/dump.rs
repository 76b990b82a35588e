//! `scalpel dump` and `scalpel summary`: a trace as recorded, event by event or summed up.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Args;
use scalpel::inspect::{parse_op, DumpDir, DumpOptions, Summary};

use crate::output::{broken_pipe_is_fine, text_stdout};
use crate::say;

#[derive(Args, Debug)]
pub(crate) struct DumpArgs {
    /// The trace directory.
    pub dir: PathBuf,
    /// List all events merged by time instead of per thread.
    #[arg(long)]
    pub merged: bool,
    /// Only this process (repeatable).
    #[arg(long = "pid", value_name = "PID")]
    pub pids: Vec<u32>,
    /// Only this thread (repeatable).
    #[arg(long = "tid", value_name = "TID")]
    pub tids: Vec<u32>,
    /// Only this operation, e.g. mutex_lock (repeatable).
    #[arg(long = "op", value_name = "NAME")]
    pub ops: Vec<String>,
    /// Only events on this object: its key (hex or decimal) or a substring of its description.
    #[arg(long, value_name = "KEY_OR_SUBSTRING")]
    pub object: Option<String>,
    /// Print at most N events.
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// Print the trace summary instead of the events.
    #[arg(long)]
    pub summary: bool,
    /// Do not print call stacks under the events.
    #[arg(long)]
    pub no_stacks: bool,
}

#[derive(Args, Debug)]
pub(crate) struct SummaryArgs {
    /// The trace directory.
    pub dir: PathBuf,
}

/// `dump` (or `summary`) in the library's terms.
#[derive(Debug)]
pub(crate) enum Dump {
    Events { dir: PathBuf, opts: DumpOptions },
    Summary(PathBuf),
}

impl DumpArgs {
    pub(crate) fn options(self) -> Result<Dump> {
        if self.summary {
            return Ok(Dump::Summary(self.dir));
        }
        Ok(Dump::Events {
            opts: DumpOptions {
                merged: self.merged,
                pids: self.pids,
                tids: self.tids,
                ops: self
                    .ops
                    .iter()
                    .map(|n| parse_op(n))
                    .collect::<Result<_, _>>()?,
                object: self.object,
                limit: self.limit,
                stacks: !self.no_stacks,
            },
            dir: self.dir,
        })
    }
}

impl SummaryArgs {
    pub(crate) fn options(self) -> Dump {
        Dump::Summary(self.dir)
    }
}

/// Prints the events or the summary.
pub(crate) fn run(d: &Dump) -> Result<()> {
    match d {
        Dump::Events { dir, opts } => events(dir, opts),
        Dump::Summary(dir) => summary(dir),
    }
}

fn events(dir: &Path, opts: &DumpOptions) -> Result<()> {
    let mut out = text_stdout();
    // The events are decoded again as they are printed, never all held (`DumpDir`).
    let d = DumpDir::read(dir).context("cannot read the trace")?;
    for w in d.trace().all_warnings() {
        say!("scalpel: warning: {w}");
    }
    let stats = match d.write(opts, &mut out).and_then(|s| out.flush().map(|_| s)) {
        // `scalpel dump | head` is fine.
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(()),
        r => r.context("cannot write the dump")?,
    };
    for w in &stats.module_warnings {
        say!("scalpel: warning: {w}");
    }
    Ok(())
}

fn summary(dir: &Path) -> Result<()> {
    let (summary, trace) = Summary::read(dir).context("cannot read the trace")?;
    for w in trace.all_warnings() {
        say!("scalpel: warning: {w}");
    }
    let mut out = text_stdout();
    broken_pipe_is_fine(writeln!(out, "{summary}").and_then(|()| out.flush()))
}
