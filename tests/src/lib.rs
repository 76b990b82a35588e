//! Helpers for the end-to-end tests: build the small C programs in `tests/c`, run them under
//! `scalpel record`, and load the traces with the model reader.
//!
//! The agent and the `scalpel` binary are taken from the same target directory as the running
//! test; the README's test command builds the workspace before testing.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

pub mod apart;
pub mod cluster;
pub mod corpus;
pub mod edit;
pub mod fuzzrun;
pub mod generated;
pub mod grammar;
pub mod hosts;
pub mod mutate;
pub mod replicated;
pub mod schema;
pub mod score;
pub mod servers;
pub mod sqltop;

pub use replicated::{replicated_primary, replicated_primary_of, PAPER_TASKS};
pub use scalpel_model::format::{ObjKind, Op};
pub use scalpel_model::read::{read_dir, Event, EventRef, FileTrace, Identity, TraceDir};

/// `target/<profile>` of this build.
pub fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    // target/<profile>/deps/<test binary>
    exe.parent()
        .and_then(Path::parent)
        .expect("test binary in target/<profile>/deps")
        .to_path_buf()
}

/// Says that test `test` did not run and why: on stderr (seen with `--nocapture`) and as a line
/// in `target/<profile>/not-run.txt`, which `scripts/test.sh` prints after the tests, so that a
/// skipped test never passes for a run one.
pub fn not_run(test: &str, why: &str) {
    eprintln!("{test}: not run: {why}");
    let line = format!("{test}: {why}\n");
    let path = target_dir().join("not-run.txt");
    // One short append per line: tests running in parallel do not interleave within it.
    let _ = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| std::io::Write::write_all(&mut f, line.as_bytes()));
}

/// A Python that tests need a package for: `$VAR_PYTHON` (else `python3`) when it can run
/// `import_line`. Without it, test `test` is reported as not run, unless `$VAR_REQUIRED` is `1`
/// (CI), where that fails. `VAR` is, e.g., `SCALPEL_OTLP`; `package` names what is missing.
pub fn python_with(var: &str, import_line: &str, package: &str, test: &str) -> Option<String> {
    let py = std::env::var(format!("{var}_PYTHON")).unwrap_or_else(|_| "python3".to_owned());
    let has = std::process::Command::new(&py)
        .args(["-c", import_line])
        .output()
        .is_ok_and(|o| o.status.success());
    if has {
        return Some(py);
    }
    assert!(
        std::env::var_os(format!("{var}_REQUIRED")).is_none_or(|v| v != "1"),
        "{var}_REQUIRED=1 but {py} cannot import {package}"
    );
    not_run(
        test,
        &format!("{py} has no {package} (set {var}_PYTHON; .ci/run makes one)"),
    );
    None
}

fn built(name: &str) -> PathBuf {
    let p = target_dir().join(name);
    assert!(
        p.exists(),
        "{} is missing: build the workspace first (cargo build --workspace)",
        p.display()
    );
    p
}

/// The `scalpel` binary.
pub fn scalpel() -> PathBuf {
    built("scalpel")
}

/// The agent library.
pub fn agent() -> PathBuf {
    built("libscalpel_agent.so")
}

/// The agent library of the release build, for tests of the host's timing under the agent:
/// users run the optimized agent, and the debug one costs several times as much per call.
/// `scripts/test.sh` tests on the release profile, where it is [`agent`]; under the dev
/// profile it must be built first (`cargo build --release -p scalpel-agent`).
pub fn release_agent() -> PathBuf {
    release_built("libscalpel_agent.so", "scalpel-agent")
}

/// A sample program of the release build (the demo's), for tests of what the README shows:
/// a debug build's stacks, without inlining, give other call paths. Under the dev profile it
/// must be built first (`cargo build --release -p scalpel-samples`).
pub fn release_sample(name: &str) -> PathBuf {
    release_built(name, "scalpel-samples")
}

fn release_built(name: &str, package: &str) -> PathBuf {
    let p = target_dir()
        .parent()
        .expect("target/<profile> has a parent")
        .join("release")
        .join(name);
    assert!(
        p.exists(),
        "{} is missing: build it with `cargo build --release -p {package}`",
        p.display()
    );
    p
}

/// A binary of this crate (`src/bin`).
pub fn own_bin(name: &str) -> PathBuf {
    built(name)
}

/// The folder with the C sources.
pub fn c_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("c")
}

