//! `scalpel record`: a command run under the agent, and the summary of what it recorded.

use std::ffi::OsString;
use std::io;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use scalpel::inspect::Summary;
use scalpel_model::text::escape_control;
use scalpel_record::{
    parse_depth, record, signal_name, Outcome, RecordOptions, StackMode, StackOptions, DEFAULT_DIR,
};

use crate::choices;
use crate::hints;
use crate::say;

#[derive(Args, Debug)]
pub(crate) struct RecordArgs {
    /// Trace directory to create.
    #[arg(short, long, value_name = "DIR", default_value = DEFAULT_DIR)]
    pub output: PathBuf,
    /// Remove the contents of the trace directory if it is not empty.
    #[arg(long)]
    pub force: bool,
    /// When to record call stacks: `off`, `all`, or `sampled:N` (one event in N per call site).
    #[arg(long, value_name = "MODE", default_value = "all")]
    pub stacks: StackMode,
    /// Frames kept per stack, 1 to 64.
    #[arg(long, value_name = "N", default_value = "32", value_parser = parse_depth)]
    pub stack_depth: u8,
    /// The agent's stack cache: `on`, `off`, or `check` (walk anyway and count disagreements).
    #[arg(long, value_name = "MODE", default_value = "on")]
    pub stack_cache: choices::CliStackCache,
    /// Record each thread's CPU time at every event (one more system call per event), so that
    /// `top` and `report` split running time into on-CPU and off-CPU (preempted, page faults,
    /// calls not recorded).
    #[arg(long)]
    pub cpu_time: bool,
    /// Also sample each thread's stack HZ times per second of its CPU time (1 to 10000; a
    /// per-thread CPU-time timer and a signal handler, no root), for `scalpel flame --on-cpu`
    /// and `--wall`. The kernel checks such timers at its scheduler tick (often 250 Hz), so a
    /// higher rate gives samples at the tick rate, each standing for the periods it covers.
    #[arg(long, value_name = "HZ", value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub sample: Option<u32>,
    /// Uncontended mutex locks: `record` each lock and unlock, or `count` them per mutex and
    /// leaf (private mutexes no condition variable waits with; contended acquisitions, and
    /// unlocks that find a waiter, are still recorded). `count` costs a lock-heavy server
    /// several times less, and loses those sections' times, order and stacks.
    #[arg(long, value_name = "MODE", default_value = "record")]
    pub locks: choices::CliLockMode,
    /// The command to record and its arguments (after `--`).
    #[arg(required = true, trailing_var_arg = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}

impl RecordArgs {
    pub(crate) fn options(self) -> RecordOptions {
        RecordOptions {
            dir: self.output,
            force: self.force,
            command: self.command,
            stacks: StackOptions {
                mode: self.stacks,
                depth: self.stack_depth,
                cache: self.stack_cache.into(),
            },
            cpu_time: self.cpu_time,
            sample_hz: self.sample,
            locks: self.locks.into(),
        }
    }
}

/// Records, prints the summary on stderr and returns the command's exit status. Every line is
/// printed with its control characters escaped: titles, thread names, paths and the command are
/// the traced program's or another user's to choose.
pub(crate) fn run(opts: &RecordOptions) -> ExitCode {
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
