//! The allocator's policy for the analysis: glibc's own, with freed memory given back between
//! the stages.
//!
//! glibc serves large blocks with their own mappings: a growing array moves by `mremap`
//! without a copy, and a freed one goes back to the system at once. The analysis once raised
//! the mmap and trim thresholds to 1 GiB so that the miner's rounds reused their arrays
//! instead of having fresh pages zeroed (mining 18% faster on a 10M-event nginx recording), but
//! then every array the graph stage grew by doubling, and every thread's array copied into the
//! graph's, stayed resident: 1,674 against 1,496 MiB at the peak on that recording, for the
//! same 45 s in all (`docs/BENCHMARKS.md`).

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
