//! Raw system calls and clocks that bypass libc, so the agent never re-enters its own hooks.

use core::arch::asm;
use core::sync::atomic::{AtomicBool, Ordering};

/// Set once the host has put itself in a seccomp sandbox (`enter_sandbox`): from then on the
/// agent makes no system call of its own, because a filter installed after the agent started may
/// kill the process for any call the host itself never makes (an allow-list).
static SANDBOXED: AtomicBool = AtomicBool::new(false);

/// Whether the agent's own system calls are off (see [`SANDBOXED`]).
#[inline]
pub(crate) fn sandboxed() -> bool {
    SANDBOXED.load(Ordering::Relaxed)
}

/// Turns the agent's own system calls off, before the host installs a seccomp filter or enters
/// strict mode (`prctl(PR_SET_SECCOMP)`, `seccomp(2)` through `syscall`). Returns whether it was
/// off already, so that a refused install can turn them back on.
pub(crate) fn enter_sandbox() -> bool {
    SANDBOXED.swap(true, Ordering::SeqCst)
}

/// Undoes [`enter_sandbox`] when the host's install failed and the calls were on before.
pub(crate) fn leave_sandbox(was: bool) {
    if !was {
        SANDBOXED.store(false, Ordering::SeqCst);
    }
}

/// Whether this process already runs under seccomp when the agent starts (a sandboxed process
/// that exec'd a traced image keeps its filter): `Seccomp:` in `/proc/self/status`, read with
/// the calls the loader itself has just made. Unknown counts as sandboxed.
pub(crate) fn seccomp_at_start() -> bool {
    let mut buf = [0u8; 4096];
    // No /proc (a minimal container): nothing says there is a filter.
    let Some(len) = read_file(b"/proc/self/status\0", &mut buf) else {
        return false;
    };
    let text = &buf[..len];
    const KEY: &[u8] = b"\nSeccomp:";
    match text.windows(KEY.len()).position(|w| w == KEY) {
        Some(at) => text[at + KEY.len()..]
            .iter()
            .find(|b| !b.is_ascii_whitespace())
            .is_none_or(|&b| b != b'0'),
        None => false,
    }
}

/// Performs a raw system call with up to six arguments and returns the kernel's result
/// (negative errno on failure), or -ENOSYS without calling when the host is sandboxed
/// ([`sandboxed`]). It does not touch `errno`.
#[inline]
pub(crate) fn syscall6(nr: i64, a: [usize; 6]) -> isize {
    if sandboxed() {
        return -(libc::ENOSYS as isize);
    }
    let ret: isize;
    // SAFETY: the x86_64 Linux syscall ABI: number in rax, arguments in rdi, rsi, rdx, r10, r8,
    // r9; rcx and r11 are clobbered by the instruction. Callers pass arguments valid for `nr`.
    unsafe {
        asm!(
            "syscall",
            inlateout("rax") nr as isize => ret,
            in("rdi") a[0],
            in("rsi") a[1],
            in("rdx") a[2],
            in("r10") a[3],
            in("r8") a[4],
            in("r9") a[5],
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack)
        );
    }
    ret
}

/// Shorthand for calls with fewer arguments.
#[inline]
pub(crate) fn sys(nr: i64, a0: usize, a1: usize, a2: usize) -> isize {
    syscall6(nr, [a0, a1, a2, 0, 0, 0])
}

/// Current thread id.
#[inline]
pub(crate) fn gettid() -> i32 {
    sys(libc::SYS_gettid, 0, 0, 0) as i32
}

/// This thread's CPU time in nanoseconds (0 if the clock cannot be read). A raw system call:
/// the vDSO has no fast path for this clock, and errno stays untouched.
#[inline]
pub(crate) fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    let r = sys(
        libc::SYS_clock_gettime,
        libc::CLOCK_THREAD_CPUTIME_ID as usize,
        core::ptr::addr_of_mut!(ts) as usize,
        0,
    );
    if r != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Gives the CPU to another runnable thread, if any.
pub(crate) fn sched_yield() {
    sys(libc::SYS_sched_yield, 0, 0, 0);
}

