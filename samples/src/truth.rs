//! Ground-truth side files for the Rust samples (the format is in `samples/TRUTH.md`).
//!
//! Lines are written with `syscall(SYS_write)`, which the agent passes through without recording,
//! so the truth never appears in the trace it is compared with.

use std::ffi::CString;
use std::sync::OnceLock;

static FD: OnceLock<Option<i32>> = OnceLock::new();

/// Opens the file named by `$SCALPEL_TRUTH` (nothing happens when it is unset) and writes the
/// header line. Call once at start.
pub fn open(program: &str) {
    let fd = FD.get_or_init(|| {
        let path = std::env::var_os("SCALPEL_TRUTH")?;
        let path = CString::new(std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str())).ok()?;
        let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_APPEND | libc::O_CLOEXEC;
        // SAFETY: a NUL-terminated path; openat through syscall() is not recorded by the agent.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_openat,
                libc::AT_FDCWD,
                path.as_ptr(),
                flags,
                0o644,
            )
        };
        (fd >= 0).then_some(fd as i32)
    });
    if fd.is_some() {
        // SAFETY: getpid has no preconditions.
        let pid = unsafe { libc::getpid() };
        write_line(&format!("{{\"program\":\"{program}\",\"pid\":{pid}}}\n"));
    }
}

/// CLOCK_MONOTONIC nanoseconds, the clock of the traces' times.
pub fn now() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// Records one task instance on the calling thread.
pub fn task(kind: &str, id: i64, parent: i64, start_ns: u64, end_ns: u64) {
    if FD.get().copied().flatten().is_none() {
        return;
    }
    // SAFETY: getpid and gettid have no preconditions.
    let (pid, tid) = unsafe { (libc::getpid(), libc::syscall(libc::SYS_gettid)) };
    write_line(&format!(
        "{{\"type\":\"{kind}\",\"id\":{id},\"parent\":{parent},\"pid\":{pid},\"tid\":{tid},\"start_ns\":{start_ns},\"end_ns\":{end_ns}}}\n"
    ));
}

fn write_line(line: &str) {
    if let Some(Some(fd)) = FD.get() {
        // SAFETY: writing our own buffer to our own descriptor; one short write to an O_APPEND
        // file, so lines from different threads never interleave.
        unsafe { libc::syscall(libc::SYS_write, *fd, line.as_ptr(), line.len()) };
    }
}
