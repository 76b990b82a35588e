//! Hooks for the calls that wait for storage: `fsync`, `fdatasync`, `sync_file_range`, `msync`,
//! `syncfs` and `sync`. Each is one event with its duration and call stack, so a commit path that
//! waits for the disk shows the wait as I/O instead of running time.
//!
//! `io_uring_enter` is not here: liburing makes it as a raw system call, which no library
//! interposition sees, and its completions arrive through shared memory rather than a call.

use libc::{c_int, c_uint, c_void, off64_t, size_t};
use scalpel_format::format::Op;

use super::{enosys, sys_result};
use crate::event::Ev;
use crate::lifecycle::enter;
use crate::real;

/// Records a storage wait on `fd` (if any) with `aux`.
#[inline(always)]
fn storage(op: Op, fd: Option<c_int>, aux: Option<u64>, call: impl FnOnce() -> c_int) -> c_int {
    let Some(c) = enter() else { return call() };
    let t0 = c.now();
    let r = call();
    let t1 = c.now();
    c.emit(&Ev {
        result: Some(sys_result(i64::from(r))),
        fd,
        aux,
        ..Ev::new(op, t0, t1)
    });
    r
}

#[no_mangle]
pub unsafe extern "C-unwind" fn fsync(fd: c_int) -> c_int {
    type F = unsafe extern "C-unwind" fn(c_int) -> c_int;
    let Some(f) = real!(fsync: F) else {
        return enosys();
    };
    // SAFETY: forwarding the caller's argument.
    storage(Op::Fsync, Some(fd), None, || unsafe { f(fd) })
}

#[no_mangle]
pub unsafe extern "C-unwind" fn fdatasync(fd: c_int) -> c_int {
    type F = unsafe extern "C-unwind" fn(c_int) -> c_int;
    let Some(f) = real!(fdatasync: F) else {
        return enosys();
    };
    // SAFETY: forwarding the caller's argument.
    storage(Op::Fdatasync, Some(fd), None, || unsafe { f(fd) })
}

#[no_mangle]
pub unsafe extern "C-unwind" fn sync_file_range(
    fd: c_int,
    off: off64_t,
    n: off64_t,
    flags: c_uint,
) -> c_int {
    type F = unsafe extern "C-unwind" fn(c_int, off64_t, off64_t, c_uint) -> c_int;
    let Some(f) = real!(sync_file_range: F) else {
        return enosys();
    };
    // SAFETY: forwarding the caller's arguments.
    storage(
        Op::SyncFileRange,
        Some(fd),
        Some(u64::from(flags)),
        || unsafe { f(fd, off, n, flags) },
    )
}

#[no_mangle]
pub unsafe extern "C-unwind" fn msync(addr: *mut c_void, len: size_t, flags: c_int) -> c_int {
    type F = unsafe extern "C-unwind" fn(*mut c_void, size_t, c_int) -> c_int;
    let Some(f) = real!(msync: F) else {
        return enosys();
    };
    // SAFETY: forwarding the caller's arguments.
    storage(Op::Msync, None, Some(flags as u32 as u64), || unsafe {
        f(addr, len, flags)
    })
}

#[no_mangle]
pub unsafe extern "C-unwind" fn syncfs(fd: c_int) -> c_int {
    type F = unsafe extern "C-unwind" fn(c_int) -> c_int;
    let Some(f) = real!(syncfs: F) else {
        return enosys();
    };
    // SAFETY: forwarding the caller's argument.
    storage(Op::Syncfs, Some(fd), None, || unsafe { f(fd) })
}

#[no_mangle]
pub unsafe extern "C-unwind" fn sync() {
    type F = unsafe extern "C-unwind" fn();
    let Some(f) = real!(sync: F) else {
        return;
    };
    storage(Op::Sync, None, None, || {
        // SAFETY: sync takes no arguments.
        unsafe { f() };
        0
    });
}
