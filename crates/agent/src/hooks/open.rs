//! Keeping the descriptor table honest: calls that create or close descriptors without moving
//! synchronization data (open, creat, fcntl duplication, close_range, closefrom) record no event
//! but update what the agent believes each descriptor number refers to. `close_range` and
//! `closefrom` also step around the agent's own descriptors.
//!
//! `open`, `openat` and `fcntl` are variadic in C; they are defined here with their optional
//! argument as a fixed one, which the x86_64 calling convention makes the same thing.

use libc::{c_char, c_int, c_uint};

use super::enosys;
use crate::{agentfd, fdtab, global, real};

type OpenFn = unsafe extern "C" fn(*const c_char, c_int, ...) -> c_int;
type OpenatFn = unsafe extern "C" fn(c_int, *const c_char, c_int, ...) -> c_int;
type Open2Fn = unsafe extern "C-unwind" fn(*const c_char, c_int) -> c_int;
type Openat2Fn = unsafe extern "C-unwind" fn(c_int, *const c_char, c_int) -> c_int;
type CreatFn = unsafe extern "C-unwind" fn(*const c_char, libc::mode_t) -> c_int;
type FcntlFn = unsafe extern "C" fn(c_int, c_int, ...) -> c_int;

/// A new descriptor replaces whatever its number described before.
#[inline]
pub(crate) fn fresh(fd: c_int) -> c_int {
    if fd >= 0 {
        fdtab::forget(fd);
    }
    fd
}

// Newer compilers check a definition of a symbol their standard library calls (`open`)
// against the declaration it uses, variadic. Stable Rust cannot define a variadic function;
// a fixed third argument is where the Linux x86-64 and AArch64 calling conventions put a
// variadic `int` (registers, the count of vector registers in `al` unread), so the hook reads
// the mode the caller passed. `unknown_lints`: older compilers do not know the check's name.
macro_rules! open_hook {
    ($name:ident) => {
        #[allow(unknown_lints, invalid_runtime_symbol_definitions)]
        #[no_mangle]
        pub unsafe extern "C" fn $name(path: *const c_char, flags: c_int, mode: c_uint) -> c_int {
            let Some(f) = real!($name: OpenFn) else { return enosys() };
            // SAFETY: forwarding the caller's arguments; the mode is read by open only when
            // the flags ask for it, as with the variadic original.
            fresh(unsafe { f(path, flags, mode) })
        }
    };
}
open_hook!(open);
open_hook!(open64);

macro_rules! openat_hook {
    ($name:ident) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(dir: c_int, path: *const c_char, flags: c_int, mode: c_uint) -> c_int {
            let Some(f) = real!($name: OpenatFn) else { return enosys() };
            // SAFETY: as for open.
            fresh(unsafe { f(dir, path, flags, mode) })
        }
    };
}
openat_hook!(openat);
openat_hook!(openat64);

macro_rules! fixed_hook {
    ($name:ident, $ty:ty, ($($a:ident : $t:ty),*)) => {
        #[no_mangle]
        pub unsafe extern "C-unwind" fn $name($($a: $t),*) -> c_int {
            let Some(f) = real!($name: $ty) else { return enosys() };
            // SAFETY: forwarding the caller's arguments.
            fresh(unsafe { f($($a),*) })
        }
    };
}
fixed_hook!(__open_2, Open2Fn, (path: *const c_char, flags: c_int));
fixed_hook!(__open64_2, Open2Fn, (path: *const c_char, flags: c_int));
fixed_hook!(__openat_2, Openat2Fn, (dir: c_int, path: *const c_char, flags: c_int));
fixed_hook!(__openat64_2, Openat2Fn, (dir: c_int, path: *const c_char, flags: c_int));
fixed_hook!(creat, CreatFn, (path: *const c_char, mode: libc::mode_t));
fixed_hook!(creat64, CreatFn, (path: *const c_char, mode: libc::mode_t));

macro_rules! fcntl_hook {
    ($name:ident) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(fd: c_int, cmd: c_int, arg: usize) -> c_int {
            let Some(f) = real!($name: FcntlFn) else { return enosys() };
            // The broker socket's number holds nothing of the host's: answered as untraced, and
            // the socket keeps its flags (a host marking every descriptor close-on-exec would
            // leave its exec'd children without the recorder, unrecorded and uncounted).
            if agentfd::is_agent(fd) {
                return super::fail(libc::EBADF);
            }
            // SAFETY: forwarding the caller's arguments; every fcntl argument is passed in one
            // integer register, whether it is an int or a pointer.
            let r = unsafe { f(fd, cmd, arg) };
            if r >= 0 && (cmd == libc::F_DUPFD || cmd == libc::F_DUPFD_CLOEXEC) {
                fdtab::forget(r);
                if let Some(cfg) = global::config_if_ready() {
                    fdtab::copy(cfg, fd, r);
                }
            }
            r
        }
    };
}
fcntl_hook!(fcntl);
fcntl_hook!(fcntl64);

/// Closes (or marks close-on-exec) `first..=last` except the agent's own descriptors, each
/// sub-range through `call` (the wrapper, or `syscall(SYS_close_range)`).
pub(super) fn close_range_around_agent(
    first: c_uint,
    last: c_uint,
    flags: c_int,
    call: impl Fn(c_uint, c_uint, c_int) -> c_int,
) -> c_int {
    // An empty or reversed range is the kernel's to refuse (EINVAL), as it would untraced.
    if first > last {
        return call(first, last, flags);
    }
    let mut ours = [0i32; 64];
    let n = agentfd::list(&mut ours);
    ours[..n].sort_unstable();
    let mut lo = first;
    let mut r = 0;
    for &fd in &ours[..n] {
        let fd = fd as c_uint;
        if fd < lo || fd > last {
            continue;
        }
        if fd > lo {
            r = call(lo, fd - 1, flags);
            if r != 0 {
                return r;
            }
        }
        lo = fd + 1;
    }
    if lo <= last {
        r = call(lo, last, flags);
    }
    if r == 0 && flags & libc::CLOSE_RANGE_CLOEXEC as c_int == 0 {
        fdtab::forget_range(first, last);
    }
    r
}

fn real_close_range(first: c_uint, last: c_uint, flags: c_int) -> c_int {
    match real!(close_range: unsafe extern "C-unwind" fn(c_uint, c_uint, c_int) -> c_int) {
        // SAFETY: a plain forward of a sub-range of the caller's.
        Some(f) => unsafe { f(first, last, flags) },
        None => enosys(),
    }
}

#[no_mangle]
pub unsafe extern "C-unwind" fn close_range(first: c_uint, last: c_uint, flags: c_int) -> c_int {
    close_range_around_agent(first, last, flags, real_close_range)
}

#[no_mangle]
pub unsafe extern "C-unwind" fn closefrom(first: c_int) {
    close_range_around_agent(first.max(0) as c_uint, c_uint::MAX, 0, real_close_range);
}
