//! The process's table of loaded modules for in-process unwinding, kept current across dlopen and
//! dlclose, and the bounds of each thread's stack.
//!
//! The table is a framehop unwinder over each module's `.eh_frame_hdr` and `.eh_frame`, read in
//! place from the mapped image (PT_GNU_EH_FRAME): nothing is copied or parsed up front. It is
//! published through an atomic pointer and never freed, because another thread may be walking
//! with it; a rebuild costs a few kilobytes and happens only when the loader's add/remove counters
//! move. A module without unwind information is still listed, and framehop walks its frames by
//! frame pointer.
//!
//! Lifetime rule: `dlclose` is interposed so that walks pause while it runs and the table is
//! rebuilt after it returns, so no table in use names a module that is no longer mapped. Modules added by dlopen are picked up when a
//! walk meets an address outside every known module, or at the next thread start.

use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};

use framehop::x86_64::{CacheX86_64, UnwinderX86_64};
use framehop::{ExplicitModuleSectionInfo, Module, MustNotAllocateDuringUnwind, Unwinder};

/// Unwind section bytes, borrowed from the mapped module.
pub(crate) type Data = &'static [u8];
/// The unwinder type: allocation-free during walks.
pub(crate) type Uw = UnwinderX86_64<Data, MustNotAllocateDuringUnwind>;
/// The per-thread rule cache.
pub(crate) type Cache = CacheX86_64<MustNotAllocateDuringUnwind>;

/// A published module table.
pub(crate) struct Table {
    /// The unwinder over every module.
    pub uw: Uw,
    /// Executable address ranges of every module, sorted, for the "is this address known" test.
    ranges: Vec<(u64, u64)>,
    /// The loader counters this table was built from.
    counters: u64,
    /// The value of [`DIRTY`] when the build started.
    dirty: u64,
}

impl Table {
    /// Whether `pc` lies in a module this table knows.
    pub(crate) fn knows(&self, pc: u64) -> bool {
        let i = self.ranges.partition_point(|r| r.0 <= pc);
        i > 0 && pc < self.ranges[i - 1].1
    }
}

static CURRENT: AtomicPtr<Table> = AtomicPtr::new(core::ptr::null_mut());
static BUILDING: AtomicBool = AtomicBool::new(false);
/// Nonzero while a dlclose is in progress: walks are skipped (the table may name its module).
static CLOSING: AtomicUsize = AtomicUsize::new(0);
/// Bumped after every dlclose: a table built before then is no longer used, even when the
/// rebuild that should replace it was skipped because another thread was building.
static DIRTY: AtomicU64 = AtomicU64::new(0);
/// The agent's own executable range, whose frames are skipped.
static AGENT_LO: AtomicU64 = AtomicU64::new(0);
static AGENT_HI: AtomicU64 = AtomicU64::new(0);
/// Top of the main thread's stack (its lowest address is `top - MAIN_SIZE`).
static MAIN_TOP: AtomicUsize = AtomicUsize::new(0);
static MAIN_SIZE: AtomicUsize = AtomicUsize::new(0);
/// The default size of a new thread's stack, for threads created without a size.
static DEFAULT_SIZE: AtomicUsize = AtomicUsize::new(8 << 20);

/// The current table, unless a dlclose is under way.
#[inline]
pub(crate) fn table() -> Option<&'static Table> {
    if CLOSING.load(Ordering::Acquire) != 0 {
        return None;
    }
    let p = CURRENT.load(Ordering::Acquire);
    // SAFETY: published tables are leaked, never freed.
    let t = (!p.is_null()).then(|| unsafe { &*p })?;
    (t.dirty == DIRTY.load(Ordering::Acquire)).then_some(t)
}

/// Whether `pc` is in the agent itself.
#[inline]
pub(crate) fn in_agent(pc: u64) -> bool {
    pc >= AGENT_LO.load(Ordering::Relaxed) && pc < AGENT_HI.load(Ordering::Relaxed)
}

struct Collect {
    uw: Uw,
    ranges: Vec<(u64, u64)>,
    counters: u64,
    agent_pc: u64,
}

