//! Hooks for readiness waits: epoll, poll and select, with their fortified `_chk` forms, and
//! `epoll_ctl`.
//!
//! A wait that returned descriptors ready for input also writes what it reported (a READY
//! record): for epoll the user data of each event, which the `epoll_ctl` events map back to
//! descriptors; for poll and select the key of each ready descriptor's incoming stream. That is
//! how a write nobody reads (an eventfd that edge-triggered epoll reports and nginx never reads)
//! still reaches the thread it woke. The list is bounded (`ready::MAX_LISTED`); the rest is
//! counted.

use libc::{c_int, epoll_event, fd_set, nfds_t, pollfd, sigset_t, timespec, timeval};
use scalpel_format::format::{ready, ObjKind, Op};

use super::{enosys, sys_result};
use crate::event::{Ev, Obj, Ready};
use crate::lifecycle::enter;
use crate::{fdtab, real};

/// Events that mean "readable now": input, urgent data, or the peer's hang-up or error.
const EPOLL_INPUT: u32 =
    (libc::EPOLLIN | libc::EPOLLPRI | libc::EPOLLRDHUP | libc::EPOLLHUP | libc::EPOLLERR) as u32;
/// The same for poll.
const POLL_INPUT: i16 =
    libc::POLLIN | libc::POLLPRI | libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR;

/// Records a wait; `ready` reads what the call reported, given its result, after it returned.
fn wait_common(
    op: Op,
    epfd: Option<c_int>,
    aux: u64,
    call: impl FnOnce() -> c_int,
    ready: impl FnOnce(&crate::global::Config, c_int) -> Option<Ready>,
) -> c_int {
    let Some(c) = enter() else { return call() };
    let t0 = c.now();
    let r = call();
    let t1 = c.now();
    let _errno = crate::sys::ErrnoGuard::save();
    let res = sys_result(i64::from(r));
    let key = epfd
        .and_then(|fd| fdtab::get(c.cfg, fd))
        .map(|i| i.chan_key)
        .filter(|&k| k != 0);
    let o = key.map(|k| (Obj::key(ObjKind::Epoll, k), None));
    let list = if r > 0 { ready(c.cfg, r) } else { None };
    c.emit(&Ev {
        obj: o,
        result: Some(res),
        fd: epfd,
        aux: Some(aux),
        ready: list.as_ref(),
        ..Ev::new(op, t0, t1)
    });
    r
}

/// The user data of the first `n` events that report input readiness.
fn epoll_ready(ev: *const epoll_event, n: c_int) -> Option<Ready> {
    let mut list = Ready::new(ready::EPOLL_DATA);
    for i in 0..n.max(0) as usize {
        // SAFETY: the kernel filled the first `n` entries of the caller's array; the struct is
        // packed on some targets, so it is read unaligned.
        let e = unsafe { core::ptr::read_unaligned(ev.add(i)) };
        if e.events & EPOLL_INPUT != 0 {
            list.push(e.u64);
        }
    }
    Some(list)
}

/// The incoming stream keys of the descriptors in `fds[..n]` that report input readiness.
fn poll_ready(
    cfg: &crate::global::Config,
    fds: *const pollfd,
    n: nfds_t,
    r: c_int,
) -> Option<Ready> {
    let mut list = Ready::new(ready::STREAM_KEYS);
    let mut left = r;
    for i in 0..n as usize {
        if left <= 0 {
            break;
        }
        // SAFETY: the caller's array holds `n` entries, which the kernel just updated.
        let p = unsafe { *fds.add(i) };
        if p.revents != 0 {
            left -= 1;
        }
        if p.revents & POLL_INPUT != 0 && p.fd >= 0 {
            if let Some(k) = fdtab::get(cfg, p.fd).and_then(|i| i.rx()).map(|o| o.key) {
                list.push(k);
            }
        }
    }
    Some(list)
}

