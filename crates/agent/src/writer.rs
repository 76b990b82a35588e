//! A thread's trace file: a header page and a sliding `MAP_SHARED` window the records are
//! encoded into, with the committed length published after every record.
//!
//! Nothing here allocates or locks. The page cache owns what we store, so a SIGKILL loses at most
//! the record being written, which the committed length already excludes. Blocks are reserved
//! with `fallocate` before a window is mapped: on a full disk the reservation fails and events are
//! counted as dropped instead of the store faulting with SIGBUS.

use core::sync::atomic::{AtomicU64, AtomicU8, Ordering};

use scalpel_format::broker::{Request, RequestKind};
use scalpel_format::format::{self, hdr};
use scalpel_format::record::{HeldPair, RawEvent, MAX_EVENT_RECORD};
use scalpel_format::wire::Enc;

use crate::global::Config;
use crate::sys;

/// Size of a mapped window, once the thread has written a few: a thread's first window is
/// [`FIRST_WINDOW`], and each next one twice the last up to this.
const WINDOW: usize = 1 << 20;
/// Size of a thread's first window: a thread that records a few events costs no more page
/// cache than this.
const FIRST_WINDOW: usize = 16 << 10;
/// Zeros are written ahead in pieces of this size, aligned to it (see [`zero_ahead`]).
const ZERO_CHUNK: usize = 64 << 10;
/// The smallest window tried when space runs short.
const MIN_WINDOW: usize = 16 << 10;
const PAGE: u64 = 4096;
/// While writing is broken, retry a new window once per this many dropped events.
const RETRY_EVERY: u64 = 4096;

/// The open trace file of one thread.
pub(crate) struct File {
    /// The recorder's name for this file, to ask for it again.
    token: u32,
    /// Device and inode of our file: a descriptor the recorder hands over later must match.
    dev: u64,
    ino: u64,
    header: *mut u8,
    window: *mut u8,
    win_off: u64,
    win_len: usize,
    /// File offset of the next record.
    pos: u64,
    /// Length of the next window (see [`WINDOW`]).
    next_len: usize,
    /// Whether zeros are written ahead of each window ([`zero_ahead`]): not on tmpfs, whose
    /// `fallocate` already put the pages in memory.
    zero_ahead: bool,
    broken: bool,
    dropped: u64,
}

/// The calling thread's name (NUL-padded), read with a raw prctl.
fn thread_name() -> [u8; 16] {
    let mut name = [0u8; 16];
    sys::sys(
        libc::SYS_prctl,
        libc::PR_GET_NAME as usize,
        name.as_mut_ptr() as usize,
        0,
    );
    name[15] = 0;
    name
}

/// Writes a header for `kind` into `h`.
pub(crate) fn fill_header(
    h: &mut [u8],
    cfg: &Config,
    kind: format::FileKind,
    tid: i32,
    index: u32,
) {
    h[hdr::MAGIC..hdr::MAGIC + 8].copy_from_slice(&format::MAGIC);
    h[hdr::VERSION..hdr::VERSION + 2].copy_from_slice(&format::VERSION.to_le_bytes());
    h[hdr::HEADER_SIZE..hdr::HEADER_SIZE + 2]
        .copy_from_slice(&(format::HEADER_SIZE as u16).to_le_bytes());
    h[hdr::FILE_KIND] = kind as u8;
    h[hdr::FLAGS] = if cfg.tsc { format::flags::CLOCK_TSC } else { 0 };
    let put32 = |h: &mut [u8], at: usize, v: u32| h[at..at + 4].copy_from_slice(&v.to_le_bytes());
    let put64 = |h: &mut [u8], at: usize, v: u64| h[at..at + 8].copy_from_slice(&v.to_le_bytes());
    put32(h, hdr::PID, cfg.pid as u32);
    put32(h, hdr::TID, tid as u32);
    put32(h, hdr::PPID, sys::sys(libc::SYS_getppid, 0, 0, 0) as u32);
    put32(h, hdr::UID, sys::sys(libc::SYS_getuid, 0, 0, 0) as u32);
    put64(h, hdr::CLOCK0, cfg.clock0);
    put64(h, hdr::MONO0, cfg.mono0);
    put64(h, hdr::TICKS_PER_SEC, cfg.ticks_per_sec);
    put64(h, hdr::REALTIME0, cfg.real0);
    put32(h, hdr::THREAD_INDEX, index);
    h[hdr::EXE..hdr::EXE + hdr::EXE_LEN].copy_from_slice(&cfg.exe);
    let name = thread_name();
    h[hdr::THREAD_NAME..hdr::THREAD_NAME + hdr::THREAD_NAME_LEN].copy_from_slice(&name);
}

