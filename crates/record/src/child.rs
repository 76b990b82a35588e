//! Running the recorded command: spawn errors as a shell reports them, signal forwarding while
//! waiting, and the command's exit status.

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::Command;
use std::sync::atomic::{AtomicI32, Ordering};

/// How the command ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// It exited with this code.
    Exited(i32),
    /// A signal killed it.
    Signaled(i32),
}

impl Outcome {
    /// The exit status to pass on: the code, or 128 + the signal number as shells do.
    pub fn exit_code(self) -> u8 {
        match self {
            Outcome::Exited(c) => (c & 0xff) as u8,
            Outcome::Signaled(s) => (128 + (s & 0x7f)) as u8,
        }
    }
}

/// The command could not be started.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    /// No such file, or not found in `PATH`.
    #[error("cannot run `{}`: command not found", .0.to_string_lossy())]
    NotFound(OsString),
    /// Found but not executable (permission, a directory, not a binary or script).
    #[error("cannot run `{}`: not executable: {source}", cmd.to_string_lossy())]
    NotExecutable {
        /// The command.
        cmd: OsString,
        /// The error.
        #[source]
        source: io::Error,
    },
    /// Any other failure to start it, or to wait for it.
    #[error("cannot run `{}`: {source}", cmd.to_string_lossy())]
    Other {
        /// The command.
        cmd: OsString,
        /// The error.
        #[source]
        source: io::Error,
    },
}

/// Fails like a spawn would when `cmd` cannot be found or executed (searching `PATH` for a bare
/// name), so the caller can stop before touching anything.
pub(super) fn check_runnable(cmd: &OsStr) -> Result<(), SpawnError> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::PermissionsExt;
    let runnable = |p: &std::path::Path| -> Result<(), SpawnError> {
        match std::fs::metadata(p) {
            Ok(m) if m.is_file() && m.permissions().mode() & 0o111 != 0 => Ok(()),
            Ok(_) => Err(SpawnError::NotExecutable {
                cmd: cmd.to_os_string(),
                source: io::Error::from(io::ErrorKind::PermissionDenied),
            }),
            Err(_) => Err(SpawnError::NotFound(cmd.to_os_string())),
        }
    };
    if cmd.as_bytes().contains(&b'/') {
        return runnable(std::path::Path::new(cmd));
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    let mut last = SpawnError::NotFound(cmd.to_os_string());
    for dir in std::env::split_paths(&path) {
        match runnable(&dir.join(cmd)) {
            Ok(()) => return Ok(()),
            Err(e @ SpawnError::NotExecutable { .. }) => last = e,
            Err(_) => {}
        }
    }
    Err(last)
}

impl SpawnError {
    /// 127 for not found, 126 for not executable, 1 otherwise (as a shell).
    pub fn exit_code(&self) -> u8 {
        match self {
            SpawnError::NotFound(_) => 127,
            SpawnError::NotExecutable { .. } => 126,
            SpawnError::Other { .. } => 1,
        }
    }

    fn new(cmd: &OsStr, source: io::Error) -> Self {
        let cmd = cmd.to_os_string();
        match source.kind() {
            io::ErrorKind::NotFound => SpawnError::NotFound(cmd),
            io::ErrorKind::PermissionDenied => SpawnError::NotExecutable { cmd, source },
            _ if source.raw_os_error() == Some(libc::ENOEXEC) => {
                SpawnError::NotExecutable { cmd, source }
            }
            _ => SpawnError::Other { cmd, source },
        }
    }
}

/// The child to forward signals to (0: none).
static CHILD: AtomicI32 = AtomicI32::new(0);

extern "C" fn forward(sig: libc::c_int) {
    let pid = CHILD.load(Ordering::SeqCst);
    if pid > 0 {
        // SAFETY: kill is async-signal-safe and takes plain integers.
        unsafe { libc::kill(pid, sig) };
    }
}

/// Signal dispositions changed while waiting, restored on drop.
struct Dispositions(Vec<(libc::c_int, libc::sigaction)>);