/// Current process id (from the kernel, never cached by libc).
#[inline]
pub(crate) fn getpid() -> i32 {
    sys(libc::SYS_getpid, 0, 0, 0) as i32
}

/// Opens `path` (NUL-terminated) relative to `dirfd`.
pub(crate) fn openat(dirfd: i32, path: &[u8], flags: i32, mode: u32) -> isize {
    syscall6(
        libc::SYS_openat,
        [
            dirfd as usize,
            path.as_ptr() as usize,
            flags as usize,
            mode as usize,
            0,
            0,
        ],
    )
}

/// Closes a descriptor.
pub(crate) fn close(fd: i32) -> isize {
    sys(libc::SYS_close, fd as usize, 0, 0)
}

/// Reads the file at `path` (NUL-terminated) into `buf`, as much as it holds or `buf` takes:
/// the number of bytes read, or None if it could not be opened.
pub(crate) fn read_file(path: &[u8], buf: &mut [u8]) -> Option<usize> {
    let fd = openat(libc::AT_FDCWD, path, libc::O_RDONLY | libc::O_CLOEXEC, 0);
    let fd = i32::try_from(fd).ok().filter(|&fd| fd >= 0)?;
    let mut len = 0;
    while len < buf.len() {
        let n = read(fd, &mut buf[len..]);
        if n <= 0 {
            break;
        }
        len += n as usize;
    }
    close(fd);
    Some(len)
}

/// Reads into `buf`.
pub(crate) fn read(fd: i32, buf: &mut [u8]) -> isize {
    sys(
        libc::SYS_read,
        fd as usize,
        buf.as_mut_ptr() as usize,
        buf.len(),
    )
}

/// Maps memory; returns the address or a negative errno.
pub(crate) fn mmap(addr: usize, len: usize, prot: i32, flags: i32, fd: i32, off: u64) -> isize {
    syscall6(
        libc::SYS_mmap,
        [
            addr,
            len,
            prot as usize,
            flags as usize,
            fd as usize,
            off as usize,
        ],
    )
}

/// Copies `buf.len()` bytes from `addr` in this process into `buf` without faulting: the kernel
/// reads them (`process_vm_readv`), so an address the caller got from the host that points
/// nowhere gives a short count instead of SIGSEGV. Returns how many bytes were copied.
pub(crate) fn read_own(addr: usize, buf: &mut [u8]) -> usize {
    let local = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let remote = libc::iovec {
        iov_base: addr as *mut libc::c_void,
        iov_len: buf.len(),
    };
    let r = syscall6(
        libc::SYS_process_vm_readv,
        [
            getpid() as usize,
            core::ptr::addr_of!(local) as usize,
            1,
            core::ptr::addr_of!(remote) as usize,
            1,
            0,
        ],
    );
    usize::try_from(r).unwrap_or(0)
}

/// Maps anonymous private zeroed memory.
pub(crate) fn mmap_anon(len: usize) -> Option<*mut u8> {
    let r = mmap(
        0,
        len,
        libc::PROT_READ | libc::PROT_WRITE,
        libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
        -1,
        0,
    );
    (r >= 0).then_some(r as *mut u8)
}

/// Unmaps memory.
pub(crate) fn munmap(addr: *mut u8, len: usize) -> isize {
    sys(libc::SYS_munmap, addr as usize, len, 0)
}

/// Raw `pwrite`: `len` bytes from `buf` at file offset `off`.
pub(crate) fn pwrite(fd: i32, buf: *const u8, len: usize, off: u64) -> isize {
    if !below_fsize_limit(off, len as u64) {
        return -(libc::EFBIG as isize);
    }
    syscall6(
        libc::SYS_pwrite64,
        [fd as usize, buf as usize, len, off as usize, 0, 0],
    )
}

/// Reserves file blocks so that later stores through a shared mapping cannot fault on a full
/// disk (a store into a hole the filesystem cannot fill raises SIGBUS).
pub(crate) fn fallocate(fd: i32, off: u64, len: u64) -> isize {
    if !below_fsize_limit(off, len) {
        return -(libc::EFBIG as isize);
    }
    syscall6(
        libc::SYS_fallocate,
        [fd as usize, 0, off as usize, len as usize, 0, 0],
    )
}

