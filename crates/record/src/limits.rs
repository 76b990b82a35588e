//! The command's resource limits as the recorder leaves them: the broker socket placed where
//! no descriptor number of the command's is taken, and the recorder's own file size limit
//! lifted for the files it writes, the command's put back before it starts. Both are set up
//! between fork and exec with async-signal-safe calls only.

use std::io;

use super::RecordError;

/// Where the command finds the broker socket: a number no descriptor the command inherits uses,
/// and above the command's soft descriptor limit when the hard limit leaves room, so that the
/// socket takes none of the numbers the command may open (`ulimit -n`, `F_DUPFD` at limit - 1).
/// Only when the two limits are equal does it take one, the highest free under the limit.
#[derive(Clone, Copy, Debug)]
pub(super) struct BrokerSlot {
    /// The descriptor number.
    pub(super) number: i32,
    /// The soft limit to lift to `number + 1` for the `dup2`, then put back, when the number is
    /// at or above it.
    soft: Option<libc::rlim_t>,
}

/// Numbers above the soft limit cost the command's descriptor table room (the kernel sizes it
/// to the highest number, and copies it at each fork): no higher than this.
const HIGHEST_SLOT: libc::rlim_t = 1 << 16;

/// Whether the command inherits descriptor `n` from this process (open and not close-on-exec).
fn inherited(n: i32) -> bool {
    // SAFETY: F_GETFD reads a flag and changes nothing.
    let flags = unsafe { libc::fcntl(n, libc::F_GETFD) };
    flags >= 0 && flags & libc::FD_CLOEXEC == 0
}

pub(super) fn broker_slot() -> BrokerSlot {
    let mut lim = libc::rlimit {
        rlim_cur: 1024,
        rlim_max: 1024,
    };
    // SAFETY: getrlimit writes the struct it is given.
    unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) };
    let (soft, hard) = (lim.rlim_cur, lim.rlim_max.min(HIGHEST_SLOT));
    let above = (soft..hard)
        .take(64)
        .filter_map(|n| i32::try_from(n).ok())
        .find(|&n| !inherited(n));
    if let Some(number) = above {
        return BrokerSlot {
            number,
            soft: Some(soft),
        };
    }
    let below = (3..soft.min(HIGHEST_SLOT))
        .rev()
        .filter_map(|n| i32::try_from(n).ok())
        .find(|&n| !inherited(n));
    BrokerSlot {
        number: below.unwrap_or(3),
        soft: None,
    }
}

/// Puts the broker socket `raw` at `slot` in the command's process (between fork and exec:
/// async-signal-safe calls only).
pub(super) fn place_broker(raw: i32, slot: BrokerSlot) -> io::Result<()> {
    let number = slot.number;
    // SAFETY: getrlimit, setrlimit, dup2 and fcntl are async-signal-safe, allocate nothing and
    // touch only this (child) process.
    unsafe {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        if let Some(soft) = slot.soft {
            libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim);
            lim.rlim_cur = number as libc::rlim_t + 1;
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) < 0 {
                return Err(io::Error::last_os_error());
            }
            lim.rlim_cur = soft;
        }
        let placed = if raw == number {
            // Already there: only close-on-exec must go.
            libc::fcntl(raw, libc::F_SETFD, 0)
        } else {
            libc::dup2(raw, number)
        };
        let err = (placed < 0).then(io::Error::last_os_error);
        if slot.soft.is_some() && libc::setrlimit(libc::RLIMIT_NOFILE, &lim) < 0 {
            return Err(io::Error::last_os_error());
        }
        err.map_or(Ok(()), Err)
    }
}

/// The file size limit (`RLIMIT_FSIZE`) the command is to get back, when the recorder lifted
/// its own: the recorder writes files (the shared table) larger than a small `ulimit -f`
/// allows, and past the limit the kernel kills the writer with SIGXFSZ. Only the soft limit can
/// be lifted; a hard limit below `needed` is refused with an error that says so.
pub(super) fn lift_file_size_limit(needed: u64) -> Result<Option<libc::rlimit>, RecordError> {
    let mut lim = libc::rlimit {
        rlim_cur: libc::RLIM_INFINITY,
        rlim_max: libc::RLIM_INFINITY,
    };
    // SAFETY: getrlimit writes the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_FSIZE, &mut lim) } != 0 || lim.rlim_cur >= needed {
        return Ok(None);
    }
    if lim.rlim_max < needed {
        return Err(RecordError::FileSizeLimit {
            limit: lim.rlim_max,
            needed,
        });
    }
    let lifted = libc::rlimit {
        rlim_cur: lim.rlim_max,
        rlim_max: lim.rlim_max,
    };
    // SAFETY: setrlimit reads the struct it is given; raising a soft limit up to the hard one
    // needs no privilege.
    if unsafe { libc::setrlimit(libc::RLIMIT_FSIZE, &lifted) } != 0 {
        return Err(RecordError::FileSizeLimit {
            limit: lim.rlim_cur,
            needed,
        });
    }
    Ok(Some(lim))
}

/// Puts back the command's own file size limit (between fork and exec).
pub(super) fn restore_file_size_limit(lim: Option<libc::rlimit>) -> io::Result<()> {
    let Some(lim) = lim else { return Ok(()) };
    // SAFETY: setrlimit is async-signal-safe and lowers this (child) process's soft limit.
    if unsafe { libc::setrlimit(libc::RLIMIT_FSIZE, &lim) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