impl Dispositions {
    /// SIGINT and SIGQUIT come from the terminal, which delivers them to the whole foreground
    /// process group, the command included: `scalpel` ignores them so that it outlives the
    /// command and prints the summary. SIGTERM and SIGHUP are usually sent to `scalpel` alone:
    /// they are forwarded to the command.
    fn install() -> Self {
        let mut saved = Vec::new();
        let handlers: [(libc::c_int, libc::sighandler_t); 4] = [
            (libc::SIGINT, libc::SIG_IGN),
            (libc::SIGQUIT, libc::SIG_IGN),
            (
                libc::SIGTERM,
                forward as extern "C" fn(libc::c_int) as libc::sighandler_t,
            ),
            (
                libc::SIGHUP,
                forward as extern "C" fn(libc::c_int) as libc::sighandler_t,
            ),
        ];
        for (sig, handler) in handlers {
            // SAFETY: zeroed sigaction is a valid "default, empty mask" value; the handler is
            // async-signal-safe; the old action is written into a local.
            unsafe {
                let mut new: libc::sigaction = std::mem::zeroed();
                new.sa_sigaction = handler;
                new.sa_flags = libc::SA_RESTART;
                libc::sigemptyset(&mut new.sa_mask);
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(sig, &new, &mut old) == 0 {
                    saved.push((sig, old));
                }
            }
        }
        Dispositions(saved)
    }
}

impl Drop for Dispositions {
    fn drop(&mut self) {
        for (sig, old) in &self.0 {
            // SAFETY: restores an action previously returned by sigaction.
            unsafe { libc::sigaction(*sig, old, std::ptr::null_mut()) };
        }
        CHILD.store(0, Ordering::SeqCst);
    }
}

/// Blocks (or unblocks) the signals [`Dispositions`] changes, in this thread.
fn block(how: libc::c_int) {
    // SAFETY: the set is initialized by sigemptyset before use.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for sig in [libc::SIGINT, libc::SIGQUIT, libc::SIGTERM, libc::SIGHUP] {
            libc::sigaddset(&mut set, sig);
        }
        libc::pthread_sigmask(how, &set, std::ptr::null_mut());
    }
}

/// Starts `command` (named `name` in errors) and waits for it, forwarding signals meanwhile.
pub(super) fn run(mut command: Command, name: &OsStr) -> Result<Outcome, SpawnError> {
    // The command starts with our dispositions (the default ones): signals ignored here would
    // stay ignored in it across exec, so they are changed only after the spawn. Until then they
    // are blocked here, so that none is missed in between, and unblocked in the child (the
    // standard library does not reset the mask).
    block(libc::SIG_BLOCK);
    // SAFETY: the hook only calls async-signal-safe functions (sigemptyset, sigaddset,
    // pthread_sigmask) and does not allocate.
    unsafe {
        command.pre_exec(|| {
            block(libc::SIG_UNBLOCK);
            Ok(())
        });
    }
    let spawned = command.spawn();
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => {
            block(libc::SIG_UNBLOCK);
            return Err(SpawnError::new(name, e));
        }
    };
    CHILD.store(child.id() as i32, Ordering::SeqCst);
    let guard = Dispositions::install();
    block(libc::SIG_UNBLOCK);
    let status = child.wait();
    drop(guard);
    let status = status.map_err(|source| SpawnError::Other {
        cmd: name.to_os_string(),
        source,
    })?;
    Ok(match (status.code(), status.signal()) {
        (Some(c), _) => Outcome::Exited(c),
        (None, Some(s)) => Outcome::Signaled(s),
        (None, None) => Outcome::Exited(1),
    })
}

/// A signal's name (`SIGTERM`), or `signal N`.
pub fn signal_name(sig: i32) -> String {
    let names = [
        "SIGHUP", "SIGINT", "SIGQUIT", "SIGILL", "SIGTRAP", "SIGABRT", "SIGBUS", "SIGFPE",
        "SIGKILL", "SIGUSR1", "SIGSEGV", "SIGUSR2", "SIGPIPE", "SIGALRM", "SIGTERM",
    ];
    usize::try_from(sig - 1)
        .ok()
        .and_then(|i| names.get(i))
        .map_or_else(|| format!("signal {sig}"), |n| n.to_string())
}
