//! The allocator's policy for the analysis: glibc's, with large blocks always mapped on their
//! own, and freed memory given back between the stages.
//!
//! glibc serves a block of at least its mmap threshold with a mapping of its own: a growing
//! array then moves by `mremap`, without a copy, and a freed one goes back to the system at
//! once. By default the threshold rises (up to 32 MiB) each time such a block is freed, after
//! which arrays of up to that size come from the heap: growing one by doubling copies it, with
//! both copies resident, and freeing it leaves a hole. The analysis fixes the threshold at
//! 1 MiB, which also stops it from moving: on a 1.77M-event nginx recording the peak went from
//! 209–217 to 191 MiB in the same time. (The analysis once raised the mmap and trim thresholds
//! to 1 GiB so that the miner's rounds reused their arrays instead of having fresh pages zeroed,
//! mining 18% faster on a 10M-event recording, but every block the graph stage's growing arrays
//! left stayed resident: 1,674 against 1,496 MiB at the peak; `docs/BENCHMARKS.md`.)

/// The mmap threshold the analysis uses (see the module docs).
const MMAP_THRESHOLD: libc::c_int = 1 << 20;

/// Sets the allocator's policy (see the module docs). Call it before the analysis allocates
/// anything large; calling it again changes nothing.
pub fn set_policy() {
    // SAFETY: mallopt only changes glibc's allocation parameters; it takes the allocator's
    // lock and touches no live allocation.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
    }
}

/// Gives freed heap memory back to the system (glibc's `malloc_trim`, every arena): what
/// smaller blocks left in the heap once a stage's arrays are freed. Costs a walk over the
/// heap's free chunks: call it after freeing something large.
pub fn release_freed_memory() {
    // SAFETY: malloc_trim only returns free heap pages to the kernel; it takes the allocator's
    // own locks and touches no live allocation.
    unsafe {
        libc::malloc_trim(0);
    }
}
