//! An allocating trace file writer for tests and tools (the agent has its own, mapped, writer),
//! and one that writes its records to disk as they come, for files larger than memory.

use std::fs::File;
use std::io::{self, Seek, Write};
use std::path::Path;

use crate::format::rec;
use crate::read::{put_varint, Header, Identity};
use crate::record::{RawEvent, MAX_EVENT_RECORD};
use crate::wire::Enc;

/// Builds a trace file in memory: a header and records, with `committed` set on output.
///
/// ```
/// use scalpel_model::read::{decode_file, Header};
/// use scalpel_model::write::TraceWriter;
/// use scalpel_model::record::RawEvent;
///
/// let mut w = TraceWriter::new(Header::thread(10, 11));
/// w.event(&RawEvent { op: 1, dt: 5, ..RawEvent::default() });
/// let t = decode_file("t11.trace".as_ref(), &w.to_bytes()).unwrap();
/// assert_eq!(t.events.len(), 1);
/// ```
#[derive(Clone, Debug)]
pub struct TraceWriter {
    header: Header,
    records: Vec<u8>,
}

impl TraceWriter {
    /// A writer with `header` (its `committed` is replaced on output).
    pub fn new(header: Header) -> Self {
        TraceWriter {
            header,
            records: Vec::new(),
        }
    }

    /// The header to be written.
    pub fn header_mut(&mut self) -> &mut Header {
        &mut self.header
    }

    /// Record bytes written so far.
    pub fn records(&self) -> &[u8] {
        &self.records
    }

    /// Appends a record of any kind with `payload`.
    pub fn record(&mut self, kind: u8, payload: &[u8]) -> &mut Self {
        self.records.push(kind);
        put_varint(&mut self.records, payload.len() as u64);
        self.records.extend_from_slice(payload);
        self
    }

    /// Appends bytes as they are (to build damaged files).
    pub fn raw(&mut self, bytes: &[u8]) -> &mut Self {
        self.records.extend_from_slice(bytes);
        self
    }

    /// Appends `n` PAD bytes.
    pub fn pad(&mut self, n: usize) -> &mut Self {
        self.records.resize(self.records.len() + n, rec::PAD);
        self
    }

    /// Appends an EVENT record, encoded exactly as the agent does.
    pub fn event(&mut self, ev: &RawEvent) -> &mut Self {
        let mut buf = [0u8; MAX_EVENT_RECORD];
        let mut e = Enc::new(&mut buf);
        ev.encode_record(&mut e);
        let n = e.len();
        self.raw(&buf[..n])
    }

    /// Appends an OBJECT record binding `index` to an object.
    pub fn object(&mut self, index: u64, kind: u8, key: u64, identity: &Identity) -> &mut Self {
        let mut p = Vec::new();
        put_varint(&mut p, index);
        p.push(kind);
        put_varint(&mut p, key);
        identity.encode(&mut p);
        self.record(rec::OBJECT, &p)
    }

    /// Appends an OBJECT_RESET record.
    pub fn object_reset(&mut self) -> &mut Self {
        self.record(rec::OBJECT_RESET, &[])
    }

    /// Appends a CALIBRATION record, with the width of its bracket in ticks or, as earlier
    /// agents wrote it, without.
    pub fn calibration(&mut self, ticks: u64, mono_ns: u64, width: Option<u64>) -> &mut Self {
        let mut p = Vec::new();
        put_varint(&mut p, ticks);
        put_varint(&mut p, mono_ns);
        if let Some(w) = width {
            put_varint(&mut p, w);
        }
        self.record(rec::CALIBRATION, &p)
    }

    /// Appends a MAPS record with `/proc/self/maps` text.
    pub fn maps(&mut self, ticks: u64, text: &[u8]) -> &mut Self {
        self.ticked(rec::MAPS, ticks, text)
    }

    /// Appends a STACK record (frames innermost first).
    pub fn stack(&mut self, id: u64, frames: &[u64]) -> &mut Self {
        let mut p = Vec::new();
        put_varint(&mut p, id);
        put_varint(&mut p, frames.len() as u64);
        let mut prev = 0u64;
        for (i, &pc) in frames.iter().enumerate() {
            if i == 0 {
                put_varint(&mut p, pc);
            } else {
                put_varint(
                    &mut p,
                    crate::wire::zigzag(pc.wrapping_sub(prev).cast_signed()),
                );
            }
            prev = pc;
        }
        self.record(rec::STACK, &p)
    }

