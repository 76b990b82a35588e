//! Whether a pthread object or semaphore is process-shared, read where glibc keeps the flag.
//!
//! Objects are named by address, and processes forked from one parent have their private
//! objects at the same addresses: without this mark, a cond signalled in one Apache child and a
//! cond waited on in its sibling would look like one object. Only objects declared shared get an
//! identity byte ([`scalpel_format::format::SHARED_IDENTITY`]); readers take every other object
//! of these kinds as its own process's.

use core::sync::atomic::{AtomicU32, Ordering};

use scalpel_format::format::{ObjKind, SHARED_IDENTITY};

use crate::event::Obj;

static SHARED: [u8; 1] = [SHARED_IDENTITY];

/// Where glibc keeps a kind's process-shared flag: the byte offset of a 32-bit word and the bits
/// that are set when shared. These are the layouts of glibc 2.25 and later on 64-bit Linux
/// (x86_64 and aarch64 alike), checked against `pthread_*attr_setpshared` and `sem_init`. Static
/// initializers are all zeros there, so they read as private, which they are.
#[cfg(all(target_os = "linux", target_env = "gnu", target_pointer_width = "64"))]
fn flag(kind: ObjKind) -> Option<(usize, u32)> {
    match kind {
        // `__data.__kind`: PTHREAD_MUTEX_PSHARED_BIT.
        ObjKind::Mutex => Some((16, 0x80)),
        // `__data.__wrefs`: bit 0 (the rest counts waiters).
        ObjKind::Cond => Some((36, 1)),
        // `__data.__shared`: non-zero.
        ObjKind::Rwlock => Some((28, !0)),
        // `private`: the futex flag word, FUTEX_PRIVATE_FLAG when shared (glibc's LLL_SHARED).
        ObjKind::Sem => Some((8, 0x80)),
        _ => None,
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu", target_pointer_width = "64")))]
fn flag(_kind: ObjKind) -> Option<(usize, u32)> {
    None
}

/// Whether the object of `kind` at `p` was initialised process-shared.
fn is_shared<T>(kind: ObjKind, p: *const T) -> bool {
    let Some((off, bits)) = flag(kind) else {
        return false;
    };
    let at = (p as usize).wrapping_add(off);
    if p.is_null() || at % 4 != 0 {
        return false;
    }
    // SAFETY: `p` is the object the program is passing to the libc call being hooked, so it is
    // live and at least as large as its type (every offset above is inside it), and the word is
    // aligned. glibc changes these words only with atomics, and the flag bits never change after
    // initialisation; a relaxed atomic load reads them without tearing.
    let word = unsafe { AtomicU32::from_ptr(at as *mut u32) }.load(Ordering::Relaxed);
    word & bits != 0
}

/// The object of `kind` at `p`, carrying the shared identity when glibc marked it shared.
#[inline]
pub(crate) fn sync_obj<T>(kind: ObjKind, p: *const T) -> Obj<'static> {
    let o = Obj::addr(kind, p);
    if is_shared(kind, p) {
        Obj {
            ident: &SHARED,
            ..o
        }
    } else {
        o
    }
}

/// The futex word at `addr`: shared unless the call said `FUTEX_PRIVATE_FLAG`.
#[inline]
pub(crate) fn futex_obj(addr: u64, private: bool) -> Obj<'static> {
    let o = Obj::key(ObjKind::Futex, addr);
    if private {
        o
    } else {
        Obj {
            ident: &SHARED,
            ..o
        }
    }
}
