//! Errors and warnings of the reader, each naming the file and, where there is one, the offset.

use std::io;
use std::path::{Path, PathBuf};

/// What went wrong while reading a trace.
///
/// The reader returns the fatal ones (a file it cannot read at all, or a directory without
/// traces) as `Err`; the others are warnings collected next to the data that could be decoded
/// ([`crate::read::FileTrace::warnings`], [`crate::read::TraceDir::warnings`]).
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The file or directory could not be opened or read.
    // The OS error is part of the message (warnings are printed on one line), so it is not also
    // reported as a `source`, which would print it twice in an error chain.
    #[error("{}: cannot read: {error}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The operating system's error.
        error: io::Error,
    },
    /// A windowed read asked for a window out of order (windows are read one after another;
    /// the last one read can be read again).
    #[error(
        "{}: window {window} cannot be read now: the next window to read is {next}",
        path.display()
    )]
    WindowOrder {
        /// The trace directory.
        path: PathBuf,
        /// The window asked for.
        window: usize,
        /// The window that can be read.
        next: usize,
    },
    /// The first eight bytes are not [`crate::format::MAGIC`].
    #[error(
        "{}: not a Scalpel trace: expected the magic \"SCALPEL\\0\" at offset 0",
        path.display()
    )]
    BadMagic {
        /// The file.
        path: PathBuf,
    },
    /// The header's version is newer than this reader (or zero).
    #[error(
        "{}: unsupported trace format version {version} at offset 8: expected 1 to {max}",
        path.display()
    )]
    UnsupportedVersion {
        /// The file.
        path: PathBuf,
        /// The version found.
        version: u16,
        /// The newest version this reader understands.
        max: u16,
    },
    /// The file ends before its header does, or the header declares an impossible size.
    #[error(
        "{}: short header: the file has {len} bytes, expected a header of {expected}",
        path.display()
    )]
    ShortHeader {
        /// The file.
        path: PathBuf,
        /// The file's length (or the header size field when that is what is too small).
        len: u64,
        /// The header size needed.
        expected: u64,
    },
    /// Decoding stopped at a record that runs past the committed data or does not decode.
    /// Everything before `offset` was kept.
    #[error(
        "{}: damaged at offset {offset}: expected {expected}; the rest of the file is ignored",
        path.display()
    )]
    Damaged {
        /// The file.
        path: PathBuf,
        /// Absolute file offset of the record (or header field) that could not be used.
        offset: u64,
        /// What the reader expected to find there.
        expected: String,
    },
    /// Something is off but decoding went on (the data is kept as well as possible).
    #[error("{}: at offset {offset}: {problem}", path.display())]
    Inconsistent {
        /// The file.
        path: PathBuf,
        /// Absolute file offset of the first occurrence.
        offset: u64,
        /// What is wrong and what the reader did about it.
        problem: String,
    },
    /// A file or directory of the trace is not one a reader may open: not a regular file (a
    /// FIFO, a device, a link), a name that is not plain, or a file longer than allowed.
    /// (An operating system's refusal is [`ReadError::Io`] instead.)
    #[error(transparent)]
    Open(crate::open::OpenError),
    /// The trace directory path is not a directory.
    #[error("{}: not a directory", path.display())]
    NotADirectory {
        /// The path.
        path: PathBuf,
    },
    /// A file the recorder listed as made is not there (removed after the recording).
    #[error(
        "{}: missing: the recorder made it (it is in {}), so the trace lacks what it held",
        path.display(),
        crate::format::MANIFEST
    )]
    Missing {
        /// The file.
        path: PathBuf,
    },
    /// A trace file the recorder did not make (added after the recording).
    #[error(
        "{}: not made by the recorder (it is not in {}); read all the same",
        path.display(),
        crate::format::MANIFEST
    )]
    Unlisted {
        /// The file.
        path: PathBuf,
    },
    /// A trace directory holds no trace file that could be read.
    #[error(
        "{}: no trace found (expected <pid>.<n>/process.trace or <pid>.<n>/t<tid>.trace){}",
        path.display(),
        failure_note(failures)
    )]
    NoTraces {
        /// The directory.
        path: PathBuf,
        /// Why each candidate file could not be read.
        failures: Vec<ReadError>,
    },
}

impl ReadError {
    /// The file or directory the error is about.
    pub fn path(&self) -> &Path {
        match self {
            ReadError::Io { path, .. }
            | ReadError::BadMagic { path }
            | ReadError::UnsupportedVersion { path, .. }
            | ReadError::ShortHeader { path, .. }
            | ReadError::Damaged { path, .. }
            | ReadError::Inconsistent { path, .. }
            | ReadError::NotADirectory { path }
            | ReadError::Missing { path }
            | ReadError::Unlisted { path }
            | ReadError::NoTraces { path, .. }
            | ReadError::WindowOrder { path, .. } => path,
            ReadError::Open(e) => e.path(),
        }
    }

    /// The absolute file offset the error is about, when it is about one place.
    pub fn offset(&self) -> Option<u64> {
        match self {
            ReadError::BadMagic { .. } => Some(0),
            ReadError::UnsupportedVersion { .. } => Some(crate::format::hdr::VERSION as u64),
            ReadError::Damaged { offset, .. } | ReadError::Inconsistent { offset, .. } => {
                Some(*offset)
            }
            _ => None,
        }
    }
}

impl From<crate::open::OpenError> for ReadError {
    fn from(e: crate::open::OpenError) -> Self {
        match e {
            crate::open::OpenError::Io { path, source } => ReadError::Io {
                path,
                error: source,
            },
            e => ReadError::Open(e),
        }
    }
}

/// The reasons candidate files failed, for the NoTraces message.
fn failure_note(failures: &[ReadError]) -> String {
    match failures {
        [] => String::new(),
        [one] => format!("; a candidate file failed: {one}"),
        [first, rest @ ..] => format!(
            "; {} candidate files failed, the first: {first}",
            rest.len() + 1
        ),
    }
}
