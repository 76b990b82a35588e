//! The broker's files after it made them: made new (never over an existing file or through a
//! link), opened again only if they are still the regular files made, never blocking on a FIFO
//! planted under their names, and trimmed to what they hold.

use std::os::fd::OwnedFd;

use rustix::fs::{FileType, Mode, OFlags};
use rustix::io::Errno;
use scalpel_model::format::{self, hdr};

/// Whether `st` is a regular file's.
pub(super) fn is_regular(st: &rustix::fs::Stat) -> bool {
    FileType::from_raw_mode(st.st_mode) == FileType::RegularFile
}

/// A file the broker made, opened again with `access`: never through a link, never blocking
/// (a FIFO planted under its name), and only if it is still the regular file made.
pub(super) fn open_made(
    dir: &OwnedFd,
    name: &str,
    access: OFlags,
    dev: u64,
    ino: u64,
) -> Result<OwnedFd, Errno> {
    let fd = rustix::fs::openat(
        dir,
        name,
        access | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let st = rustix::fs::fstat(&fd)?;
    if st.st_dev != dev || st.st_ino != ino || !is_regular(&st) {
        return Err(Errno::STALE);
    }
    Ok(fd)
}

/// A new file only the recording user can read or write, never an existing one or a link.
pub(super) fn create(dir: &OwnedFd, name: &str) -> Result<OwnedFd, Errno> {
    let fd = rustix::fs::openat(
        dir,
        name,
        OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    )?;
    // Whatever the umask said.
    rustix::fs::fchmod(&fd, Mode::from_raw_mode(0o600))?;
    Ok(fd)
}

/// Whether the file made as (`dev`, `ino`) is there and its header was never written (no
/// magic): only then may it be removed. One that is gone or was replaced is not the recorder's.
pub(super) fn header_missing(dir: &OwnedFd, name: &str, dev: u64, ino: u64) -> bool {
    let Ok(fd) = open_made(dir, name, OFlags::RDONLY, dev, ino) else {
        return false;
    };
    let mut magic = [0u8; 8];
    !(matches!(rustix::io::pread(&fd, &mut magic, hdr::MAGIC as u64), Ok(8))
        && magic == format::MAGIC)
}

/// Cuts a thread file to its header and committed records (or to `len` when the thread said how
/// long it is), releasing the space reserved for records never written.
pub(super) fn trim(dir: &OwnedFd, name: &str, dev: u64, ino: u64, len: Option<u64>) {
    let Ok(fd) = open_made(dir, name, OFlags::RDWR, dev, ino) else {
        return;
    };
    let Ok(st) = rustix::fs::fstat(&fd) else {
        return;
    };
    let size = u64::try_from(st.st_size).unwrap_or(0);
    let committed = {
        let mut b = [0u8; 8];
        match rustix::io::pread(&fd, &mut b, hdr::COMMITTED as u64) {
            Ok(8) => u64::from_le_bytes(b),
            _ => return,
        }
    };
    let held = (format::HEADER_SIZE as u64).saturating_add(committed);
    // Never below what the header says is there, never above the file.
    let to = len.map_or(held, |l| l.max(held)).min(size);
    if to < size {
        let _ = rustix::fs::ftruncate(&fd, to);
    }
}