/// Builds a module from one `dl_iterate_phdr` entry.
///
/// SAFETY: `i` must come from dl_iterate_phdr, so its headers and segments are mapped.
unsafe fn module(i: &libc::dl_phdr_info) -> Option<(Module<Data>, (u64, u64))> {
    let base = i.dlpi_addr;
    // SAFETY: the loader's program headers for this module.
    let phdrs = unsafe { core::slice::from_raw_parts(i.dlpi_phdr, usize::from(i.dlpi_phnum)) };
    let (mut lo, mut hi) = (u64::MAX, 0u64);
    let mut hdr = None;
    for p in phdrs {
        if p.p_type == libc::PT_LOAD && p.p_flags & libc::PF_X != 0 {
            lo = lo.min(p.p_vaddr);
            hi = hi.max(p.p_vaddr + p.p_memsz);
        } else if p.p_type == libc::PT_GNU_EH_FRAME {
            hdr = Some((p.p_vaddr, p.p_memsz));
        }
    }
    if lo >= hi {
        return None;
    }
    let avma = (base + lo, base + hi);
    let mut info = ExplicitModuleSectionInfo::<Data> {
        base_svma: 0,
        text_svma: Some(lo..hi),
        ..Default::default()
    };
    if let Some((hv, hl)) = hdr {
        // SAFETY: PT_GNU_EH_FRAME lies inside a loaded segment.
        let h = unsafe { core::slice::from_raw_parts((base + hv) as *const u8, hl as usize) };
        if let Some(ef) = eh_frame_start(h, base + hv) {
            let ef_svma = ef.wrapping_sub(base);
            // .eh_frame has no length of its own in memory: it runs at most to the end of the
            // loaded segment holding it (its terminator ends the walk earlier).
            let end = phdrs
                .iter()
                .filter(|p| p.p_type == libc::PT_LOAD)
                .find(|p| p.p_vaddr <= ef_svma && ef_svma < p.p_vaddr + p.p_memsz)
                .map(|p| p.p_vaddr + p.p_filesz.min(p.p_memsz));
            if let Some(end) = end.filter(|&e| e > ef_svma) {
                // SAFETY: the range lies inside one loaded segment of this module.
                let e = unsafe {
                    core::slice::from_raw_parts(ef as *const u8, (end - ef_svma) as usize)
                };
                info.eh_frame_hdr_svma = Some(hv..hv + hl);
                info.eh_frame_hdr = Some(h);
                info.eh_frame_svma = Some(ef_svma..end);
                info.eh_frame = Some(e);
            }
        }
    }
    Some((
        Module::new(alloc::string::String::new(), avma.0..avma.1, base, info),
        avma,
    ))
}

/// Decodes the `eh_frame_ptr` field of an `.eh_frame_hdr` mapped at `at`.
fn eh_frame_start(h: &[u8], at: u64) -> Option<u64> {
    if h.len() < 8 || h[0] != 1 {
        return None;
    }
    let enc = h[1];
    let field = &h[4..];
    let (raw, _) = match enc & 0x0f {
        0x00 | 0x04 => (u64::from_le_bytes(field.get(..8)?.try_into().ok()?), 8),
        0x03 => (
            u64::from(u32::from_le_bytes(field[..4].try_into().ok()?)),
            4,
        ),
        0x0b => (
            i32::from_le_bytes(field[..4].try_into().ok()?) as i64 as u64,
            4,
        ),
        0x0c => (u64::from_le_bytes(field.get(..8)?.try_into().ok()?), 8),
        _ => return None,
    };
    match enc & 0x70 {
        0x00 => Some(raw),
        0x10 => Some((at + 4).wrapping_add(raw)),
        0x30 => Some(at.wrapping_add(raw)),
        _ => None,
    }
}

unsafe extern "C" fn visit(
    info: *mut libc::dl_phdr_info,
    _size: usize,
    out: *mut libc::c_void,
) -> libc::c_int {
    // SAFETY: dl_iterate_phdr passes valid info, and `out` is our Collect.
    let (i, c) = unsafe { (&*info, &mut *(out as *mut Collect)) };
    c.counters = ((i.dlpi_adds & 0xffff_ffff) << 32) | (i.dlpi_subs & 0xffff_ffff);
    // SAFETY: `i` comes from dl_iterate_phdr.
    if let Some((m, range)) = unsafe { module(i) } {
        if range.0 <= c.agent_pc && c.agent_pc < range.1 {
            AGENT_LO.store(range.0, Ordering::Relaxed);
            AGENT_HI.store(range.1, Ordering::Relaxed);
        }
        c.uw.add_module(m);
        c.ranges.push(range);
    }
    0
}

