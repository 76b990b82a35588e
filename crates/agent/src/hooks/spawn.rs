//! `posix_spawn` file actions that close the broker socket in the child: glibc runs them inside
//! its own clone, where no hook of ours sees the `close_range`, so the program the child execs
//! starts without the recorder and records nothing. It is counted instead: the file actions
//! whose `closefrom` reaches the socket's number are remembered, and a spawn made with them
//! tells the recorder its child is unrecorded (`RequestKind::Unrecorded`).

use core::sync::atomic::{AtomicUsize, Ordering};

use libc::{c_int, posix_spawn_file_actions_t};
use scalpel_format::broker::{Request, RequestKind};

use crate::{agentfd, broker, real};

/// File actions objects (by address) that close the broker socket; 0 is a free slot.
static CLOSING: [AtomicUsize; 32] = [const { AtomicUsize::new(0) }; 32];

fn remember(fa: usize) {
    for slot in &CLOSING {
        if slot
            .compare_exchange(0, fa, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            return;
        }
    }
}

fn forget(fa: usize) {
    for slot in &CLOSING {
        let _ = slot.compare_exchange(fa, 0, Ordering::AcqRel, Ordering::Relaxed);
    }
}

fn closes_broker(fa: usize) -> bool {
    fa != 0 && CLOSING.iter().any(|s| s.load(Ordering::Acquire) == fa)
}

/// After a `posix_spawn` with file actions `fa` that returned `r` and wrote the child's id to
/// `pid`: a child that lost the broker socket is counted.
pub(super) fn spawned(fa: *const posix_spawn_file_actions_t, r: c_int, pid: *mut libc::pid_t) {
    if r != 0 || pid.is_null() || !closes_broker(fa as usize) {
        return;
    }
    // SAFETY: on success posix_spawn stored the child's id where `pid` points.
    let child = unsafe { *pid };
    broker::tell(&Request {
        kind: RequestKind::Unrecorded,
        pid: child as u32,
        a: 0,
        b: 0,
    });
}

#[no_mangle]
pub unsafe extern "C" fn posix_spawn_file_actions_addclosefrom_np(
    fa: *mut posix_spawn_file_actions_t,
    from: c_int,
) -> c_int {
    type F = unsafe extern "C" fn(*mut posix_spawn_file_actions_t, c_int) -> c_int;
    let Some(f) = real!(posix_spawn_file_actions_addclosefrom_np: F) else {
        return libc::ENOSYS;
    };
    // SAFETY: forwarding the caller's arguments.
    let r = unsafe { f(fa, from) };
    let mut ours = [0i32; 4];
    let n = agentfd::list(&mut ours);
    if r == 0 && ours[..n].iter().any(|&fd| fd >= from) {
        remember(fa as usize);
    }
    r
}

#[no_mangle]
pub unsafe extern "C" fn posix_spawn_file_actions_destroy(
    fa: *mut posix_spawn_file_actions_t,
) -> c_int {
    type F = unsafe extern "C" fn(*mut posix_spawn_file_actions_t) -> c_int;
    let Some(f) = real!(posix_spawn_file_actions_destroy: F) else {
        return libc::ENOSYS;
    };
    forget(fa as usize);
    // SAFETY: forwarding the caller's argument.
    unsafe { f(fa) }
}
