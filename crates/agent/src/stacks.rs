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
//! The stack cache (`stackcache`, one per process): a previous walk that started as far below
//! its thread's stack top left, for every frame (the agent's included), the stack slot its
//! return address was read from. If every slot still holds the same address, the stack is the
//! same (see `walk`) and nothing is unwound. This is exact whenever each frame's CFA is found
//! from the stack pointer or from registers saved on the walked chain; `cache=check` re-walks
//! every hit and counts disagreements in the file header, which is how it is measured.

use core::arch::asm;

use scalpel_format::format::rec;
use scalpel_format::wire::{zigzag, Enc};

use crate::stackcache::{self, Hit};
use crate::stackcfg::{CacheMode, Mode, StackCfg, MAX_DEPTH};
use crate::unwind::{self, Cache};
use crate::walk::{Chain, Start, WalkErr};
use crate::writer::File;

const DEDUP_SLOTS: usize = 4096;
const DEDUP_LIMIT: u32 = 3072;
const SAMPLE_SLOTS: usize = 256;

#[derive(Clone, Copy)]
struct Dedup {
    hash: u64,
    id: u64,
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
    /// This thread's stack id for each entry of the process's stack cache: the entry's version
    /// in the high half, the id in the low half (0: none yet; ids of 2^32 and over are not
    /// kept here, only found again by their frames).
    ids: [u64; stackcache::ENTRIES],
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
        let mut hit = None;
        if cfg.cache != CacheMode::Off {
            hit = stackcache::lookup(top, top - sp);
            if let Some(h) = hit {
                if !self.sampled(cfg, h.site) {
                    return None;
                }
                if cfg.cache == CacheMode::On {
                    let m = self.ids[h.index];
                    if m >> 32 == u64::from(h.version) {
                        return Some(m & 0xffff_ffff);
                    }
                    // Remembered by another thread, or rewritten since this thread last met it.
                    if let Some(id) = self.adopt(&h, file) {
                        return Some(id);
                    }
                }
            }
        }
        self.walk(cfg, file, ticks, &start, hit)
    }

    /// This thread's id for a cache hit it has no id for yet: the entry's frames interned (a
    /// STACK record if they are new to this thread), without a walk. None when the entry
    /// changed meanwhile or the record cannot be written.
    #[inline(never)]
    fn adopt(&mut self, h: &Hit, file: &mut File) -> Option<u64> {
        let chain = stackcache::load(h)?;
        let mut frames = [0u64; MAX_DEPTH];
        let n = chain.frames(&mut frames);
        let id = self.intern(&frames[..n], file)?;
        self.remember_id(h.index, h.version, id);
        Some(id)
    }

    fn remember_id(&mut self, index: usize, version: u32, id: u64) {
        if let Ok(small) = u32::try_from(id) {
            self.ids[index] = (u64::from(version) << 32) | u64::from(small);
        }
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
        hit: Option<Hit>,
    ) -> Option<u64> {
        let sp_off = start.top - start.sp;
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
        // A hit whose entry changed since cannot be judged (nor answer again): only the others
        // are counted, and are not remembered twice.
        let remembered = hit.and_then(|h| Some((h, stackcache::load(&h)?)));
        if let Some((_, chain)) = &remembered {
            self.checked = self.checked.wrapping_add(1);
            if !chain.same(&w) {
                self.mismatched = self.mismatched.wrapping_add(1);
            }
            file.stack_check(self.checked, self.mismatched);
        }
        let mut frames = [0u64; MAX_DEPTH];
        let n = w.frames(&mut frames);
        let id = self.intern(&frames[..n], file)?;
        if let Some((h, _)) = remembered {
            self.remember_id(h.index, h.version, id);
        } else if cfg.cache != CacheMode::Off && w.exact {
            if let Some((i, version)) = stackcache::insert(sp_off, site, &w, &mut self.victim) {
                self.remember_id(i, version, id);
            }
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
