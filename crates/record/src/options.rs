//! What `record` is given, and how it fails.

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};

use scalpel_model::format::ENV_AGENT;

use crate::child;
use crate::stackopts::StackOptions;

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

pub(crate) fn io_err(path: &Path, action: &'static str) -> impl FnOnce(io::Error) -> RecordError {
    let path = path.to_path_buf();
    move |source| RecordError::Io {
        path,
        action,
        source,
    }
}