impl File {
    /// Gets a new thread file from the recorder (`t<tid>.trace`, or `t<tid>.<k>.trace` when a tid
    /// is reused), writes its header and maps the first window. No descriptor stays open: the
    /// host keeps its whole descriptor budget, and the next window asks the recorder again.
    pub(crate) fn create(cfg: &Config, tid: i32, index: u32) -> Option<File> {
        let (fd, token) = crate::broker::ask(&Request {
            kind: RequestKind::Thread,
            pid: cfg.pid as u32,
            a: cfg.incarnation,
            b: tid as u64,
        })?;
        // SAFETY: zeroed is a valid stat.
        let mut st: libc::stat = unsafe { core::mem::zeroed() };
        if sys::fstat(fd, &mut st) < 0
            || st.st_mode & libc::S_IFMT != libc::S_IFREG
            || !reserve(fd, 0, PAGE)
        {
            sys::close(fd);
            return None;
        }
        let h = sys::mmap(
            0,
            PAGE as usize,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd,
            0,
        );
        if h < 0 {
            sys::close(fd);
            return None;
        }
        let header = h as *mut u8;
        // SAFETY: a fresh PAGE-sized shared mapping of our file.
        fill_header(
            unsafe { core::slice::from_raw_parts_mut(header, PAGE as usize) },
            cfg,
            format::FileKind::Thread,
            tid,
            index,
        );
        let mut file = File {
            token,
            dev: st.st_dev,
            ino: st.st_ino,
            header,
            window: core::ptr::null_mut(),
            win_off: 0,
            win_len: 0,
            pos: format::HEADER_SIZE as u64,
            next_len: FIRST_WINDOW,
            zero_ahead: !sys::on_tmpfs(fd),
            broken: false,
            dropped: 0,
        };
        file.map_window(fd, MAX_EVENT_RECORD);
        sys::close(fd);
        Some(file)
    }

    fn header_u64(&self, at: usize) -> &AtomicU64 {
        // SAFETY: `at` is an 8-aligned offset inside the header page, which stays mapped while
        // `self` lives; AtomicU64 has the layout of u64.
        unsafe { &*(self.header.add(at) as *const AtomicU64) }
    }

    /// Whether the file has its header page (not so when the file could not be created).
    #[inline]
    pub(crate) fn has_header(&self) -> bool {
        !self.header.is_null()
    }

    /// The counts table's entry holding `key`, among its first `n` (see `hdr::COUNT_KEYS`).
    /// Only this thread writes the table; the reader reads it once the thread is gone, so
    /// plain (relaxed) loads and stores do, and the state word is stored last.
    #[inline]
    pub(crate) fn count_find(&self, n: usize, key: u64) -> Option<usize> {
        if self.header.is_null() {
            return None;
        }
        (0..n.min(hdr::COUNT_SLOTS)).find(|&i| {
            self.header_u64(hdr::COUNT_KEYS + 8 * i)
                .load(Ordering::Relaxed)
                == key
        })
    }

