//! The allocator's policy for the analysis: glibc's, with large blocks always mapped on their
//! own, and freed memory given back between the stages; blocks of at least a huge page mapped
//! by the analysis itself on huge pages ([`LargeBlocks`], the binary's global allocator); and
//! arrays counted into mapped writable before they are read ([`populate`]).
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
//!
//! Under an address-space limit (`ulimit -v`, `prlimit --as`) every thread allocates from one
//! arena. glibc gives each thread that finds the others' arenas busy an arena of its own, whose
//! heaps reserve 64 MiB of address space each: on a 10-million-event trace under `--memory
//! 128M`, 548 MiB of address space for 86 MiB resident with one worker thread, 760 MiB with two;
//! with one arena, 246 and 299 MiB (`docs/BENCHMARKS.md`). A limit on address space would fail
//! an allocation there, which aborts the run, long before the memory it was meant to bound.

mod blocks;

pub use blocks::LargeBlocks;

/// The mmap threshold the analysis uses (see the module docs).
const MMAP_THRESHOLD: libc::c_int = 1 << 20;

/// Sets the allocator's policy (see the module docs). Call it before the analysis allocates
/// anything large and before it starts threads (the arenas threads already took stay theirs); calling it again
/// changes nothing.
pub fn set_policy() {
    // SAFETY: mallopt only changes glibc's allocation parameters; it takes the allocator's
    // lock and touches no live allocation.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
    }
    if address_space_limited() {
        // SAFETY: as above.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, 1);
        }
    }
}

/// Whether this process's address space is limited (`RLIMIT_AS` below infinity).
fn address_space_limited() -> bool {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit, which `limit` is.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut limit) } == 0;
    ok && limit.rlim_cur != libc::RLIM_INFINITY
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

/// Arrays at least this large are populated by [`populate`]: those glibc maps afresh.
const POPULATE_FROM: usize = MMAP_THRESHOLD as usize;

/// Maps the whole pages of `items` writable now, as writing them would, without changing them.
///
/// Why: `vec![0; n]` of at least the mmap threshold is a fresh mapping whose pages read as the
/// kernel's shared zero page until written. An array filled by counting (`counts[i] += 1`)
/// reads each page before it writes it, so each page faulted twice, the second time to copy the
/// zero page, which also flushes it from the TLB of every CPU the process's threads run on by
/// an interrupt to each: 4.7% of `infer`'s samples on a written trace of 10^8 events, mostly
/// in the miner's lists (`docs/BENCHMARKS.md`, session 65). Call it on such an array before
/// counting into it. Smaller arrays and kernels without `MADV_POPULATE_WRITE` (before Linux
/// 5.14) are left as they are: the pages then fault as before.
pub fn populate<T>(items: &mut [T]) {
    let bytes = std::mem::size_of_val(items);
    if bytes < POPULATE_FROM {
        return;
    }
    let page = page_size();
    let start = items.as_mut_ptr() as usize;
    let (first, end) = (start.next_multiple_of(page), start + bytes);
    let last = end - end % page;
    if last > first {
        // SAFETY: [first, last) is whole pages inside `items`, which this call borrows
        // mutably. MADV_POPULATE_WRITE faults the pages in writable as a write would, without
        // writing: their contents stay. A kernel that lacks it returns EINVAL and does nothing.
        unsafe {
            libc::madvise(
                first as *mut libc::c_void,
                last - first,
                libc::MADV_POPULATE_WRITE,
            );
        }
    }
}

/// The system's page size.
fn page_size() -> usize {
    // SAFETY: sysconf only reads a system constant.
    usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096)
}

/// The size of a block whose pages [`move_into`] gives back as it goes.
const MOVE_RELEASE_BYTES: usize = 1 << 20;

/// Appends `from`'s items to `to`, each through `f`, giving `from`'s memory back to the system
/// as it is copied: appending a large array to another otherwise holds both at once (a thread
/// holding 63% of the leaves made the graph stage's peak that way, 38 MiB of leaves copied
/// while still resident, on a 1.77M-event nginx recording). `to` should have room reserved.
pub fn move_into<T, U>(to: &mut Vec<U>, from: Vec<T>, mut f: impl FnMut(T) -> U) {
    let bytes = std::mem::size_of_val(from.as_slice());
    if bytes < MOVE_RELEASE_BYTES {
        to.extend(from.into_iter().map(f));
        return;
    }
    let page = page_size();
    let per = (MOVE_RELEASE_BYTES / std::mem::size_of::<T>()).max(1);
    let start = from.as_ptr() as usize;
    // Only whole pages inside the buffer, from the first one that starts in it.
    let mut released = start.next_multiple_of(page);
    let mut items = from.into_iter();
    loop {
        to.extend(items.by_ref().take(per).map(&mut f));
        let next = items.as_slice().as_ptr() as usize;
        let upto = next - next % page;
        if upto > released {
            // SAFETY: [released, upto) is whole pages inside `items`' buffer, below its first
            // item not yet moved out: the items there were moved out, and nothing reads that
            // memory again (the iterator drops only the items it still holds, then frees the
            // buffer). MADV_DONTNEED only drops the pages' contents; the mapping stays, and a
            // page touched again (by the allocator, once the buffer is freed) reads as zeros.
            unsafe {
                libc::madvise(
                    released as *mut libc::c_void,
                    upto - released,
                    libc::MADV_DONTNEED,
                );
            }
            released = upto;
        }
        if items.len() == 0 {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{move_into, populate, LargeBlocks, POPULATE_FROM};

    // The model crate's tests run on the analysis's allocator, as the binary does.
    #[global_allocator]
    static ALLOCATOR: LargeBlocks = LargeBlocks;

    #[test]
    fn populated_arrays_keep_their_contents() {
        for n in [10, POPULATE_FROM / 4 + 3, POPULATE_FROM + 1] {
            let mut zeros = vec![0u32; n];
            populate(&mut zeros);
            assert!(zeros.iter().all(|&z| z == 0));
            let mut counted: Vec<u32> = (0u32..).take(n).collect();
            populate(&mut counted[1..]);
            assert!(counted
                .iter()
                .enumerate()
                .all(|(i, &v)| usize::try_from(v) == Ok(i)));
        }
    }

    #[test]
    fn moved_items_arrive_in_order_through_the_map() {
        // Large enough to be given back page by page, of a type that owns memory, so that an
        // item dropped twice or read after its page was dropped would show.
        let n = 3 * (super::MOVE_RELEASE_BYTES / std::mem::size_of::<String>()) + 17;
        let from: Vec<String> = (0..n).map(|i| i.to_string()).collect();
        let mut to = vec!["first".to_owned()];
        to.reserve(n);
        move_into(&mut to, from, |s| s + "!");
        assert_eq!(to.len(), n + 1);
        assert_eq!(to[0], "first");
        for (i, s) in to[1..].iter().enumerate() {
            assert_eq!(*s, format!("{i}!"));
        }
    }

    #[test]
    fn small_and_empty_arrays_are_copied_whole() {
        let mut to: Vec<u64> = Vec::new();
        move_into(&mut to, Vec::<u32>::new(), u64::from);
        move_into(&mut to, vec![1u32, 2, 3], u64::from);
        assert_eq!(to, [1, 2, 3]);
    }
}
