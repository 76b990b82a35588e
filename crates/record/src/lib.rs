//! `scalpel record`: prepares the trace directory, finds the agent and runs a command under it.

use std::ffi::{OsStr, OsString};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;

use scalpel_model::broker::ENV_BROKER;
use scalpel_model::format::{ENV_AGENT, ENV_CPU_TIME, ENV_DIR, ENV_LOCKS, ENV_SAMPLE, ENV_STACKS};

mod broker;
mod child;
mod limits;
mod made;
mod stackopts;
mod table;
mod tracedir;

pub use broker::BrokerReport;
pub use child::{signal_name, Outcome, SpawnError};
pub use stackopts::{
    parse_depth, StackCache, StackMode, StackOptError, StackOptions, MAX_STACK_DEPTH,
};
pub use tracedir::{prepare_dir, TraceRoot};

/// Trace directory used when none is given.
pub const DEFAULT_DIR: &str = "scalpel-trace";
/// File name of the agent library, looked for next to the `scalpel` executable.
pub const AGENT_FILE: &str = "libscalpel_agent.so";

/// What `scalpel record` does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordOptions {
    /// The trace directory. Default: [`DEFAULT_DIR`] in the current directory.
    pub dir: PathBuf,
    /// Remove the contents of a non-empty `dir` instead of failing. Default: `false`.
    pub force: bool,
    /// The command and its arguments (at least the command).
    pub command: Vec<OsString>,
    /// Call-stack options. Default: [`StackOptions::default`].
    pub stacks: StackOptions,
    /// Every event carries its thread's CPU time, so that rollups can tell time on a CPU from
    /// time runnable but preempted (or in calls the agent does not record). It costs one system
    /// call per event. Default: `false`.
    pub cpu_time: bool,
    /// On-CPU samples per second of each thread's CPU time, taken by a per-thread CPU-time
    /// timer whose signal handler records the interrupted stack (no root needed). Default:
    /// `None` (off).
    pub sample_hz: Option<u32>,
    /// How uncontended mutex acquisitions are recorded. Default: [`LockMode::Record`].
    pub locks: LockMode,
}

/// How the agent records a mutex lock that finds the mutex free (see
/// [`scalpel_model::format::ENV_LOCKS`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LockMode {
    /// Every lock and unlock is an event with its time, order and stack.
    #[default]
    Record,
    /// Uncontended pairs on private mutexes that no condition variable waits with are only
    /// counted, per mutex and leaf: the lock tables keep their counts and contended
    /// acquisitions, the queue analysis its sections; the uncontended sections' times, order
    /// and stacks are lost (and `--cut-at-locks` cannot cut there). Several times cheaper on
    /// lock-heavy servers.
    Count,
}

scalpel_model::named!(LockMode, "lock mode" { Record => "record", Count => "count" });

impl Default for RecordOptions {
    fn default() -> Self {
        RecordOptions {
            dir: PathBuf::from(DEFAULT_DIR),
            force: false,
            command: Vec::new(),
            stacks: StackOptions::default(),
            cpu_time: false,
            sample_hz: None,
            locks: LockMode::Record,
        }
    }
}

