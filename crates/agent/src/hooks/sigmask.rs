//! Hooks that keep the sampling signal out of the host's sight (see `sampler`): `sigaction` and
//! `signal` on it read and write the host's own action, masks never block it, and the calls that
//! wait for signals never take it. With sampling off every call passes straight through; none of
//! these is recorded.

use libc::{c_int, siginfo_t, sigset_t, timespec};

use super::enosys;
use crate::real;
use crate::sampler;

/// `set` without our signal, in `out`; the pointer to pass on (null stays null).
fn without_ours(set: *const sigset_t, out: &mut sigset_t) -> *const sigset_t {
    let Some(sig) = sampler::signal() else {
        return set;
    };
    if set.is_null() {
        return set;
    }
    // SAFETY: the caller's set is a valid sigset_t.
    *out = unsafe { *set };
    // SAFETY: `out` is a valid set and `sig` a valid signal number.
    unsafe { libc::sigdelset(out, sig) };
    out
}

/// The set a mask change passes on: unblocking is left alone, blocking or setting never covers
/// our signal.
fn mask_set(how: c_int, set: *const sigset_t, mine: &mut sigset_t) -> *const sigset_t {
    if how == libc::SIG_UNBLOCK {
        set
    } else {
        without_ours(set, mine)
    }
}

#[no_mangle]
pub unsafe extern "C-unwind" fn sigaction(
    sig: c_int,
    act: *const libc::sigaction,
    old: *mut libc::sigaction,
) -> c_int {
    if sampler::signal() != Some(sig) {
        return sampler::real_sigaction(sig, act, old);
    }
    // Our handler stays; the host's action is kept for the deliveries that are not ours.
    if !old.is_null() {
        // SAFETY: the caller's output slot.
        sampler::host_action(unsafe { &mut *old });
    }
    if !act.is_null() {
        // SAFETY: the caller's action.
        sampler::set_host_action(unsafe { &*act });
    }
    0
}

#[no_mangle]
pub unsafe extern "C-unwind" fn signal(sig: c_int, h: libc::sighandler_t) -> libc::sighandler_t {
    type F = unsafe extern "C-unwind" fn(c_int, libc::sighandler_t) -> libc::sighandler_t;
    if sampler::signal() != Some(sig) {
        return match real!(signal: F) {
            // SAFETY: forwarding the caller's arguments.
            Some(f) => unsafe { f(sig, h) },
            None => enosys::<i8>() as libc::sighandler_t,
        };
    }
    // glibc's `signal` has BSD semantics: restarting, not reset, the signal blocked in its handler.
    // SAFETY: zeroed is a valid empty sigaction.
    let mut act: libc::sigaction = unsafe { core::mem::zeroed() };
    act.sa_sigaction = h;
    act.sa_flags = libc::SA_RESTART;
    // SAFETY: valid set and signal.
    unsafe { libc::sigaddset(&mut act.sa_mask, sig) };
    // SAFETY: as above.
    let mut old: libc::sigaction = unsafe { core::mem::zeroed() };
    sampler::host_action(&mut old);
    sampler::set_host_action(&act);
    old.sa_sigaction
}

#[no_mangle]
pub unsafe extern "C-unwind" fn sigprocmask(
    how: c_int,
    set: *const sigset_t,
    old: *mut sigset_t,
) -> c_int {
    type F = unsafe extern "C-unwind" fn(c_int, *const sigset_t, *mut sigset_t) -> c_int;
    let Some(f) = real!(sigprocmask: F) else {
        return enosys();
    };
    // SAFETY: zeroed is a valid sigset.
    let mut mine: sigset_t = unsafe { core::mem::zeroed() };
    let set = mask_set(how, set, &mut mine);
    // SAFETY: forwarding the caller's arguments, the set possibly replaced by our copy.
    unsafe { f(how, set, old) }
}

#[no_mangle]
pub unsafe extern "C-unwind" fn pthread_sigmask(
    how: c_int,
    set: *const sigset_t,
    old: *mut sigset_t,
) -> c_int {
    type F = unsafe extern "C-unwind" fn(c_int, *const sigset_t, *mut sigset_t) -> c_int;
    let Some(f) = real!(pthread_sigmask: F) else {
        return libc::ENOSYS;
    };
    // SAFETY: zeroed is a valid sigset.
    let mut mine: sigset_t = unsafe { core::mem::zeroed() };
    let set = mask_set(how, set, &mut mine);
    // SAFETY: as in `sigprocmask`.
    unsafe { f(how, set, old) }
}

#[no_mangle]
pub unsafe extern "C-unwind" fn sigwait(set: *const sigset_t, sig: *mut c_int) -> c_int {
    type F = unsafe extern "C-unwind" fn(*const sigset_t, *mut c_int) -> c_int;
    let Some(f) = real!(sigwait: F) else {
        return libc::ENOSYS;
    };
    // SAFETY: zeroed is a valid sigset.
    let mut mine: sigset_t = unsafe { core::mem::zeroed() };
    // SAFETY: forwarding, with our signal left out of the set.
    unsafe { f(without_ours(set, &mut mine), sig) }
}

#[no_mangle]
pub unsafe extern "C-unwind" fn sigwaitinfo(set: *const sigset_t, info: *mut siginfo_t) -> c_int {
    type F = unsafe extern "C-unwind" fn(*const sigset_t, *mut siginfo_t) -> c_int;
    let Some(f) = real!(sigwaitinfo: F) else {
        return enosys();
    };
    // SAFETY: zeroed is a valid sigset.
    let mut mine: sigset_t = unsafe { core::mem::zeroed() };
    // SAFETY: as in `sigwait`.
    unsafe { f(without_ours(set, &mut mine), info) }
}

#[no_mangle]
pub unsafe extern "C-unwind" fn sigtimedwait(
    set: *const sigset_t,
    info: *mut siginfo_t,
    timeout: *const timespec,
) -> c_int {
    type F = unsafe extern "C-unwind" fn(*const sigset_t, *mut siginfo_t, *const timespec) -> c_int;
    let Some(f) = real!(sigtimedwait: F) else {
        return enosys();
    };
    // SAFETY: zeroed is a valid sigset.
    let mut mine: sigset_t = unsafe { core::mem::zeroed() };
    // SAFETY: as in `sigwait`.
    unsafe { f(without_ours(set, &mut mine), info, timeout) }
}

#[no_mangle]
pub unsafe extern "C-unwind" fn signalfd(fd: c_int, mask: *const sigset_t, flags: c_int) -> c_int {
    type F = unsafe extern "C-unwind" fn(c_int, *const sigset_t, c_int) -> c_int;
    let Some(f) = real!(signalfd: F) else {
        return enosys();
    };
    // SAFETY: zeroed is a valid sigset.
    let mut mine: sigset_t = unsafe { core::mem::zeroed() };
    // SAFETY: as in `sigwait`.
    unsafe { f(fd, without_ours(mask, &mut mine), flags) }
}