/// Sets a file's size.
pub(crate) fn ftruncate(fd: i32, len: u64) -> isize {
    if !below_fsize_limit(0, len) {
        return -(libc::EFBIG as isize);
    }
    sys(libc::SYS_ftruncate, fd as usize, len as usize, 0)
}

/// Whether a write or reservation of `len` bytes at `off` stays within the process's file size
/// limit (`RLIMIT_FSIZE`, which the host may set at any time). The kernel answers one that
/// does not with SIGXFSZ, whose default action kills the host: the agent's own file I/O must
/// never raise a signal, so it checks first and treats the file as full.
pub(crate) fn below_fsize_limit(off: u64, len: u64) -> bool {
    let mut lim = libc::rlimit64 {
        rlim_cur: 0,
        rlim_max: 0,
    };
    let r = syscall6(
        libc::SYS_prlimit64,
        [
            0,
            libc::RLIMIT_FSIZE as usize,
            0,
            core::ptr::addr_of_mut!(lim) as usize,
            0,
            0,
        ],
    );
    r != 0 || lim.rlim_cur == libc::RLIM64_INFINITY || off.saturating_add(len) <= lim.rlim_cur
}

/// Whether `fd` is a file on tmpfs (where its pages live in memory from `fallocate` on).
pub(crate) fn on_tmpfs(fd: i32) -> bool {
    // SAFETY: zeroed is a valid statfs.
    let mut st: libc::statfs = unsafe { core::mem::zeroed() };
    sys(
        libc::SYS_fstatfs,
        fd as usize,
        &mut st as *mut libc::statfs as usize,
        0,
    ) == 0
        && st.f_type == libc::TMPFS_MAGIC
}

/// `fstat` into a caller-provided buffer.
pub(crate) fn fstat(fd: i32, st: &mut libc::stat) -> isize {
    sys(
        libc::SYS_fstat,
        fd as usize,
        st as *mut libc::stat as usize,
        0,
    )
}

/// Whether `fd` is a regular file (false when `fstat` fails).
pub(crate) fn is_regular(fd: i32) -> bool {
    // SAFETY: an all-zero `stat` is a valid value of the plain-data struct.
    let mut st: libc::stat = unsafe { core::mem::zeroed() };
    fstat(fd, &mut st) == 0 && st.st_mode & libc::S_IFMT == libc::S_IFREG
}

/// Reads a symlink relative to `dirfd`.
pub(crate) fn readlinkat(dirfd: i32, path: &[u8], buf: &mut [u8]) -> isize {
    syscall6(
        libc::SYS_readlinkat,
        [
            dirfd as usize,
            path.as_ptr() as usize,
            buf.as_mut_ptr() as usize,
            buf.len(),
            0,
            0,
        ],
    )
}

/// CLOCK_MONOTONIC (or another clock) in nanoseconds, through the vDSO when available.
#[inline]
pub(crate) fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec; it is not one of our hooks, and on success it
    // leaves errno alone.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The widest bracket a calibration point may have (about 10 µs on any current CPU): no
/// preemption fits in it.
pub(crate) const TIGHT_TICKS: u64 = 30_000;

/// The narrowest "tight" a process uses, in ticks. Why: a bracket's midpoint is off by up to
/// half its width, and tasks of a microsecond are scored against `CLOCK_MONOTONIC`; a
/// clock read is under 100 ticks here, so 1,000 leaves room yet stays well under a µs.
pub(crate) const TIGHT_FLOOR: u64 = 1_000;

/// A (TSC, CLOCK_MONOTONIC) pair read at one instant: the monotonic reading is bracketed by two
/// TSC reads, and a pair whose bracket is wider than `tight` ticks (the thread was preempted
/// in the middle) is read again, up to four times; the tightest is kept. The TSC value is the
/// bracket's midpoint.
pub(crate) fn clock_pair(tight: u64) -> (u64, u64) {
    let (t, m, _) = clock_pair_width(tight);
    (t, m)
}

