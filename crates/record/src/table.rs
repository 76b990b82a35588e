//! The table of shared counters while a recording runs, and what of it the trace keeps.
//!
//! Live, the table is a sealed `memfd`, never a file of the trace directory: every traced process
//! maps it `MAP_SHARED`, and any process that gets its descriptor from the broker (a worker that
//! dropped to another user, an untraced CGI script that inherited the socket) could otherwise
//! `ftruncate` it and kill every other one with SIGBUS on its next store. The seals forbid
//! shrinking and growing for good; the pages are reserved before any process runs, so no store
//! ever faults for want of memory. When the recording ends, the loss counters the readers need
//! are written out as `shared.tbl` in the trace directory.

use std::fs::File;
use std::os::fd::OwnedFd;

use rustix::fs::{FallocateFlags, MemfdFlags, Mode, OFlags, SealFlags};
use rustix::io::Errno;
use scalpel_model::format::{shared_loss, SHARED_TABLE};

/// Bytes in the table: the agent's sequence and stream slots, then the loss counters, rounded
/// up to whole pages (the agent maps the first `OFFSET + 8 * COUNT` bytes).
pub(super) const TABLE_LEN: u64 =
    (shared_loss::OFFSET + 8 * shared_loss::COUNT as u64).next_multiple_of(4096);

/// Bytes of `shared.tbl` as the trace keeps it: the counters at their offset, zeros (a hole)
/// before them, as the readers expect.
const KEPT_LEN: u64 = shared_loss::OFFSET + 8 * shared_loss::COUNT as u64;

/// A new table of [`TABLE_LEN`] zero bytes in memory, its pages reserved, that no descriptor
/// can shrink or grow.
pub(super) fn create() -> Result<File, Errno> {
    let fd = rustix::fs::memfd_create(
        "scalpel-shared",
        MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING,
    )?;
    rustix::fs::fallocate(&fd, FallocateFlags::empty(), 0, TABLE_LEN)?;
    rustix::fs::fcntl_add_seals(&fd, SealFlags::SHRINK | SealFlags::GROW | SealFlags::SEAL)?;
    Ok(File::from(fd))
}

/// Adds `n` to loss counter `index` of the table.
pub(super) fn count_loss(table: &File, index: usize, n: u64) {
    let at = shared_loss::OFFSET + 8 * index as u64;
    let mut b = [0u8; 8];
    if !matches!(rustix::io::pread(table, &mut b, at), Ok(8)) {
        b = [0; 8];
    }
    let v = u64::from_le_bytes(b).saturating_add(n);
    let _ = rustix::io::pwrite(table, &v.to_le_bytes(), at);
}

/// Writes the table's loss counters as a new `shared.tbl` (0600, never through a link, never
/// over an existing file) in the directory open at `root`.
pub(super) fn save(table: &File, root: &OwnedFd) -> Result<(), Errno> {
    let mut counters = [0u8; 8 * shared_loss::COUNT];
    let got = rustix::io::pread(table, &mut counters, shared_loss::OFFSET)?;
    if got != counters.len() {
        return Err(Errno::IO);
    }
    let fd = rustix::fs::openat(
        root,
        SHARED_TABLE,
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    )?;
    rustix::fs::fchmod(&fd, Mode::from_raw_mode(0o600))?;
    let mut at = shared_loss::OFFSET;
    let mut rest = &counters[..];
    while !rest.is_empty() {
        let n = rustix::io::pwrite(&fd, rest, at)?;
        if n == 0 {
            return Err(Errno::IO);
        }
        rest = &rest[n..];
        at += n as u64;
    }
    debug_assert_eq!(at, KEPT_LEN);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// No descriptor of the live table can cut or extend it; its counters end up in the trace.
    #[test]
    fn the_live_table_cannot_change_size_and_its_counters_are_kept() {
        let t = create().unwrap();
        assert_eq!(t.metadata().unwrap().len(), TABLE_LEN);
        let dup = rustix::io::dup(&t).unwrap();
        assert_eq!(rustix::fs::ftruncate(&dup, 0), Err(Errno::PERM));
        assert_eq!(
            rustix::fs::ftruncate(&dup, TABLE_LEN + 4096),
            Err(Errno::PERM)
        );
        count_loss(&t, shared_loss::UNFINISHED_FILES, 3);
        let tmp = tempfile::tempdir().unwrap();
        let root = rustix::fs::open(
            tmp.path(),
            OFlags::RDONLY | OFlags::DIRECTORY,
            Mode::empty(),
        )
        .unwrap();
        save(&t, &root).unwrap();
        let kept = std::fs::read(tmp.path().join(SHARED_TABLE)).unwrap();
        assert_eq!(kept.len() as u64, KEPT_LEN);
        let at = (shared_loss::OFFSET + 8 * shared_loss::UNFINISHED_FILES as u64) as usize;
        assert_eq!(kept[at..at + 8], 3u64.to_le_bytes());
        // Never over an existing file.
        assert_eq!(save(&t, &root), Err(Errno::EXIST));
    }
}
