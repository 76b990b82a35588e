//! The agent's one long-lived descriptor, the broker socket: shielded from the host's `close`,
//! `close_range` and `closefrom`, inherited by children and kept across exec, because every
//! process of the recording asks `scalpel record` for its files on it. Thread files hold no
//! descriptor at all (they are mapped, and asked for again when a window moves on).

use core::sync::atomic::{AtomicI32, Ordering};

/// The broker socket (-1: none).
static BROKER: AtomicI32 = AtomicI32::new(-1);

/// Shields the broker socket from the host's `close` (the agent never closes it).
pub(crate) fn keep_broker(fd: i32) {
    BROKER.store(fd, Ordering::Release);
}

/// The agent's descriptors, to leave out of a range the host closes: into `out`, returning how
/// many (at most `out.len()`).
pub(crate) fn list(out: &mut [i32]) -> usize {
    let broker = BROKER.load(Ordering::Relaxed);
    if broker >= 0 && !out.is_empty() {
        out[0] = broker;
        1
    } else {
        0
    }
}

/// Whether `fd` is one of the agent's.
#[inline]
pub(crate) fn is_agent(fd: i32) -> bool {
    fd >= 0 && fd == BROKER.load(Ordering::Relaxed)
}
