//! One-time setup of a process: reading the configuration from the environment, calibrating the
//! clock, getting the process directory from the recorder and writing the process metadata file.

use scalpel_format::broker::{Request, RequestKind};
use scalpel_format::format::{self, hdr, rec};
use scalpel_format::wire::Enc;

use crate::blob::Blob;
use crate::global::Config;
use crate::sys;
use crate::{shared, writer};

/// Fills `cfg` from the environment and sets up this process. False turns recording off.
pub(crate) fn configure(cfg: &mut Config) -> bool {
    // Files come from the recorder alone: without its socket nothing is recorded.
    let Some(broker) = getenv(b"SCALPEL_BROKER\0").filter(|b| b.len() < 40) else {
        return false;
    };
    // An image exec'd inside a seccomp sandbox keeps the filter: the agent makes no call of its
    // own there (the broker's checks and requests alone could be killed).
    if crate::sys::seccomp_at_start() {
        crate::sys::enter_sandbox();
        return false;
    }
    if !crate::broker::connect(broker) {
        return false;
    }
    if let Some(dir) = getenv(b"SCALPEL_DIR\0").filter(|d| d.len() < 1024) {
        cfg.env_dir.push(b"SCALPEL_DIR=").push(dir);
    }
    // Without SCALPEL_AGENT (LD_PRELOAD set by hand), the loader knows where we were loaded from.
    let agent = getenv(b"SCALPEL_AGENT\0")
        .filter(|a| !a.is_empty())
        .or_else(own_path)
        .unwrap_or(b"");
    cfg.agent.push(agent);
    cfg.env_agent.push(b"SCALPEL_AGENT=").push(agent);
    let clock = getenv(b"SCALPEL_CLOCK\0");
    if let Some(c) = clock {
        cfg.env_clock.push(b"SCALPEL_CLOCK=").push(c);
    }
    if let Some(s) = getenv(b"SCALPEL_STACKS\0").filter(|s| s.len() < 80) {
        cfg.env_stacks.push(b"SCALPEL_STACKS=").push(s);
        cfg.stacks = crate::stackcfg::StackCfg::parse(s);
    }
    if let Some(c) = getenv(b"SCALPEL_CPU_TIME\0").filter(|c| c.len() < 16) {
        cfg.env_cpu.push(b"SCALPEL_CPU_TIME=").push(c);
        cfg.cpu_time = c == b"on" || c == b"1";
    }
    if let Some(l) = getenv(b"SCALPEL_LOCKS\0").filter(|l| l.len() < 16) {
        cfg.env_locks.push(b"SCALPEL_LOCKS=").push(l);
        cfg.count_locks = l == b"count";
    }
    if let Some(hz) = getenv(b"SCALPEL_SAMPLE\0").filter(|h| h.len() < 8) {
        cfg.env_sample.push(b"SCALPEL_SAMPLE=").push(hz);
        cfg.sample_hz = hz
            .iter()
            .try_fold(0u32, |v, &b| {
                b.is_ascii_digit().then(|| v * 10 + u32::from(b - b'0'))
            })
            .unwrap_or(0)
            .min(10_000);
    }
    cfg.tsc = clock != Some(b"monotonic".as_slice()) && invariant_tsc();
    calibrate(cfg);

    let shared = crate::broker::ask(&Request {
        kind: RequestKind::Shared,
        pid: sys::getpid() as u32,
        a: 0,
        b: 0,
    });
    let fd = match shared {
        Some((fd, _)) if sys::is_regular(fd) => fd,
        Some((fd, _)) => {
            sys::close(fd);
            -1
        }
        None => -1,
    };
    cfg.table = shared::map(fd);
    if fd >= 0 {
        sys::close(fd);
    }
    if cfg.table.is_null() {
        crate::broker::tell(&Request {
            kind: RequestKind::Unrecorded,
            pid: sys::getpid() as u32,
            a: 0,
            b: 0,
        });
        return false;
    }
    // SAFETY: the destructor is a plain extern "C" function valid for the process lifetime.
    if unsafe { libc::pthread_key_create(&mut cfg.key, Some(crate::tstate::thread_dtor)) } != 0 {
        return false;
    }
    new_process(cfg)
}

