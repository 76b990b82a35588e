//! Hooks that create, connect, duplicate and close descriptors, keeping the descriptor table
//! current and recording where connections meet.

use libc::{c_int, c_long, c_uint, sockaddr, socklen_t};
use scalpel_format::format::{ChanKind, Op};

use super::{enosys, sys_result};
use crate::event::Ev;
use crate::lifecycle::enter;
use crate::{channel, fdtab, real, sock};

fn accept_common(op: Op, fd: c_int, call: impl FnOnce() -> c_int) -> c_int {
    let Some(c) = enter() else { return call() };
    let t0 = c.now();
    let r = call();
    let t1 = c.now();
    let res = sys_result(i64::from(r));
    let mut ev = Ev {
        result: Some(res),
        fd: Some(fd),
        ..Ev::new(op, t0, t1)
    };
    let ep = if r >= 0 {
        ev.aux = fdtab::get_as(c.cfg, r, channel::Role::Server).map(|i| i.chan_key);
        sock::accept_endpoint(r)
    } else {
        None
    };
    ev.obj = ep
        .as_ref()
        .map(|e| (e.obj(), Some(c.seq(e.obj().kind, e.obj().key))));
    c.emit(&ev);
    r
}

#[no_mangle]
pub unsafe extern "C-unwind" fn accept(fd: c_int, a: *mut sockaddr, l: *mut socklen_t) -> c_int {
    type F = unsafe extern "C-unwind" fn(c_int, *mut sockaddr, *mut socklen_t) -> c_int;
    let Some(f) = real!(accept: F) else {
        return enosys();
    };
    // SAFETY: forwarding the caller's arguments.
    accept_common(Op::Accept, fd, || unsafe { f(fd, a, l) })
}

#[no_mangle]
pub unsafe extern "C-unwind" fn accept4(
    fd: c_int,
    a: *mut sockaddr,
    l: *mut socklen_t,
    fl: c_int,
) -> c_int {
    type F = unsafe extern "C-unwind" fn(c_int, *mut sockaddr, *mut socklen_t, c_int) -> c_int;
    let Some(f) = real!(accept4: F) else {
        return enosys();
    };
    // SAFETY: forwarding the caller's arguments.
    accept_common(Op::Accept4, fd, || unsafe { f(fd, a, l, fl) })
}

#[no_mangle]
pub unsafe extern "C-unwind" fn connect(fd: c_int, a: *const sockaddr, l: socklen_t) -> c_int {
    type F = unsafe extern "C-unwind" fn(c_int, *const sockaddr, socklen_t) -> c_int;
    let Some(f) = real!(connect: F) else {
        return enosys();
    };
    // SAFETY: forwarding the caller's arguments.
    let call = || unsafe { f(fd, a, l) };
    let Some(c) = enter() else { return call() };
    let ep = sock::connect_endpoint(a, l);
    let seq = ep.as_ref().map(|e| c.seq(e.obj().kind, e.obj().key));
    let t0 = c.now();
    let r = call();
    let t1 = c.now();
    let res = sys_result(i64::from(r));
    // A non-blocking connect completes later (EINPROGRESS); its identity is resolved at first use.
    let aux = if r == 0 {
        fdtab::get_as(c.cfg, fd, channel::Role::Client).map(|i| i.chan_key)
    } else {
        fdtab::forget(fd);
        None
    };
    let obj = ep.as_ref().map(|e| (e.obj(), seq));
    c.emit(&Ev {
        obj,
        result: Some(res),
        fd: Some(fd),
        aux,
        ..Ev::new(Op::Connect, t0, t1)
    });
    r
}

// Newer compilers check a definition of a symbol their standard library calls (`close`,
// `read`, `write`) against the declaration it uses: `extern "C"`. This hook is `C-unwind` on
// purpose (a thread cancelled inside the call unwinds through it; see the module docs of
// `hooks`), which changes only what an unwind may do, not how the call is made.
// `unknown_lints`: compilers older than that check do not know its name.
#[allow(unknown_lints, invalid_runtime_symbol_definitions)]
#[no_mangle]
pub unsafe extern "C-unwind" fn close(fd: c_int) -> c_int {
    type F = unsafe extern "C-unwind" fn(c_int) -> c_int;
    let Some(f) = real!(close: F) else {
        return enosys();
    };
    // SAFETY: forwarding the caller's argument.
    close_with(fd, || c_long::from(unsafe { f(fd) })) as c_int
}

