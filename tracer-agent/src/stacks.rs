//! Call stacks at sync points: a DWARF walk of the calling thread's stack, deduplicated per
//! thread into stack ids written once to the thread's file.
//!
//! The walk starts in [`Stacks::capture`] itself, steps out of the agent's own frames, and then
//! records raw return addresses, innermost first, up to the configured depth. It allocates
//! nothing, takes no lock, and reads memory only between the current stack pointer and the top
//! of this thread's stack, which is known for threads started through our trampoline and for
//! the main thread (other threads get no stacks). A call made on a signal stack falls outside
//! those bounds and gets no stack either.
//!
//! The stack cache: a previous walk that started at the same stack pointer left, for every
//! frame (the agent's included), the stack slot its return address was read from. If every slot
//! still holds the same address, the stack is the same (see `walk`) and nothing is unwound. This
//! is exact whenever each frame's CFA is found from the stack pointer or from registers saved on
//! the walked chain; `cache=check` re-walks every hit and counts disagreements in the file
//! header, which is how it is measured.

use core::arch::asm;

use scalpel_format::format::rec;
use scalpel_format::wire::{zigzag, Enc};

use crate::stackcfg::{CacheMode, Mode, StackCfg, MAX_DEPTH};
use crate::unwind::{self, Cache};
use crate::walk::{read_slot, Chain, Start, WalkErr};
use crate::writer::File;

const DEDUP_SLOTS: usize = 4096;
const DEDUP_LIMIT: u32 = 3072;
/// Entries of the stack cache. A server's worker meets hundreds of distinct stacks in steady
/// state (memcached: about 430 per thread), many at the same stack pointer (one capture point
/// reached from many call sites at one depth), and every miss is a DWARF walk: with 64 entries
/// of 4 ways, walks took 3–9% of traced memcached's CPU; with 512 of 16, none. Each entry is
/// about 1.2 KiB of the thread's state, touched only when used.
const RECENT: usize = 512;
/// Entries per set of the stack cache.
const WAYS: usize = 16;
const SAMPLE_SLOTS: usize = 256;

#[derive(Clone, Copy)]
struct Dedup {
    hash: u64,
    id: u64,
}

/// A remembered walk: its whole chain of return addresses with the slots they were read from,
/// and its id. Where it started is in `Stacks::tags`, its call site in `Stacks::sites`.
#[derive(Clone, Copy)]
#[repr(C)]
struct Recent {
    /// First, on the cache line that the check of the chain reads first (see `Chain`).
    id: u64,
    chain: Chain,
}

/// A remembered walk's call site: a return address and its slot, as an offset below the top.
#[derive(Clone, Copy)]
struct Site {
    addr: u64,
    slot: u32,
}

impl Site {
    /// Whether the slot still holds the address, for a capture as far below the top as the
    /// walk that found it.
    #[inline]
    fn holds_from(&self, top: u64) -> bool {
        // SAFETY: the slot is one of an exact chain's (only exact chains are remembered) and
        // the caller matched the capture's distance below the top (see `read_slot`).
        unsafe { read_slot(top, self.slot) == self.addr }
    }
}

/// One thread's stack state. Valid when zeroed; lives inside the thread's mmap'd state.
pub(crate) struct Stacks {
    cache: *mut Cache,
    top: u64,
    lo: u64,
    next_id: u64,
    dedup_used: u32,
    checked: u32,
    mismatched: u32,
    victim: usize,
    dedup: [Dedup; DEDUP_SLOTS],
    /// Where each remembered walk started: the capture's stack pointer as an offset below the
    /// top (never 0; 0 marks an empty entry). Apart from the walks themselves, so that looking
    /// through a set reads two cache lines instead of sixteen entries of a kilobyte each.
    tags: [u64; RECENT],
    /// Each remembered walk's call site (its first return address into the program) and the
    /// stack slot it was read from: checked before the rest of the chain, since the walks that
    /// share a set and a starting point usually differ there first (one hook reached from many
    /// call sites at one depth: memcached's workers lock from dozens). The agent's own frames,
    /// the chain's first slots, are the same for all of them.
    sites: [Site; RECENT],
    recent: [Recent; RECENT],
    sample: [u32; SAMPLE_SLOTS],
}

