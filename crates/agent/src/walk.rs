//! One stack walk: from the capture point, out of the agent's frames and up the thread's stack,
//! keeping every return address together with the stack slot it was read from.
//!
//! The slots are what make the stack cache exact: on x86-64 a return address sits just below its
//! caller's stack pointer after the return, and each step's CFA is found from the stack pointer
//! (frame-pointer-less code) or from a saved register that was itself on the walked chain. So
//! when the walk starts at the same stack pointer in the same function, and every slot still
//! holds the same address, a new walk would find the same chain.

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};

use framehop::x86_64::UnwindRegsX86_64;
use framehop::{FrameAddress, Unwinder};

use crate::stackcfg::MAX_DEPTH;
use crate::unwind::{self, Cache};

/// At most this many agent frames are stepped over before the first frame of the program.
const AGENT_FRAMES: usize = 16;
/// Room for the recorded frames plus the agent's frames around them.
const CHAIN: usize = MAX_DEPTH + 2 * AGENT_FRAMES;

/// Why no walk was made.
pub(crate) enum WalkErr {
    /// An address outside every module the table knows (a module loaded since it was built).
    Stale,
    /// No module table (a dlclose is under way) or no frame of the program was reached.
    Unavailable,
}

/// Registers at the capture point and the top of the thread's stack.
pub(crate) struct Start {
    pub pc: u64,
    pub sp: u64,
    pub bp: u64,
    pub top: u64,
}

impl Start {
    /// Reads a stack word, only between the capture's stack pointer and the stack top.
    #[inline]
    pub(crate) fn read(&self, a: u64) -> Option<u64> {
        // SAFETY: [sp, top) is this thread's live stack, above the capturing function's frame.
        (a >= self.sp && a <= self.top - 8).then(|| unsafe { (a as *const u64).read() })
    }
}

/// The return addresses of a walk, agent frames included, innermost first, with their slots as
/// offsets below the stack top. Valid when zeroed (empty).
#[derive(Clone, Copy)]
pub(crate) struct Chain {
    len: usize,
    /// Every return address was read from the slot just below its caller's stack pointer, and
    /// every frame lies in a known module: the chain can be checked again from its slots.
    pub exact: bool,
    slots: [u32; CHAIN],
    addrs: [u64; CHAIN],
}

impl Chain {
    /// Walks from `s`, recording up to `depth` frames of the program. With `strict`, an address
    /// outside every known module stops the walk with [`WalkErr::Stale`]; otherwise the walk goes
    /// on (by frame pointer there) and the chain is marked inexact.
    pub(crate) fn walk(
        s: &Start,
        depth: usize,
        cache: &mut Cache,
        strict: bool,
    ) -> Result<Chain, WalkErr> {
        let table = unwind::table()
            .or_else(|| {
                unwind::rebuild();
                unwind::table()
            })
            .ok_or(WalkErr::Unavailable)?;
        Chain::walk_with(table, s, depth, cache, strict)
    }

    /// [`Chain::walk`] with a table already in hand; never builds one (a signal handler must
    /// not allocate).
    pub(crate) fn walk_with(
        table: &unwind::Table,
        s: &Start,
        depth: usize,
        cache: &mut Cache,
        strict: bool,
    ) -> Result<Chain, WalkErr> {
        let mut c = Chain {
            addrs: [0; CHAIN],
            slots: [0; CHAIN],
            len: 0,
            exact: true,
        };
        let mut regs = UnwindRegsX86_64::new(s.pc, s.sp, s.bp);
        let mut addr = FrameAddress::from_instruction_pointer(s.pc);
        let mut recorded = 0;
        let mut read_stack = |a: u64| s.read(a).ok_or(());
        while c.len < CHAIN && recorded < depth {
            let Ok(Some(ra)) = table
                .uw
                .unwind_frame(addr, &mut regs, cache, &mut read_stack)
            else {
                break;
            };
            if unwind::in_agent(ra) {
                if recorded == 0 && c.len >= AGENT_FRAMES {
                    return Err(WalkErr::Unavailable);
                }
            } else {
                if !table.knows(ra) {
                    if strict {
                        return Err(WalkErr::Stale);
                    }
                    c.exact = false;
                }
                recorded += 1;
            }
            c.push(ra, regs.sp(), s);
            let Some(next) = FrameAddress::from_return_address(ra) else {
                break;
            };
            addr = next;
        }
        if recorded == 0 {
            return Err(WalkErr::Unavailable);
        }
        Ok(c)
    }

    fn push(&mut self, ra: u64, sp: u64, s: &Start) {
        let slot = sp.wrapping_sub(8);
        let off = s.top.wrapping_sub(slot);
        if off > u64::from(u32::MAX) || s.read(slot) != Some(ra) {
            self.exact = false;
        }
        self.addrs[self.len] = ra;
        self.slots[self.len] = off as u32;
        self.len += 1;
    }

    /// Whether two walks found the same chain.
    pub(crate) fn same(&self, other: &Chain) -> bool {
        self.addrs[..self.len] == other.addrs[..other.len]
    }