/// A close made by `call` (the wrapper, or `syscall(SYS_close)`), recorded. The agent's own
/// descriptors stay open: a host closing every descriptor it does not know about (daemons do)
/// would otherwise cut the trace, or later have its own files written to. The host is told what
/// it would be told untraced, where that number holds nothing of its own: EBADF.
pub(super) fn close_with(fd: c_int, call: impl FnOnce() -> c_long) -> c_long {
    if crate::agentfd::is_agent(fd) {
        return super::fail(libc::EBADF);
    }
    let Some(c) = enter() else {
        let r = call();
        fdtab::forget(fd);
        return r;
    };
    // Only a cached description: closing is no reason to look a descriptor up.
    let aux = fdtab::cached(fd).map(|i| i.chan_key).filter(|&k| k != 0);
    let t0 = c.now();
    let r = call();
    let t1 = c.now();
    // Forgotten after the real close, so no other thread can describe the old file again.
    fdtab::forget(fd);
    let res = sys_result(r);
    c.emit(&Ev {
        result: Some(res),
        fd: Some(fd),
        aux,
        ..Ev::new(Op::Close, t0, t1)
    });
    r
}

pub(super) fn dup_common(
    op: Op,
    old: c_int,
    new: Option<c_int>,
    call: impl FnOnce() -> c_int,
) -> c_int {
    let Some(c) = enter() else {
        return super::open::fresh(call());
    };
    let t0 = c.now();
    let r = call();
    let t1 = c.now();
    let res = sys_result(i64::from(r));
    if r >= 0 && r != old {
        fdtab::forget(r);
        fdtab::copy(c.cfg, old, r);
    }
    c.emit(&Ev {
        result: Some(res),
        fd: Some(old),
        aux: new.map(|n| n as u64),
        ..Ev::new(op, t0, t1)
    });
    r
}

#[no_mangle]
pub unsafe extern "C-unwind" fn dup(old: c_int) -> c_int {
    type F = unsafe extern "C-unwind" fn(c_int) -> c_int;
    let Some(f) = real!(dup: F) else {
        return enosys();
    };
    // SAFETY: forwarding the caller's argument.
    dup_common(Op::Dup, old, None, || unsafe { f(old) })
}

#[no_mangle]
pub unsafe extern "C-unwind" fn dup2(old: c_int, new: c_int) -> c_int {
    type F = unsafe extern "C-unwind" fn(c_int, c_int) -> c_int;
    let Some(f) = real!(dup2: F) else {
        return enosys();
    };
    crate::broker::make_way(new);
    // SAFETY: forwarding the caller's arguments.
    dup_common(Op::Dup2, old, Some(new), || unsafe { f(old, new) })
}

#[no_mangle]
pub unsafe extern "C-unwind" fn dup3(old: c_int, new: c_int, fl: c_int) -> c_int {
    type F = unsafe extern "C-unwind" fn(c_int, c_int, c_int) -> c_int;
    let Some(f) = real!(dup3: F) else {
        return enosys();
    };
    crate::broker::make_way(new);
    // SAFETY: forwarding the caller's arguments.
    dup_common(Op::Dup3, old, Some(new), || unsafe { f(old, new, fl) })
}

/// Pipe and socketpair: two new descriptors.
fn pair_common(op: Op, fds: *mut c_int, aux2: Option<u64>, call: impl FnOnce() -> c_int) -> c_int {
    let Some(c) = enter() else { return call() };
    let t0 = c.now();
    let r = call();
    let t1 = c.now();
    let res = sys_result(i64::from(r));
    let mut ev = Ev {
        result: Some(res),
        aux2,
        ..Ev::new(op, t0, t1)
    };
    if r == 0 {
        // SAFETY: on success the call wrote two descriptors into the caller's array.
        let (a, b) = unsafe { (*fds, *fds.add(1)) };
        fdtab::forget(a);
        fdtab::forget(b);
        ev.fd = Some(a);
        ev.aux = Some(b as u64);
    }
    c.emit(&ev);
    r
}

