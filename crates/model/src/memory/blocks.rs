//! The analysis's global allocator: glibc's for everything but large blocks, which get mappings
//! of their own, aligned to the huge page size and advised for transparent huge pages.
//!
//! Why: the analysis's arrays are large and short-lived (a window's leaves, the miner's lists
//! of every round), and each fresh page of each of them is faulted in and zeroed by the
//! kernel one 4 KiB page at a time. On a written trace of 10^8 events inferred in windows,
//! that was 19 million page faults and a quarter of the run's CPU time in the kernel
//! (`docs/BENCHMARKS.md`, session 68). With transparent huge pages a fault maps 2 MiB at once.
//! Debian's kernels enable them only where a program asks (`madvise` in
//! `/sys/kernel/mm/transparent_hugepage/enabled`), and glibc asks only when its tunable is set
//! in the environment before the program starts, so the program asks for its own large blocks.
//!
//! What it costs: a large block's whole huge pages are resident once one byte of them is
//! touched, so a block may hold up to 2 MiB more than it has written; the parts of a block
//! outside whole aligned huge pages stay ordinary pages. Where the kernel has no huge pages
//! (`never`, or none free) the advice changes nothing and the blocks are ordinary mappings, as
//! glibc's own would be.
//!
//! Non-goals: small blocks (glibc's heap keeps them), and memory-mapped files.

use std::alloc::{GlobalAlloc, Layout, System};
use std::ptr;

/// The huge page size this allocator aligns large blocks to (x86-64's transparent huge page;
/// elsewhere a block is merely aligned to it, which does no harm).
const HUGE_PAGE: usize = 2 << 20;

/// Blocks of at least this many bytes are large (a smaller one could hold no whole huge page
/// once its start is aligned).
const LARGE_FROM: usize = HUGE_PAGE;

/// The allocator (see the module docs). Install it in a binary with
/// `#[global_allocator] static A: LargeBlocks = LargeBlocks;`.
#[derive(Debug, Default, Clone, Copy)]
pub struct LargeBlocks;

// SAFETY: every block is either glibc's (through `System`, which upholds the contract) or a
// mapping of its own, told apart by the layout's size, which the contract makes the caller
// pass back unchanged; a mapping is readable and writable, at least `size` bytes long, page
// aligned (which covers every alignment `is_large` admits) and unmapped only by `dealloc` or
// replaced by `realloc`.
unsafe impl GlobalAlloc for LargeBlocks {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if is_large(layout.size(), layout.align()) {
            map_aligned(page_round(layout.size()))
        } else {
            // SAFETY: the caller's contract for `alloc` is System's.
            unsafe { System.alloc(layout) }
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if is_large(layout.size(), layout.align()) {
            // SAFETY: as in `alloc`; a fresh anonymous mapping reads as zeros.
            unsafe { self.alloc(layout) }
        } else {
            // SAFETY: as in `alloc`.
            unsafe { System.alloc_zeroed(layout) }
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if is_large(layout.size(), layout.align()) {
            // SAFETY: `ptr` is a mapping of `layout.size()` bytes this allocator made (the
            // layout is the one it was made or last resized with), and nothing uses it again.
            unsafe { libc::munmap(ptr.cast(), page_round(layout.size())) };
        } else {
            // SAFETY: a small block is System's, given back with its layout.
            unsafe { System.dealloc(ptr, layout) }
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let align = layout.align();
        match (is_large(layout.size(), align), is_large(new_size, align)) {
            // SAFETY: a small block stays System's, resized under the caller's contract.
            (false, false) => unsafe { System.realloc(ptr, layout, new_size) },
            // SAFETY: a large block stays a mapping of this allocator's.
            (true, true) => unsafe { remap(ptr, page_round(layout.size()), page_round(new_size)) },
            // SAFETY: the block moves between the two kinds by copy, under the caller's
            // contract for the old block and `new_size` (non-zero, not overflowing).
            _ => unsafe { self.moved(ptr, layout, new_size) },
        }
    }
}

impl LargeBlocks {
    /// Moves a block from glibc's heap to a mapping of its own or back, by copy.
    ///
    /// # Safety
    /// As [`GlobalAlloc::realloc`].
    unsafe fn moved(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: realloc's contract makes `new_size` with the old alignment a valid layout.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        // SAFETY: a valid, non-zero layout.
        let new = unsafe { self.alloc(new_layout) };
        if !new.is_null() {
            // SAFETY: both blocks are live, distinct and at least this long.
            unsafe { ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size)) };
            // SAFETY: the old block with its layout, not used again.
            unsafe { self.dealloc(ptr, layout) };
        }
        new
    }
}

