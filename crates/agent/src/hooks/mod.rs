//! Every interposed libc entry point, grouped by family, and the helpers they share.
//!
//! A hook forwards to the real function in all cases. Around the call it reads the clock, takes
//! the object's sequence number (before the call for release-side operations, after it for
//! acquire-side ones) and emits one event. `errno` is saved and restored around our bookkeeping,
//! and our frames hold nothing that needs dropping across the real call, so a thread cancelled or
//! exiting inside it unwinds straight through (hooks use the `C-unwind` ABI for that reason).
//!
//! The exported functions carry no doc comments of their own: each is the libc function of the
//! same name, documented by its manual page, and each module's docs say what is recorded.

#![allow(
    missing_docs,
    reason = "the exported hooks are libc's functions, documented by their manual pages"
)]

pub mod exec;
pub mod fd;
pub mod io;
pub mod names;
pub mod open;
pub mod poll;
pub(crate) mod sandbox;
pub mod sigmask;
pub mod signal;
pub mod spawn;
pub mod storage;
pub mod sync;
pub mod thread;

use scalpel_format::format::Op;

use crate::event::{Ev, Obj};
use crate::lifecycle::enter;

/// errno after a failed call, as a negative number.
#[inline]
pub fn neg_errno() -> i64 {
    // SAFETY: this thread's errno slot.
    -i64::from(unsafe { *libc::__errno_location() })
}

/// A libc-style result: the value, or -errno when it is -1.
#[inline]
pub fn sys_result(r: i64) -> i64 {
    if r == -1 {
        neg_errno()
    } else {
        r
    }
}

/// A pthread-style result (error number returned) as 0 or -errno.
#[inline]
pub fn pthread_result(r: libc::c_int) -> i64 {
    -i64::from(r)
}

/// Sets errno and returns -1, for hooks whose real function does not exist.
pub fn enosys<T: From<i8>>() -> T {
    fail(libc::ENOSYS)
}

/// A failed call's result as libc gives it: -1, with `errno` set to `e`.
pub fn fail<T: From<i8>>(e: libc::c_int) -> T {
    // SAFETY: this thread's errno slot.
    unsafe { *libc::__errno_location() = e };
    T::from(-1)
}

/// A pthread-style operation that acquires `o` when it returns 0.
#[inline(always)]
pub fn pthread_acquire(op: Op, o: Obj<'_>, call: impl FnOnce() -> libc::c_int) -> libc::c_int {
    let Some(c) = enter() else { return call() };
    let t0 = c.now();
    let r = call();
    let t1 = c.now();
    let seq = (r == 0).then(|| c.seq(o.kind, o.key));
    c.emit(&Ev {
        obj: Some((o, seq)),
        result: Some(pthread_result(r)),
        ..Ev::new(op, t0, t1)
    });
    r
}

/// A pthread-style operation that releases or notifies `o`. These never block (an unlock, a
/// signal or a broadcast at most wakes a waiter), so one clock read stands for the call: its
/// duration is not worth a second one.
#[inline(always)]
pub fn pthread_release(op: Op, o: Obj<'_>, call: impl FnOnce() -> libc::c_int) -> libc::c_int {
    pthread_release_with(enter(), op, o, call)
}

/// [`pthread_release`] in the context `c` the caller entered with.
#[inline(always)]
pub(crate) fn pthread_release_with(
    c: Option<crate::tstate::Ctx>,
    op: Op,
    o: Obj<'_>,
    call: impl FnOnce() -> libc::c_int,
) -> libc::c_int {
    let Some(c) = c else { return call() };
    // A mutex unlock entered holding its lock back uses the number that lock reserved.
    let seq = c.unlock_seq(o.kind, o.key);
    let t0 = c.now();
    let r = call();
    release_event(&c, op, (o, seq), t0, r);
    r
}

/// Records a release of `o` with sequence number `seq` (taken before it), made at `t0` with
/// result `r` (pthread style).
#[inline(always)]
pub(crate) fn release_event(
    c: &crate::tstate::Ctx,
    op: Op,
    (o, seq): (Obj<'_>, u64),
    t0: u64,
    r: libc::c_int,
) {
    c.emit(&Ev {
        obj: Some((o, Some(seq))),
        result: Some(pthread_result(r)),
        ..Ev::new(op, t0, t0)
    });
}

/// A libc-style (−1 and errno) operation that acquires `o` when it succeeds.
#[inline(always)]
pub fn sys_acquire(op: Op, o: Obj<'_>, call: impl FnOnce() -> libc::c_int) -> libc::c_int {
    let Some(c) = enter() else { return call() };
    let t0 = c.now();
    let r = call();
    let t1 = c.now();
    let res = sys_result(i64::from(r));
    let seq = (r == 0).then(|| c.seq(o.kind, o.key));
    c.emit(&Ev {
        obj: Some((o, seq)),
        result: Some(res),
        ..Ev::new(op, t0, t1)
    });
    r
}
