//! The agent's own memory allocator: raw mmap, never malloc.
//!
//! Why: the unwinder (framehop) allocates its module table and its per-thread rule cache, and the
//! agent runs inside hooks that may be reached from within the host's malloc, from a fork child
//! whose malloc locks are held by a vanished thread, or from a signal handler. Going to the kernel
//! directly keeps every one of those cases safe.
//!
//! Small blocks (up to [`SMALL`] bytes) come from a lock-free bump arena and are never returned:
//! they are only allocated when the module list changes (a few kilobytes per dlopen or dlclose).
//! Larger blocks, such as each thread's unwind cache, get their own mapping and are unmapped when
//! freed, so thread churn does not grow the process.

use core::alloc::{GlobalAlloc, Layout};
use core::ptr::null_mut;
use core::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

use crate::sys;

/// Blocks up to this size (and alignment up to 16) are bump-allocated.
const SMALL: usize = 2048;
/// Size of one arena chunk.
const CHUNK: usize = 1 << 20;
const PAGE: usize = 4096;

/// One arena chunk: its bump cursor lives in its first 16 bytes.
#[repr(C, align(16))]
struct Chunk {
    used: AtomicUsize,
}

/// The mmap-backed allocator installed as the agent's global allocator.
pub(crate) struct Arena;

static CURRENT: AtomicPtr<Chunk> = AtomicPtr::new(null_mut());

fn page_round(n: usize) -> usize {
    (n + PAGE - 1) & !(PAGE - 1)
}

fn is_big(l: &Layout) -> bool {
    l.size() > SMALL || l.align() > 16
}

fn new_chunk() -> *mut Chunk {
    match sys::mmap_anon(CHUNK) {
        Some(p) => {
            let c = p as *mut Chunk;
            // SAFETY: a fresh, zeroed, writable mapping large and aligned enough for a Chunk.
            unsafe {
                c.write(Chunk {
                    used: AtomicUsize::new(16),
                })
            };
            c
        }
        None => null_mut(),
    }
}

fn bump(size: usize) -> *mut u8 {
    let size = (size.max(1) + 15) & !15;
    loop {
        let mut c = CURRENT.load(Ordering::Acquire);
        if c.is_null() {
            let fresh = new_chunk();
            if fresh.is_null() {
                return null_mut();
            }
            match CURRENT.compare_exchange(c, fresh, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => c = fresh,
                Err(_) => {
                    sys::munmap(fresh.cast(), CHUNK);
                    continue;
                }
            }
        }
        // SAFETY: chunks are never unmapped once published.
        let off = unsafe { (*c).used.fetch_add(size, Ordering::Relaxed) };
        if off + size <= CHUNK {
            return (c as *mut u8).wrapping_add(off);
        }
        // This chunk is full: whoever swaps it out first installs a new one; the rest retry.
        let fresh = new_chunk();
        if fresh.is_null() {
            return null_mut();
        }
        if CURRENT
            .compare_exchange(c, fresh, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            sys::munmap(fresh.cast(), CHUNK);
        }
    }
}

// SAFETY: every block handed out is valid, writable, suitably aligned (16 bytes in the arena,
// page-aligned for mappings) and disjoint from every other live block.
unsafe impl GlobalAlloc for Arena {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if is_big(&layout) {
            if layout.align() > PAGE {
                return null_mut();
            }
            return sys::mmap_anon(page_round(layout.size())).unwrap_or(null_mut());
        }
        bump(layout.size())
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // Both fresh mappings and never-reused arena memory are zero already.
        // SAFETY: forwarded contract.
        unsafe { self.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if is_big(&layout) {
            sys::munmap(ptr, page_round(layout.size()));
        }
    }
}

#[global_allocator]
static ARENA: Arena = Arena;
