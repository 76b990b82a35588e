//! Running `scalpel` on mutated traces and judging each run: a clear end (success, or an error
//! message and exit status 1), or a failure: a panic, an abort or other signal, a run slower than
//! the limit, or more peak memory than allowed.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The subcommands every mutant goes through.
pub const COMMANDS: [&str; 3] = ["dump", "summary", "infer"];

/// How one run ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// Exit status 0, or 1 with a message.
    Clear { code: i32 },
    /// The Rust runtime reported a panic.
    Panic(String),
    /// Killed by a signal (an abort, a stack overflow, a crash).
    Signal(i32),
    /// Still running at the time limit (killed then).
    Slow,
    /// Exit status other than 0 and 1, or 1 without a message.
    Unclear(i32, String),
}

/// One run: its verdict, wall time and peak resident size.
#[derive(Clone, Debug)]
pub struct RunResult {
    /// How it ended.
    pub verdict: Verdict,
    /// Wall-clock time.
    pub time: Duration,
    /// Peak resident set, bytes.
    pub peak: u64,
}

/// Runs `scalpel <cmd>` on the trace `dir` (infer writes into `out`), killed at `limit`.
pub fn run(scalpel: &Path, cmd: &str, dir: &Path, out: &Path, limit: Duration) -> RunResult {
    let err_path = out.with_extension("stderr");
    let err = std::fs::File::create(&err_path).expect("stderr file");
    let mut c = Command::new(scalpel);
    c.arg(cmd).arg(dir);
    if cmd == "infer" {
        // One worker thread, so that runs compare; no Graphviz, so that the time is ours.
        c.args(["--threads", "1", "-o"]).arg(out);
    }
    c.env("PATH", "/nonexistent")
        .env_remove("RUST_BACKTRACE")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(err);
    let started = Instant::now();
    // Reaped below by wait4, which also reports the child's peak memory.
    #[allow(clippy::zombie_processes)]
    let child = c.spawn().expect("scalpel starts");
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: zeroed is a valid rusage.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let mut killed = false;
    loop {
        // SAFETY: waiting for our own child, with valid out-pointers.
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if r == pid {
            break;
        }
        if r < 0 {
            break;
        }
        if !killed && started.elapsed() > limit {
            // SAFETY: signalling our own child.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            killed = true;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let time = started.elapsed();
    let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
    let _ = std::fs::remove_file(&err_path);
    let peak = u64::try_from(usage.ru_maxrss).unwrap_or(0) * 1024;
    let verdict = if killed {
        Verdict::Slow
    } else if libc::WIFSIGNALED(status) {
        Verdict::Signal(libc::WTERMSIG(status))
    } else if stderr.contains("panicked") {
        Verdict::Panic(
            stderr
                .lines()
                .find(|l| l.contains("panicked"))
                .unwrap_or("")
                .to_string(),
        )
    } else {
        match libc::WEXITSTATUS(status) {
            0 => Verdict::Clear { code: 0 },
            1 if stderr.contains("error") => Verdict::Clear { code: 1 },
            c => Verdict::Unclear(c, stderr.lines().last().unwrap_or("").to_string()),
        }
    };
    RunResult {
        verdict,
        time,
        peak,
    }
}
