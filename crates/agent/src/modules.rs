//! Noticing module loads and unloads without interposing dlopen.
//!
//! Interposing `dlopen` would make every library look up its dependencies as if it were the
//! agent (glibc resolves `$ORIGIN`, RUNPATH and the namespace from dlopen's caller), so instead
//! the loader's add/remove counters from `dl_iterate_phdr` are compared at each thread start and
//! calibration point, and a fresh `/proc/self/maps` is recorded when they moved.

use core::sync::atomic::{AtomicU64, Ordering};

use scalpel_format::format::rec;
use scalpel_format::wire::Enc;

use crate::blob::Blob;
use crate::writer::File;

/// The loader's (adds, subs) when the module map was last recorded, packed; 0 = not yet read.
static SEEN: AtomicU64 = AtomicU64::new(0);

unsafe extern "C" fn counters(
    info: *mut libc::dl_phdr_info,
    _size: usize,
    out: *mut libc::c_void,
) -> libc::c_int {
    // SAFETY: dl_iterate_phdr passes a valid info and our `out` pointer to a u64.
    unsafe {
        let i = &*info;
        *(out as *mut u64) = ((i.dlpi_adds & 0xffff_ffff) << 32) | (i.dlpi_subs & 0xffff_ffff);
    }
    1 // the counters are global: the first module is enough
}

/// The loader's (adds, subs) counters, packed, with the top bit set.
pub(crate) fn current() -> u64 {
    let mut v: u64 = 0;
    // SAFETY: our callback only reads the info it is given and writes `v`.
    unsafe { libc::dl_iterate_phdr(Some(counters), &mut v as *mut u64 as *mut libc::c_void) };
    v | 1 << 63
}

/// Notes the loader's counters at process start (the process file holds that module map).
pub(crate) fn remember_start() {
    SEEN.store(current(), Ordering::Relaxed);
}

/// Records the module map into `file` if modules were loaded or unloaded since it was last
/// recorded by any thread.
pub(crate) fn check(file: &mut File, ticks: u64) {
    let now = current();
    let seen = SEEN.load(Ordering::Relaxed);
    if now == seen
        || SEEN
            .compare_exchange(seen, now, Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
    {
        return;
    }
    let mut blob = Blob::new();
    if blob.read_file(b"/proc/self/maps\0") {
        let mut head = [0u8; 10];
        let mut e = Enc::new(&mut head);
        e.varint(ticks);
        let n = e.len();
        file.record(rec::MAPS, &head[..n], blob.bytes());
    }
}
