//! Opening the files a reader reads: every file inside a trace or model directory is opened
//! relative to the directory's descriptor, by a plain name, without following a link, without
//! blocking, and only when it is a regular file no longer than a limit its reader gives.
//!
//! Why: a trace or a model is input another user (or a damaged copy) may have shaped. A FIFO
//! blocks an `open` or a `read` for ever; `/dev/zero` (a device node, or a link to one) never
//! ends; a sparse file claims gigabytes it does not hold; a name such as `../../etc/shadow` in a
//! model reaches files the model has no business naming. Each of these hung a reader, exhausted
//! its memory, or printed facts about a file it should never have opened.
//!
//! How: [`Dir`] holds a directory's descriptor. [`Dir::file`] takes a plain name only (no `/`,
//! not `.` or `..`, not empty), looks at the entry first without following it (so a device is
//! never even opened: opening some has side effects), then opens it with `openat2`
//! (`RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`) where the kernel has it, else `openat` with
//! `O_NOFOLLOW`; always `O_NONBLOCK`, so that a FIFO swapped in between the look and the open
//! cannot block. The opened file is checked again with `fstat` (a regular file, the entry
//! looked at, at most `max_len` bytes) before a byte is read. [`read_all`] then reads at most
//! the length seen, in bounded chunks.

use std::ffi::OsStr;
use std::fs::File;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, ResolveFlags, SeekFrom, Stat};

/// Why a file could not be opened for reading.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The operating system refused (missing, no permission, …).
    #[error("{}: cannot read: {source}", .path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// Not a regular file (a directory is expected for [`Dir`]).
    #[error("{}: expected {expected}, found {found}", .path.display())]
    Type {
        /// The file.
        path: PathBuf,
        /// What was expected: "a regular file" or "a directory".
        expected: &'static str,
        /// What is there: "a FIFO", "a symbolic link", "a character device", …
        found: &'static str,
    },
    /// Longer than its reader accepts.
    #[error("{}: expected at most {max} bytes, found {len}", .path.display())]
    TooLong {
        /// The file.
        path: PathBuf,
        /// Its length.
        len: u64,
        /// The most its reader takes.
        max: u64,
    },
    /// A file that must be written in full has a hole: not what Scalpel wrote.
    #[error(
        "{}: expected a file written in full, found a hole at offset {at} of its {len} bytes \
         (a sparse file, not one Scalpel wrote)",
        .path.display()
    )]
    Sparse {
        /// The file.
        path: PathBuf,
        /// Where the first hole starts.
        at: u64,
        /// Its length.
        len: u64,
    },
    /// A name that should name a file in a directory names something else.
    #[error(
        "{name:?} in {}: expected a plain file name (no `/`, not `.` or `..`, not empty)",
        .dir.display()
    )]
    BadName {
        /// The directory the name is looked up in.
        dir: PathBuf,
        /// The name.
        name: String,
    },
}

impl OpenError {
    /// The file or directory the error is about.
    pub fn path(&self) -> &Path {
        match self {
            OpenError::Io { path, .. }
            | OpenError::Type { path, .. }
            | OpenError::TooLong { path, .. }
            | OpenError::Sparse { path, .. } => path,
            OpenError::BadName { dir, .. } => dir,
        }
    }

    /// Whether the file or directory does not exist.
    pub fn is_missing(&self) -> bool {
        matches!(self, OpenError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
    }
}

/// Whether `name` is one plain entry name: not empty, no `/`, not `.` or `..`, no NUL.
pub fn is_plain_name(name: &OsStr) -> bool {
    let b = name.as_bytes();
    !b.is_empty() && b != b"." && b != b".." && !b.contains(&b'/') && !b.contains(&0)
}

fn type_name(t: FileType) -> &'static str {
    match t {
        FileType::RegularFile => "a regular file",
        FileType::Directory => "a directory",
        FileType::Symlink => "a symbolic link",
        FileType::Fifo => "a FIFO",
        FileType::Socket => "a socket",
        FileType::CharacterDevice => "a character device",
        FileType::BlockDevice => "a block device",
        FileType::Unknown => "a file of unknown type",
    }
}

fn io_err(path: &Path, e: impl Into<std::io::Error>) -> OpenError {
    OpenError::Io {
        path: path.to_path_buf(),
        source: e.into(),
    }
}

/// An open directory: entries are opened relative to it.
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
    path: PathBuf,
}

/// A regular file opened for reading, and its length when opened.
#[derive(Debug)]
pub struct Opened {
    /// The file.
    pub file: File,
    /// Its length when it was opened: the most [`read_all`] reads.
    pub len: u64,
    /// Its path (for errors).
    pub path: PathBuf,
}

