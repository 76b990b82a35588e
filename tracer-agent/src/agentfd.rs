//! The agent's own file descriptors: kept out of the host's way (moved high, close-on-exec),
//! shielded from the host's `close`, and closed in fork children, which must not keep the
//! parent's trace files open.

use core::sync::atomic::{AtomicI32, Ordering};

use crate::sys;

const SLOTS: usize = 512;
#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: AtomicI32 = AtomicI32::new(-1);
static FDS: [AtomicI32; SLOTS] = [EMPTY; SLOTS];
/// The lowest descriptor the agent has held, so `is_agent` is one comparison for host fds.
static LOWEST: AtomicI32 = AtomicI32::new(i32::MAX);

/// Moves `fd` to a high number with close-on-exec set and records it as the agent's. Returns the
/// new descriptor (or `fd` itself when it cannot be moved).
pub(crate) fn adopt(fd: i32) -> i32 {
    let mut lim = [0u64; 2];
    let base = if sys::sys(
        libc::SYS_getrlimit,
        libc::RLIMIT_NOFILE as usize,
        lim.as_mut_ptr() as usize,
        0,
    ) == 0
    {
        // Stay clear of the numbers programs use, and of a limit they may lower a little.
        lim[0].saturating_sub(256).clamp(3, i32::MAX as u64) as usize
    } else {
        3
    };
    let moved = sys::sys(
        libc::SYS_fcntl,
        fd as usize,
        libc::F_DUPFD_CLOEXEC as usize,
        base,
    );
    let fd = if moved >= 0 {
        sys::close(fd);
        moved as i32
    } else {
        fd
    };
    if let Some(slot) = FDS.iter().find(|s| {
        s.compare_exchange(-1, fd, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    }) {
        let _ = slot;
        LOWEST.fetch_min(fd, Ordering::AcqRel);
    }
    fd
}

/// Forgets and closes one of the agent's descriptors.
pub(crate) fn release(fd: i32) {
    for s in FDS.iter() {
        if s.compare_exchange(fd, -1, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            break;
        }
    }
    sys::close(fd);
}

/// Copies the agent's descriptors into `out`; returns how many (at most `out.len()`).
pub(crate) fn list(out: &mut [i32]) -> usize {
    let mut n = 0;
    for s in FDS.iter() {
        let fd = s.load(Ordering::Relaxed);
        if fd >= 0 && n < out.len() {
            out[n] = fd;
            n += 1;
        }
    }
    n
}

/// Whether `fd` is one of the agent's.
#[inline]
pub(crate) fn is_agent(fd: i32) -> bool {
    fd >= LOWEST.load(Ordering::Relaxed) && FDS.iter().any(|s| s.load(Ordering::Relaxed) == fd)
}

/// In a fork child: closes every descriptor the parent's agent held (trace files of the parent's
/// threads), so the child neither leaks them nor writes through them.
pub(crate) fn close_inherited() {
    for s in FDS.iter() {
        let fd = s.swap(-1, Ordering::AcqRel);
        if fd >= 0 {
            sys::close(fd);
        }
    }
}