/// Builds `tests/c/<src>.c` as the shared library `lib<src>.so` beside the test programs (with
/// `extra` compiler arguments), for programs that link it with `-L` and an rpath on
/// [`target_dir`]`/e2e-c`.
pub fn build_lib(src: &str, extra: &[&str]) -> PathBuf {
    let dir = target_dir().join("e2e-c");
    std::fs::create_dir_all(&dir).unwrap();
    let lib = dir.join(format!("lib{src}.so"));
    // As `compile_c` does: a name of its own, then a rename, so that a program of another test
    // process sharing the target directory never loads a half-written library.
    let tmp = dir.join(format!(
        ".lib{src}.so.{}.{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let ok = Command::new("cc")
        .args(["-shared", "-fPIC", "-pthread"])
        .args(extra)
        .arg("-o")
        .arg(&tmp)
        .arg(c_dir().join(format!("{src}.c")))
        .status()
        .unwrap()
        .success();
    assert!(ok, "building lib{src}.so failed");
    std::fs::rename(&tmp, &lib).unwrap();
    lib
}

/// Compiles `tests/c/<src>.c` (or `<src>.cpp`, with the C++ compiler; plus `extra` arguments)
/// into an executable named `out`.
///
/// Each program is built once per test binary: tests run at once, and one test's build
/// replacing the executable while another's trace of it is symbolized left that trace's frames
/// unnamed (symbolization reads the file at the recorded path and refuses one that changed).
pub fn build_c(src: &str, out: &str, extra: &[&str]) -> PathBuf {
    static BUILT: std::sync::Mutex<Vec<(String, PathBuf)>> = std::sync::Mutex::new(Vec::new());
    let key = format!("{src}\0{out}\0{}", extra.join("\0"));
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, exe)) = built.iter().find(|(k, _)| *k == key) {
        return exe.clone();
    }
    let exe = compile_c(src, out, extra);
    built.push((key, exe.clone()));
    exe
}

fn compile_c(src: &str, out: &str, extra: &[&str]) -> PathBuf {
    let dir = target_dir().join("e2e-c");
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join(out);
    // Tests in one binary run at once and may build the same program: each compiles to a name
    // of its own and renames it into place, so nobody runs a half-written executable.
    let tmp = dir.join(format!(
        ".{out}.{}.{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    // A C++ program is `<src>.cpp`, built with the C++ compiler.
    let cpp = c_dir().join(format!("{src}.cpp"));
    let (compiler, file) = if cpp.exists() {
        ("c++", cpp)
    } else {
        ("cc", c_dir().join(format!("{src}.c")))
    };
    let status = Command::new(compiler)
        .args(["-O1", "-g", "-pthread", "-Wall", "-o"])
        .arg(&tmp)
        .arg(file)
        .args(extra)
        .status()
        .expect("cc runs");
    assert!(status.success(), "compiling {src} failed");
    std::fs::rename(&tmp, &exe).unwrap();
    exe
}

/// The result of one `scalpel record` run.
pub struct Run {
    /// Holds the trace directory alive.
    pub tmp: tempfile::TempDir,
    /// The trace directory.
    pub dir: PathBuf,
    /// What `scalpel record` returned and printed.
    pub out: Output,
}

impl Run {
    /// The target's standard output.
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.out.stdout).into_owned()
    }

    /// A figure the program printed about itself: the number after the word `what` on the
    /// line of its standard output that starts with `label` (`main sleep 5012345 lock …`).
    pub fn printed(&self, label: &str, what: &str) -> u64 {
        let out = self.stdout();
        let line = out
            .lines()
            .find(|l| l.starts_with(&format!("{label} ")))
            .unwrap_or_else(|| panic!("no {label} line in {out}"));
        let words: Vec<&str> = line.split_whitespace().collect();
        let at = words
            .iter()
            .position(|w| *w == what)
            .unwrap_or_else(|| panic!("no {what} in {line:?}"));
        words[at + 1]
            .parse()
            .unwrap_or_else(|e| panic!("{what} in {line:?}: {e}"))
    }

    /// `scalpel record`'s standard error (the target's and the summary).
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.out.stderr).into_owned()
    }

    /// Asserts the run exited 0.
    pub fn success(self) -> Self {
        assert!(
            self.out.status.success(),
            "record failed: {:?}\nstdout:\n{}\nstderr:\n{}",
            self.out.status,
            self.stdout(),
            self.stderr()
        );
        self
    }

    /// Loads the trace, failing on any damaged file.
    pub fn load(&self) -> TraceDir {
        let t = read_dir(&self.dir).expect("trace directory reads");
        let warnings: Vec<String> = t.all_warnings().map(|w| w.to_string()).collect();
        assert!(warnings.is_empty(), "trace warnings: {warnings:#?}");
        t
    }
}

/// Runs `prog args…` under `scalpel record -o <tempdir>`.
pub fn record(prog: &Path, args: &[&str]) -> Run {
    record_with(prog, args, |_| {})
}

/// Like [`record`], with a hook to adjust the command (environment, stdin…).
pub fn record_with(prog: &Path, args: &[&str], adjust: impl FnOnce(&mut Command)) -> Run {
    record_flags(prog, &[], args, adjust)
}

