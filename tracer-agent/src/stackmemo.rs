//! The stacks this thread met last, kept privately in front of the process's stack cache
//! (`stackcache`) and checked with a load and a compare per link.
//!
//! Why: a server's worker meets the same few dozen stacks request after request (memcached's:
//! 24 stacks make 95% of a worker's captures). The shared cache answers them too, but each of
//! its reads must allow for another thread rewriting the entry (a version read before and after,
//! every slot clamped into this thread's stack) and a set holds every stack met at one depth,
//! tried in turn. An entry here is written by this thread only, and each of its slots was read
//! by a capture exactly as far below this stack's top, so none of that is needed. Under the
//! `cache=on` mode only; `cache=check` walks every capture the shared cache answers.
//!
//! Why it is exact: the shared cache's argument (see `walk`), for one thread.

use core::sync::atomic::{compiler_fence, Ordering};

use crate::walk::{below_top, read_below, Chain};

/// Links an entry can hold: the agent's frames and about 25 of the program's. Longer chains are
/// left to the shared cache.
const LINKS: usize = 32;
/// Sets of entries, chosen by the capture's offset below the stack top.
const SETS: usize = 16;
/// Entries per set: the stacks met at one depth (one hook called from several sites).
const WAYS: usize = 4;

/// One remembered capture. Valid when zeroed: offset 0 matches no capture.
#[derive(Clone, Copy)]
struct Entry {
    /// The capture's offset below the stack top.
    off: u32,
    /// The call site's slot, as `walk::below_top` gives it.
    site_slot: u32,
    len: u32,
    /// The call site: the first return address into the program.
    site: u64,
    /// This thread's stack id for it.
    id: u64,
    /// Each link's slot as `walk::below_top` gives it, each at most `off - 8`.
    slots: [u32; LINKS],
    addrs: [u64; LINKS],
}

/// The memo. Valid when zeroed (empty); lives inside the thread's mmap'd state.
pub(crate) struct Memo {
    /// Per set, the way the next entry replaces.
    next: [u8; SETS],
    entries: [[Entry; WAYS]; SETS],
}

impl Memo {
    /// Forgets everything (the stack top changed, so every offset means another slot).
    pub(crate) fn clear(&mut self) {
        for set in self.entries.iter_mut() {
            for e in set.iter_mut() {
                e.off = 0;
            }
        }
    }

    /// The stack id and call site of a capture `sp_off` bytes below `top`, when one of this
    /// thread's remembered chains still holds there. `[top - sp_off, top)` must be this
    /// thread's live stack.
    #[inline]
    pub(crate) fn lookup(&self, top: u64, sp_off: u64) -> Option<(u64, u64)> {
        let off = u32::try_from(sp_off).ok()?;
        for e in &self.entries[set_of(off)] {
            if e.off != off {
                continue;
            }
            // SAFETY: every slot of an entry is at most `off - 8` (see `remember`), inside the
            // live stack of this capture, which is `off` below the same top.
            if unsafe { read_below(top, e.site_slot) } != e.site {
                continue;
            }
            let n = (e.len as usize).min(LINKS);
            let mut diff = 0;
            for k in 0..n {
                // SAFETY: as above.
                diff |= unsafe { read_below(top, e.slots[k]) } ^ e.addrs[k];
            }
            if diff == 0 {
                return Some((e.id, e.site));
            }
        }
        None
    }

    /// Remembers that the exact chain `c`, found by a capture `sp_off` bytes below the stack
    /// top, is this thread's stack `id`. Chains too long, or with a slot outside that capture's
    /// stack (which an exact chain never has), are not remembered.
    pub(crate) fn remember(&mut self, sp_off: u64, c: &Chain, id: u64) {
        let Some(off) = u32::try_from(sp_off).ok().filter(|&o| o >= 8) else {
            return;
        };
        let (slots, addrs) = c.links();
        let Some((site, site_off)) = c.site_slot() else {
            return;
        };
        let below = off - 8;
        if slots.len() > LINKS
            || slots.is_empty()
            || below_top(site_off) > below
            || slots.iter().any(|&s| below_top(s) > below)
        {
            return;
        }
        let set = set_of(off);
        let way = {
            // A way that already holds this capture's entry is rewritten in place, so that
            // one stack never takes two ways.
            let same = self.entries[set]
                .iter()
                .position(|e| e.off == off && e.site_slot == below_top(site_off) && e.site == site);
            same.unwrap_or_else(|| {
                let w = usize::from(self.next[set]) % WAYS;
                self.next[set] = ((w + 1) % WAYS) as u8;
                w
            })
        };
        let e = &mut self.entries[set][way];
        // Not matchable while written: a signal handler's capture may look it up meanwhile.
        e.off = 0;
        compiler_fence(Ordering::Release);
        e.site_slot = below_top(site_off);
        e.site = site;
        e.id = id;
        e.len = slots.len() as u32;
        for (k, (&s, &a)) in slots.iter().zip(addrs).enumerate() {
            e.slots[k] = below_top(s);
            e.addrs[k] = a;
        }
        compiler_fence(Ordering::Release);
        e.off = off;
    }
}

/// The set for captures `off` bytes below the stack top; capture depths differ by whole frames
/// (multiples of 16 bytes).
#[inline]
fn set_of(off: u32) -> usize {
    (((off >> 4) ^ (off >> 8)) as usize) & (SETS - 1)
}