/// [`clock_pair`] with the width of its bracket, in ticks.
pub(crate) fn clock_pair_width(tight: u64) -> (u64, u64, u64) {
    let mut best = (0u64, 0u64, u64::MAX);
    for _ in 0..4 {
        let a = rdtsc();
        let m = clock_ns(libc::CLOCK_MONOTONIC);
        let b = rdtsc();
        let width = b.wrapping_sub(a);
        if width < best.2 {
            best = (a + width / 2, m, width);
        }
        if width < tight {
            break;
        }
    }
    best
}

/// Reads the timestamp counter.
#[inline]
pub(crate) fn rdtsc() -> u64 {
    // SAFETY: rdtsc has no memory effects; the CPU supports it on every x86_64.
    unsafe { core::arch::x86_64::_rdtsc() }
}

/// Formats `v` in decimal into `buf`, returning the digits written.
pub(crate) fn fmt_u64(mut v: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    &buf[i..]
}

/// A fixed-capacity byte string builder for paths, used where allocation is not allowed.
pub(crate) struct PathBuf<const N: usize> {
    buf: [u8; N],
    len: usize,
    ok: bool,
}

impl<const N: usize> PathBuf<N> {
    /// An empty path.
    pub(crate) const fn new() -> Self {
        PathBuf {
            buf: [0; N],
            len: 0,
            ok: true,
        }
    }

    /// Appends bytes, remembering if they did not fit (one byte is kept for the NUL).
    pub(crate) fn push(&mut self, b: &[u8]) -> &mut Self {
        if self.len + b.len() < N {
            self.buf[self.len..self.len + b.len()].copy_from_slice(b);
            self.len += b.len();
            self.buf[self.len] = 0;
        } else {
            self.ok = false;
        }
        self
    }

    /// Appends a decimal number.
    pub(crate) fn push_u64(&mut self, v: u64) -> &mut Self {
        let mut tmp = [0u8; 20];
        let digits = fmt_u64(v, &mut tmp);
        let mut local = [0u8; 20];
        local[..digits.len()].copy_from_slice(digits);
        self.push(&local[..digits.len()])
    }

    /// The bytes including the trailing NUL, or None if something did not fit.
    pub(crate) fn c_bytes(&self) -> Option<&[u8]> {
        self.ok.then_some(&self.buf[..self.len + 1])
    }

    /// The bytes without the NUL.
    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    /// Forgets the content.
    pub(crate) fn clear(&mut self) {
        self.len = 0;
        self.ok = true;
        if N > 0 {
            self.buf[0] = 0;
        }
    }
}

impl<const N: usize> Default for PathBuf<N> {
    fn default() -> Self {
        Self::new()
    }
}

/// Saves `errno` now and restores it when dropped.
pub(crate) struct ErrnoGuard(i32);

impl ErrnoGuard {
    /// Saves the current errno.
    #[inline]
    pub(crate) fn save() -> Self {
        // SAFETY: __errno_location returns this thread's errno slot, valid for the thread's life.
        ErrnoGuard(unsafe { *libc::__errno_location() })
    }
}

impl Drop for ErrnoGuard {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: as in `save`.
        unsafe { *libc::__errno_location() = self.0 };
    }
}

/// Grows a file to at least `len` bytes (never shrinks it); false on failure.
pub(crate) fn ftruncate_grow(fd: i32, len: u64) -> bool {
    // SAFETY: zeroed is a valid `stat`.
    let mut st: libc::stat = unsafe { core::mem::zeroed() };
    if fstat(fd, &mut st) < 0 {
        return false;
    }
    st.st_size as u64 >= len || ftruncate(fd, len) >= 0
}

/// Hints that the line at `p` will be read soon. Never faults, whatever `p` is.
#[inline(always)]
pub(crate) fn prefetch_read(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `prefetcht0` only hints the cache; it does not fault on any address.
    unsafe {
        core::arch::asm!("prefetcht0 [{p}]", p = in(reg) p, options(nostack, preserves_flags, readonly));
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