impl Dir {
    /// Opens the directory `path` that the user named (links in it are the user's choice and
    /// are followed). Errors: missing, or not a directory.
    pub fn open(path: &Path) -> Result<Dir, OpenError> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NONBLOCK;
        let fd = rustix::fs::open(path, flags, Mode::empty()).map_err(|e| match e {
            rustix::io::Errno::NOTDIR => OpenError::Type {
                path: path.to_path_buf(),
                expected: "a directory",
                found: "a file",
            },
            e => io_err(path, e),
        })?;
        Ok(Dir {
            fd,
            path: path.to_path_buf(),
        })
    }

    /// The directory holding the file at `path` (the current one for a bare name), and the
    /// file's name in it. Errors: `path` ends in no plain name (`/`, `..`).
    pub fn parent_of(path: &Path) -> Result<(Dir, &OsStr), OpenError> {
        let name = path
            .file_name()
            .filter(|n| is_plain_name(n))
            .ok_or_else(|| OpenError::BadName {
                dir: path.to_path_buf(),
                name: path.display().to_string(),
            })?;
        let parent = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        Ok((Dir::open(parent)?, name))
    }

    /// The directory's path, as given.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Checks that `name` is a plain name; returns the path it names, for messages.
    pub fn entry_path(&self, name: &OsStr) -> Result<PathBuf, OpenError> {
        if !is_plain_name(name) {
            return Err(OpenError::BadName {
                dir: self.path.clone(),
                name: name.to_string_lossy().into_owned(),
            });
        }
        Ok(self.path.join(name))
    }

    /// Looks at entry `name` without following it.
    fn look(&self, name: &OsStr, path: &Path) -> Result<Stat, OpenError> {
        rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW).map_err(|e| io_err(path, e))
    }

    /// Opens entry `name` (a plain name, not a link) with `flags` added to the safe ones.
    fn open_entry(&self, name: &OsStr, path: &Path, flags: OFlags) -> Result<OwnedFd, OpenError> {
        let flags = flags | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY;
        let resolve =
            ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
        match rustix::fs::openat2(&self.fd, name, flags, Mode::empty(), resolve) {
            Ok(fd) => return Ok(fd),
            // No openat2 (before Linux 5.6, or a sandbox that forbids it): the name is plain and
            // O_NOFOLLOW refuses a link, which is what the resolve flags add for one name.
            Err(rustix::io::Errno::NOSYS | rustix::io::Errno::PERM | rustix::io::Errno::INVAL) => {}
            Err(e) => return Err(self.open_failed(name, path, e)),
        }
        rustix::fs::openat(&self.fd, name, flags, Mode::empty())
            .map_err(|e| self.open_failed(name, path, e))
    }

    /// The error for a failed open: a link swapped in after the look is named as one.
    fn open_failed(&self, name: &OsStr, path: &Path, e: rustix::io::Errno) -> OpenError {
        let found = self
            .look(name, path)
            .ok()
            .map(|s| FileType::from_raw_mode(s.st_mode));
        match (e, found) {
            (rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR, Some(t)) => OpenError::Type {
                path: path.to_path_buf(),
                expected: "a regular file",
                found: type_name(t),
            },
            _ => io_err(path, e),
        }
    }

    /// Opens the subdirectory `name` (a plain name, not a link).
    pub fn subdir(&self, name: &OsStr) -> Result<Dir, OpenError> {
        let path = self.entry_path(name)?;
        let t = FileType::from_raw_mode(self.look(name, &path)?.st_mode);
        if t != FileType::Directory {
            return Err(OpenError::Type {
                path,
                expected: "a directory",
                found: type_name(t),
            });
        }
        let fd = self.open_entry(name, &path, OFlags::RDONLY | OFlags::DIRECTORY)?;
        Ok(Dir { fd, path })
    }

    /// Opens the regular file `name` (a plain name, not a link) for reading, refusing it when
    /// it is longer than `max_len` bytes.
    pub fn file(&self, name: &OsStr, max_len: u64) -> Result<Opened, OpenError> {
        let path = self.entry_path(name)?;
        let seen = self.look(name, &path)?;
        let not_regular = |path: PathBuf, st: &Stat| {
            let t = FileType::from_raw_mode(st.st_mode);
            (t != FileType::RegularFile).then(|| OpenError::Type {
                path,
                expected: "a regular file",
                found: type_name(t),
            })
        };
        if let Some(e) = not_regular(path.clone(), &seen) {
            return Err(e);
        }
        let fd = self.open_entry(name, &path, OFlags::RDONLY)?;
        let st = rustix::fs::fstat(&fd).map_err(|e| io_err(&path, e))?;
        if let Some(e) = not_regular(path.clone(), &st) {
            return Err(e);
        }
        let len = u64::try_from(st.st_size).unwrap_or(0);
        if len > max_len {
            return Err(OpenError::TooLong {
                path,
                len,
                max: max_len,
            });
        }
        Ok(Opened {
            file: File::from(fd),
            len,
            path,
        })
    }

    /// The names of the directory's entries (without `.` and `..`), read from its descriptor.
    pub fn names(&self) -> Result<Vec<std::ffi::OsString>, OpenError> {
        // `read_from` opens the directory anew (`.` under its descriptor): a position of its
        // own, so that listing twice lists it all twice.
        let dir = rustix::fs::Dir::read_from(&self.fd).map_err(|e| io_err(&self.path, e))?;
        let mut out = Vec::new();
        for entry in dir {
            let entry = entry.map_err(|e| io_err(&self.path, e))?;
            let name = OsStr::from_bytes(entry.file_name().to_bytes());
            if name != "." && name != ".." {
                out.push(name.to_os_string());
            }
        }
        Ok(out)
    }
}

