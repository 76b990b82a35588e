//! Hooks for the calls that send a signal: `kill`, `tgkill`, `pthread_kill`, `sigqueue` and
//! `raise`. A signal wakes its target out of a blocking call (EINTR, a `signalfd` that epoll
//! reports, a handler's self-pipe write): PostgreSQL's latches are woken this way, so each send
//! is recorded, as its target and signal number, *before* the call, so that a signal that ends
//! the sender itself is still recorded.

use libc::{c_int, pid_t, pthread_t, sigval};
use scalpel_format::format::Op;

use super::enosys;
use crate::event::Ev;
use crate::lifecycle::enter;
use crate::real;

/// Records a send to `target` (its meaning per operation) of signal `sig`.
#[inline(always)]
fn sent(op: Op, target: u64, sig: c_int) {
    if let Some(c) = enter() {
        let t = c.now();
        c.emit(&Ev {
            aux: Some(target),
            aux2: Some(sig as u32 as u64),
            ..Ev::new(op, t, t)
        });
    }
}

#[no_mangle]
pub unsafe extern "C-unwind" fn kill(pid: pid_t, sig: c_int) -> c_int {
    type F = unsafe extern "C-unwind" fn(pid_t, c_int) -> c_int;
    let Some(f) = real!(kill: F) else {
        return enosys();
    };
    // A process group (negative pid) is recorded as the two's complement; readers skip it.
    sent(Op::Kill, pid as u32 as u64, sig);
    // SAFETY: forwarding the caller's arguments.
    unsafe { f(pid, sig) }
}

#[no_mangle]
pub unsafe extern "C-unwind" fn tgkill(tgid: pid_t, tid: pid_t, sig: c_int) -> c_int {
    type F = unsafe extern "C-unwind" fn(pid_t, pid_t, c_int) -> c_int;
    let Some(f) = real!(tgkill: F) else {
        return enosys();
    };
    sent(Op::Tgkill, tid as u32 as u64, sig);
    // SAFETY: forwarding the caller's arguments.
    unsafe { f(tgid, tid, sig) }
}

#[no_mangle]
pub unsafe extern "C-unwind" fn pthread_kill(th: pthread_t, sig: c_int) -> c_int {
    type F = unsafe extern "C-unwind" fn(pthread_t, c_int) -> c_int;
    let Some(f) = real!(pthread_kill: F) else {
        return libc::ENOSYS;
    };
    sent(Op::PthreadKill, th, sig);
    // SAFETY: forwarding the caller's arguments.
    unsafe { f(th, sig) }
}

#[no_mangle]
pub unsafe extern "C-unwind" fn sigqueue(pid: pid_t, sig: c_int, val: sigval) -> c_int {
    type F = unsafe extern "C-unwind" fn(pid_t, c_int, sigval) -> c_int;
    let Some(f) = real!(sigqueue: F) else {
        return enosys();
    };
    sent(Op::Sigqueue, pid as u32 as u64, sig);
    // SAFETY: forwarding the caller's arguments.
    unsafe { f(pid, sig, val) }
}

#[no_mangle]
pub unsafe extern "C-unwind" fn raise(sig: c_int) -> c_int {
    type F = unsafe extern "C-unwind" fn(c_int) -> c_int;
    let Some(f) = real!(raise: F) else {
        return enosys();
    };
    sent(Op::Raise, 0, sig);
    // SAFETY: forwarding the caller's argument.
    unsafe { f(sig) }
}