/// Per-incarnation setup (at start and in fork children): pid, directory, metadata file. A
/// process that gets no directory is counted in the shared table, so the reader can say so.
pub(crate) fn new_process(cfg: &mut Config) -> bool {
    let ok = open_process(cfg);
    if !ok && !cfg.table.is_null() {
        crate::global::table(cfg).count_loss(format::shared_loss::PROCESSES_WITHOUT_DIR);
    }
    ok
}

fn open_process(cfg: &mut Config) -> bool {
    cfg.pid = sys::getpid();
    let mut exe = [0u8; 4096];
    let n = sys::readlinkat(libc::AT_FDCWD, b"/proc/self/exe\0", &mut exe).max(0) as usize;
    let keep = n.min(hdr::EXE_LEN - 1);
    cfg.exe = [0; hdr::EXE_LEN];
    cfg.exe[..keep].copy_from_slice(&exe[..keep]);

    // The recorder makes the directory `<pid>.<incarnation>` (exec keeps the pid) and its
    // process file, and answers with the file and the incarnation.
    let Some((fd, incarnation)) = crate::broker::ask(&Request {
        kind: RequestKind::Process,
        pid: cfg.pid as u32,
        a: 0,
        b: 0,
    }) else {
        return false;
    };
    cfg.incarnation = incarnation;
    crate::modules::remember_start();
    write_process_file(cfg, fd, &exe[..n]);
    sys::close(fd);
    true
}

/// Writes the process file through `fd`; the header goes last, so a process that dies before
/// finishing leaves a file without one, which the recorder removes and counts.
fn write_process_file(cfg: &Config, fd: i32, exe: &[u8]) {
    let mut header = [0u8; format::HEADER_SIZE];
    writer::fill_header(&mut header, cfg, format::FileKind::Process, 0, 0);
    let mut off = format::HEADER_SIZE as u64;
    let mut body = [0u8; 64];
    let mut blob = Blob::new();
    // Command line.
    if blob.read_file(b"/proc/self/cmdline\0") {
        off += write_record(fd, off, rec::CMDLINE, &[], blob.bytes());
    }
    off += write_record(fd, off, rec::EXE, &[], exe);
    let mut e = Enc::new(&mut body);
    e.varint(cfg.clock0);
    let n = e.len();
    if blob.read_file(b"/proc/self/maps\0") {
        off += write_record(fd, off, rec::MAPS, &body[..n], blob.bytes());
    }
    let mut e = Enc::new(&mut body);
    e.varint(cfg.clock0);
    e.varint(cfg.mono0);
    let n = e.len();
    off += write_record(fd, off, rec::CALIBRATION, &body[..n], &[]);
    header[hdr::COMMITTED..hdr::COMMITTED + 8]
        .copy_from_slice(&(off - format::HEADER_SIZE as u64).to_le_bytes());
    pwrite_all(fd, &header, 0);
}

/// Writes kind, length, `a` and `b` at `off`; returns the bytes written (0 on failure).
fn write_record(fd: i32, off: u64, kind: u8, a: &[u8], b: &[u8]) -> u64 {
    let mut head = [0u8; 16];
    let mut e = Enc::new(&mut head);
    e.u8(kind);
    e.varint((a.len() + b.len()) as u64);
    let h = e.len();
    if pwrite_all(fd, &head[..h], off)
        && pwrite_all(fd, a, off + h as u64)
        && pwrite_all(fd, b, off + (h + a.len()) as u64)
    {
        (h + a.len() + b.len()) as u64
    } else {
        0
    }
}

