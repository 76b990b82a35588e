//! `record`: finds the agent, prepares the directory, runs the command under the agent.

use std::ffi::{OsStr, OsString};
use std::fs;
use std::path::{Path, PathBuf};

use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;

use scalpel_model::broker::ENV_BROKER;
use scalpel_model::format::{
    ENV_AGENT, ENV_CPU_TIME, ENV_DIR, ENV_LOCKS, ENV_SAMPLE, ENV_STACKS, HOST_FILE,
};
use scalpel_model::read::HostIdentity;

use crate::broker::BrokerReport;
use crate::child::Outcome;
use crate::options::{io_err, LockMode, RecordError, RecordOptions, AGENT_FILE};
use crate::tracedir::{prepare_dir, TraceRoot};
use crate::{broker, child, limits, table};

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
    write_host(&root).map_err(io_err(&dir, "write the host file"))?;
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

/// Says which machine the recording is made on ([`HOST_FILE`]): what merging the traces of
/// several machines needs to know first (which share a clock, which share addresses).
fn write_host(root: &OwnedFd) -> std::io::Result<()> {
    use std::io::Write;
    let fd = crate::made::create(root, HOST_FILE)?;
    let text = HostIdentity::of_this_machine().render();
    fs::File::from(fd).write_all(text.as_bytes())
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