impl Stacks {
    /// Sets this thread's stack bounds: reads stay within `[sp, top)`, and only when the stack
    /// pointer is inside `[lo, top)`. A zero `top` turns stacks off for the thread.
    pub(crate) fn set_bounds(&mut self, top: usize, lo: usize) {
        self.top = top as u64 & !7;
        self.lo = lo as u64;
    }

    /// This thread's stack as (top, lowest address); top 0 when unknown.
    pub(crate) fn bounds(&self) -> (u64, u64) {
        (self.top, self.lo)
    }

    /// The id of a stack given as frames (a sample's), defining it in the file if it is new.
    pub(crate) fn intern_frames(&mut self, frames: &[u64], file: &mut File) -> Option<u64> {
        self.intern(frames, file)
    }

    /// Frees the rule cache (at thread exit).
    pub(crate) fn release(&mut self) {
        // SAFETY: the cache came from `unwind::new_cache` and is dropped from our state here.
        unsafe { unwind::free_cache(core::mem::replace(&mut self.cache, core::ptr::null_mut())) };
    }

    /// The id of the current call stack, writing its STACK record first if it is new here.
    /// None when stacks are off, not wanted for this event, or cannot be taken. `ticks` is the
    /// event's time, for the module map recorded when the walk meets a newly loaded module.
    #[inline(never)]
    pub(crate) fn capture(&mut self, cfg: &StackCfg, file: &mut File, ticks: u64) -> Option<u64> {
        if cfg.mode == Mode::Off || self.top == 0 {
            return None;
        }
        let (pc, sp, bp): (u64, u64, u64);
        // SAFETY: reads the instruction pointer and two registers; touches no memory.
        unsafe {
            asm!(
                "lea {pc}, [rip]",
                "mov {sp}, rsp",
                "mov {bp}, rbp",
                pc = out(reg) pc,
                sp = out(reg) sp,
                bp = out(reg) bp,
                options(nomem, nostack, preserves_flags)
            );
        }
        let top = self.top;
        if sp < self.lo || sp >= top {
            file.stack_missed();
            return None;
        }
        let start = Start { pc, sp, bp, top };
        // The cache: the same capture stack pointer and every slot of a remembered chain still
        // holding its return address means the same stack, without unwinding anything.
        let sp_off = top - sp;
        let base = set_of(sp_off);
        let mut hit = None;
        if cfg.cache != CacheMode::Off {
            // A set fills from its first way and never empties, so the first empty way ends it.
            hit = (base..base + WAYS)
                .take_while(|&i| self.tags[i] != 0)
                .find(|&i| {
                    self.tags[i] == sp_off
                        && self.sites[i].holds_from(top)
                        && self.recent[i].chain.holds_from(top)
                });
            if let Some(i) = hit {
                if !self.sampled(cfg, self.sites[i].addr) {
                    return None;
                }
                if cfg.cache == CacheMode::On {
                    return Some(self.recent[i].id);
                }
            }
        }
        self.walk(cfg, file, ticks, &start, hit)
    }

