//! The host never hangs or dies because it is traced (issue 48): hosts that use signals,
//! sandboxes, resource limits and descriptor tricks behave under `scalpel record` as they do
//! untraced (exit status, output, and for the signal cases time within twice the untraced run).

use scalpel_e2e::*;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// How long any one run here may take before it counts as a hang.
const LIMIT: Duration = Duration::from_secs(60);

/// The time a program measured of its own work and printed on stderr as `<name> took N us`
/// (the recorder's start and end left out).
fn own_time(stderr: &[u8]) -> Duration {
    let text = String::from_utf8_lossy(stderr);
    let us = text
        .lines()
        .find_map(|l| l.split_once(" took ")?.1.strip_suffix(" us")?.parse().ok())
        .unwrap_or_else(|| panic!("no time printed in {text}"));
    Duration::from_micros(us)
}

/// `prog args` run untraced: its output and the time it measured.
fn untraced(prog: &Path, args: &[&str]) -> (Output, Duration) {
    let mut cmd = Command::new(prog);
    cmd.args(args).stdin(Stdio::null());
    let out = output_within(cmd, prog, LIMIT);
    let took = own_time(&out.stderr);
    (out, took)
}

/// `prog args` run under `scalpel record`, the fastest of `tries` runs (this machine is shared
/// with other tests): the run and the time the program measured.
fn traced(prog: &Path, args: &[&str], tries: usize) -> (Run, Duration) {
    let mut best: Option<(Run, Duration)> = None;
    for _ in 0..tries {
        let start = Instant::now();
        let run = record_flags(prog, &[], args, |_| {});
        assert!(
            start.elapsed() < LIMIT,
            "{} hung under the agent",
            prog.display()
        );
        let took = own_time(&run.out.stderr);
        if best.as_ref().is_none_or(|(_, b)| took < *b) {
            best = Some((run, took));
        }
    }
    best.expect("at least one try")
}

/// The host's status and standard output are the same traced as untraced, and its own work took
/// at most twice as long (plus 100 ms for a loaded machine) as the faster of two untraced runs.
fn same_as_untraced(prog: &Path, args: &[&str]) -> Run {
    let (plain, a) = untraced(prog, args);
    let (_, b) = untraced(prog, args);
    let plain_took = a.min(b);
    let (run, took) = traced(prog, args, 3);
    assert_eq!(
        run.out.status.code(),
        plain.status.code(),
        "exit status traced vs untraced; recorder said: {}",
        run.stderr()
    );
    assert_eq!(run.stdout(), String::from_utf8_lossy(&plain.stdout));
    assert!(
        took <= plain_took * 2 + Duration::from_millis(100),
        "{} {args:?} took {took:?} traced, {plain_took:?} untraced",
        prog.display()
    );
    run
}

/// A 10 Hz self-pipe handler: the handler used to wait (up to 200 ms, again at every signal)
/// for its own thread to finish describing the pipe, and the host never finished.
#[test]
fn a_self_pipe_handler_at_10_hz_runs_as_untraced() {
    let exe = build_c("selfpipe", "selfpipe", &[]);
    same_as_untraced(&exe, &["10", "20000"]);
}

/// The same at 1 kHz.
#[test]
fn a_self_pipe_handler_at_1_khz_runs_as_untraced() {
    let exe = build_c("selfpipe", "selfpipe", &[]);
    same_as_untraced(&exe, &["1000", "20000"]);
}

/// A 20 kHz handler that makes traced calls of its own on every signal.
#[test]
fn a_20_khz_handler_making_traced_calls_runs_as_untraced() {
    let exe = build_c("selfpipe", "selfpipe", &[]);
    same_as_untraced(&exe, &["20000", "20000", "calls"]);
}
