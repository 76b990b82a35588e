//! One trace file read: the header checked, and the record framing up to the committed length.

use std::path::{Path, PathBuf};

use super::decode::{dec_what, rec_name, FileCursor, Sink, State};
use super::error::ReadError;
use super::filetrace::{FileSink, FileTrace};
use super::header::Header;
use crate::format::{rec, FileKind};
use crate::open::Opened;
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
    // By path: the final name is opened without following a link, never blocking, and only
    // when it is a regular file (see `crate::open`).
    let opened = crate::open::open_path(path, u64::MAX)?;
    read_opened(opened, sink)
}

/// Decodes a trace file already opened as a regular file (see [`crate::open::Dir::file`]).
pub(super) fn read_opened(opened: Opened, sink: Sink<'_>) -> Result<FileTrace, ReadError> {
    read_opened_span(opened, sink, None)
}

/// Which part of a file a windowed read decodes: from `from` (the start when `None`) up to the
/// first event at or after `stop_at` ticks; `end` is where it stopped, `None` at the file's end.
#[derive(Debug, Default)]
pub(crate) struct Span {
    pub from: Option<FileCursor>,
    pub stop_at: u64,
    pub end: Option<FileCursor>,
}

/// [`read_opened`] of the part of the file `span` says.
pub(super) fn read_opened_span(
    opened: Opened,
    sink: Sink<'_>,
    span: Option<&mut Span>,
) -> Result<FileTrace, ReadError> {
    // Plain reads, not a mapping: a file that a live writer (or the recorder trimming it) cuts
    // short must not fault us. Streamed in chunks, so memory follows the records, not the size a
    // file claims: a planted sparse file of gigabytes costs a read through it, not its size in
    // memory. At most the size seen now is read, so a growing file cannot make us read forever.
    let Opened { file, len, path } = opened;
    decode_from(&path, FileSource(file), len, sink, span)
}

/// Where records are read from: a file can skip the holes of a sparse region at once.
trait Source: std::io::Read {
    /// Moves on to the first byte of data at or after `offset` (an offset from the start), if
    /// the source knows where data is; returns that offset.
    fn next_data(&mut self, offset: u64) -> Option<u64>;
    /// Moves to `offset` (from the start), so that the next read begins there.
    fn seek_to(&mut self, offset: u64) -> std::io::Result<()>;
}

impl Source for &[u8] {
    fn next_data(&mut self, _offset: u64) -> Option<u64> {
        None
    }

    fn seek_to(&mut self, _offset: u64) -> std::io::Result<()> {
        // Images are decoded whole (`decode_file`); only files are read in windows.
        Err(std::io::ErrorKind::Unsupported.into())
    }
}

/// A trace file read from its current position.
struct FileSource(std::fs::File);

impl std::io::Read for FileSource {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.0.read(buf)
    }
}

impl Source for FileSource {
    fn seek_to(&mut self, offset: u64) -> std::io::Result<()> {
        use std::io::Seek;
        self.0.seek(std::io::SeekFrom::Start(offset)).map(|_| ())
    }

    fn next_data(&mut self, offset: u64) -> Option<u64> {
        use std::os::fd::AsRawFd;
        let off = libc::off_t::try_from(offset).ok()?;
        // SAFETY: lseek on a descriptor we own; SEEK_DATA only moves the file position.
        let r = unsafe { libc::lseek(self.0.as_raw_fd(), off, libc::SEEK_DATA) };
        // ENXIO: no data at or after `offset`, so nothing but zeros (or the end) is left.
        u64::try_from(r).ok()
    }
}

/// Decodes a whole file image. `path` only names the file in errors.
pub fn decode_file(path: &Path, bytes: &[u8]) -> Result<FileTrace, ReadError> {
    decode_from(path, bytes, bytes.len() as u64, None, None)
}

/// Bytes read from the file at a time.
const CHUNK: usize = 1 << 20;

/// The records of a file, read in chunks: `buf` holds the data bytes from `off` on.
struct Chunks<R> {
    src: R,
    /// File offset of data offset 0.
    start: usize,
    buf: Vec<u8>,
    /// Data offset of `buf[0]`.
    off: usize,
    /// Data bytes not read yet.
    left: usize,
    failed: Option<std::io::Error>,
}