    /// The call site: the first return address into the program, and its slot as an offset
    /// below the stack top.
    pub(crate) fn site_slot(&self) -> Option<(u64, u32)> {
        let i = self.addrs[..self.len]
            .iter()
            .position(|&a| !unwind::in_agent(a))?;
        Some((self.addrs[i], self.slots[i]))
    }

    /// Copies the frames beyond the agent's outermost one into `out` (for a sample taken while
    /// the agent ran, perhaps inside a libc function it called); returns how many.
    pub(crate) fn frames_beyond_agent(&self, out: &mut [u64; MAX_DEPTH]) -> usize {
        let addrs = &self.addrs[..self.len];
        let from = addrs
            .iter()
            .rposition(|&a| unwind::in_agent(a))
            .map_or(0, |i| i + 1);
        let mut n = 0;
        for &a in &addrs[from..] {
            if n < MAX_DEPTH {
                out[n] = a;
                n += 1;
            }
        }
        n
    }

    /// Copies the program's frames (agent frames left out) into `out`; returns how many.
    pub(crate) fn frames(&self, out: &mut [u64; MAX_DEPTH]) -> usize {
        let mut n = 0;
        for &a in &self.addrs[..self.len] {
            if n < MAX_DEPTH && !unwind::in_agent(a) {
                out[n] = a;
                n += 1;
            }
        }
        n
    }
}

/// A chain as the process-wide stack cache keeps it (see `stackcache`): the same links, in
/// atomics, because other threads read it while one may be rewriting it. Laid out for the
/// check, which reads the length, then the slots, then the addresses, each from its start.
/// Readers find out afterwards whether it changed under them (the entry's version) and must
/// not trust what they read before that, so every read here stays inside the reader's own live
/// stack whatever the words hold. Valid when zeroed (empty).
#[repr(C)]
pub(crate) struct SharedChain {
    len: AtomicU32,
    /// Each slot's offset below the stack top, less 8 (see [`read_below`]).
    slots: [AtomicU32; CHAIN],
    addrs: [AtomicU64; CHAIN],
}

impl SharedChain {
    /// An empty chain, for the cache's static table.
    #[allow(clippy::declare_interior_mutable_const)]
    pub(crate) const EMPTY: SharedChain = SharedChain {
        len: AtomicU32::new(0),
        slots: [const { AtomicU32::new(0) }; CHAIN],
        addrs: [const { AtomicU64::new(0) }; CHAIN],
    };

    /// Copies an exact chain in (by the one thread that holds the entry for writing).
    pub(crate) fn store(&self, c: &Chain) {
        let n = c.len.min(CHAIN);
        for k in 0..n {
            self.slots[k].store(below_top(c.slots[k]), Relaxed);
            self.addrs[k].store(c.addrs[k], Relaxed);
        }
        self.len.store(n as u32, Relaxed);
    }

    /// A copy, exact as it was stored; the caller checks the entry's version afterwards.
    pub(crate) fn load(&self) -> Chain {
        let mut c = Chain {
            len: 0,
            exact: true,
            slots: [0; CHAIN],
            addrs: [0; CHAIN],
        };
        let n = (self.len.load(Relaxed) as usize).min(CHAIN);
        for k in 0..n {
            c.slots[k] = self.slots[k].load(Relaxed).wrapping_add(8);
            c.addrs[k] = self.addrs[k].load(Relaxed);
        }
        c.len = n;
        c
    }

    /// Whether every slot still holds its return address, for a capture whose live stack is
    /// `[top - 8 - below, top)`, as far below the top as the walk that found the chain. Without
    /// a branch per link: the cache checks the call site first, which tells apart the chains
    /// that share a starting point. Each slot is bounded by `below` first: a chain being
    /// rewritten may hold any offset, and the answer is then discarded, but the read must be of
    /// this stack.
    #[inline]
    pub(crate) fn holds_below(&self, top: u64, below: u32) -> bool {
        let n = (self.len.load(Relaxed) as usize).min(CHAIN);
        let mut diff = 0;
        for k in 0..n {
            let off = self.slots[k].load(Relaxed).min(below);
            // SAFETY: `off` is at most `below` (see above).
            let v = unsafe { read_below(top, off) };
            diff |= v ^ self.addrs[k].load(Relaxed);
        }
        n > 0 && diff == 0
    }
}

/// A slot's offset below the top as [`read_below`] takes it: less 8, so that one bound keeps
/// any value within the stack.
#[inline]
pub(crate) fn below_top(slot: u32) -> u32 {
    slot.wrapping_sub(8)
}

/// Reads the stack word `8 + off` bytes below the stack top `top`, aligned or not (`off` from
/// [`below_top`]). No other bounds check is needed: an exact chain read every slot within
/// `[sp, top - 8]` of its walk, so each slot lies between 8 and that walk's `top - sp` below
/// the top, and the same offsets from a capture as far below a top (this thread's or
/// another's) fall within its `[sp, top)`.
///
/// # Safety
/// `off <= top - 8 - sp` for a capture at `sp` whose `[sp, top)` is this thread's live stack.
#[inline(always)]
pub(crate) unsafe fn read_below(top: u64, off: u32) -> u64 {
    // SAFETY: the eight bytes lie within [sp, top), by the caller's contract.
    unsafe { (top.wrapping_sub(8 + u64::from(off)) as *const u64).read_unaligned() }
}