    /// Adds one to the count of entry `i` of the counts table.
    #[inline]
    pub(crate) fn count_bump(&self, i: usize) {
        if !self.header.is_null() && i < hdr::COUNT_SLOTS {
            let c = self.header_u64(hdr::COUNT_VALUES + 8 * i);
            c.store(c.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        }
    }

    /// Puts `key` with a count of 1 in entry `n` of the counts table, then publishes the
    /// table as `n + 1` entries of generation `gen`.
    pub(crate) fn count_put(&self, n: usize, key: u64, gen: u32) {
        if !self.header.is_null() && n < hdr::COUNT_SLOTS {
            self.header_u64(hdr::COUNT_KEYS + 8 * n)
                .store(key, Ordering::Relaxed);
            self.header_u64(hdr::COUNT_VALUES + 8 * n)
                .store(1, Ordering::Relaxed);
            self.count_state(gen, n + 1);
        }
    }

    /// Entry `i` of the counts table: (key, count).
    pub(crate) fn count_entry(&self, i: usize) -> (u64, u64) {
        if self.header.is_null() || i >= hdr::COUNT_SLOTS {
            return (0, 0);
        }
        (
            self.header_u64(hdr::COUNT_KEYS + 8 * i)
                .load(Ordering::Relaxed),
            self.header_u64(hdr::COUNT_VALUES + 8 * i)
                .load(Ordering::Relaxed),
        )
    }

    /// Publishes the counts table's state: `n` entries of generation `gen`, in one store, so
    /// that a thread killed at any point leaves a table the reader counts exactly once.
    pub(crate) fn count_state(&self, gen: u32, n: usize) {
        if !self.header.is_null() {
            self.header_u64(hdr::COUNTS_STATE)
                .store(u64::from(gen) << 32 | n as u64, Ordering::Release);
        }
    }

    /// Publishes the stack cache's self-check counters (see `hdr::STACK_CHECKED`).
    pub(crate) fn stack_check(&self, checked: u32, mismatched: u32) {
        if !self.header.is_null() {
            let v = u64::from(checked) | u64::from(mismatched) << 32;
            self.header_u64(hdr::STACK_CHECKED)
                .store(v, Ordering::Relaxed);
        }
    }

    /// Counts an event whose call stack could not be taken (see `hdr::STACKS_MISSED`).
    #[cold]
    pub(crate) fn stack_missed(&self) {
        if !self.header.is_null() {
            self.header_u64(hdr::STACKS_MISSED)
                .fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Space for `n` bytes at the current position, remapping the window when needed.
    #[inline(always)]
    fn space(&mut self, n: usize) -> Option<&mut [u8]> {
        let end = self.win_off + self.win_len as u64;
        if (self.window.is_null() || self.pos + n as u64 > end) && !self.remap(n) {
            return None;
        }
        let at = (self.pos - self.win_off) as usize;
        // SAFETY: remap guarantees pos..pos+n lies inside the mapped window.
        Some(unsafe { core::slice::from_raw_parts_mut(self.window.add(at), n) })
    }

    #[cold]
    fn remap(&mut self, n: usize) -> bool {
        if self.broken && !self.dropped.is_multiple_of(RETRY_EVERY) {
            return false;
        }
        let Some((fd, _)) = crate::broker::ask(&Request {
            kind: RequestKind::Reopen,
            pid: 0,
            a: self.token,
            b: 0,
        }) else {
            self.broken = true;
            return false;
        };
        // SAFETY: zeroed is a valid stat.
        let mut st: libc::stat = unsafe { core::mem::zeroed() };
        let ok = sys::fstat(fd, &mut st) == 0
            && st.st_dev == self.dev
            && st.st_ino == self.ino
            && self.map_window(fd, n);
        sys::close(fd);
        self.broken = !ok;
        ok
    }

    /// Reserves and maps a window through `fd` that holds `n` bytes from the current position.
    fn map_window(&mut self, fd: i32, n: usize) -> bool {
        let start = self.pos & !(PAGE - 1);
        let need = (self.pos - start) as usize + n;
        let min = need.div_ceil(PAGE as usize) * PAGE as usize;
        let mut len = need.max(self.next_len).div_ceil(PAGE as usize) * PAGE as usize;
        // When the disk is nearly full, smaller windows still use the space that is left.
        while !reserve(fd, start, len as u64) {
            if len <= min || len <= MIN_WINDOW {
                return false;
            }
            len = (len / 2).max(min).max(MIN_WINDOW);
        }
        if !self.window.is_null() {
            sys::munmap(self.window, self.win_len);
            self.window = core::ptr::null_mut();
        }
        if self.zero_ahead {
            zero_ahead(fd, self.pos, start + len as u64);
        }
        let r = sys::mmap(
            0,
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd,
            start,
        );
        if r < 0 {
            return false;
        }
        self.window = r as *mut u8;
        self.win_off = start;
        self.win_len = len;
        self.next_len = (len * 2).min(WINDOW);
        true
    }

    /// Counts an event that could not be written.
    #[inline]
    pub(crate) fn drop_event(&mut self) {
        self.dropped += 1;
        self.header_u64(hdr::DROPPED)
            .fetch_add(1, Ordering::Relaxed);
    }

    /// Counts an event lost because the thread was inside the agent when a signal handler made
    /// the call. Only touches an atomic, so it is safe from a handler interrupting our writes.
    pub(crate) fn count_lost(&self) {
        self.add_lost(1);
    }

    /// Counts `n` events lost.
    pub(crate) fn add_lost(&self, n: u64) {
        if !self.header.is_null() {
            self.header_u64(hdr::DROPPED)
                .fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Publishes everything written so far.
    #[inline]
    fn commit(&mut self, n: usize) {
        self.pos += n as u64;
        self.header_u64(hdr::COMMITTED)
            .store(self.pos - format::HEADER_SIZE as u64, Ordering::Release);
    }

    /// Writes one event record; false if it was dropped.
    // Always inlined: the event's fields then stay in registers instead of being stored for
    // the call (25 instructions per event when it was not).
    #[inline(always)]
    pub(crate) fn event(&mut self, ev: &RawEvent) -> bool {
        let Some(buf) = self.space(MAX_EVENT_RECORD) else {
            self.drop_event();
            return false;
        };
        let Ok(buf) = <&mut [u8; MAX_EVENT_RECORD]>::try_from(buf) else {
            return false;
        };
        let n = ev.encode_fast(buf);
        self.commit(n);
        true
    }

    /// Writes one HELD record (two events: a lock and its unlock); false if it was dropped
    /// (counted as two).
    #[inline(always)]
    pub(crate) fn held(&mut self, pair: &HeldPair) -> bool {
        let Some(buf) = self.space(MAX_EVENT_RECORD) else {
            self.drop_event();
            self.drop_event();
            return false;
        };
        let Ok(buf) = <&mut [u8; MAX_EVENT_RECORD]>::try_from(buf) else {
            return false;
        };
        let n = pair.encode_fast(buf);
        self.commit(n);
        true
    }

    /// Writes a record of `kind` whose payload is `a` followed by `b`.
    pub(crate) fn record(&mut self, kind: u8, a: &[u8], b: &[u8]) -> bool {
        let len = a.len() + b.len();
        let total = 1 + scalpel_format::wire::varint_len(len as u64) + len;
        let Some(buf) = self.space(total) else {
            return false;
        };
        let mut e = Enc::new(buf);
        e.u8(kind);
        e.varint(len as u64);
        e.bytes(a);
        e.bytes(b);
        self.commit(total);
        true
    }

    /// Puts `name` (at most 15 bytes) in the header's thread name field.
    pub(crate) fn set_name(&mut self, name: &[u8]) {
        let mut field = [0u8; hdr::THREAD_NAME_LEN];
        let n = name.len().min(hdr::THREAD_NAME_LEN - 1);
        field[..n].copy_from_slice(&name[..n]);
        // SAFETY: the header page is mapped and writable while the file is open.
        unsafe {
            core::ptr::copy_nonoverlapping(
                field.as_ptr(),
                self.header.add(hdr::THREAD_NAME),
                hdr::THREAD_NAME_LEN,
            )
        };
    }

    /// Finishes the file at thread exit: final name, clean state, unmapped, and the recorder told
    /// how long it is, so it trims the space reserved beyond.
    pub(crate) fn close(&mut self) {
        let name = thread_name();
        // SAFETY: the header page is mapped and writable.
        unsafe {
            core::ptr::copy_nonoverlapping(name.as_ptr(), self.header.add(hdr::THREAD_NAME), 16);
            (self.header.add(hdr::STATE) as *mut u32).write_volatile(format::state::CLOSED);
        }
        self.unmap();
        crate::broker::tell(&Request {
            kind: RequestKind::Closed,
            pid: 0,
            a: self.token,
            b: self.pos,
        });
    }

    fn unmap(&mut self) {
        if !self.window.is_null() {
            sys::munmap(self.window, self.win_len);
            self.window = core::ptr::null_mut();
        }
        if !self.header.is_null() {
            sys::munmap(self.header, PAGE as usize);
            self.header = core::ptr::null_mut();
        }
    }
}

/// Makes sure `off..off+len` of the file has blocks, so stores through a mapping cannot fault.
fn reserve(fd: i32, off: u64, len: u64) -> bool {
    match sys::fallocate(fd, off, len) {
        0 => true,
        // Filesystems without fallocate: extend the size and hope for space.
        e if e == -(libc::EOPNOTSUPP as isize) => sys::ftruncate_grow(fd, off + len),
        _ => false,
    }
}

/// Zeros for [`zero_ahead`] to write from. Interior mutability puts it in `.bss`, so its
/// pages are the kernel's zero page until something writes them, which nothing does.
static ZEROS: [AtomicU8; ZERO_CHUNK] = [const { AtomicU8::new(0) }; ZERO_CHUNK];

/// Writes zeros over `from..to` of the file (where nothing is written yet) with `pwrite`, in
/// pieces aligned to [`ZERO_CHUNK`], before the window over it is mapped.
///
/// Why: a store to a page of a shared file mapping that is not yet in the page cache faults,
/// and the kernel allocates, zeroes and dirties that one page (3.6 µs per 4 KiB page on ext4
/// here, about 14 ns per pipe event). Written ahead, the pages are in the page cache already,
/// in large folios where the file system has them, and a store faults once per folio to map
/// it: 1.0 µs per page, all costs counted (see docs/BENCHMARKS.md). A failed write only
/// leaves the pages to fault in as before; the bytes are zeros either way.
fn zero_ahead(fd: i32, from: u64, to: u64) {
    let mut at = from;
    while at < to {
        let piece = (ZERO_CHUNK as u64 - at % ZERO_CHUNK as u64).min(to - at);
        if sys::pwrite(fd, ZEROS.as_ptr().cast(), piece as usize, at) != piece as isize {
            return;
        }
        at += piece;
    }
}

/// Calibration record payload: clock ticks, CLOCK_MONOTONIC now and the bracket's width in
/// ticks (0 without the TSC). Returns its length, the ticks, and whether the pair was read
/// without a preemption between its two clocks.
pub(crate) fn calibration(cfg: &Config, buf: &mut [u8; 32]) -> (usize, u64, bool) {
    let (ticks, mono, width, tight) = if cfg.tsc {
        let (t, m, width) = sys::clock_pair_width(cfg.tight_ticks);
        (t, m, width, width < cfg.tight_ticks)
    } else {
        let m = sys::clock_ns(libc::CLOCK_MONOTONIC);
        (m, m, 0, true)
    };
    let mut e = Enc::new(buf);
    e.varint(ticks);
    e.varint(mono);
    // Why the width: the reader trusts the tightest points of each millisecond, since a point
    // is off by up to half of it (hundreds of nanoseconds at the widest accepted).
    e.varint(width);
    (e.len(), ticks, tight)
}
