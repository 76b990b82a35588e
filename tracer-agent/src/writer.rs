//! A thread's trace file: a header page and a sliding `MAP_SHARED` window the records are
//! encoded into, with the committed length published after every record.
//!
//! Nothing here allocates or locks. The page cache owns what we store, so a SIGKILL loses at most
//! the record being written, which the committed length already excludes. Blocks are reserved
//! with `fallocate` before a window is mapped: on a full disk the reservation fails and events are
//! counted as dropped instead of the store faulting with SIGBUS.

use core::sync::atomic::{AtomicU64, Ordering};

use scalpel_format::format::{self, hdr};
use scalpel_format::record::{RawEvent, MAX_EVENT_RECORD};
use scalpel_format::wire::Enc;

use crate::global::Config;
use crate::sys;

/// Size of a mapped window.
const WINDOW: usize = 1 << 20;
/// The smallest window tried when space runs short.
const MIN_WINDOW: usize = 16 << 10;
const PAGE: u64 = 4096;
/// While writing is broken, retry a new window once per this many dropped events.
const RETRY_EVERY: u64 = 4096;

/// The open trace file of one thread.
pub(crate) struct File {
    fd: i32,
    /// Device and inode of our file: checked before every use of `fd` that touches the file, in
    /// case the host closed our descriptor (close_range, dup2) and reused its number.
    dev: u64,
    ino: u64,
    header: *mut u8,
    window: *mut u8,
    win_off: u64,
    win_len: usize,
    /// File offset of the next record.
    pos: u64,
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
    /// Creates `t<tid>.trace` (or `t<tid>.<k>.trace` when taken) in the process directory.
    ///
    /// The file is prepared under a hidden temporary name and renamed once its header is
    /// complete, so a process that exits while a thread is starting leaves no half-made trace.
    pub(crate) fn create(cfg: &Config, tid: i32, index: u32) -> Option<File> {
        // A new file, never an existing one or a planted link (O_EXCL refuses both); a name
        // that is taken (a thread id reused, or a file someone put there) moves to the next.
        let mut name = sys::PathBuf::<64>::new();
        let mut r = -(libc::EEXIST as isize);
        for k in 0..16u64 {
            name = sys::PathBuf::<64>::new();
            name.push(b".t").push_u64(tid as u64);
            if k > 0 {
                name.push(b".").push_u64(k);
            }
            name.push(b".tmp");
            let tmp = name.c_bytes()?;
            r = sys::openat(
                cfg.proc_dir,
                tmp,
                libc::O_RDWR | libc::O_CREAT | libc::O_EXCL | libc::O_CLOEXEC | libc::O_NOFOLLOW,
                0o666,
            );
            if r != -(libc::EEXIST as isize) {
                break;
            }
        }
        if r < 0 {
            return None;
        }
        let tmp = name.c_bytes()?;
        let fd = crate::agentfd::adopt(r as i32);
        let fail = |fd: i32| {
            crate::agentfd::release(fd);
            sys::sys(
                libc::SYS_unlinkat,
                cfg.proc_dir as usize,
                tmp.as_ptr() as usize,
                0,
            );
            None
        };
        sys::fchmod(fd, 0o666);
        // SAFETY: zeroed is a valid stat.
        let mut st: libc::stat = unsafe { core::mem::zeroed() };
        if sys::fstat(fd, &mut st) < 0 || !reserve(fd, 0, PAGE) {
            return fail(fd);
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
            return fail(fd);
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
        // A tid can be reused within a process; later files of the same tid get a suffix.
        let mut named = false;
        for k in 0..1000u64 {
            let mut p = sys::PathBuf::<64>::new();
            p.push(b"t").push_u64(tid as u64);
            if k > 0 {
                p.push(b".").push_u64(k);
            }
            p.push(b".trace");
            let Some(name) = p.c_bytes() else { break };
            let r = sys::syscall6(
                libc::SYS_renameat2,
                [
                    cfg.proc_dir as usize,
                    tmp.as_ptr() as usize,
                    cfg.proc_dir as usize,
                    name.as_ptr() as usize,
                    libc::RENAME_NOREPLACE as usize,
                    0,
                ],
            );
            if r == 0 {
                named = true;
                break;
            }
            if r != -(libc::EEXIST as isize) {
                break;
            }
        }
        if !named {
            sys::munmap(header, PAGE as usize);
            return fail(fd);
        }
        Some(File {
            fd,
            dev: st.st_dev,
            ino: st.st_ino,
            header,
            window: core::ptr::null_mut(),
            win_off: 0,
            win_len: 0,
            pos: format::HEADER_SIZE as u64,
            broken: false,
            dropped: 0,
        })
    }

    fn header_u64(&self, at: usize) -> &AtomicU64 {
        // SAFETY: `at` is an 8-aligned offset inside the header page, which stays mapped while
        // `self` lives; AtomicU64 has the layout of u64.
        unsafe { &*(self.header.add(at) as *const AtomicU64) }
    }

    /// Publishes the stack cache's self-check counters (see `hdr::STACK_CHECKED`).
    pub(crate) fn stack_check(&self, checked: u32, mismatched: u32) {
        if !self.header.is_null() {
            let v = u64::from(checked) | u64::from(mismatched) << 32;
            self.header_u64(hdr::STACK_CHECKED)
                .store(v, Ordering::Relaxed);
        }
    }

    /// Space for `n` bytes at the current position, remapping the window when needed.
    #[inline]
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
        if !self.still_ours() {
            self.broken = true;
            return false;
        }
        let start = self.pos & !(PAGE - 1);
        let need = (self.pos - start) as usize + n;
        let min = need.div_ceil(PAGE as usize) * PAGE as usize;
        let mut len = need.max(WINDOW).div_ceil(PAGE as usize) * PAGE as usize;
        // When the disk is nearly full, smaller windows still use the space that is left.
        while !reserve(self.fd, start, len as u64) {
            if len <= min || len <= MIN_WINDOW {
                self.broken = true;
                return false;
            }
            len = (len / 2).max(min).max(MIN_WINDOW);
        }
        if !self.window.is_null() {
            sys::munmap(self.window, self.win_len);
            self.window = core::ptr::null_mut();
        }
        let r = sys::mmap(
            0,
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            self.fd,
            start,
        );
        if r < 0 {
            self.broken = true;
            return false;
        }
        self.window = r as *mut u8;
        self.win_off = start;
        self.win_len = len;
        self.broken = false;
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
        if !self.header.is_null() {
            self.header_u64(hdr::DROPPED)
                .fetch_add(1, Ordering::Relaxed);
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
    #[inline]
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

    /// Finishes the file at thread exit: final name, clean state, trimmed size, unmapped.
    pub(crate) fn close(&mut self) {
        let name = thread_name();
        // SAFETY: the header page is mapped and writable.
        unsafe {
            core::ptr::copy_nonoverlapping(name.as_ptr(), self.header.add(hdr::THREAD_NAME), 16);
            (self.header.add(hdr::STATE) as *mut u32).write_volatile(format::state::CLOSED);
        }
        self.unmap();
        if self.still_ours() {
            sys::ftruncate(self.fd, self.pos);
            crate::agentfd::release(self.fd);
        }
        self.fd = -1;
    }

    /// Whether our descriptor still refers to our file.
    fn still_ours(&self) -> bool {
        // SAFETY: zeroed is a valid stat.
        let mut st: libc::stat = unsafe { core::mem::zeroed() };
        self.fd >= 0
            && sys::fstat(self.fd, &mut st) == 0
            && st.st_dev == self.dev
            && st.st_ino == self.ino
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

/// Calibration record payload: clock ticks and CLOCK_MONOTONIC now.
pub(crate) fn calibration(cfg: &Config, buf: &mut [u8; 24]) -> usize {
    let (ticks, mono) = if cfg.tsc {
        sys::clock_pair()
    } else {
        let m = sys::clock_ns(libc::CLOCK_MONOTONIC);
        (m, m)
    };
    let mut e = Enc::new(buf);
    e.varint(ticks);
    e.varint(mono);
    e.len()
}
