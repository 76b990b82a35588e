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
    flag(kind).is_some_and(|(off, bits)| word(p, off).is_some_and(|w| w & bits != 0))
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

/// glibc's mutex words that `SCALPEL_LOCKS=count` reads (layouts as for [`flag`]): the lock
/// word `__data.__lock` at offset 0 (0 free, 1 taken, 2 taken with waiters possible, for every
/// mutex type without the robust, priority or shared bits) and the type word `__data.__kind`
/// at 16, whose bits 16, 32, 64 and 128 are robust, priority inheritance, priority protection
/// and process-shared.
#[cfg(all(target_os = "linux", target_env = "gnu", target_pointer_width = "64"))]
mod mutex_words {
    pub(super) const LOCK: Option<usize> = Some(0);
    pub(super) const KIND: usize = 16;
    pub(super) const SPECIAL: u32 = 16 | 32 | 64 | 128;
}

#[cfg(not(all(target_os = "linux", target_env = "gnu", target_pointer_width = "64")))]
mod mutex_words {
    pub(super) const LOCK: Option<usize> = None;
    pub(super) const KIND: usize = 16;
    pub(super) const SPECIAL: u32 = !0;
}

/// The 32-bit word at byte `off` of the object at `p`, None when null or not aligned.
#[inline]
fn word<T>(p: *const T, off: usize) -> Option<u32> {
    let at = (p as usize).wrapping_add(off);
    if p.is_null() || !at.is_multiple_of(4) {
        return None;
    }
    // SAFETY: `p` is the object the program is passing to the libc call being hooked, so it is
    // live and at least as large as its type (every offset used here is inside it), and the
    // word is aligned. glibc changes these words only with atomics (the flag bits never after
    // initialisation); a relaxed atomic load reads them without tearing.
    Some(unsafe { AtomicU32::from_ptr(at as *mut u32) }.load(Ordering::Relaxed))
}

/// Whether a mutex may be counted rather than recorded: a private mutex of one of the four
/// plain types (normal, recursive, error-checking, adaptive), whose lock word says whether
/// anyone waits.
#[inline]
pub(crate) fn mutex_countable(m: *const libc::pthread_mutex_t) -> bool {
    mutex_words::LOCK.is_some()
        && word(m, mutex_words::KIND).is_some_and(|k| k & mutex_words::SPECIAL == 0)
}

/// Whether a countable mutex that this thread holds has a waiter (or had one that has not yet
/// taken it): its lock word is 2. Read just before the unlock, so a thread that starts waiting
/// after this read is not seen (see `tstate::counted`).
#[inline]
pub(crate) fn mutex_has_waiters(m: *const libc::pthread_mutex_t) -> bool {
    mutex_words::LOCK.is_some_and(|off| word(m, off).is_some_and(|w| w > 1))
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