/// Like [`record_with`], with `flags` for `scalpel record` itself (before the `--`).
pub fn record_flags(
    prog: &Path,
    flags: &[&str],
    args: &[&str],
    adjust: impl FnOnce(&mut Command),
) -> Run {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("trace");
    let mut cmd = Command::new(scalpel());
    cmd.arg("record")
        .arg("-o")
        .arg(&dir)
        .args(flags)
        .arg("--")
        .arg(prog)
        .args(args)
        .stdin(Stdio::null());
    adjust(&mut cmd);
    let out = output_within(cmd, prog, RECORD_TIMEOUT);
    Run { tmp, dir, out }
}

/// How long a recorded test program may run: a sample that hangs (a lost wakeup in the sample,
/// or a deadlock the agent caused) fails its test instead of hanging the whole test run.
pub const RECORD_TIMEOUT: Duration = Duration::from_secs(300);

/// `cmd.output()`, run in a process group of its own that is killed, with a panic naming
/// `prog`, when it has not exited within `limit`.
pub fn output_within(mut cmd: Command, prog: &Path, limit: Duration) -> Output {
    use std::os::unix::process::CommandExt;
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = cmd.spawn().expect("scalpel runs");
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = r.read_to_end(&mut v);
            v
        })
    };
    let out = drain(Box::new(child.stdout.take().expect("piped")));
    let err = drain(Box::new(child.stderr.take().expect("piped")));
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("waits for scalpel") {
            break status;
        }
        if start.elapsed() > limit {
            let group = i32::try_from(child.id()).expect("pid fits");
            // SAFETY: kill(2) on the process group this function made (the recorder and the
            // program it runs), which nothing else shares.
            unsafe { libc::kill(-group, libc::SIGKILL) };
            let _ = child.wait();
            panic!(
                "{} did not finish within {limit:?} under scalpel record; killed",
                prog.display()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: out.join().expect("stdout read"),
        stderr: err.join().expect("stderr read"),
    }
}

/// Runs `prog args…` under `scalpel record`, waits for the first line it prints (its pid),
/// waits `settle` more for it to reach where it blocks, then SIGKILLs it. Returns the run,
/// whose status is the recorder's.
pub fn record_then_kill(prog: &Path, args: &[&str], settle: std::time::Duration) -> Run {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("trace");
    let mut child = Command::new(scalpel())
        .arg("record")
        .arg("-o")
        .arg(&dir)
        .arg("--")
        .arg(prog)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("scalpel runs");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let pid: i32 = line.trim().parse().expect("pid line");
    std::thread::sleep(settle);
    // SAFETY: sending a signal to the target we started.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    let out = child.wait_with_output().unwrap();
    Run { tmp, dir, out }
}

/// Every event of the trace with its file.
pub fn all_events(t: &TraceDir) -> Vec<EventRef<'_>> {
    t.events_by_time()
}

/// The events with operation `op`.
pub fn with_op(t: &TraceDir, op: Op) -> Vec<EventRef<'_>> {
    t.events_by_time()
        .into_iter()
        .filter(|e| e.event.op == Some(op))
        .collect()
}

/// Thread files of all processes.
pub fn thread_files(t: &TraceDir) -> Vec<&FileTrace> {
    t.processes.iter().flat_map(|p| p.threads.iter()).collect()
}

/// The process incarnations whose executable file name is `name`.
pub fn processes_named<'a>(
    t: &'a TraceDir,
    name: &str,
) -> Vec<&'a scalpel_model::read::ProcessTrace> {
    t.processes
        .iter()
        .filter(|p| {
            p.exe()
                .and_then(|e| e.file_name().map(|f| f == name))
                .unwrap_or(false)
        })
        .collect()
}

/// True when the tests run as root (mounts, user switches).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Runs `scalpel flame ARGS…`.
pub fn flame(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(scalpel())
        .arg("flame")
        .args(args)
        .output()
        .unwrap()
}

/// The folded lines `scalpel flame --folded` printed, as (stack, count); fails if it failed.
pub fn folded(o: &Output) -> Vec<(String, u64)> {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout.clone())
        .unwrap()
        .lines()
        .map(|l| {
            let (s, n) = l.rsplit_once(' ').expect("`stack count`");
            (s.to_owned(), n.parse().expect("a count"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_past_its_time_is_killed_and_named() {
        let mut cmd = Command::new("sleep");
        cmd.arg("60");
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            output_within(cmd, Path::new("sleep"), Duration::from_millis(300))
        }));
        let msg = r
            .expect_err("killed")
            .downcast::<String>()
            .expect("a message");
        assert!(msg.contains("sleep did not finish within"), "{msg}");
    }

    #[test]
    fn a_program_in_time_gives_its_output() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo out; echo err >&2; exit 3"]);
        let o = output_within(cmd, Path::new("sh"), RECORD_TIMEOUT);
        assert_eq!(o.status.code(), Some(3));
        assert_eq!(o.stdout, b"out\n");
        assert_eq!(o.stderr, b"err\n");
    }
}