/// Why a recording could not be made.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// No command to run.
    #[error("no command given")]
    NoCommand,
    /// The command is the empty string.
    #[error("the command is empty")]
    EmptyCommand,
    /// The directory holds something and `force` is off.
    #[error("{}: trace directory is not empty", .0.display())]
    NotEmpty(PathBuf),
    /// `force` was set for a directory that holds more than a trace.
    #[error(
        "{}: not a trace directory (it holds {}); only an earlier trace is ever replaced",
        .0.display(),
        .1.to_string_lossy()
    )]
    NotATrace(PathBuf, OsString),
    /// The path is a symbolic link (to anything or nothing): whoever could plant it would choose
    /// what is changed and emptied.
    #[error(
        "{}: a symbolic link; the trace directory is never reached through one (give the \
         directory itself)",
        .0.display()
    )]
    Symlink(PathBuf),
    /// The directory belongs to another user, who could replace or read what is recorded.
    #[error(
        "{}: owned by uid {owner}, not by you (uid {me}); another user could plant links or \
         read the trace there: record into a directory of your own",
        .path.display()
    )]
    ForeignOwner {
        /// The directory.
        path: PathBuf,
        /// Its owner.
        owner: u32,
        /// The recording user.
        me: u32,
    },
    /// Other users can create and remove entries in the directory.
    #[error(
        "{}: other users can write here (mode {mode:o}, no sticky bit) and could plant links \
         or remove the trace: record into a directory only you can write",
        .path.display()
    )]
    OpenToOthers {
        /// The directory.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// The path exists and is not a directory.
    #[error("{}: exists and is not a directory", .0.display())]
    NotADirectory(PathBuf),
    /// The hard file size limit (`RLIMIT_FSIZE`) is below what the recorder must write.
    #[error(
        "the file size limit is {limit} bytes and cannot be raised; a recording needs at \
         least {needed} bytes per file (its shared table)"
    )]
    FileSizeLimit {
        /// The hard limit, in bytes.
        limit: u64,
        /// What the recorder needs.
        needed: u64,
    },
    /// A file system operation failed.
    #[error("{}: cannot {action}: {source}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// What was being done.
        action: &'static str,
        /// The error.
        #[source]
        source: io::Error,
    },
    /// `SCALPEL_AGENT` names a file that does not exist.
    #[error("{ENV_AGENT}={}: no such file", .0.display())]
    AgentMissing(PathBuf),
    /// No agent next to the executable and no `SCALPEL_AGENT`.
    #[error(
        "cannot find the agent library {AGENT_FILE} (looked in {}); build it with \
         `cargo build -p scalpel-agent` (it lands next to the scalpel binary) or set {ENV_AGENT} \
         to its path",
        .0.display()
    )]
    AgentNotFound(PathBuf),
    /// The command could not be started.
    #[error(transparent)]
    Spawn(#[from] child::SpawnError),
}

impl RecordError {
    /// The exit status a shell would give: 127 for a command not found, 126 for one that cannot
    /// be executed, 1 otherwise.
    pub fn exit_code(&self) -> u8 {
        match self {
            RecordError::Spawn(e) => e.exit_code(),
            _ => 1,
        }
    }
}

fn io_err(path: &Path, action: &'static str) -> impl FnOnce(io::Error) -> RecordError {
    let path = path.to_path_buf();
    move |source| RecordError::Io {
        path,
        action,
        source,
    }
}

/// Finds the agent: `env_agent` (the value of `SCALPEL_AGENT`) when set and non-empty, else
/// [`AGENT_FILE`] in the directory of `exe` (the running `scalpel`). Returns an absolute path.
pub fn find_agent(env_agent: Option<&OsStr>, exe: Option<&Path>) -> Result<PathBuf, RecordError> {
    if let Some(a) = env_agent.filter(|a| !a.is_empty()) {
        let p = Path::new(a);
        return fs::canonicalize(p).map_err(|_| RecordError::AgentMissing(p.to_path_buf()));
    }
    let dir = exe.and_then(Path::parent).unwrap_or(Path::new("."));
    let candidate = dir.join(AGENT_FILE);
    if candidate.is_file() {
        return fs::canonicalize(&candidate).map_err(io_err(&candidate, "resolve"));
    }
    Err(RecordError::AgentNotFound(dir.to_path_buf()))
}

/// The `LD_PRELOAD` value: the agent first, then what was already there.
pub fn ld_preload(agent: &Path, existing: Option<&OsStr>) -> OsString {
    let mut v = OsString::from(agent);
    if let Some(e) = existing.filter(|e| !e.is_empty()) {
        v.push(":");
        v.push(e);
    }
    v
}

/// A finished recording.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recording {
    /// The absolute trace directory.
    pub dir: PathBuf,
    /// The agent used.
    pub agent: PathBuf,
    /// How the command ended.
    pub outcome: Outcome,
    /// What the recorder made and cleaned up.
    pub files: BrokerReport,
}

