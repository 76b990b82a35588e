//! Allocator tuning for the analysis: keep freed memory for reuse instead of returning it.
//!
//! Inference allocates and frees arrays the size of the graph on every round of mining. glibc
//! serves blocks above its mmap threshold with fresh mappings and unmaps them on free, so every
//! round pays for the kernel to zero the pages again (a quarter of the time on a 10^7-leaf
//! graph). Raising the mmap and trim thresholds keeps those blocks in the heap for the next
//! round. The memory is still the process's to reuse, and it all goes back at exit.

/// Asks glibc to serve large blocks from the heap and keep what is freed. Call once at start,
/// before any threads.
pub fn keep_freed_memory() {
    const ONE_GIB: libc::c_int = 1 << 30;
    // SAFETY: mallopt only changes allocator parameters; it is called before other threads run
    // and with documented parameter codes and values in range.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, ONE_GIB);
        libc::mallopt(libc::M_TRIM_THRESHOLD, ONE_GIB);
    }
}
