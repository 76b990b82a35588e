//! The process-wide stack cache: a walk remembered by one thread answers every thread's capture
//! at the same depth below its own stack top.
//!
//! Why shared: a server's workers run the same code from the same depth below their thread
//! descriptors (where the agent puts each thread's stack top), so they meet the same chains at
//! the same offsets. Kept per thread, each of Apache's 64 workers held its own copy of the same
//! few hundred chains, and a capture after a system call missed the cache three times in a row
//! (set, call site, chain). Kept once, the lines stay in the cache for whichever worker runs
//! next, and a worker's first meeting with a chain costs no walk.
//!
//! Why this is still exact: the cache's argument (see `walk`) compares offsets below the top
//! and return addresses, never absolute addresses, so it holds for any thread whose capture is
//! as far below its top. Stack ids are per thread (they are defined in the thread's own file),
//! so each thread maps an entry's version to its own id (`Stacks::ids`).
//!
//! Concurrency: a version per entry, odd while one thread rewrites it (won by a
//! compare-and-swap; a thread that loses skips remembering). Readers compare the version before
//! and after and discard what changed under them; every stack read they make is clamped to
//! their own live stack. Nobody waits, nobody allocates (the table is static and zero; a page
//! is used when an entry on it is first written). A fork's child keeps the table.

use core::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};

use crate::walk::{below_top, read_below, Chain, SharedChain};

/// Entries of the cache. memcached's workers meet about 430 distinct stacks, Apache's a few
/// hundred; each entry is about 1.2 KiB of the process's memory once written.
pub(crate) const ENTRIES: usize = 4096;
/// Entries per set. Many stacks share a starting point (one hook reached from many call sites
/// at one depth), and a set holds the stacks of one starting point.
const WAYS: usize = 16;

/// A remembered walk's call site: the first return address into the program, and its slot as
/// `walk::below_top` gives it. Checked before the rest of the chain: the chains that share a
/// set and a starting point usually differ there first.
struct Site {
    addr: AtomicU64,
    slot: AtomicU32,
}

struct Table {
    /// Per entry: the capture's offset below the stack top in the high half, the version in
    /// the low half; 0 while empty (a set fills from its first way and never empties, so the
    /// first empty way ends it). Apart from the chains, so that a set's sixteen tags are two
    /// cache lines.
    tags: [AtomicU64; ENTRIES],
    sites: [Site; ENTRIES],
    chains: [SharedChain; ENTRIES],
}

static TABLE: Table = Table {
    tags: [const { AtomicU64::new(0) }; ENTRIES],
    sites: [const {
        Site {
            addr: AtomicU64::new(0),
            slot: AtomicU32::new(0),
        }
    }; ENTRIES],
    chains: [SharedChain::EMPTY; ENTRIES],
};

/// A cache entry that held for a capture: which entry, at which version, and its call site.
#[derive(Clone, Copy)]
pub(crate) struct Hit {
    pub index: usize,
    pub version: u32,
    pub site: u64,
}

/// The entry whose chain still holds for a capture `sp_off` bytes below the top `top`, with
/// `[top - sp_off, top)` this thread's live stack.
#[inline]
pub(crate) fn lookup(top: u64, sp_off: u64) -> Option<Hit> {
    let off = u32::try_from(sp_off).ok().filter(|&o| o >= 8)?;
    let below = off - 8;
    let want = want_tag(off, 0);
    let base = set_of(sp_off);
    let t = &TABLE;
    for i in base..base + WAYS {
        let tag = t.tags[i].load(Ordering::Acquire);
        if tag == 0 {
            break;
        }
        // An odd version (being written) carries offset 0 and never matches.
        if tag & !0xffff_ffff != want {
            continue;
        }
        let site = &t.sites[i];
        let addr = site.addr.load(Ordering::Relaxed);
        let slot = site.slot.load(Ordering::Relaxed).min(below);
        // SAFETY: `slot` is at most `below`: inside the live stack [top - 8 - below, top).
        if unsafe { read_below(top, slot) } != addr || !t.chains[i].holds_below(top, below) {
            continue;
        }
        // What was read counts only if the entry did not change meanwhile.
        fence(Ordering::Acquire);
        if t.tags[i].load(Ordering::Relaxed) == tag {
            return Some(Hit {
                index: i,
                version: tag as u32,
                site: addr,
            });
        }
    }
    None
}

/// A copy of a hit's chain, if the entry still has the hit's version after the copy.
pub(crate) fn load(hit: &Hit) -> Option<Chain> {
    let t = &TABLE;
    let c = t.chains[hit.index].load();
    fence(Ordering::Acquire);
    (t.tags[hit.index].load(Ordering::Relaxed) as u32 == hit.version).then_some(c)
}

/// Remembers an exact chain found by a walk from `sp_off` below the top, its call site being
/// `site` (address, slot). Returns the entry and its new version, or None when another thread
/// is writing the entry chosen (then nothing is remembered this time). `victim` is the
/// caller's round-robin position for full sets.
pub(crate) fn insert(
    sp_off: u64,
    site: (u64, u32),
    chain: &Chain,
    victim: &mut usize,
) -> Option<(usize, u32)> {
    let off = u32::try_from(sp_off).ok().filter(|&o| o >= 8)?;
    let t = &TABLE;
    let base = set_of(sp_off);
    // The set's first empty way, so that the stacks met first (in a loop, the ones met most)
    // are found after the fewest comparisons; in a full set, round robin: one capture point
    // often serves several call sites (a lock and an unlock through the same hook path), which
    // must not evict each other.
    let i = match (base..base + WAYS).find(|&i| t.tags[i].load(Ordering::Relaxed) == 0) {
        Some(i) => i,
        None => {
            *victim = (*victim + 1) % WAYS;
            base + *victim
        }
    };
    let old = t.tags[i].load(Ordering::Relaxed);
    if old & 1 == 1 {
        return None;
    }
    let writing = (old as u32).wrapping_add(1);
    t.tags[i]
        .compare_exchange(
            old,
            u64::from(writing),
            Ordering::Relaxed,
            Ordering::Relaxed,
        )
        .ok()?;
    // Readers that see any of the stores below also see the odd version (and discard).
    fence(Ordering::Release);
    t.sites[i].addr.store(site.0, Ordering::Relaxed);
    t.sites[i].slot.store(below_top(site.1), Ordering::Relaxed);
    t.chains[i].store(chain);
    // Never version 0: a thread's map of versions to ids is zero for entries it never used.
    let version = match writing.wrapping_add(1) {
        0 => 2,
        v => v,
    };
    t.tags[i].store(want_tag(off, version), Ordering::Release);
    Some((i, version))
}

fn want_tag(off: u32, version: u32) -> u64 {
    (u64::from(off) << 32) | u64::from(version)
}

/// The first entry of the set for captures `sp_off` bytes below the stack top. Capture depths
/// differ by whole stack frames (multiples of 16 bytes), so the low bits folded with the next
/// ones spread them; no multiplication on the hit path.
#[inline]
fn set_of(sp_off: u64) -> usize {
    (((sp_off >> 4) ^ (sp_off >> 9)) as usize * WAYS) & (ENTRIES - 1)
}