/// Runs `opts.command` under the agent, recording into `opts.dir`, and waits for it. The agent
/// is found with [`find_agent`] from the `SCALPEL_AGENT` environment variable and the current
/// executable's directory.
pub fn record(opts: &RecordOptions) -> Result<Recording, RecordError> {
    let (cmd, args) = opts.command.split_first().ok_or(RecordError::NoCommand)?;
    if cmd.is_empty() {
        return Err(RecordError::EmptyCommand);
    }
    let exe = std::env::current_exe().ok();
    let agent = find_agent(std::env::var_os(ENV_AGENT).as_deref(), exe.as_deref())?;
    // A command that cannot start must not cost the user the previous trace.
    child::check_runnable(cmd)?;
    let fsize = limits::lift_file_size_limit(table::TABLE_LEN)?;
    let TraceRoot {
        fd: root,
        path: dir,
    } = prepare_dir(&opts.dir, opts.force)?;
    let preload = ld_preload(&agent, std::env::var_os("LD_PRELOAD").as_deref());
    let mut command = std::process::Command::new(cmd);
    command
        .args(args)
        .env(ENV_DIR, &dir)
        .env(ENV_AGENT, &agent)
        .env(ENV_STACKS, opts.stacks.to_string())
        .env("LD_PRELOAD", preload);
    // The option alone decides: a value left in the caller's environment must not turn it on.
    if opts.cpu_time {
        command.env(ENV_CPU_TIME, "on");
    } else {
        command.env_remove(ENV_CPU_TIME);
    }
    match opts.locks {
        LockMode::Record => command.env_remove(ENV_LOCKS),
        LockMode::Count => command.env(ENV_LOCKS, "count"),
    };
    match opts.sample_hz {
        Some(hz) => command.env(ENV_SAMPLE, hz.to_string()),
        None => command.env_remove(ENV_SAMPLE),
    };
    // Every file of the recording is made by the broker, owned by this user and closed to
    // everyone else; the command gets the socket to ask for them at a fixed descriptor.
    let (server, theirs) = broker::start(root).map_err(io_err(&dir, "start serving"))?;
    let slot = limits::broker_slot();
    command.env(
        ENV_BROKER,
        format!("{},{}", slot.number, std::process::id()),
    );
    let raw = theirs.as_raw_fd();
    // SAFETY: `place_broker` makes async-signal-safe calls only and allocates nothing.
    unsafe {
        command.pre_exec(move || {
            limits::place_broker(raw, slot)?;
            limits::restore_file_size_limit(fsize)
        });
    }
    let outcome = child::run(command, cmd);
    // Only the command's processes may hold the socket now, so the broker sees its end when the
    // last of them has exited.
    drop(theirs);
    let outcome = outcome?;
    let files = server.finish();
    Ok(Recording {
        dir,
        agent,
        outcome,
        files,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_lookup() {
        let tmp = tempfile::tempdir().unwrap();
        let exe = tmp.path().join("scalpel");
        let e = find_agent(None, Some(&exe)).unwrap_err();
        assert!(matches!(e, RecordError::AgentNotFound(_)));
        assert!(
            e.to_string().contains("cargo build -p scalpel-agent"),
            "{e}"
        );
        fs::write(tmp.path().join(AGENT_FILE), b"").unwrap();
        let found = find_agent(Some(OsStr::new("")), Some(&exe)).unwrap();
        assert_eq!(found, tmp.path().canonicalize().unwrap().join(AGENT_FILE));
        let other = tmp.path().join("other.so");
        let e = find_agent(Some(other.as_os_str()), Some(&exe)).unwrap_err();
        assert!(matches!(e, RecordError::AgentMissing(_)));
        fs::write(&other, b"").unwrap();
        assert!(find_agent(Some(other.as_os_str()), Some(&exe)).is_ok());
    }

    #[test]
    fn preload_value() {
        let a = Path::new("/x/agent.so");
        assert_eq!(ld_preload(a, None), "/x/agent.so");
        assert_eq!(ld_preload(a, Some(OsStr::new(""))), "/x/agent.so");
        assert_eq!(
            ld_preload(a, Some(OsStr::new("/y.so"))),
            "/x/agent.so:/y.so"
        );
    }
}
