//! Hooks for a thread naming itself: `prctl(PR_SET_NAME)` and `pthread_setname_np` on the calling
//! thread. The name is recorded at once (a THREAD_NAME record, and the file's header), so that a
//! worker named after it started keeps its name even if the process is killed before the thread
//! exits cleanly. Renaming another thread is not recorded here: its own file holds its name at
//! its exit.
//!
//! `prctl` is variadic in C; it is defined with its four optional arguments as fixed ones, which
//! the x86_64 calling convention makes the same thing (glibc reads all four either way).

use libc::{c_char, c_int, c_ulong, pthread_t};

use super::enosys;
use crate::lifecycle::enter;
use crate::real;

/// Records the calling thread's new name, read from the caller's NUL-terminated string.
fn renamed(name: *const c_char) {
    if name.is_null() {
        return;
    }
    let Some(c) = enter() else { return };
    let mut buf = [0u8; 16];
    let mut n = 0;
    while n < buf.len() - 1 {
        // SAFETY: the call that just succeeded read this string up to its NUL (the kernel takes
        // at most 15 bytes of it), so these bytes are readable.
        let b = unsafe { *name.add(n) } as u8;
        if b == 0 {
            break;
        }
        buf[n] = b;
        n += 1;
    }
    c.renamed(&buf[..n]);
}

type PrctlFn = unsafe extern "C" fn(c_int, ...) -> c_int;

#[no_mangle]
pub unsafe extern "C" fn prctl(
    option: c_int,
    a2: c_ulong,
    a3: c_ulong,
    a4: c_ulong,
    a5: c_ulong,
) -> c_int {
    let Some(f) = real!(prctl: PrctlFn) else {
        return enosys();
    };
    // SAFETY: forwarding the caller's arguments, each in one integer register.
    let r = crate::hooks::sandbox::guard(option == libc::PR_SET_SECCOMP, || unsafe {
        f(option, a2, a3, a4, a5)
    });
    if r == 0 && option == libc::PR_SET_NAME {
        let _errno = crate::sys::ErrnoGuard::save();
        renamed(a2 as *const c_char);
    }
    r
}

#[no_mangle]
pub unsafe extern "C-unwind" fn pthread_setname_np(th: pthread_t, name: *const c_char) -> c_int {
    type F = unsafe extern "C-unwind" fn(pthread_t, *const c_char) -> c_int;
    let Some(f) = real!(pthread_setname_np: F) else {
        return libc::ENOSYS;
    };
    // SAFETY: forwarding the caller's arguments.
    let r = unsafe { f(th, name) };
    // SAFETY: pthread_self has no preconditions.
    if r == 0 && th == unsafe { libc::pthread_self() } {
        let _errno = crate::sys::ErrnoGuard::save();
        renamed(name);
    }
    r
}