#[no_mangle]
pub unsafe extern "C-unwind" fn pipe(fds: *mut c_int) -> c_int {
    type F = unsafe extern "C-unwind" fn(*mut c_int) -> c_int;
    let Some(f) = real!(pipe: F) else {
        return enosys();
    };
    // SAFETY: forwarding the caller's argument.
    pair_common(Op::Pipe, fds, None, || unsafe { f(fds) })
}

#[no_mangle]
pub unsafe extern "C-unwind" fn pipe2(fds: *mut c_int, fl: c_int) -> c_int {
    type F = unsafe extern "C-unwind" fn(*mut c_int, c_int) -> c_int;
    let Some(f) = real!(pipe2: F) else {
        return enosys();
    };
    // SAFETY: forwarding the caller's arguments.
    pair_common(Op::Pipe2, fds, None, || unsafe { f(fds, fl) })
}

#[no_mangle]
pub unsafe extern "C-unwind" fn socketpair(d: c_int, t: c_int, p: c_int, fds: *mut c_int) -> c_int {
    type F = unsafe extern "C-unwind" fn(c_int, c_int, c_int, *mut c_int) -> c_int;
    let Some(f) = real!(socketpair: F) else {
        return enosys();
    };
    // SAFETY: forwarding the caller's arguments.
    pair_common(Op::Socketpair, fds, Some(d as u64), || unsafe {
        f(d, t, p, fds)
    })
}

/// A call creating one descriptor.
fn create_common(
    op: Op,
    local: Option<ChanKind>,
    aux: Option<u64>,
    aux2: Option<u64>,
    call: impl FnOnce() -> c_int,
) -> c_int {
    let Some(c) = enter() else {
        return super::open::fresh(call());
    };
    let t0 = c.now();
    let r = call();
    let t1 = c.now();
    let res = sys_result(i64::from(r));
    if r >= 0 {
        match local {
            Some(kind) => fdtab::set_local(c.cfg, r, kind),
            None => fdtab::forget(r),
        }
    }
    c.emit(&Ev {
        result: Some(res),
        aux,
        aux2,
        ..Ev::new(op, t0, t1)
    });
    r
}

#[no_mangle]
pub unsafe extern "C-unwind" fn eventfd(v: c_uint, fl: c_int) -> c_int {
    type F = unsafe extern "C-unwind" fn(c_uint, c_int) -> c_int;
    let Some(f) = real!(eventfd: F) else {
        return enosys();
    };
    // SAFETY: forwarding the caller's arguments.
    create_common(
        Op::Eventfd,
        Some(ChanKind::Eventfd),
        Some(u64::from(v)),
        None,
        || unsafe { f(v, fl) },
    )
}

#[no_mangle]
pub unsafe extern "C-unwind" fn socket(d: c_int, t: c_int, p: c_int) -> c_int {
    type F = unsafe extern "C-unwind" fn(c_int, c_int, c_int) -> c_int;
    let Some(f) = real!(socket: F) else {
        return enosys();
    };
    // SAFETY: forwarding the caller's arguments.
    create_common(
        Op::Socket,
        None,
        Some(d as u64),
        Some(t as u64),
        || unsafe { f(d, t, p) },
    )
}

#[no_mangle]
pub unsafe extern "C-unwind" fn epoll_create(size: c_int) -> c_int {
    type F = unsafe extern "C-unwind" fn(c_int) -> c_int;
    let Some(f) = real!(epoll_create: F) else {
        return enosys();
    };
    // SAFETY: forwarding the caller's argument.
    create_common(
        Op::EpollCreate,
        Some(ChanKind::Other),
        None,
        None,
        || unsafe { f(size) },
    )
}

#[no_mangle]
pub unsafe extern "C-unwind" fn epoll_create1(fl: c_int) -> c_int {
    type F = unsafe extern "C-unwind" fn(c_int) -> c_int;
    let Some(f) = real!(epoll_create1: F) else {
        return enosys();
    };
    // SAFETY: forwarding the caller's argument.
    create_common(
        Op::EpollCreate,
        Some(ChanKind::Other),
        None,
        None,
        || unsafe { f(fl) },
    )
}
