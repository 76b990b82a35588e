//! Creating the files Scalpel writes (`infer`'s directory, `report -o`, `flame -o`, …) so that no
//! planted link or directory turns a write against the user.
//!
//! The rules: an output directory this run makes is mode 0700 (missing parents too); one that
//! exists must be the user's own and not writable by others. A file is written to a new name
//! created in its directory with `O_CREAT | O_EXCL | O_NOFOLLOW`, mode 0600, through the
//! directory's descriptor, then renamed over the name asked for, which must be absent or a
//! regular file the user owns: a link there is refused (never written through nor replaced), so
//! a link another user planted cannot aim the write at `~/.bashrc`. Nothing is chmodded.
//!
//! A file named on the command line may go in a directory others can write (`/tmp`) only when it
//! is sticky: elsewhere they could rename the file away and plant their own in its place.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};

/// Why an output could not be written.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// The operating system refused, or writing the contents failed.
    #[error("cannot write {}: {source}", .path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// An output directory another user owns.
    #[error(
        "cannot write into {}: it belongs to uid {owner}, not to you (uid {me}); choose a \
         directory of your own",
        .path.display()
    )]
    NotYours {
        /// The directory.
        path: PathBuf,
        /// Its owner.
        owner: u32,
        /// The user running Scalpel.
        me: u32,
    },
    /// An output directory others may write (and so plant files or links in).
    #[error(
        "cannot write into {}: other users may write there (mode {mode:o}){}",
        .path.display(),
        if *.sticky_ok { "; a file must go in a directory of your own or a sticky one such as /tmp" } else { "; choose a directory only you can write" }
    )]
    Shared {
        /// The directory.
        path: PathBuf,
        /// Its mode bits.
        mode: u32,
        /// Whether a sticky directory would have done.
        sticky_ok: bool,
    },
    /// The output's name is taken by a link, a directory or another user's file.
    #[error("refusing to write {}: it is {what}; remove it or choose another name", .path.display())]
    Taken {
        /// The file.
        path: PathBuf,
        /// What is there ("a symbolic link (never written through)", …).
        what: String,
    },
    /// The path names no file.
    #[error("cannot write {}: expected a file name at its end", .path.display())]
    NoName {
        /// The path.
        path: PathBuf,
    },
}

fn io_err(path: &Path, e: impl Into<std::io::Error>) -> OutputError {
    OutputError::Io {
        path: path.to_path_buf(),
        source: e.into(),
    }
}

/// A directory outputs are written into, held by its descriptor.
#[derive(Debug)]
pub struct OutDir {
    fd: OwnedFd,
    path: PathBuf,
}

fn open_dir(path: &Path) -> Result<(OwnedFd, rustix::fs::Stat), OutputError> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let fd = rustix::fs::open(path, flags, Mode::empty()).map_err(|e| io_err(path, e))?;
    let st = rustix::fs::fstat(&fd).map_err(|e| io_err(path, e))?;
    Ok((fd, st))
}

impl OutDir {
    /// The directory `path` for outputs: made (mode 0700, missing parents too) when missing,
    /// else checked to be the user's own and not writable by others.
    pub fn create(path: &Path) -> Result<OutDir, OutputError> {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(path)
            .map_err(|e| io_err(path, e))?;
        // Checked on the directory opened, whatever a link in the path led to.
        let (fd, st) = open_dir(path)?;
        let me = rustix::process::geteuid().as_raw();
        if st.st_uid != me {
            return Err(OutputError::NotYours {
                path: path.to_path_buf(),
                owner: st.st_uid,
                me,
            });
        }
        if st.st_mode & 0o002 != 0 {
            return Err(OutputError::Shared {
                path: path.to_path_buf(),
                mode: st.st_mode & 0o7777,
                sticky_ok: false,
            });
        }
        Ok(OutDir {
            fd,
            path: path.to_path_buf(),
        })
    }

