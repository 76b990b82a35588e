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

/// `prog args` run under `scalpel record` with the release build's agent (the one users run):
/// the run and the time the program measured.
fn traced(prog: &Path, args: &[&str]) -> (Run, Duration) {
    let agent = release_agent();
    let start = Instant::now();
    let run = record_flags(prog, &[], args, |c| {
        c.env("SCALPEL_AGENT", &agent);
    });
    assert!(
        start.elapsed() < LIMIT,
        "{} hung under the agent",
        prog.display()
    );
    let took = own_time(&run.out.stderr);
    (run, took)
}

/// Held while a test measures time: the tests of this file run at once otherwise, and two
/// timed hosts on two cores measure each other.
static TIMING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The host's status and standard output are the same traced as untraced, and its own work
/// took at most twice as long as untraced (plus 100 ms for a loaded machine) in at least one of
/// three pairs of runs, untraced and traced alternated (the machine is shared: one pair measured
/// while something else ran says little, three that all miss say the agent is slow).
fn same_as_untraced(prog: &Path, args: &[&str]) -> Run {
    let _alone = TIMING.lock().unwrap_or_else(|e| e.into_inner());
    let mut pairs = Vec::new();
    let mut last = None;
    for _ in 0..3 {
        let (plain, plain_took) = untraced(prog, args);
        let (run, took) = traced(prog, args);
        assert_eq!(
            run.out.status.code(),
            plain.status.code(),
            "exit status traced vs untraced; recorder said: {}",
            run.stderr()
        );
        assert_eq!(run.stdout(), String::from_utf8_lossy(&plain.stdout));
        pairs.push((took, plain_took));
        if took <= plain_took * 2 + Duration::from_millis(100) {
            last = Some(run);
            break;
        }
    }
    eprintln!("{} {args:?}: (traced, untraced) {pairs:?}", prog.display());
    last.unwrap_or_else(|| {
        panic!(
            "{} {args:?} took more than twice its untraced time in every pair: {pairs:?}",
            prog.display()
        )
    })
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

/// `prog args` recorded, after it was run untraced: it exits the same and prints the same on
/// its standard output.
fn recorded_as_untraced(prog: &Path, args: &[&str]) -> Run {
    let plain = untraced_output(prog, args);
    let run = record(prog, args);
    assert_eq!(
        run.out.status.code(),
        plain.status.code(),
        "{}",
        run.stderr()
    );
    assert_eq!(
        run.stdout(),
        String::from_utf8_lossy(&plain.stdout),
        "{}",
        run.stderr()
    );
    run
}

/// `fdhost MODE`, recorded as untraced.
fn fdhost_same(mode: &str) -> Run {
    recorded_as_untraced(&build_c("fdhost", "fdhost", &[]), &[mode])
}

/// `prog args` run untraced, for programs that print no time of their own.
fn untraced_output(prog: &Path, args: &[&str]) -> Output {
    let mut cmd = Command::new(prog);
    cmd.args(args).stdin(Stdio::null());
    output_within(cmd, prog, LIMIT)
}

/// What `scalpel summary` prints of the trace in `dir`.
fn summary(dir: &Path) -> String {
    let o = Command::new(scalpel())
        .arg("summary")
        .arg(dir)
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A host closing every number it might hold is told EBADF for the broker socket's number, as
/// it would be untraced (it used to be told 0, with the socket left open), and a reversed
/// `close_range` is refused with EINVAL (it used to return 0).
#[test]
fn closing_every_descriptor_is_answered_as_untraced() {
    let run = fdhost_same("closeall");
    assert!(
        run.stdout().contains("close_range(3, 2) = -1"),
        "{}",
        run.stdout()
    );
}

/// An `execve` with an invalid `envp` fails with EFAULT in the child, which goes on; the agent
/// used to walk the array and die of SIGSEGV.
#[test]
fn an_exec_with_an_invalid_envp_fails_as_untraced() {
    let run = fdhost_same("envp");
    assert!(run.stdout().contains("child exited 7"), "{}", run.stdout());
}

/// Under `ulimit -n 20` the host gets as many descriptors as untraced, `F_DUPFD` finds number
/// 19 free, and threads started with the table full cost no wait: each goes unrecorded and is
/// counted (they used to wait 100 ms each for a descriptor to ask the recorder with).
#[test]
fn a_host_at_its_descriptor_limit_runs_as_untraced() {
    let exe = build_c("fdhost", "fdhost", &[]);
    let plain = untraced_output(&exe, &["limit"]);
    let (run, took) = traced(&exe, &["limit"]);
    assert_eq!(run.stdout(), String::from_utf8_lossy(&plain.stdout));
    assert!(run.stdout().contains("F_DUPFD 19 = 19"), "{}", run.stdout());
    // 200 threads at 100 ms each was 20 s; without any wait it is milliseconds.
    assert!(took < Duration::from_secs(2), "the host took {took:?}");
    let text = summary(&run.dir);
    assert!(
        text.contains("unrecorded: 201 thread(s)"),
        "every thread that found no descriptor is counted:\n{text}"
    );
}

/// A descriptor the command inherits just under the soft limit (`bash -c 'echo x >&N' N>f`)
/// is the command's own: the broker socket used to be put there, and the output went nowhere.
#[test]
fn a_descriptor_inherited_at_the_limit_is_left_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("f");
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct it is given.
    unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) };
    let n = lim.rlim_cur.min(1024) - 1;
    let script = format!(
        "exec {n}>'{}'; exec '{}' record -o '{}' -- bash -c 'echo x >&{n}'",
        out.display(),
        scalpel().display(),
        tmp.path().join("trace").display()
    );
    let mut cmd = Command::new("bash");
    cmd.arg("-c").arg(script).stdin(Stdio::null());
    let o = output_within(cmd, Path::new("bash"), LIMIT);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "x\n");
}

