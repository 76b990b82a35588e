//! Hooks for readiness waits: epoll, poll and select, with their fortified `_chk` forms.

use libc::{c_int, epoll_event, fd_set, nfds_t, pollfd, sigset_t, timespec, timeval};
use scalpel_format::format::{ObjKind, Op};

use super::{enosys, sys_result};
use crate::event::{Ev, Obj};
use crate::lifecycle::enter;
use crate::{fdtab, real};

fn wait_common(op: Op, epfd: Option<c_int>, aux: u64, call: impl FnOnce() -> c_int) -> c_int {
    let Some(c) = enter() else { return call() };
    let t0 = c.now();
    let r = call();
    let t1 = c.now();
    let res = sys_result(i64::from(r));
    let key = epfd
        .and_then(|fd| fdtab::get(c.cfg, fd))
        .map(|i| i.chan_key)
        .filter(|&k| k != 0);
    let o = key.map(|k| (Obj::key(ObjKind::Epoll, k), None));
    c.emit(&Ev {
        obj: o,
        result: Some(res),
        fd: epfd,
        aux: Some(aux),
        ..Ev::new(op, t0, t1)
    });
    r
}

#[no_mangle]
pub unsafe extern "C-unwind" fn epoll_wait(
    ep: c_int,
    ev: *mut epoll_event,
    n: c_int,
    to: c_int,
) -> c_int {
    type F = unsafe extern "C-unwind" fn(c_int, *mut epoll_event, c_int, c_int) -> c_int;
    let Some(f) = real!(epoll_wait: F) else {
        return enosys();
    };
    // SAFETY: forwarding the caller's arguments.
    wait_common(Op::EpollWait, Some(ep), to as u64, || unsafe {
        f(ep, ev, n, to)
    })
}

#[no_mangle]
pub unsafe extern "C-unwind" fn epoll_pwait(
    ep: c_int,
    ev: *mut epoll_event,
    n: c_int,
    to: c_int,
    ss: *const sigset_t,
) -> c_int {
    type F = unsafe extern "C-unwind" fn(
        c_int,
        *mut epoll_event,
        c_int,
        c_int,
        *const sigset_t,
    ) -> c_int;
    let Some(f) = real!(epoll_pwait: F) else {
        return enosys();
    };
    // SAFETY: forwarding the caller's arguments.
    wait_common(Op::EpollPwait, Some(ep), to as u64, || unsafe {
        f(ep, ev, n, to, ss)
    })
}

#[no_mangle]
pub unsafe extern "C-unwind" fn epoll_pwait2(
    ep: c_int,
    ev: *mut epoll_event,
    n: c_int,
    to: *const timespec,
    ss: *const sigset_t,
) -> c_int {
    type F = unsafe extern "C-unwind" fn(
        c_int,
        *mut epoll_event,
        c_int,
        *const timespec,
        *const sigset_t,
    ) -> c_int;
    let Some(f) = real!(epoll_pwait2: F) else {
        return enosys();
    };
    // SAFETY: forwarding the caller's arguments.
    wait_common(Op::EpollPwait2, Some(ep), 0, || unsafe {
        f(ep, ev, n, to, ss)
    })
}

#[no_mangle]
pub unsafe extern "C-unwind" fn poll(fds: *mut pollfd, n: nfds_t, to: c_int) -> c_int {
    type F = unsafe extern "C-unwind" fn(*mut pollfd, nfds_t, c_int) -> c_int;
    let Some(f) = real!(poll: F) else {
        return enosys();
    };
    // SAFETY: forwarding the caller's arguments.
    wait_common(Op::Poll, None, n, || unsafe { f(fds, n, to) })
}

#[no_mangle]
pub unsafe extern "C-unwind" fn __poll_chk(
    fds: *mut pollfd,
    n: nfds_t,
    to: c_int,
    len: libc::size_t,
) -> c_int {
    type F = unsafe extern "C-unwind" fn(*mut pollfd, nfds_t, c_int, libc::size_t) -> c_int;
    let Some(f) = real!(__poll_chk: F) else {
        return enosys();
    };
    // SAFETY: forwarding the caller's arguments.
    wait_common(Op::Poll, None, n, || unsafe { f(fds, n, to, len) })
}

#[no_mangle]
pub unsafe extern "C-unwind" fn ppoll(
    fds: *mut pollfd,
    n: nfds_t,
    to: *const timespec,
    ss: *const sigset_t,
) -> c_int {
    type F =
        unsafe extern "C-unwind" fn(*mut pollfd, nfds_t, *const timespec, *const sigset_t) -> c_int;
    let Some(f) = real!(ppoll: F) else {
        return enosys();
    };
    // SAFETY: forwarding the caller's arguments.
    wait_common(Op::Ppoll, None, n, || unsafe { f(fds, n, to, ss) })
}

#[no_mangle]
pub unsafe extern "C-unwind" fn __ppoll_chk(
    fds: *mut pollfd,
    n: nfds_t,
    to: *const timespec,
    ss: *const sigset_t,
    len: libc::size_t,
) -> c_int {
    type F = unsafe extern "C-unwind" fn(
        *mut pollfd,
        nfds_t,
        *const timespec,
        *const sigset_t,
        libc::size_t,
    ) -> c_int;
    let Some(f) = real!(__ppoll_chk: F) else {
        return enosys();
    };
    // SAFETY: forwarding the caller's arguments.
    wait_common(Op::Ppoll, None, n, || unsafe { f(fds, n, to, ss, len) })
}

#[no_mangle]
pub unsafe extern "C-unwind" fn select(
    n: c_int,
    r: *mut fd_set,
    w: *mut fd_set,
    e: *mut fd_set,
    to: *mut timeval,
) -> c_int {
    type F = unsafe extern "C-unwind" fn(
        c_int,
        *mut fd_set,
        *mut fd_set,
        *mut fd_set,
        *mut timeval,
    ) -> c_int;
    let Some(f) = real!(select: F) else {
        return enosys();
    };
    // SAFETY: forwarding the caller's arguments.
    wait_common(Op::Select, None, n as u64, || unsafe { f(n, r, w, e, to) })
}

#[no_mangle]
pub unsafe extern "C-unwind" fn pselect(
    n: c_int,
    r: *mut fd_set,
    w: *mut fd_set,
    e: *mut fd_set,
    to: *const timespec,
    ss: *const sigset_t,
) -> c_int {
    type F = unsafe extern "C-unwind" fn(
        c_int,
        *mut fd_set,
        *mut fd_set,
        *mut fd_set,
        *const timespec,
        *const sigset_t,
    ) -> c_int;
    let Some(f) = real!(pselect: F) else {
        return enosys();
    };
    // SAFETY: forwarding the caller's arguments.
    wait_common(Op::Pselect, None, n as u64, || unsafe {
        f(n, r, w, e, to, ss)
    })
}