impl<R: Source> Chunks<R> {
    /// Makes `at..at + n` (data offsets) available if the data holds it; false at its end.
    fn ensure(&mut self, at: usize, n: usize) -> bool {
        // Drop what was decoded, once it is most of the buffer.
        let done = at - self.off;
        if done >= CHUNK {
            self.buf.drain(..done);
            self.off = at;
        }
        while self.off + self.buf.len() < at + n {
            if self.left == 0 || self.failed.is_some() {
                return false;
            }
            let want = self.left.min(CHUNK.max(at + n - self.off - self.buf.len()));
            let have = self.buf.len();
            self.buf.resize(have + want, 0);
            match read_full(&mut self.src, &mut self.buf[have..]) {
                Ok(got) => {
                    self.buf.truncate(have + got);
                    self.left = if got < want { 0 } else { self.left - got };
                }
                Err(e) => {
                    self.buf.truncate(have);
                    self.failed = Some(e);
                }
            }
        }
        true
    }

    /// Zero bytes from `at` on, skipping the holes of a sparse file without reading them; returns
    /// the data offset of the next byte that is not zero (or of the end).
    fn skip_zeros(&mut self, mut at: usize, limit: usize) -> usize {
        loop {
            if !self.ensure(at, 1) {
                return at;
            }
            let from = at - self.off;
            match self.buf[from..].iter().position(|&b| b != 0) {
                Some(i) => return at + i,
                None => at = self.off + self.buf.len(),
            }
            if at >= limit {
                return limit;
            }
            // All zeros so far: where is the next data? Everything before it is a hole.
            if self.left > 0 {
                let here = (self.start + at) as u64;
                let next = self.src.next_data(here);
                let to = next.map_or(self.start + limit, |n| {
                    usize::try_from(n)
                        .unwrap_or(usize::MAX)
                        .min(self.start + limit)
                });
                if to > self.start + at {
                    let skipped = to - (self.start + at);
                    self.buf.clear();
                    self.off = to - self.start;
                    self.left = self.left.saturating_sub(skipped);
                    at = self.off;
                    if next.is_none() {
                        return limit;
                    }
                }
            }
        }
    }

    /// Moves on to data offset `at` without reading what lies before it.
    fn seek(&mut self, at: usize, limit: usize) {
        if at <= self.off + self.buf.len() {
            return;
        }
        match self.src.seek_to((self.start + at) as u64) {
            Ok(()) => {
                self.buf.clear();
                self.off = at;
                self.left = limit.saturating_sub(at);
            }
            Err(e) => self.failed = Some(e),
        }
    }

    fn get(&self, at: usize) -> Option<u8> {
        self.buf.get(at.checked_sub(self.off)?).copied()
    }

    fn slice(&self, at: usize, n: usize) -> &[u8] {
        let from = at - self.off;
        &self.buf[from..(from + n).min(self.buf.len())]
    }
}