/// `scalpel record` run under `scalpel record` records its own command: the outer agent used to
/// put the outer recording's variables back over the inner one's, and the inner trace was empty.
#[test]
fn a_nested_recording_records_its_command() {
    let exe = build_c("hello", "hello", &[]);
    let tmp = tempfile::tempdir().unwrap();
    let inner = tmp.path().join("inner");
    let inner_s = inner.to_str().unwrap();
    let exe_s = exe.to_str().unwrap();
    let run = record(&scalpel(), &["record", "-o", inner_s, "--", exe_s]);
    assert_eq!(run.stdout(), "hello ok\n", "{}", run.stderr());
    let t = read_dir(&inner).expect("the inner trace reads");
    let hello = processes_named(&t, "hello");
    assert!(
        !hello.is_empty() && thread_files(&t).iter().any(|f| !f.events.is_empty()),
        "the inner trace holds the command's events"
    );
}

/// A host that limits its file size (`RLIMIT_FSIZE`) is not killed by SIGXFSZ for the agent's
/// writes to its trace (it used to die with status 153): the agent checks the limit before it
/// extends or writes a trace file, and counts what it could not write.
#[test]
fn a_file_size_limit_costs_events_not_the_host() {
    let exe = build_c("fsizehost", "fsizehost", &[]);
    let run = recorded_as_untraced(&exe, &[]);
    assert_eq!(run.stdout(), "done 200000\n");
    let err = run.stderr();
    let dropped: u64 = err
        .lines()
        .find_map(|l| l.trim().strip_prefix("lost:"))
        .and_then(|l| l.split_once("(dropped ")?.1.strip_suffix(')')?.parse().ok())
        .unwrap_or_else(|| panic!("no lost line in {err}"));
    assert!(dropped > 0, "the events past the limit are counted: {err}");
}

/// A host that installs a seccomp allow-list after start runs as untraced, through `prctl` or
/// through `syscall(SYS_seccomp)`: the agent used to be killed (SIGSYS) at a new thread's
/// `socketpair` or the name it reads at exit. What it then cannot record is counted.
#[test]
fn a_seccomp_sandbox_installed_after_start_runs_as_untraced() {
    let exe = build_c("sandbox", "sandbox", &[]);
    for how in ["prctl", "syscall"] {
        let plain = untraced_output(&exe, &[how]);
        assert_eq!(
            plain.status.code(),
            Some(0),
            "the filter suits the host untraced"
        );
        let run = record(&exe, &[how]);
        assert_eq!(run.out.status.code(), Some(0), "{how}: {}", run.stderr());
        assert_eq!(run.stdout(), "done 200000\n");
        let text = summary(&run.dir);
        assert!(text.contains("unrecorded: 4 thread(s)"), "{how}: {text}");
        assert!(
            text.contains("threads:    1"),
            "{how}: the main thread: {text}"
        );
    }
}