/// Whether a block of this size and alignment gets a mapping of its own.
fn is_large(size: usize, align: usize) -> bool {
    size >= LARGE_FROM && align <= super::page_size()
}

/// `bytes` rounded up to whole pages.
fn page_round(bytes: usize) -> usize {
    bytes.next_multiple_of(super::page_size())
}

/// A fresh readable and writable mapping of `len` bytes (whole pages) that starts on a huge
/// page boundary, advised for huge pages; null if the system has no room.
fn map_aligned(len: usize) -> *mut u8 {
    // Mapped with a huge page of slack, whose unaligned ends are then unmapped. Under an
    // address space limit the slack may not fit: the block is then mapped unaligned.
    let start = match len.checked_add(HUGE_PAGE).map(map) {
        Some(Some(wide)) => trim_to_aligned(wide, len),
        _ => match map(len) {
            Some(p) => p,
            None => return ptr::null_mut(),
        },
    };
    advise_huge(start, len);
    start.cast()
}

/// A fresh anonymous private mapping of `len` bytes, or `None`.
fn map(len: usize) -> Option<*mut libc::c_void> {
    // SAFETY: a new anonymous mapping at an address the kernel picks; it aliases nothing.
    let p = unsafe {
        libc::mmap(
            ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    (p != libc::MAP_FAILED).then_some(p)
}

/// Unmaps the parts of `wide` (a fresh mapping of `len + HUGE_PAGE` bytes) before the first
/// huge page boundary in it and after `len` bytes from there; returns that boundary.
fn trim_to_aligned(wide: *mut libc::c_void, len: usize) -> *mut libc::c_void {
    let base = wide as usize;
    let start = base.next_multiple_of(HUGE_PAGE);
    let (head, tail) = (start - base, HUGE_PAGE - (start - base));
    // SAFETY: both ranges are whole pages of `wide`, which nothing else knows of yet.
    unsafe {
        if head > 0 {
            libc::munmap(wide, head);
        }
        if tail > 0 {
            libc::munmap((start + len) as *mut libc::c_void, tail);
        }
    }
    start as *mut libc::c_void
}

/// Asks for transparent huge pages in `[start, start + len)`. A kernel without them
/// (`never`, or built without) refuses, and the pages stay ordinary ones.
fn advise_huge(start: *mut libc::c_void, len: usize) {
    // SAFETY: advice on a mapping this allocator owns; it changes no contents.
    unsafe { libc::madvise(start, len, libc::MADV_HUGEPAGE) };
}

/// Resizes the mapping at `ptr` from `old` to `new` bytes (whole pages each), keeping its
/// contents and, when it must move, its huge page alignment. Null if there is no room.
///
/// # Safety
/// `ptr` is a live mapping of `old` bytes this allocator made.
unsafe fn remap(ptr: *mut u8, old: usize, new: usize) -> *mut u8 {
    if new == old {
        return ptr;
    }
    // SAFETY: a mapping of ours, shrunk or grown in place (no flag lets it move).
    let same = unsafe { libc::mremap(ptr.cast(), old, new, 0) };
    if same != libc::MAP_FAILED {
        return ptr;
    }
    // No room after it: move its pages (without a copy) onto a fresh aligned mapping.
    let target = map_aligned(new);
    if target.is_null() {
        return target;
    }
    // SAFETY: moves our mapping's pages to `target`, a fresh mapping of `new` bytes of ours,
    // which MREMAP_FIXED replaces; the old range is unmapped by the move.
    let moved = unsafe {
        libc::mremap(
            ptr.cast(),
            old,
            new,
            libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED,
            target.cast::<libc::c_void>(),
        )
    };
    if moved == libc::MAP_FAILED {
        // SAFETY: the fresh mapping is ours and unused; the old block stays as it was.
        unsafe { libc::munmap(target.cast(), new) };
        return ptr::null_mut();
    }
    moved.cast()
}

#[cfg(test)]
mod tests {
    use super::{LargeBlocks, HUGE_PAGE, LARGE_FROM};
    use std::alloc::{GlobalAlloc, Layout};

    /// The byte a test writes at offset `i`.
    fn byte(i: usize, seed: u8) -> u8 {
        seed.wrapping_add(u8::try_from(i % 251).unwrap_or(0))
    }

    fn fill(p: *mut u8, len: usize, seed: u8) {
        for i in (0..len).step_by(4093) {
            // SAFETY: inside a live block of `len` bytes.
            unsafe { *p.add(i) = byte(i, seed) };
        }
    }

    fn holds(p: *mut u8, len: usize, seed: u8) -> bool {
        // SAFETY: inside a live block of at least `len` bytes.
        (0..len)
            .step_by(4093)
            .all(|i| unsafe { *p.add(i) } == byte(i, seed))
    }

    #[test]
    fn large_blocks_start_on_huge_pages_and_read_zero() {
        let layout = Layout::from_size_align(3 * LARGE_FROM + 5, 8).unwrap();
        // SAFETY: a valid layout; the block is freed with it.
        unsafe {
            let p = LargeBlocks.alloc_zeroed(layout);
            assert!(!p.is_null());
            assert_eq!(p as usize % HUGE_PAGE, 0);
            assert!((0..layout.size()).step_by(997).all(|i| *p.add(i) == 0));
            LargeBlocks.dealloc(p, layout);
        }
    }

    #[test]
    fn blocks_keep_their_bytes_across_every_resize() {
        // Small to large, growth of a large one (moved or in place), shrinking, large to small.
        let sizes = [
            1000,
            LARGE_FROM + 1,
            4 * LARGE_FROM,
            64 * LARGE_FROM + 12_345,
            2 * LARGE_FROM,
            LARGE_FROM - 1,
            24,
        ];
        let mut layout = Layout::from_size_align(sizes[0], 16).unwrap();
        // SAFETY: each resize passes the block's current layout and a non-zero size.
        unsafe {
            let mut p = LargeBlocks.alloc(layout);
            fill(p, layout.size(), 7);
            // Another large block, so that growth in place is not always possible.
            let other = Layout::from_size_align(LARGE_FROM, 8).unwrap();
            let q = LargeBlocks.alloc(other);
            for &size in &sizes[1..] {
                p = LargeBlocks.realloc(p, layout, size);
                assert!(!p.is_null());
                assert!(holds(p, layout.size().min(size), 7), "resized to {size}");
                layout = Layout::from_size_align(size, 16).unwrap();
                fill(p, size, 7);
            }
            LargeBlocks.dealloc(p, layout);
            LargeBlocks.dealloc(q, other);
        }
    }

    #[test]
    fn vectors_on_it_grow_and_shrink() {
        let mut v: Vec<u64> = Vec::new();
        for i in 0..3_000_000u64 {
            v.push(i);
        }
        assert!(v.iter().zip(0u64..).all(|(&x, i)| x == i));
        v.truncate(10);
        v.shrink_to_fit();
        assert_eq!(v, (0..10).collect::<Vec<_>>());
    }
}