    /// The existing directory of a file the user named, and the file's name: the directory
    /// must be the user's, or not writable by others, or sticky.
    pub fn parent_of(path: &Path) -> Result<(OutDir, OsString), OutputError> {
        let name = path
            .file_name()
            .filter(|n| scalpel_model::open::is_plain_name(n))
            .ok_or_else(|| OutputError::NoName {
                path: path.to_path_buf(),
            })?;
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let (fd, st) = open_dir(dir)?;
        let me = rustix::process::geteuid().as_raw();
        let others_write = st.st_mode & 0o002 != 0 || (st.st_uid != me && st.st_mode & 0o020 != 0);
        if others_write && st.st_mode & 0o1000 == 0 {
            return Err(OutputError::Shared {
                path: dir.to_path_buf(),
                mode: st.st_mode & 0o7777,
                sticky_ok: true,
            });
        }
        let dir = OutDir {
            fd,
            path: dir.to_path_buf(),
        };
        Ok((dir, name.to_os_string()))
    }

    /// The directory's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Refuses `name` when it is taken by anything but a regular file of the user's.
    fn check_target(&self, name: &OsStr, path: &Path) -> Result<(), OutputError> {
        let st = match rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => st,
            Err(rustix::io::Errno::NOENT) => return Ok(()),
            Err(e) => return Err(io_err(path, e)),
        };
        let taken = |what: String| OutputError::Taken {
            path: path.to_path_buf(),
            what,
        };
        let me = rustix::process::geteuid().as_raw();
        match FileType::from_raw_mode(st.st_mode) {
            FileType::RegularFile if st.st_uid == me => Ok(()),
            FileType::RegularFile => Err(taken(format!("uid {}'s file, not yours", st.st_uid))),
            FileType::Symlink => Err(taken("a symbolic link (never written through)".into())),
            FileType::Directory => Err(taken("a directory".into())),
            _ => Err(taken("not a regular file".into())),
        }
    }

    /// Writes the file `name` in this directory through `body`, as the module says; returns
    /// what `body` returned.
    pub fn write<T>(
        &self,
        name: &OsStr,
        body: impl FnOnce(&mut BufWriter<File>) -> std::io::Result<T>,
    ) -> Result<T, OutputError> {
        let path = self.path.join(name);
        if !scalpel_model::open::is_plain_name(name) {
            return Err(OutputError::NoName { path });
        }
        self.check_target(name, &path)?;
        static SERIAL: AtomicU32 = AtomicU32::new(0);
        let tmp = format!(
            ".{}.{}.{}.tmp",
            name.to_string_lossy(),
            std::process::id(),
            SERIAL.fetch_add(1, Ordering::Relaxed)
        );
        let flags = OFlags::WRONLY
            | OFlags::CREATE
            | OFlags::EXCL
            | OFlags::NOFOLLOW
            | OFlags::CLOEXEC
            | OFlags::NOCTTY;
        let fd = rustix::fs::openat(&self.fd, tmp.as_str(), flags, Mode::from_raw_mode(0o600))
            .map_err(|e| io_err(&self.path.join(&tmp), e))?;
        let mut w = BufWriter::new(File::from(fd));
        let written = body(&mut w)
            .and_then(|t| w.flush().map(|()| t))
            .map_err(|e| io_err(&path, e))
            .and_then(|t| self.check_target(name, &path).map(|()| t))
            // rename(2) replaces the name itself: a link put there meanwhile is replaced, never
            // followed.
            .and_then(|t| {
                rustix::fs::renameat(&self.fd, tmp.as_str(), &self.fd, name)
                    .map_err(|e| io_err(&path, e))
                    .map(|()| t)
            });
        if written.is_err() {
            let _ = rustix::fs::unlinkat(&self.fd, tmp.as_str(), AtFlags::empty());
        }
        written
    }
}

/// Writes the file at `path` the user named (its directory must exist) through `body`;
/// returns what `body` returned.
pub fn write_named<T>(
    path: &Path,
    body: impl FnOnce(&mut BufWriter<File>) -> std::io::Result<T>,
) -> Result<T, OutputError> {
    let (dir, name) = OutDir::parent_of(path)?;
    dir.write(&name, body)
}