/// Rebuilds and publishes the module table (unless another thread is doing so right now).
///
/// Why a thread may build while another does: before the first table is published, a thread
/// that waited for it would lock inside a hook, and one that gave up would record its events
/// without stacks. A library's constructor can start a thread before the agent's constructor has
/// built the first table (`tests/c/stackctor.c`), and such a thread can make all its calls
/// during that build. So while no table is published, a thread that finds another building
/// builds one of its own, and it is published only if no table is there yet.
pub(crate) fn rebuild() {
    // Building allocates (mappings, which a sandbox may forbid): the old table stays in use.
    if crate::sys::sandboxed() || CLOSING.load(Ordering::Acquire) != 0 {
        return;
    }
    if !BUILDING.swap(true, Ordering::Acquire) {
        let t = build();
        // The previous table is leaked on purpose: a walk on another thread may still hold it.
        CURRENT.store(t, Ordering::Release);
        BUILDING.store(false, Ordering::Release);
    } else if CURRENT.load(Ordering::Acquire).is_null() {
        let t = build();
        // A table published meanwhile wins; ours is then leaked like a superseded one.
        let _ = CURRENT.compare_exchange(
            core::ptr::null_mut(),
            t,
            Ordering::AcqRel,
            Ordering::Acquire,
        );
    }
}

/// A table of the modules loaded now, leaked.
fn build() -> *mut Table {
    let dirty = DIRTY.load(Ordering::Acquire);
    let mut c = Collect {
        uw: Uw::new(),
        ranges: Vec::new(),
        counters: 0,
        agent_pc: rebuild as *const () as u64,
    };
    // SAFETY: our callback only reads the loader's info and writes `c`.
    unsafe { libc::dl_iterate_phdr(Some(visit), &mut c as *mut Collect as *mut libc::c_void) };
    c.ranges.sort_unstable();
    alloc::boxed::Box::into_raw(alloc::boxed::Box::new(Table {
        uw: c.uw,
        ranges: c.ranges,
        counters: c.counters | 1 << 63,
        dirty,
    }))
}

/// Rebuilds if modules were loaded or unloaded since the table was built (but not during a
/// dlclose: [`close_end`] rebuilds after it).
pub(crate) fn refresh() {
    let now = crate::modules::current();
    match table() {
        Some(t) if t.counters == now => {}
        _ => rebuild(),
    }
}

/// Marks the start of a dlclose: walks pause until [`close_end`].
pub(crate) fn close_begin() {
    CLOSING.fetch_add(1, Ordering::AcqRel);
}

/// Marks the end of a dlclose and rebuilds without the closed module.
pub(crate) fn close_end() {
    DIRTY.fetch_add(1, Ordering::AcqRel);
    CLOSING.fetch_sub(1, Ordering::AcqRel);
    rebuild();
}

extern "C" {
    /// The loader's record of the main thread's initial stack pointer.
    static __libc_stack_end: *mut libc::c_void;
}

/// Notes the main thread's stack and the default thread stack size.
fn init_stacks() {
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct we pass.
    let size = if unsafe { libc::getrlimit(libc::RLIMIT_STACK, &mut rl) } == 0
        && rl.rlim_cur != libc::RLIM_INFINITY
    {
        rl.rlim_cur as usize
    } else {
        8 << 20
    };
    DEFAULT_SIZE.store(size.max(1 << 16), Ordering::Relaxed);
    // SAFETY: set by the loader before any constructor runs, never changed afterwards.
    let top = unsafe { __libc_stack_end } as usize;
    MAIN_TOP.store(top, Ordering::Relaxed);
    MAIN_SIZE.store(size.max(1 << 16), Ordering::Relaxed);
}

/// The main thread's stack as (top, lowest address).
pub(crate) fn main_stack() -> (usize, usize) {
    if MAIN_TOP.load(Ordering::Relaxed) == 0 {
        init_stacks();
    }
    let top = MAIN_TOP.load(Ordering::Relaxed);
    (top, top.saturating_sub(MAIN_SIZE.load(Ordering::Relaxed)))
}

/// The stack size a thread created with `attr` gets.
pub(crate) fn thread_stack_size(attr: *const libc::pthread_attr_t) -> usize {
    let mut size = 0usize;
    // SAFETY: a non-null attr is the caller's initialized attribute object; the getter only reads.
    if !attr.is_null() && unsafe { libc::pthread_attr_getstacksize(attr, &mut size) } == 0 {
        return size;
    }
    DEFAULT_SIZE.load(Ordering::Relaxed)
}

/// A fresh per-thread rule cache, in its own mapping (see `alloc`).
pub(crate) fn new_cache() -> *mut Cache {
    alloc::boxed::Box::into_raw(alloc::boxed::Box::new(Cache::new_in()))
}

/// Frees a cache made by [`new_cache`].
///
/// SAFETY: `c` came from [`new_cache`] and is not used again.
pub(crate) unsafe fn free_cache(c: *mut Cache) {
    if !c.is_null() {
        // SAFETY: per the contract.
        drop(unsafe { alloc::boxed::Box::from_raw(c) });
    }
}