/// A host that marks every descriptor close-on-exec before it runs a program (daemons do) is
/// told EBADF for the broker socket's number, and the program it runs is still recorded: the
/// socket used to be marked too, and the exec'd program vanished from the recording uncounted.
#[test]
fn marking_every_descriptor_close_on_exec_keeps_children_recorded() {
    let hello = build_c("hello", "hello", &[]);
    let exe = build_c("fdhost", "fdhost", &[]);
    let args = ["cloexec", hello.to_str().unwrap()];
    let run = recorded_as_untraced(&exe, &args);
    let t = run.load();
    assert_eq!(
        processes_named(&t, "hello").len(),
        1,
        "the exec'd program is recorded"
    );
}

/// A spawner that learns its child's exec error through vfork's shared memory reads it as it
/// would untraced, and the program it runs is recorded: `vfork` used to become `fork`, and the
/// parent reported success for a program that does not exist.
#[test]
fn a_vfork_spawner_sees_its_childs_exec_error() {
    let hello = build_c("hello", "hello", &[]);
    let exe = build_c("vforker", "vforker", &[]);
    let args = [hello.to_str().unwrap()];
    let run = recorded_as_untraced(&exe, &args);
    assert!(run.stdout().contains("program: exec error No such file"));
    let t = run.load();
    assert_eq!(
        processes_named(&t, "hello").len(),
        1,
        "the exec'd program is recorded"
    );
}

/// A program that joins its arguments in place (its last NUL overwritten) gets its title
/// recorded without its environment: `/proc/self/cmdline` runs on into the environment then,
/// and the first variable (here a secret, first in sorted order) used to land in the trace.
#[test]
fn a_title_joined_in_place_records_no_environment() {
    let exe = build_c("argvjoin", "argvjoin", &[]);
    let run = record_with(&exe, &["one", "two"], |c| {
        c.env("AAAA_SECRET", "hunter2-do-not-record");
    });
    assert_eq!(run.stdout(), "joined\n", "{}", run.stderr());
    let mut seen = 0;
    for entry in walk_files(&run.dir) {
        let bytes = std::fs::read(&entry).unwrap();
        seen += 1;
        assert!(
            !bytes.windows(7).any(|w| w == b"hunter2"),
            "{} holds the environment",
            entry.display()
        );
    }
    assert!(seen > 0);
    let t = run.load();
    let titles: Vec<String> = thread_files(&t)
        .iter()
        .flat_map(|f| f.titles.iter().map(|t| t.args.join(" ")))
        .collect();
    assert!(
        titles
            .iter()
            .any(|t| t.trim_end().ends_with("argvjoin one two")),
        "the joined title is kept: {titles:?}"
    );
}

/// Every regular file under `dir`.
fn walk_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let t = e.file_type().unwrap();
            if t.is_dir() {
                todo.push(e.path());
            } else if t.is_file() {
                out.push(e.path());
            }
        }
    }
    out
}

/// A thread made by `clone` with `CLONE_VM|CLONE_THREAD` and no `CLONE_SETTLS` shares its
/// parent's TLS block: its calls are counted lost, never written under the parent's id (they
/// used to be, or to vanish uncounted), and the parent's own calls are all recorded.
#[test]
fn a_thread_cloned_without_its_own_tls_is_counted_not_mixed_in() {
    let exe = build_c("rawclone", "rawclone", &[]);
    let run = record(&exe, &[]).success();
    assert_eq!(run.stdout(), "child 1000 parent 500\n");
    let t = run.load();
    let locks = with_op(&t, Op::MutexLock);
    assert_eq!(locks.len(), 501, "the parent's locks alone");
    let lost: u64 = thread_files(&t).iter().map(|f| f.header.dropped).sum();
    assert!(lost >= 2_000, "the child's 2,000 calls are counted: {lost}");
}

