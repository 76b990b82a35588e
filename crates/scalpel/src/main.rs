//! `scalpel`: records programs under the tracer agent and inspects the traces it writes.

use std::ffi::OsString;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

mod args;
mod choices;
mod export_cli;
mod hints;
mod infer_cli;
mod spinner;
mod timeline_cli;
mod top_cli;
mod waitfor_cli;

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};
use export_cli::{run_export, ExportArgs};
use infer_cli::{run_infer, InferArgs, InferJob};
use scalpel::inspect::{parse_op, DumpDir, DumpOptions, Summary};
use scalpel_model::text::{escape_control, Escaping};
use scalpel_record::{
    parse_depth, record, signal_name, Outcome, RecordOptions, StackMode, StackOptions, DEFAULT_DIR,
};
use timeline_cli::{run_timeline, TimelineArgs};
use top_cli::{run_flame, run_report, run_top, FlameArgs, ReportArgs, TopArgs};
use waitfor_cli::{run_waitfor, WaitforArgs};

/// Records the synchronization events of programs and inspects the traces.
#[derive(Parser, Debug)]
#[command(name = "scalpel", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a command under the tracer agent, recording into a trace directory.
    Record(RecordArgs),
    /// Print the events of a trace directory.
    Dump(DumpArgs),
    /// Print the summary of a trace directory (as `record` prints at the end).
    Summary {
        /// The trace directory.
        dir: PathBuf,
    },
    /// Infer leaf tasks and the causal graph of a trace directory.
    Infer(InferArgs),
    /// Show where the time went, top down: top-level tasks, then one task expanded.
    Top(TopArgs),
    /// Write a one-page HTML report: the model drawing, the rollups and drill-downs.
    Report(ReportArgs),
    /// Draw a flame graph: off-CPU time (every blocking call by its stack, optionally with the
    /// waker's stack), on-CPU samples, or both as wall-clock time; per thread or process, for
    /// everything or one task type.
    Flame(FlameArgs),
    /// Find where the waiting ends: the wait-for graph between thread groups, disk, network,
    /// scheduler and timers, with waits passed down chains of waiters, and its knots.
    Waitfor(WaitforArgs),
    /// Write a timeline Perfetto and chrome://tracing open: a track per thread, leaves and the
    /// waits inside them, causal edges as arrows, task instances across threads.
    Timeline(TimelineArgs),
    /// Write the stored graph or model as JSON for other tools: the whole document with every
    /// table inline, or one table (leaves, edges, occurrences, …) as JSON Lines.
    Export(ExportArgs),
}

#[derive(Args, Debug)]
struct RecordArgs {
    /// Trace directory to create.
    #[arg(short, long, value_name = "DIR", default_value = DEFAULT_DIR)]
    output: PathBuf,
    /// Remove the contents of the trace directory if it is not empty.
    #[arg(long)]
    force: bool,
    /// When to record call stacks: `off`, `all`, or `sampled:N` (one event in N per call site).
    #[arg(long, value_name = "MODE", default_value = "all")]
    stacks: StackMode,
    /// Frames kept per stack, 1 to 64.
    #[arg(long, value_name = "N", default_value = "32", value_parser = parse_depth)]
    stack_depth: u8,
    /// The agent's stack cache: `on`, `off`, or `check` (walk anyway and count disagreements).
    #[arg(long, value_name = "MODE", default_value = "on")]
    stack_cache: choices::CliStackCache,
    /// Record each thread's CPU time at every event (one more system call per event), so that
    /// `top` and `report` split running time into on-CPU and off-CPU (preempted, page faults,
    /// calls not recorded).
    #[arg(long)]
    cpu_time: bool,
    /// Also sample each thread's stack HZ times per second of its CPU time (1 to 10000; a
    /// per-thread CPU-time timer and a signal handler, no root), for `scalpel flame --on-cpu`
    /// and `--wall`. The kernel checks such timers at its scheduler tick (often 250 Hz), so a
    /// higher rate gives samples at the tick rate, each standing for the periods it covers.
    #[arg(long, value_name = "HZ", value_parser = clap::value_parser!(u32).range(1..=10_000))]
    sample: Option<u32>,
    /// Uncontended mutex locks: `record` each lock and unlock, or `count` them per mutex and
    /// leaf (private mutexes no condition variable waits with; contended acquisitions, and
    /// unlocks that find a waiter, are still recorded). `count` costs a lock-heavy server
    /// several times less, and loses those sections' times, order and stacks.
    #[arg(long, value_name = "MODE", default_value = "record")]
    locks: choices::CliLockMode,
    /// The command to record and its arguments (after `--`).
    #[arg(required = true, trailing_var_arg = true, value_name = "CMD")]
    command: Vec<OsString>,
}