/// The incoming stream keys of the descriptors `select` left set in `rd` (below `n`).
fn select_ready(cfg: &crate::global::Config, n: c_int, rd: *const fd_set) -> Option<Ready> {
    if rd.is_null() {
        return None;
    }
    let mut list = Ready::new(ready::STREAM_KEYS);
    for fd in 0..n.clamp(0, libc::FD_SETSIZE as c_int) {
        // SAFETY: `rd` is the caller's set, which covers FD_SETSIZE descriptors.
        if unsafe { libc::FD_ISSET(fd, rd) } {
            if let Some(k) = fdtab::get(cfg, fd).and_then(|i| i.rx()).map(|o| o.key) {
                list.push(k);
            }
        }
    }
    Some(list)
}

/// Records a successful `epoll_ctl` ADD or MOD: which descriptor the user data stands for.
#[no_mangle]
pub unsafe extern "C-unwind" fn epoll_ctl(
    ep: c_int,
    op: c_int,
    fd: c_int,
    event: *mut epoll_event,
) -> c_int {
    type F = unsafe extern "C-unwind" fn(c_int, c_int, c_int, *mut epoll_event) -> c_int;
    let Some(f) = real!(epoll_ctl: F) else {
        return enosys();
    };
    // SAFETY: forwarding the caller's arguments.
    let r = unsafe { f(ep, op, fd, event) };
    if r != 0 || !(op == libc::EPOLL_CTL_ADD || op == libc::EPOLL_CTL_MOD) || event.is_null() {
        return r;
    }
    let Some(c) = enter() else { return r };
    let _errno = crate::sys::ErrnoGuard::save();
    let t = c.now();
    // SAFETY: the call succeeded, so `event` pointed at a readable epoll_event.
    let data = unsafe { core::ptr::read_unaligned(event) }.u64;
    let Some(key) = fdtab::get(c.cfg, ep)
        .map(|i| i.chan_key)
        .filter(|&k| k != 0)
    else {
        return r;
    };
    let target = fdtab::get(c.cfg, fd).and_then(|i| i.rx());
    c.emit(&Ev {
        obj: target.map(|o| (o, None)),
        result: Some(0),
        fd: Some(fd),
        aux: Some(key),
        aux2: Some(data),
        ..Ev::new(Op::EpollCtl, t, t)
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
    wait_common(
        Op::EpollWait,
        Some(ep),
        to as u64,
        || unsafe { f(ep, ev, n, to) },
        |_, r| epoll_ready(ev, r),
    )
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
    wait_common(
        Op::EpollPwait,
        Some(ep),
        to as u64,
        || unsafe { f(ep, ev, n, to, ss) },
        |_, r| epoll_ready(ev, r),
    )
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
    wait_common(
        Op::EpollPwait2,
        Some(ep),
        0,
        || unsafe { f(ep, ev, n, to, ss) },
        |_, r| epoll_ready(ev, r),
    )
}

#[no_mangle]
pub unsafe extern "C-unwind" fn poll(fds: *mut pollfd, n: nfds_t, to: c_int) -> c_int {
    type F = unsafe extern "C-unwind" fn(*mut pollfd, nfds_t, c_int) -> c_int;
    let Some(f) = real!(poll: F) else {
        return enosys();
    };
    // SAFETY: forwarding the caller's arguments.
    wait_common(
        Op::Poll,
        None,
        n,
        || unsafe { f(fds, n, to) },
        |cfg, r| poll_ready(cfg, fds, n, r),
    )
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
    wait_common(
        Op::Poll,
        None,
        n,
        || unsafe { f(fds, n, to, len) },
        |cfg, r| poll_ready(cfg, fds, n, r),
    )
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
    wait_common(
        Op::Ppoll,
        None,
        n,
        || unsafe { f(fds, n, to, ss) },
        |cfg, r| poll_ready(cfg, fds, n, r),
    )
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
    wait_common(
        Op::Ppoll,
        None,
        n,
        || unsafe { f(fds, n, to, ss, len) },
        |cfg, r| poll_ready(cfg, fds, n, r),
    )
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
    wait_common(
        Op::Select,
        None,
        n as u64,
        || unsafe { f(n, r, w, e, to) },
        |cfg, _| select_ready(cfg, n, r),
    )
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
    wait_common(
        Op::Pselect,
        None,
        n as u64,
        || unsafe { f(n, r, w, e, to, ss) },
        |cfg, _| select_ready(cfg, n, r),
    )
}
