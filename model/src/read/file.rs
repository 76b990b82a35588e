//! One trace file read: the header checked, and the record framing up to the committed length.

use std::path::{Path, PathBuf};

use super::decode::{dec_what, rec_name, Sink, State};
use super::error::ReadError;
use super::filetrace::{FileSink, FileTrace};
use super::header::Header;
use crate::format::{rec, FileKind};
use crate::wire::Dec;

impl FileTrace {
    /// The file kind from the header.
    pub fn kind(&self) -> Option<FileKind> {
        self.header.kind()
    }

    /// Events lost: the LOST records plus the header's dropped count.
    pub fn lost_events(&self) -> u64 {
        self.lost.saturating_add(self.header.dropped)
    }

    /// The latest thread name: the last THREAD_NAME record, else the header's.
    pub fn thread_name(&self) -> String {
        match self.thread_names.last() {
            Some(t) => t.name.clone(),
            None => self.header.thread_name_lossy(),
        }
    }

    /// The executable: the EXE record, else the header's (possibly truncated) path.
    pub fn exe_path(&self) -> Option<PathBuf> {
        use std::os::unix::ffi::OsStrExt;
        self.exe.clone().or_else(|| {
            (!self.header.exe.is_empty())
                .then(|| PathBuf::from(std::ffi::OsStr::from_bytes(&self.header.exe)))
        })
    }
}

/// Reads and decodes one file. Fatal errors: unreadable file, bad magic, unsupported version,
/// short header. Damage past the header becomes a warning in [`FileTrace::warnings`].
pub fn read_file(path: impl AsRef<Path>) -> Result<FileTrace, ReadError> {
    read_file_with(path.as_ref(), None)
}

/// Reads one file like [`read_file`], handing each event and object to `sink` instead of
/// keeping the events (see [`FileSink`]). Does not call [`FileSink::finish`].
pub fn read_file_streaming(
    path: impl AsRef<Path>,
    sink: &mut dyn FileSink,
) -> Result<FileTrace, ReadError> {
    read_file_with(path.as_ref(), Some(sink))
}

fn read_file_with(path: &Path, sink: Sink<'_>) -> Result<FileTrace, ReadError> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let io = |error| ReadError::Io {
        path: path.to_path_buf(),
        error,
    };
    // Non-blocking: opening a FIFO for reading would otherwise wait for a writer.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc_o_nonblock())
        .open(path)
        .map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    // A FIFO would block forever and a device could be endless: only regular files are traces.
    if !meta.is_file() {
        return Err(io(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "expected a regular file",
        )));
    }
    // Plain reads, not a mapping: a file that a live writer truncates must not fault us. At most
    // the size seen now is read, so a file that keeps growing cannot make us read forever.
    let mut bytes = Vec::new();
    file.take(meta.len()).read_to_end(&mut bytes).map_err(io)?;
    decode(path, &bytes, sink)
}

/// Decodes a whole file image. `path` only names the file in errors.
pub fn decode_file(path: &Path, bytes: &[u8]) -> Result<FileTrace, ReadError> {
    decode(path, bytes, None)
}

fn decode(path: &Path, bytes: &[u8], sink: Sink<'_>) -> Result<FileTrace, ReadError> {
    let header = Header::decode(path, bytes)?;
    let start = usize::from(header.header_size);
    let avail = bytes.len() - start;
    let mut st = State::new(path, header, bytes.len() as u64, sink);
    if FileKind::from_u8(st.out.header.file_kind).is_none() {
        let kind = st.out.header.file_kind;
        st.inconsistent(
            crate::format::hdr::FILE_KIND as u64,
            format!("unknown file kind {kind}; read as its name says"),
        );
    }
    if st.out.header.ticks_per_sec == 0 {
        st.inconsistent(
            crate::format::hdr::TICKS_PER_SEC as u64,
            "ticks per second is 0; its clock is read as nanoseconds".into(),
        );
    }
    let committed = st.out.header.committed;
    let limit = match usize::try_from(committed) {
        Ok(c) if c <= avail => c,
        _ => {
            st.inconsistent(
                crate::format::hdr::COMMITTED as u64,
                format!(
                    "committed length {committed} runs past the end of the file \
                     ({avail} record bytes); reading up to the end"
                ),
            );
            avail
        }
    };
    // A writer that closed cleanly trimmed its file to the committed length: more bytes mean the
    // committed length itself is damaged.
    if st.out.header.state == crate::format::state::CLOSED && limit < avail {
        st.inconsistent(
            crate::format::hdr::COMMITTED as u64,
            format!(
                "the file was closed cleanly, so the committed length {committed} should match \
                 its {avail} record bytes; reading only the committed ones"
            ),
        );
    }
    let data = &bytes[start..start + limit];
    let mut pos = 0usize;
    while let Some(&kind) = data.get(pos) {
        if kind == rec::PAD {
            pos += 1;
            continue;
        }
        let at = (start + pos) as u64;
        let mut d = Dec::new(&data[pos + 1..]);
        let len = match d.varint() {
            Ok(len) => len,
            Err(e) => {
                st.damaged(
                    at,
                    format!(
                        "the payload length of a {} record: {}",
                        rec_name(kind),
                        dec_what(e)
                    ),
                );
                break;
            }
        };
        let body = pos + 1 + d.pos();
        let end = usize::try_from(len).ok().and_then(|l| body.checked_add(l));
        let Some(payload) = end.and_then(|end| data.get(body..end)) else {
            st.damaged(
                at,
                format!(
                    "{len} payload bytes of a {} record, but only {} committed bytes follow",
                    rec_name(kind),
                    data.len() - body
                ),
            );
            break;
        };
        if let Err(e) = st.record(kind, payload, at) {
            // The length framing is intact, so the records after this one are still readable;
            // only this one is lost (and with it its time delta, if it was an event).
            st.inconsistent(
                at,
                format!(
                    "expected a valid {} payload, but {}; skipped this record (later times in this \
                     file may be early by its time delta)",
                    rec_name(kind),
                    dec_what(e)
                ),
            );
        }
        pos = body + payload.len();
    }
    st.out.decoded_len = pos as u64;
    Ok(st.finish())
}

/// `O_NONBLOCK` on Linux (the model crate does not depend on libc).
fn libc_o_nonblock() -> i32 {
    0o4000
}