    /// Appends a THREAD_NAME record.
    pub fn thread_name(&mut self, ticks: u64, name: &[u8]) -> &mut Self {
        self.ticked(rec::THREAD_NAME, ticks, name)
    }

    /// Appends a CMDLINE record (each argument NUL-terminated, as in `/proc/self/cmdline`).
    pub fn cmdline(&mut self, args: &[&str]) -> &mut Self {
        let mut p = Vec::new();
        for a in args {
            p.extend_from_slice(a.as_bytes());
            p.push(0);
        }
        self.record(rec::CMDLINE, &p)
    }

    /// Appends an EXE record.
    pub fn exe(&mut self, path: &[u8]) -> &mut Self {
        self.record(rec::EXE, path)
    }

    /// Appends a LOST record.
    pub fn lost(&mut self, count: u64) -> &mut Self {
        let mut p = Vec::new();
        put_varint(&mut p, count);
        self.record(rec::LOST, &p)
    }

    fn ticked(&mut self, kind: u8, ticks: u64, rest: &[u8]) -> &mut Self {
        let mut p = Vec::new();
        put_varint(&mut p, ticks);
        p.extend_from_slice(rest);
        self.record(kind, &p)
    }

    /// The file image with `committed` covering every record.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.to_bytes_with_committed(self.records.len() as u64)
    }

    /// The file image with the given `committed` value (which may be wrong on purpose).
    pub fn to_bytes_with_committed(&self, committed: u64) -> Vec<u8> {
        let mut h = self.header.clone();
        h.committed = committed;
        let mut out = h.encode();
        out.extend_from_slice(&self.records);
        out
    }

    /// Writes the file image to `path`.
    pub fn write_to(&self, path: impl AsRef<Path>) -> io::Result<()> {
        std::fs::write(path, self.to_bytes())
    }
}

/// A trace file written as it is built, for files larger than memory: the header first, then
/// the records built so far each time [`TraceFile::flush`] is called, and the header again with
/// `committed` covering them all at [`TraceFile::finish`]. A file not finished reads as empty.
#[derive(Debug)]
pub struct TraceFile {
    file: io::BufWriter<File>,
    writer: TraceWriter,
    committed: u64,
}

impl TraceFile {
    /// Creates (or truncates) `path` and writes `header` into it, nothing committed yet.
    pub fn create(path: impl AsRef<Path>, header: Header) -> io::Result<TraceFile> {
        let writer = TraceWriter::new(header);
        let mut file = io::BufWriter::new(File::create(path)?);
        file.write_all(&writer.to_bytes_with_committed(0))?;
        Ok(TraceFile {
            file,
            writer,
            committed: 0,
        })
    }

    /// The writer that builds the next records.
    pub fn writer(&mut self) -> &mut TraceWriter {
        &mut self.writer
    }

    /// Appends the records built since the last call to the file and lets them go.
    pub fn flush(&mut self) -> io::Result<()> {
        self.file.write_all(&self.writer.records)?;
        self.committed += self.writer.records.len() as u64;
        self.writer.records.clear();
        Ok(())
    }

    /// Writes what is left and sets the header's `committed` to every record written.
    pub fn finish(mut self) -> io::Result<()> {
        self.flush()?;
        let mut h = self.writer.header.clone();
        h.committed = self.committed;
        let mut file = self
            .file
            .into_inner()
            .map_err(io::IntoInnerError::into_error)?;
        file.rewind()?;
        file.write_all(&h.encode())?;
        file.sync_all()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::decode_file;

    #[test]
    fn a_file_written_in_pieces_is_the_file_written_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let mut whole = TraceWriter::new(Header::thread(10, 11));
        let mut pieces =
            TraceFile::create(dir.path().join("t11.trace"), Header::thread(10, 11)).unwrap();
        for i in 0..1000u64 {
            let ev = RawEvent {
                op: 1,
                dt: i,
                ..RawEvent::default()
            };
            whole.event(&ev);
            pieces.writer().event(&ev);
            if i % 97 == 0 {
                pieces.flush().unwrap();
            }
        }
        pieces.finish().unwrap();
        let written = std::fs::read(dir.path().join("t11.trace")).unwrap();
        assert_eq!(written, whole.to_bytes());
        let t = decode_file("t11.trace".as_ref(), &written).unwrap();
        assert_eq!(t.events.len(), 1000);
    }
}