/// Reads until `buf` is full or the source ends; returns the bytes read.
fn read_full(src: &mut impl std::io::Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match src.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

fn decode_from(
    path: &Path,
    mut src: impl Source,
    len: u64,
    sink: Sink<'_>,
    mut span: Option<&mut Span>,
) -> Result<FileTrace, ReadError> {
    let io = |error| ReadError::Io {
        path: path.to_path_buf(),
        error,
    };
    // The header first: its size is in it (at most 64 KiB, a u16).
    let mut head = vec![0u8; usize::try_from(len.min(u64::from(u16::MAX))).unwrap_or(0)];
    let got = read_full(&mut src, &mut head).map_err(io)?;
    head.truncate(got);
    let header = Header::decode(path, &head)?;
    let start = usize::from(header.header_size);
    let file_len = usize::try_from(len).unwrap_or(usize::MAX);
    let avail = file_len.saturating_sub(start);
    let mut st = State::new(path, header, len, sink);
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
    // The data: what the header read already holds past its end, then the rest of the file.
    let first: Vec<u8> = head.get(start..).unwrap_or(&[]).to_vec();
    let first_len = first.len().min(limit);
    let mut data = Chunks {
        src,
        start,
        buf: first,
        off: 0,
        left: limit - first_len,
        failed: None,
    };
    data.buf.truncate(first_len);
    let mut pos = 0usize;
    if let Some(span) = span.as_deref_mut() {
        st.windowed(span.stop_at);
        if let Some(c) = &span.from {
            if c.done {
                return Ok(st.finish());
            }
            pos = c.pos.min(limit);
            st.resume(c);
            data.seek(pos, limit);
        }
    }
    while pos < limit && data.ensure(pos, 1) {
        let Some(kind) = data.get(pos) else { break };
        if kind == rec::PAD {
            pos = data.skip_zeros(pos, limit);
            continue;
        }
        let at = (start + pos) as u64;
        // A kind byte and a varint of at most 10 bytes.
        data.ensure(pos, 11.min(limit - pos));
        let head = data.slice(pos + 1, 10.min(limit - pos - 1));
        let mut d = Dec::new(head);
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
        let end = usize::try_from(len)
            .ok()
            .and_then(|l| body.checked_add(l))
            .filter(|&end| end <= limit);
        let Some(end) = end else {
            st.damaged(
                at,
                format!(
                    "{len} payload bytes of a {} record, but only {} committed bytes follow",
                    rec_name(kind),
                    limit - body
                ),
            );
            break;
        };
        if !data.ensure(body, end - body) {
            break;
        }
        let payload = data.slice(body, end - body);
        if payload.len() < end - body {
            break;
        }
        let applied = st.record(kind, payload, at);
        if st.stopped {
            break;
        }
        if let Err(e) = applied {
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
        pos = end;
    }
    if let Some(e) = data.failed {
        return Err(io(e));
    }
    if let Some(span) = span.filter(|_| st.stopped) {
        // The rest of the file is the next window's; its end is read there.
        span.end = Some(st.cursor(pos));
        st.out.decoded_len = pos as u64;
        look_ahead(&mut st, &mut data, pos, limit, start);
        return Ok(st.finish());
    }
    if pos < limit && data.left == 0 && data.off + data.buf.len() < limit {
        // The file ended before the size seen when it was opened (cut while we read).
        st.damaged(
            (start + pos) as u64,
            format!(
                "the file ended after {} of its {limit} record bytes",
                data.off + data.buf.len()
            ),
        );
    }
    st.out.decoded_len = pos as u64;
    st.header_counts((start + pos) as u64);
    let missed = st.out.header.stacks_missed;
    if missed > 0 && st.out.stacks.is_empty() {
        // Not a loss of events, but the thread's calls cannot be placed in its code at all.
        st.inconsistent(
            crate::format::hdr::STACKS_MISSED as u64,
            format!(
                "{missed} events wanted a call stack and the agent could take none (calls made \
                 on a signal stack, or every walk failed): this thread's calls have no stacks"
            ),
        );
    }
    Ok(st.finish())
}

/// Shows the sink the events after a window's end, from data offset `pos`, until it wants no
/// more (see [`super::decode::ahead`]). A record that does not frame ends it quietly: the next
/// window reads it and reports it.
fn look_ahead<R: Source>(
    st: &mut State<'_, '_>,
    data: &mut Chunks<R>,
    mut pos: usize,
    limit: usize,
    start: usize,
) {
    st.begin_ahead();
    for _ in 0..super::decode::MAX_AHEAD {
        if pos >= limit || !data.ensure(pos, 1) {
            break;
        }
        let Some(kind) = data.get(pos) else { break };
        if kind == rec::PAD {
            pos = data.skip_zeros(pos, limit);
            continue;
        }
        data.ensure(pos, 11.min(limit - pos));
        let mut d = Dec::new(data.slice(pos + 1, 10.min(limit - pos - 1)));
        let Ok(len) = d.varint() else { break };
        let body = pos + 1 + d.pos();
        let end = usize::try_from(len)
            .ok()
            .and_then(|l| body.checked_add(l))
            .filter(|&end| end <= limit);
        let Some(end) = end.filter(|&end| data.ensure(body, end - body)) else {
            break;
        };
        let payload = data.slice(body, end - body);
        if payload.len() < end - body || !st.record_ahead(kind, payload, (start + pos) as u64) {
            break;
        }
        pos = end;
    }
}
