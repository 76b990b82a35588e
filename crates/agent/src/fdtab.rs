//! What each file descriptor is: its channel kind and the identities of its two stream
//! directions (see `channel`), resolved once per descriptor (at creation, or lazily at first use)
//! and cached.

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicPtr, AtomicU32, Ordering};

use scalpel_format::format::ChanKind;

use crate::channel::{self, Endpoint, Info, Role};
use crate::global::{self, Config};
use crate::sys;

/// Descriptors at or above this number are not tracked (their events carry no channel).
const MAX_FD: usize = 1 << 16;

const UNKNOWN: u32 = 0;
const RESOLVED: u32 = 2;
/// Low bits of a state that is being resolved; the bits above them hold the describing
/// thread's id, so a signal handler that interrupted its own thread's describing can tell.
const RESOLVING: u32 = 1;
const OWNER_SHIFT: u32 = 2;

/// The state that marks an entry being described by the calling thread.
fn resolving() -> u32 {
    ((sys::gettid() as u32) << OWNER_SHIFT) | RESOLVING
}

/// The descriptor's entry is being described by the calling thread itself: the call was made
/// by a signal handler that interrupted the describing, and waiting would wait forever.
pub(crate) struct InUse;

struct Entry {
    state: AtomicU32,
    info: UnsafeCell<Info>,
}

static TABLE: AtomicPtr<Entry> = AtomicPtr::new(core::ptr::null_mut());

fn table() -> Option<&'static [Entry]> {
    let p = TABLE.load(Ordering::Acquire);
    if p.is_null() {
        return map_table();
    }
    // SAFETY: the mapping holds MAX_FD zeroed entries (a valid UNKNOWN state) and is never freed.
    Some(unsafe { core::slice::from_raw_parts(p, MAX_FD) })
}

/// Maps the table on first use (another thread may win the race; its mapping is then used).
#[cold]
fn map_table() -> Option<&'static [Entry]> {
    let n = MAX_FD * core::mem::size_of::<Entry>();
    let m = sys::mmap_anon(n)? as *mut Entry;
    let p = match TABLE.compare_exchange(
        core::ptr::null_mut(),
        m,
        Ordering::AcqRel,
        Ordering::Acquire,
    ) {
        Ok(_) => m,
        Err(other) => {
            sys::munmap(m.cast(), n);
            other
        }
    };
    // SAFETY: as in `table`.
    Some(unsafe { core::slice::from_raw_parts(p, MAX_FD) })
}

#[inline(always)]
fn entry(fd: i32) -> Option<&'static Entry> {
    if fd < 0 || fd as usize >= MAX_FD {
        return None;
    }
    table().map(|t| &t[fd as usize])
}

/// Describes `fd` afresh, knowing which side of a connection it is (accept, connect).
pub(crate) fn get_as(cfg: &Config, fd: i32, role: Role) -> Option<&'static Info> {
    let e = entry(fd)?;
    e.state.store(resolving(), Ordering::Release);
    // SAFETY: we own RESOLVING.
    resolve(cfg, fd, unsafe { &mut *e.info.get() }, role);
    e.state.store(RESOLVED, Ordering::Release);
    // SAFETY: just resolved.
    Some(unsafe { &*e.info.get() })
}

/// The cached description of `fd`, resolving it now if needed (None also when the calling
/// thread is describing it already, see [`lookup`]).
#[inline(always)]
pub(crate) fn get(cfg: &Config, fd: i32) -> Option<&'static Info> {
    lookup(cfg, fd).ok().flatten()
}

/// The cached description of `fd`, resolving it now if needed, or [`InUse`] when this very
/// thread is describing it (a signal handler's call). Inlined into every transfer hook: the
/// usual case is a load and a compare.
#[inline(always)]
pub(crate) fn lookup(cfg: &Config, fd: i32) -> Result<Option<&'static Info>, InUse> {
    let Some(e) = entry(fd) else { return Ok(None) };
    if e.state.load(Ordering::Acquire) == RESOLVED {
        // SAFETY: RESOLVED is stored (Release) only after `info` was fully written.
        return Ok(Some(unsafe { &*e.info.get() }));
    }
    get_slow(cfg, fd, e)
}