#[derive(Args, Debug)]
struct DumpArgs {
    /// The trace directory.
    dir: PathBuf,
    /// List all events merged by time instead of per thread.
    #[arg(long)]
    merged: bool,
    /// Only this process (repeatable).
    #[arg(long = "pid", value_name = "PID")]
    pids: Vec<u32>,
    /// Only this thread (repeatable).
    #[arg(long = "tid", value_name = "TID")]
    tids: Vec<u32>,
    /// Only this operation, e.g. mutex_lock (repeatable).
    #[arg(long = "op", value_name = "NAME")]
    ops: Vec<String>,
    /// Only events on this object: its key (hex or decimal) or a substring of its description.
    #[arg(long, value_name = "KEY_OR_SUBSTRING")]
    object: Option<String>,
    /// Print at most N events.
    #[arg(long, value_name = "N")]
    limit: Option<usize>,
    /// Print the trace summary instead of the events.
    #[arg(long)]
    summary: bool,
    /// Do not print call stacks under the events.
    #[arg(long)]
    no_stacks: bool,
}

/// What to do, in the library's terms.
#[derive(Debug)]
enum Job {
    Record(RecordOptions),
    Dump { dir: PathBuf, opts: DumpOptions },
    Summary(PathBuf),
    Infer(InferJob),
    Top(TopArgs),
    Report(ReportArgs),
    Flame(FlameArgs),
    Waitfor(WaitforArgs),
    Timeline(TimelineArgs),
    Export(ExportArgs),
}

/// Converts the command line into the library's option structs.
fn job(cli: Cli) -> Result<Job> {
    Ok(match cli.command {
        Command::Record(a) => Job::Record(RecordOptions {
            dir: a.output,
            force: a.force,
            command: a.command,
            stacks: StackOptions {
                mode: a.stacks,
                depth: a.stack_depth,
                cache: a.stack_cache.into(),
            },
            cpu_time: a.cpu_time,
            sample_hz: a.sample,
            locks: a.locks.into(),
        }),
        Command::Dump(a) if a.summary => Job::Summary(a.dir),
        Command::Dump(a) => Job::Dump {
            opts: DumpOptions {
                merged: a.merged,
                pids: a.pids,
                tids: a.tids,
                ops: a
                    .ops
                    .iter()
                    .map(|n| parse_op(n))
                    .collect::<Result<_, _>>()?,
                object: a.object,
                limit: a.limit,
                stacks: !a.no_stacks,
            },
            dir: a.dir,
        },
        Command::Summary { dir } => Job::Summary(dir),
        Command::Infer(a) => Job::Infer(a.into()),
        Command::Top(a) => Job::Top(a),
        Command::Report(a) => Job::Report(a),
        Command::Flame(a) => Job::Flame(a),
        Command::Waitfor(a) => Job::Waitfor(a),
        Command::Timeline(a) => Job::Timeline(a),
        Command::Export(a) => Job::Export(a),
    })
}

/// Writes a line to stderr, its control characters escaped (it may quote a traced program's
/// names); a closed or full stderr is no reason to fail (or panic).
#[macro_export]
macro_rules! say {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let line = format!($($t)*);
        let _ = writeln!(std::io::stderr(), "{}", scalpel_model::text::escape_lines(&line));
    }};
}

/// Standard output for text a person reads: control characters escaped (see
/// `scalpel_model::text`), so that a traced program's names cannot drive the terminal.
pub(crate) fn text_stdout() -> BufWriter<Escaping<io::StdoutLock<'static>>> {
    BufWriter::new(Escaping::new(io::stdout().lock()))
}