    /// [`Stacks::capture`] without a cache hit (or checking one): walks from `start`, in the
    /// frame of `capture`, which stays live below this call. Apart so that the hit path keeps a
    /// small frame: the walk's buffers take kilobytes.
    #[inline(never)]
    fn walk(
        &mut self,
        cfg: &StackCfg,
        file: &mut File,
        ticks: u64,
        start: &Start,
        hit: Option<usize>,
    ) -> Option<u64> {
        let sp_off = start.top - start.sp;
        let base = set_of(sp_off);
        if self.cache.is_null() {
            self.cache = unwind::new_cache();
        }
        // SAFETY: our own cache, created above or earlier, used by this thread only.
        let cache = unsafe { self.cache.as_mut()? };
        let depth = usize::from(cfg.depth);
        let w = match Chain::walk(start, depth, cache, true) {
            Ok(w) => w,
            Err(WalkErr::Unavailable) => {
                file.stack_missed();
                return None;
            }
            Err(WalkErr::Stale) => {
                // A module loaded since the table was built: record the new module map (the
                // symbolizer needs it before this event) and walk again with the new table.
                unwind::refresh();
                crate::modules::check(file, ticks);
                match Chain::walk(start, depth, cache, false) {
                    Ok(w) => w,
                    Err(_) => {
                        file.stack_missed();
                        return None;
                    }
                }
            }
        };
        let Some(site) = w.site_slot() else {
            file.stack_missed();
            return None;
        };
        if hit.is_none() && !self.sampled(cfg, site.0) {
            return None;
        }
        if let Some(i) = hit {
            self.checked = self.checked.wrapping_add(1);
            if !self.recent[i].chain.same(&w) {
                self.mismatched = self.mismatched.wrapping_add(1);
            }
            file.stack_check(self.checked, self.mismatched);
        }
        let mut frames = [0u64; MAX_DEPTH];
        let n = w.frames(&mut frames);
        let id = self.intern(&frames[..n], file)?;
        if cfg.cache != CacheMode::Off && w.exact {
            // The set's first empty way, so that the stacks met first (in a loop, the ones met
            // most) are found after the fewest comparisons; in a full set, round robin: one
            // capture point often serves several call sites (a lock and an unlock through the
            // same hook path), which must not evict each other.
            let i = match (base..base + WAYS).find(|&i| self.tags[i] == 0) {
                Some(i) => i,
                None => {
                    self.victim = (self.victim + 1) % WAYS;
                    base + self.victim
                }
            };
            self.tags[i] = sp_off;
            self.sites[i] = Site {
                addr: site.0,
                slot: site.1,
            };
            self.recent[i] = Recent { id, chain: w };
        }
        Some(id)
    }

    /// In sampled mode, whether this event at `site` is one to keep.
    fn sampled(&mut self, cfg: &StackCfg, site: u64) -> bool {
        if cfg.mode != Mode::Sampled {
            return true;
        }
        let c = &mut self.sample[(mix(site) as usize) & (SAMPLE_SLOTS - 1)];
        let take = c.is_multiple_of(cfg.every);
        *c = c.wrapping_add(1);
        take
    }

    /// The id of a stack, defining it in the file if it is new to this thread.
    fn intern(&mut self, frames: &[u64], file: &mut File) -> Option<u64> {
        let h = hash(frames);
        let mut i = (h as usize) & (DEDUP_SLOTS - 1);
        loop {
            let d = self.dedup[i];
            if d.hash == 0 {
                break;
            }
            if d.hash == h {
                return Some(d.id);
            }
            i = (i + 1) & (DEDUP_SLOTS - 1);
        }
        if self.dedup_used >= DEDUP_LIMIT {
            // Forget and start again: ids already written stay valid, a stack seen again gets a
            // new id and record. A loop, not a literal, to keep the stack small.
            for d in self.dedup.iter_mut() {
                *d = Dedup { hash: 0, id: 0 };
            }
            self.dedup_used = 0;
            return self.intern(frames, file);
        }
        let id = self.next_id.max(1);
        let mut buf = [0u8; 24 + MAX_DEPTH * 10];
        let mut e = Enc::new(&mut buf);
        e.varint(id);
        e.varint(frames.len() as u64);
        let mut prev = 0u64;
        for (k, &f) in frames.iter().enumerate() {
            e.varint(if k == 0 {
                f
            } else {
                zigzag(f.wrapping_sub(prev) as i64)
            });
            prev = f;
        }
        let n = e.len();
        if !file.record(rec::STACK, &buf[..n], &[]) {
            return None;
        }
        self.next_id = id + 1;
        self.dedup[i] = Dedup { hash: h, id };
        self.dedup_used += 1;
        Some(id)
    }
}

/// The first entry of the stack cache's set for captures `sp_off` bytes below the stack top.
/// Capture depths differ by whole stack frames (multiples of 16 bytes), so the low bits
/// folded with the next ones spread them; no multiplication on the hit path.
#[inline]
fn set_of(sp_off: u64) -> usize {
    (((sp_off >> 4) ^ (sp_off >> 9)) as usize * WAYS) & (RECENT - 1)
}

#[inline]
fn mix(x: u64) -> u64 {
    let x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    let x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// A 64-bit digest of a frame list (never 0, which marks an empty slot).
fn hash(frames: &[u64]) -> u64 {
    let mut h = mix(frames.len() as u64 ^ 0x5ca1_9e15);
    for &f in frames {
        h = mix(h ^ f).rotate_left(17);
    }
    h | 1
}