fn pwrite_all(fd: i32, mut b: &[u8], mut off: u64) -> bool {
    while !b.is_empty() {
        let r = sys::pwrite(fd, b.as_ptr(), b.len(), off);
        if r <= 0 {
            return false;
        }
        b = &b[r as usize..];
        off += r as u64;
    }
    true
}

/// The agent's own file, if the loader recorded an absolute path for it.
fn own_path() -> Option<&'static [u8]> {
    // SAFETY: zeroed is a valid Dl_info; dladdr fills it for an address inside this library, and
    // the name it points to lives as long as the library stays loaded (for good: it is preloaded).
    let mut info: libc::Dl_info = unsafe { core::mem::zeroed() };
    let here = own_path as *const libc::c_void;
    // SAFETY: `here` is an address in this library and `info` is writable.
    if unsafe { libc::dladdr(here, &mut info) } == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dli_fname is a NUL-terminated string owned by the loader.
    let name = unsafe { core::ffi::CStr::from_ptr(info.dli_fname) }.to_bytes();
    name.starts_with(b"/").then_some(name)
}

fn getenv(name: &[u8]) -> Option<&'static [u8]> {
    // SAFETY: getenv reads the environment without allocating; the string it returns lives as
    // long as the environment entry, which programs do not free in practice; we copy it at once.
    let p = unsafe { libc::getenv(name.as_ptr().cast()) };
    if p.is_null() {
        return None;
    }
    // SAFETY: getenv returns a NUL-terminated string.
    Some(unsafe { core::ffi::CStr::from_ptr(p) }.to_bytes())
}

/// True when the CPU says its TSC runs at a constant rate through power states.
fn invariant_tsc() -> bool {
    let max_ext = core::arch::x86_64::__cpuid(0x8000_0000).eax;
    if max_ext < 0x8000_0007 {
        return false;
    }
    let edx = core::arch::x86_64::__cpuid(0x8000_0007).edx;
    edx & (1 << 8) != 0
}

fn calibrate(cfg: &mut Config) {
    cfg.real0 = sys::clock_ns(libc::CLOCK_REALTIME);
    cfg.mono0 = sys::clock_ns(libc::CLOCK_MONOTONIC);
    if !cfg.tsc {
        cfg.clock0 = cfg.mono0;
        cfg.ticks_per_sec = 1_000_000_000;
        return;
    }
    (cfg.clock0, cfg.mono0) = sys::clock_pair(sys::TIGHT_FLOOR);
    // One millisecond of spinning bounds the frequency error to a few parts per million; later
    // CALIBRATION records let the reader correct drift anyway. The narrowest bracket seen is
    // what a clock read costs here, which sets how tight a later point must be.
    let (mut t, mut m, mut width);
    let mut narrowest = u64::MAX;
    loop {
        (t, m, width) = sys::clock_pair_width(sys::TIGHT_FLOOR);
        narrowest = narrowest.min(width);
        if m.saturating_sub(cfg.mono0) >= 1_000_000 {
            break;
        }
    }
    // Why four times: reads on a machine whose clock needs a system call are slower, not
    // wrong; a point is refused only when something came between its two TSC reads.
    cfg.tight_ticks = narrowest
        .saturating_mul(4)
        .clamp(sys::TIGHT_FLOOR, sys::TIGHT_TICKS);
    let dt = t.wrapping_sub(cfg.clock0) as u128;
    let dm = (m - cfg.mono0) as u128;
    cfg.ticks_per_sec = ((dt * 1_000_000_000) / dm.max(1)) as u64;
    if cfg.ticks_per_sec == 0 {
        cfg.tsc = false;
        cfg.clock0 = cfg.mono0;
        cfg.ticks_per_sec = 1_000_000_000;
    }
    cfg.calibration_gap = (u128::from(cfg.ticks_per_sec) * u128::from(format::CALIBRATION_GAP_NS)
        / 1_000_000_000)
        .max(1) as u64;
}