/// Prints up to `most` warnings on stderr, then how many more there were (and `hint`), then
/// what flag to change for each kind printed (`hints`), once.
pub(crate) fn warn(warnings: &[impl std::error::Error + 'static], most: usize, hint: &str) {
    let mut hints = std::collections::BTreeSet::new();
    for w in warnings.iter().take(most) {
        say!("scalpel: warning: {w}");
        hints.extend(hints::for_cause(w));
    }
    for h in hints {
        say!("scalpel: hint: {h}");
    }
    if warnings.len() > most {
        say!(
            "scalpel: ... and {} more warnings{hint}",
            warnings.len() - most
        );
    }
}

/// A write to stdout that failed because the reader went away (`scalpel top | head`) is not
/// an error; any other failure is.
pub(crate) fn broken_pipe_is_fine(r: io::Result<()>) -> Result<()> {
    match r {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => Err(e).context("cannot write"),
        _ => Ok(()),
    }
}

fn main() -> ExitCode {
    // The allocator's policy is the program's: set once, before anything large is allocated.
    scalpel_model::memory::set_policy();
    match job(Cli::parse()).and_then(run) {
        Ok(code) => code,
        Err(e) => {
            say!("scalpel: error: {}", chain(&e));
            if let Some(h) = hints::for_error(&e) {
                say!("scalpel: hint: {h}");
            }
            ExitCode::FAILURE
        }
    }
}

/// The error and its causes joined by ": ", as `{:#}` would, except that a cause is left out
/// when the text before it already ends with it: the libraries' errors name their cause in
/// their own message (so that they read whole on their own), and the chain would repeat it.
fn chain(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if out.ends_with(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}

fn run(job: Job) -> Result<ExitCode> {
    match job {
        Job::Record(opts) => Ok(run_record(&opts)),
        Job::Infer(job) => run_infer(&job).map(|_| ExitCode::SUCCESS),
        Job::Top(a) => run_top(&a).map(|_| ExitCode::SUCCESS),
        Job::Report(a) => run_report(&a).map(|_| ExitCode::SUCCESS),
        Job::Flame(a) => run_flame(&a).map(|_| ExitCode::SUCCESS),
        Job::Waitfor(a) => run_waitfor(&a).map(|_| ExitCode::SUCCESS),
        Job::Timeline(a) => run_timeline(&a).map(|_| ExitCode::SUCCESS),
        Job::Export(a) => run_export(&a).map(|_| ExitCode::SUCCESS),
        Job::Dump { dir, opts } => {
            let mut out = text_stdout();
            // The events are decoded again as they are printed, never all held (`DumpDir`).
            let d = DumpDir::read(&dir).context("cannot read the trace")?;
            for w in d.trace().all_warnings() {
                say!("scalpel: warning: {w}");
            }
            let r = d
                .write(&opts, &mut out)
                .and_then(|s| out.flush().map(|_| s));
            match r {
                // `scalpel dump | head` is fine.
                Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(ExitCode::SUCCESS),
                Ok(stats) => {
                    for w in &stats.module_warnings {
                        say!("scalpel: warning: {w}");
                    }
                    Ok(ExitCode::SUCCESS)
                }
                Err(e) => Err(e).context("cannot write the dump"),
            }
        }
        Job::Summary(dir) => {
            let (summary, trace) = Summary::read(&dir).context("cannot read the trace")?;
            for w in trace.all_warnings() {
                say!("scalpel: warning: {w}");
            }
            let mut out = text_stdout();
            match writeln!(out, "{summary}").and_then(|()| out.flush()) {
                Err(e) if e.kind() != io::ErrorKind::BrokenPipe => {
                    Err(e).context("cannot write the summary")
                }
                _ => Ok(ExitCode::SUCCESS),
            }
        }
    }
}

/// Records, prints the summary on stderr and returns the command's exit status. Every line is
/// printed with its control characters escaped: titles, thread names, paths and the command are
/// the traced program's or another user's to choose.
fn run_record(opts: &RecordOptions) -> ExitCode {
    macro_rules! tell {
        ($($t:tt)*) => {
            say!("{}", escape_control(&format!($($t)*)))
        };
    }
    let rec = match record(opts) {
        Ok(r) => r,
        Err(e) => {
            tell!("scalpel: error: {e}");
            if let Some(h) = hints::for_cause(&e) {
                say!("scalpel: hint: {h}");
            }
            return ExitCode::from(e.exit_code());
        }
    };
    let cmd = opts
        .command
        .first()
        .map(|c| c.to_string_lossy().into_owned());
    let cmd = cmd.unwrap_or_default();
    match rec.outcome {
        Outcome::Signaled(s) => tell!("scalpel: `{cmd}` was killed by {}", signal_name(s)),
        Outcome::Exited(0) => {}
        Outcome::Exited(c) => tell!("scalpel: `{cmd}` exited with status {c}"),
    }
    if let Some(e) = rec.files.table_error {
        tell!(
            "scalpel: warning: {}: cannot write the recording's loss counters: {}",
            rec.dir.join(scalpel_model::format::SHARED_TABLE).display(),
            io::Error::from_raw_os_error(e)
        );
    }
    match Summary::read(&rec.dir) {
        Ok((summary, trace)) => {
            const SHOWN: usize = 10;
            let warnings: Vec<_> = trace.all_warnings().collect();
            for w in warnings.iter().take(SHOWN) {
                tell!("scalpel: warning: {w}");
            }
            if warnings.len() > SHOWN {
                tell!("scalpel: ... and {} more warnings", warnings.len() - SHOWN);
            }
            tell!("scalpel: recorded");
            for line in summary.to_string().lines() {
                tell!("  {line}");
            }
        }
        Err(e) => tell!(
            "scalpel: no trace was recorded ({e}); was the agent {} loaded?",
            rec.agent.display()
        ),
    }
    ExitCode::from(rec.outcome.exit_code())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Job> {
        let cli = Cli::try_parse_from(std::iter::once("scalpel").chain(args.iter().copied()))?;
        job(cli)
    }

    /// clap's own checks of the definitions (duplicate flags, defaults that do not parse,
    /// conflicting names), which otherwise run only when a user's arguments reach them.
    #[test]
    fn the_command_line_definitions_are_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    #[test]
    fn record_command_line() {
        let Job::Record(o) = parse(&["record", "--", "ls", "-l"]).unwrap() else {
            panic!()
        };
        assert_eq!(o.dir, PathBuf::from(DEFAULT_DIR));
        assert!(!o.force);
        assert_eq!(o.command, ["ls", "-l"]);
        let Job::Record(o) = parse(&["record", "-o", "d", "--force", "ls", "-l"]).unwrap() else {
            panic!()
        };
        assert_eq!((o.dir, o.force), (PathBuf::from("d"), true));
        assert_eq!(o.command, ["ls", "-l"]);
        assert!(parse(&["record"]).is_err());
        assert!(parse(&["record", "--bogus", "--", "ls"]).is_err());
    }

    #[test]
    fn dump_command_line() {
        let args = [
            "dump",
            "d",
            "--merged",
            "--pid",
            "1",
            "--pid",
            "2",
            "--op",
            "mutex_lock",
        ];
        let Job::Dump { dir, opts } = parse(&args).unwrap() else {
            panic!()
        };
        assert_eq!(dir, PathBuf::from("d"));
        assert!(opts.merged);
        assert_eq!(opts.pids, [1, 2]);
        assert_eq!(opts.ops, [scalpel_model::format::Op::MutexLock]);
        let e = parse(&["dump", "d", "--op", "lock"])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("unknown operation `lock`") && e.contains("mutex_unlock"),
            "{e}"
        );
        assert!(matches!(
            parse(&["dump", "--summary", "d"]).unwrap(),
            Job::Summary(_)
        ));
        assert!(matches!(parse(&["summary", "d"]).unwrap(), Job::Summary(_)));
        assert!(parse(&["dump", "d", "--limit", "x"]).is_err());
        assert!(parse(&["dump"]).is_err());
    }
}