impl Opened {
    /// Refuses a file with a hole: files Scalpel writes whole (a model's tables, its JSON) hold
    /// none, so a sparse one claims a length it does not hold and is refused before it is read.
    pub fn refuse_holes(&self) -> Result<(), OpenError> {
        let hole = rustix::fs::seek(&self.file, SeekFrom::Hole(0));
        let back = rustix::fs::seek(&self.file, SeekFrom::Start(0));
        match (hole, back) {
            (Ok(at), Ok(_)) if at < self.len => Err(OpenError::Sparse {
                path: self.path.clone(),
                at,
                len: self.len,
            }),
            (_, Err(e)) => Err(io_err(&self.path, e)),
            // No hole, or a file system that cannot say (then it has none to fake a length).
            _ => Ok(()),
        }
    }
}

/// Reads the whole of an opened file: at most the length it had when opened, in bounded chunks,
/// into a buffer of that length (so a file that grows cannot make the read go on).
pub fn read_all(opened: Opened) -> Result<Vec<u8>, OpenError> {
    let Opened { file, len, path } = opened;
    let cap = usize::try_from(len).map_err(|_| OpenError::TooLong {
        path: path.clone(),
        len,
        max: usize::MAX as u64,
    })?;
    let mut out = Vec::with_capacity(cap);
    file.take(len)
        .read_to_end(&mut out)
        .map_err(|e| io_err(&path, e))?;
    Ok(out)
}

/// Opens the regular file at `path` as [`Dir::file`] does, its directory found by path (a
/// file the user named, or one a reader found by path earlier).
pub fn open_path(path: &Path, max_len: u64) -> Result<Opened, OpenError> {
    // A directory that cannot be opened is reported as the file's failure: that is what the
    // caller asked for.
    let (dir, name) = Dir::parent_of(path).map_err(|e| match e {
        OpenError::Io { source, .. } => io_err(path, source),
        e => e,
    })?;
    let mut o = dir.file(name, max_len)?;
    o.path = path.to_path_buf();
    Ok(o)
}

/// Opens a regular file the user named (`path` as given, links in it followed: the user chose
/// them), never blocking and never opening a device, refusing it when it is longer than
/// `max_len` bytes.
pub fn open_named(path: &Path, max_len: u64) -> Result<Opened, OpenError> {
    let type_err = |st: &Stat| {
        let t = FileType::from_raw_mode(st.st_mode);
        (t != FileType::RegularFile).then(|| OpenError::Type {
            path: path.to_path_buf(),
            expected: "a regular file",
            found: type_name(t),
        })
    };
    // Looked at first, so that a device is never opened (opening some has side effects).
    let seen = rustix::fs::stat(path).map_err(|e| io_err(path, e))?;
    if let Some(e) = type_err(&seen) {
        return Err(e);
    }
    let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY;
    let fd = rustix::fs::open(path, flags, Mode::empty()).map_err(|e| io_err(path, e))?;
    let st = rustix::fs::fstat(&fd).map_err(|e| io_err(path, e))?;
    if let Some(e) = type_err(&st) {
        return Err(e);
    }
    let len = u64::try_from(st.st_size).unwrap_or(0);
    if len > max_len {
        return Err(OpenError::TooLong {
            path: path.to_path_buf(),
            len,
            max: max_len,
        });
    }
    Ok(Opened {
        file: File::from(fd),
        len,
        path: path.to_path_buf(),
    })
}