/// [`lookup`] for a descriptor not yet described here, or being described by another thread.
#[cold]
#[inline(never)]
fn get_slow(cfg: &Config, fd: i32, e: &'static Entry) -> Result<Option<&'static Info>, InUse> {
    match e.state.load(Ordering::Acquire) {
        // SAFETY: RESOLVED is stored (Release) only after `info` was fully written.
        RESOLVED => Ok(Some(unsafe { &*e.info.get() })),
        UNKNOWN => {
            let mine = resolving();
            if let Err(now) =
                e.state
                    .compare_exchange(UNKNOWN, mine, Ordering::AcqRel, Ordering::Acquire)
            {
                return wait_resolved(e, now);
            }
            // SAFETY: we own RESOLVING, so no one reads or writes `info` meanwhile.
            resolve(cfg, fd, unsafe { &mut *e.info.get() }, Role::Unknown);
            e.state.store(RESOLVED, Ordering::Release);
            // SAFETY: just resolved.
            Ok(Some(unsafe { &*e.info.get() }))
        }
        now => wait_resolved(e, now),
    }
}

/// Spins before [`wait_resolved`] starts yielding.
const SPINS: u32 = 64;
/// How long [`wait_resolved`] yields before it gives up, in nanoseconds.
const PATIENCE_NS: u64 = 200_000_000;

/// Waits for another thread to finish describing a descriptor. Both first used it at once (a
/// pool's workers posting to one queue socket), and a call passed through undescribed would leave
/// its bytes out of the stream's offsets, shifting every later match on that stream. Describing
/// takes a few system calls, so the wait is short unless the describer was preempted; on a
/// loaded machine that can take a scheduler period or more, which a count of yields (about a
/// millisecond on an idle core) did not cover. It is bounded in time, so a describer stopped
/// for long (a debugger) costs this call its record, never a hang.
///
/// It never waits for its own thread: a signal handler that interrupted this thread's
/// describing (a self-pipe handler writing to the pipe the interrupted code writes) would wait
/// for code that runs only once it returns, and the next signal would find it waiting again.
#[cold]
fn wait_resolved(e: &'static Entry, seen: u32) -> Result<Option<&'static Info>, InUse> {
    if seen & RESOLVING != 0 && seen == resolving() {
        return Err(InUse);
    }
    Ok(wait_other(e))
}

/// [`wait_resolved`] for an entry another thread describes.
fn wait_other(e: &'static Entry) -> Option<&'static Info> {
    let mut since = 0;
    let mut i: u32 = 0;
    loop {
        i = i.saturating_add(1);
        match e.state.load(Ordering::Acquire) {
            // SAFETY: RESOLVED is stored (Release) only after `info` was fully written.
            RESOLVED => return Some(unsafe { &*e.info.get() }),
            // Closed meanwhile: the call is on a descriptor that no longer exists.
            UNKNOWN => return None,
            _ if i <= SPINS => core::hint::spin_loop(),
            _ => {
                let now = sys::clock_ns(libc::CLOCK_MONOTONIC);
                if since == 0 {
                    since = now;
                } else if now.saturating_sub(since) > PATIENCE_NS {
                    return None;
                }
                sys::sched_yield();
            }
        }
    }
}

/// The description of `fd` if it is already cached (never resolves).
pub(crate) fn cached(fd: i32) -> Option<&'static Info> {
    let e = entry(fd)?;
    // SAFETY: RESOLVED is stored (Release) only after `info` was fully written.
    (e.state.load(Ordering::Acquire) == RESOLVED).then(|| unsafe { &*e.info.get() })
}

/// Forgets `fd` (it was closed or replaced).
pub(crate) fn forget(fd: i32) {
    if let Some(e) = entry(fd) {
        e.state.store(UNKNOWN, Ordering::Release);
    }
}

/// Forgets every descriptor in `first..=last` (close_range).
pub(crate) fn forget_range(first: u32, last: u32) {
    let Some(t) = table() else { return };
    let end = (last as usize).min(MAX_FD - 1);
    for e in t.iter().take(end + 1).skip(first as usize) {
        if e.state.load(Ordering::Relaxed) != UNKNOWN {
            e.state.store(UNKNOWN, Ordering::Release);
        }
    }
}

/// Makes `new` describe the same channel as `old` (dup).
pub(crate) fn copy(cfg: &Config, old: i32, new: i32) {
    let (Some(src), Some(dst)) = (get(cfg, old), entry(new)) else {
        return;
    };
    dst.state.store(resolving(), Ordering::Release);
    // SAFETY: `dst` is RESOLVING and owned by us; `src` is RESOLVED and immutable.
    unsafe { core::ptr::copy_nonoverlapping(src as *const Info, dst.info.get(), 1) };
    dst.state.store(RESOLVED, Ordering::Release);
}

/// Gives `fd` a process-numbered identity (eventfd, epoll) so that fork children that inherit it
/// agree with the parent.
pub(crate) fn set_local(cfg: &Config, fd: i32, kind: ChanKind) {
    let Some(e) = entry(fd) else { return };
    e.state.store(resolving(), Ordering::Release);
    // SAFETY: we own RESOLVING.
    let info = unsafe { &mut *e.info.get() };
    let me = Endpoint::local(cfg.pid, global::next_local(cfg));
    channel::fill(info, kind, me, me, kind == ChanKind::Eventfd);
    info.bind(global::table(cfg));
    e.state.store(RESOLVED, Ordering::Release);
}

fn resolve(cfg: &Config, fd: i32, info: &mut Info, role: Role) {
    describe(cfg, fd, info, role);
    info.bind(global::table(cfg));
}

/// What `fd` is (its channel's kind and stream keys), from the kernel.
fn describe(cfg: &Config, fd: i32, info: &mut Info, role: Role) {
    // SAFETY: zeroed is a valid `stat`.
    let mut st: libc::stat = unsafe { core::mem::zeroed() };
    if sys::fstat(fd, &mut st) < 0 {
        return channel::none(info, ChanKind::Other);
    }
    let me = Endpoint::inode(st.st_dev, st.st_ino);
    match st.st_mode & libc::S_IFMT {
        // A pipe carries one direction: writer and reader both name it by its inode.
        libc::S_IFIFO => channel::fill(info, ChanKind::Pipe, me, me, true),
        libc::S_IFSOCK => crate::sock::resolve(fd, &st, role, info),
        libc::S_IFREG => channel::fill(info, ChanKind::File, me, me, false),
        libc::S_IFCHR => channel::fill(info, ChanKind::Char, me, me, false),
        _ => {
            let mut link = [0u8; 32];
            let mut p = sys::PathBuf::<40>::new();
            p.push(b"/proc/self/fd/").push_u64(fd as u64);
            let n = p
                .c_bytes()
                .map_or(-1, |path| sys::readlinkat(libc::AT_FDCWD, path, &mut link));
            let l = &link[..n.max(0) as usize];
            let local = Endpoint::local(cfg.pid, global::next_local(cfg));
            if l.starts_with(b"anon_inode:[eventfd]") {
                channel::fill(info, ChanKind::Eventfd, local, local, true)
            } else if l.starts_with(b"anon_inode:[eventpoll]") {
                channel::fill(info, ChanKind::Other, local, local, false)
            } else {
                channel::none(info, ChanKind::Other)
            }
        }
    }
}