/// A program started under a small file size limit maps the recording's shared table without
/// reserving it again (the recorder did), so it is recorded: a reservation past the limit is
/// refused (it would raise SIGXFSZ), and a process without the shared table records nothing
/// (it used to fall back to a private table whose numbers and losses no reader saw).
#[test]
fn a_program_started_under_a_file_size_limit_is_recorded() {
    let hello = build_c("hello", "hello", &[]);
    let exe = build_c("fsizehost", "fsizehost", &[]);
    let args = ["exec", hello.to_str().unwrap()];
    let run = recorded_as_untraced(&exe, &args);
    assert!(run.stdout().contains("child exited 3"), "{}", run.stdout());
    let t = run.load();
    assert_eq!(processes_named(&t, "hello").len(), 1, "{}", run.stderr());
    assert_eq!(t.losses.processes_without_dir, 0);
}

/// `scalpel record` under `ulimit -S -f` lifts its own soft limit for the files it writes (it
/// used to die of SIGXFSZ writing the shared table) and gives the command its limit back;
/// under a hard limit too small for the table it says so and runs nothing.
#[test]
fn the_recorder_under_a_file_size_limit_records_or_says_why() {
    let exe = build_c("fsizehost", "fsizehost", &[]);
    let tmp = tempfile::tempdir().unwrap();
    let run = |ulimit: &str, name: &str| {
        let script = format!(
            "{ulimit} 100; exec '{}' record -o '{}' -- bash -c 'ulimit -f; exec \"$0\"' '{}'",
            scalpel().display(),
            tmp.path().join(name).display(),
            exe.display()
        );
        let mut cmd = Command::new("bash");
        cmd.arg("-c").arg(script).stdin(Stdio::null());
        output_within(cmd, Path::new("bash"), LIMIT)
    };
    let soft = run("ulimit -S -f", "soft");
    let out = String::from_utf8_lossy(&soft.stdout);
    assert!(
        soft.status.success(),
        "{}",
        String::from_utf8_lossy(&soft.stderr)
    );
    assert_eq!(out, "100\ndone 200000\n", "the command's limit is its own");
    let hard = run("ulimit -f", "hard");
    let err = String::from_utf8_lossy(&hard.stderr);
    assert_eq!(hard.status.code(), Some(1), "{err}");
    assert!(err.contains("file size limit is 102400 bytes"), "{err}");
    assert!(hard.stdout.is_empty(), "the command did not run");
}

/// A program exec'd inside a seccomp sandbox (the filter is kept across exec) runs as untraced:
/// its agent finds `Seccomp:` set at start and makes no call of its own (it used to be killed
/// at its first request to the recorder).
#[test]
fn a_program_execd_inside_a_sandbox_runs_as_untraced() {
    let hello = build_c("hello", "hello", &[]);
    let exe = build_c("sandbox", "sandbox", &[]);
    let args = ["exec", hello.to_str().unwrap()];
    let plain = untraced_output(&exe, &args);
    assert_eq!(
        plain.status.code(),
        Some(3),
        "the filter suits the host untraced"
    );
    let run = record(&exe, &args);
    assert_eq!(run.out.status.code(), Some(3), "{}", run.stderr());
    assert_eq!(run.stdout(), "hello ok\n");
}

/// A child spawned with every descriptor closed by its file actions
/// (`posix_spawn_file_actions_addclosefrom_np`) loses the recorder inside glibc's spawn, where
/// no hook sees it: the program it runs goes unrecorded, and is counted (it used to vanish).
#[test]
fn a_child_spawned_without_the_recorder_is_counted() {
    let hello = build_c("hello", "hello", &[]);
    let exe = build_c("fdhost", "fdhost", &[]);
    let args = ["spawn", hello.to_str().unwrap()];
    let run = recorded_as_untraced(&exe, &args);
    assert!(run.stdout().contains("spawned child exited 3"));
    let t = run.load();
    assert_eq!(processes_named(&t, "hello").len(), 0);
    assert_eq!(
        t.losses.processes_without_dir, 1,
        "the spawned program is counted"
    );
}
