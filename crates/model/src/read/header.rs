//! The fixed file header: every field decoded, and encoded back for the writer.

use std::path::Path;

use super::error::ReadError;
use crate::format::{flags, hdr, FileKind, HEADER_SIZE, MAGIC, VERSION};

/// The smallest header that holds every field of version 1 (it ends with the executable path).
pub const MIN_HEADER_SIZE: usize = hdr::EXE + hdr::EXE_LEN;

/// A decoded file header (see [`crate::format::hdr`] for the meaning of each field).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// Format version.
    pub version: u16,
    /// Header size in bytes; records start at this offset.
    pub header_size: u16,
    /// File kind byte, see [`FileKind`] and [`Header::kind`].
    pub file_kind: u8,
    /// Flag bits, see [`crate::format::flags`].
    pub flags: u8,
    /// Process id.
    pub pid: u32,
    /// Thread id (0 for a process file).
    pub tid: u32,
    /// Parent process id.
    pub ppid: u32,
    /// Real user id when the file was created.
    pub uid: u32,
    /// Clock reading (ticks) of the header's calibration point.
    pub clock0: u64,
    /// CLOCK_MONOTONIC nanoseconds at the header's calibration point.
    pub mono0: u64,
    /// Clock ticks per second.
    pub ticks_per_sec: u64,
    /// CLOCK_REALTIME nanoseconds at the calibration point.
    pub realtime0: u64,
    /// Record bytes after the header that are complete.
    pub committed: u64,
    /// Events the writer had to drop.
    pub dropped: u64,
    /// Thread sequence number within the process.
    pub thread_index: u32,
    /// Writer state, see [`crate::format::state`].
    pub state: u32,
    /// Stacks the agent's cache answered and re-walked to check (cache check mode only).
    pub stack_checked: u32,
    /// Of those, how many differed from the fresh walk.
    pub stack_mismatched: u32,
    /// Events that wanted a call stack the agent could not take.
    pub stacks_missed: u64,
    /// Thread name, NUL padding removed.
    pub thread_name: Vec<u8>,
    /// Executable path (possibly truncated), NUL padding removed.
    pub exe: Vec<u8>,
    /// The counts table's state word (see [`hdr::COUNTS_STATE`]); 0 without a table.
    pub counts_state: u64,
    /// The counts table's (key, count) entries in use, as many as the state word says (at most
    /// [`hdr::COUNT_SLOTS`]); empty when the header is too short to hold the table.
    pub counts: Vec<(u64, u64)>,
}

/// [`HEADER_SIZE`] as the header stores it.
const HEADER_SIZE_U16: u16 = {
    assert!(HEADER_SIZE <= u16::MAX as usize);
    #[allow(clippy::cast_possible_truncation, reason = "checked just above")]
    let n = HEADER_SIZE as u16;
    n
};

impl Default for Header {
    /// A version-1 thread header with a CLOCK_MONOTONIC clock and every other field zero.
    fn default() -> Self {
        Header {
            version: VERSION,
            header_size: HEADER_SIZE_U16,
            file_kind: FileKind::Thread as u8,
            flags: 0,
            pid: 0,
            tid: 0,
            ppid: 0,
            uid: 0,
            clock0: 0,
            mono0: 0,
            ticks_per_sec: 1_000_000_000,
            realtime0: 0,
            committed: 0,
            dropped: 0,
            thread_index: 0,
            state: 0,
            stack_checked: 0,
            stack_mismatched: 0,
            stacks_missed: 0,
            thread_name: Vec::new(),
            exe: Vec::new(),
            counts_state: 0,
            counts: Vec::new(),
        }
    }
}

fn le<const N: usize>(b: &[u8], at: usize) -> [u8; N] {
    let mut out = [0u8; N];
    if let Some(s) = b.get(at..at + N) {
        out.copy_from_slice(s);
    }
    out
}

fn text(b: &[u8], at: usize, len: usize) -> Vec<u8> {
    let s = b.get(at..at + len).unwrap_or(&[]);
    let end = s.iter().position(|&c| c == 0).unwrap_or(s.len());
    s[..end].to_vec()
}

impl Header {
    /// A thread file header for `pid`/`tid`.
    pub fn thread(pid: u32, tid: u32) -> Self {
        Header {
            pid,
            tid,
            ..Header::default()
        }
    }

    /// A process file header for `pid`.
    pub fn process(pid: u32) -> Self {
        Header {
            pid,
            file_kind: FileKind::Process as u8,
            ..Header::default()
        }
    }

    /// The file kind, `None` when the byte is not one this reader knows.
    pub fn kind(&self) -> Option<FileKind> {
        FileKind::from_u8(self.file_kind)
    }

    /// True when event ticks are TSC readings that need calibration.
    pub fn is_tsc(&self) -> bool {
        self.flags & flags::CLOCK_TSC != 0
    }

    /// CLOCK_REALTIME minus CLOCK_MONOTONIC at the calibration point, ns: what puts the
    /// machine's monotonic times in Unix time. `None` when the file does not say.
    pub fn unix_offset_ns(&self) -> Option<i128> {
        (self.realtime0 > 0).then(|| i128::from(self.realtime0) - i128::from(self.mono0))
    }

    /// The thread name, lossily converted to UTF-8.
    pub fn thread_name_lossy(&self) -> String {
        String::from_utf8_lossy(&self.thread_name).into_owned()
    }

    /// The counts table's generation (see [`hdr::COUNTS_STATE`]).
    pub fn counts_gen(&self) -> u32 {
        u32::try_from(self.counts_state >> 32).unwrap_or(0)
    }

    /// The counts table's entries in use, as its state word says (not bounded by the table).
    pub fn counts_len(&self) -> u32 {
        u32::try_from(self.counts_state & u64::from(u32::MAX)).unwrap_or(0)
    }

    /// Decodes the header at the start of `bytes`. `path` only names the file in errors.
    pub fn decode(path: &Path, bytes: &[u8]) -> Result<Header, ReadError> {
        let short = |expected: usize| ReadError::ShortHeader {
            path: path.to_path_buf(),
            len: bytes.len() as u64,
            expected: expected as u64,
        };
        if bytes.len() < MAGIC.len() {
            return Err(short(HEADER_SIZE));
        }
        if bytes[..MAGIC.len()] != MAGIC {
            return Err(ReadError::BadMagic {
                path: path.to_path_buf(),
            });
        }
        if bytes.len() < hdr::HEADER_SIZE + 2 {
            return Err(short(HEADER_SIZE));
        }
        let version = u16::from_le_bytes(le(bytes, hdr::VERSION));
        if version == 0 || version > VERSION {
            return Err(ReadError::UnsupportedVersion {
                path: path.to_path_buf(),
                version,
                max: VERSION,
            });
        }
        let header_size = u16::from_le_bytes(le(bytes, hdr::HEADER_SIZE));
        if usize::from(header_size) < MIN_HEADER_SIZE {
            return Err(ReadError::ShortHeader {
                path: path.to_path_buf(),
                len: u64::from(header_size),
                expected: MIN_HEADER_SIZE as u64,
            });
        }
        if bytes.len() < usize::from(header_size) {
            return Err(short(usize::from(header_size)));
        }
        let u32_at = |at| u32::from_le_bytes(le(bytes, at));
        let u64_at = |at| u64::from_le_bytes(le(bytes, at));
        let counts_state = if usize::from(header_size) >= hdr::COUNTS_END {
            u64_at(hdr::COUNTS_STATE)
        } else {
            0
        };
        let counts_used = usize::try_from(counts_state & u64::from(u32::MAX))
            .map_or(hdr::COUNT_SLOTS, |n| n.min(hdr::COUNT_SLOTS));
        Ok(Header {
            version,
            header_size,
            file_kind: bytes[hdr::FILE_KIND],
            flags: bytes[hdr::FLAGS],
            pid: u32_at(hdr::PID),
            tid: u32_at(hdr::TID),
            ppid: u32_at(hdr::PPID),
            uid: u32_at(hdr::UID),
            clock0: u64_at(hdr::CLOCK0),
            mono0: u64_at(hdr::MONO0),
            ticks_per_sec: u64_at(hdr::TICKS_PER_SEC),
            realtime0: u64_at(hdr::REALTIME0),
            committed: u64_at(hdr::COMMITTED),
            dropped: u64_at(hdr::DROPPED),
            thread_index: u32_at(hdr::THREAD_INDEX),
            state: u32_at(hdr::STATE),
            stack_checked: u32_at(hdr::STACK_CHECKED),
            stack_mismatched: u32_at(hdr::STACK_MISMATCHED),
            stacks_missed: u64_at(hdr::STACKS_MISSED),
            thread_name: text(bytes, hdr::THREAD_NAME, hdr::THREAD_NAME_LEN),
            exe: text(bytes, hdr::EXE, hdr::EXE_LEN),
            counts_state,
            counts: if usize::from(header_size) >= hdr::COUNTS_END {
                (0..counts_used)
                    .map(|i| {
                        (
                            u64_at(hdr::COUNT_KEYS + 8 * i),
                            u64_at(hdr::COUNT_VALUES + 8 * i),
                        )
                    })
                    .collect()
            } else {
                Vec::new()
            },
        })
    }

    /// Encodes the header into `max(header_size, MIN_HEADER_SIZE)` bytes. Names longer than
    /// their fields are truncated.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = vec![0u8; usize::from(self.header_size).max(MIN_HEADER_SIZE)];
        let has_counts = b.len() >= hdr::COUNTS_END;
        let mut put = |at: usize, v: &[u8]| b[at..at + v.len()].copy_from_slice(v);
        put(hdr::MAGIC, &MAGIC);
        put(hdr::VERSION, &self.version.to_le_bytes());
        put(hdr::HEADER_SIZE, &self.header_size.to_le_bytes());
        put(hdr::FILE_KIND, &[self.file_kind]);
        put(hdr::FLAGS, &[self.flags]);
        put(hdr::PID, &self.pid.to_le_bytes());
        put(hdr::TID, &self.tid.to_le_bytes());
        put(hdr::PPID, &self.ppid.to_le_bytes());
        put(hdr::UID, &self.uid.to_le_bytes());
        put(hdr::CLOCK0, &self.clock0.to_le_bytes());
        put(hdr::MONO0, &self.mono0.to_le_bytes());
        put(hdr::TICKS_PER_SEC, &self.ticks_per_sec.to_le_bytes());
        put(hdr::REALTIME0, &self.realtime0.to_le_bytes());
        put(hdr::COMMITTED, &self.committed.to_le_bytes());
        put(hdr::DROPPED, &self.dropped.to_le_bytes());
        put(hdr::THREAD_INDEX, &self.thread_index.to_le_bytes());
        put(hdr::STATE, &self.state.to_le_bytes());
        put(hdr::STACK_CHECKED, &self.stack_checked.to_le_bytes());
        put(hdr::STACK_MISMATCHED, &self.stack_mismatched.to_le_bytes());
        put(hdr::STACKS_MISSED, &self.stacks_missed.to_le_bytes());
        let name = &self.thread_name[..self.thread_name.len().min(hdr::THREAD_NAME_LEN)];
        put(hdr::THREAD_NAME, name);
        put(hdr::EXE, &self.exe[..self.exe.len().min(hdr::EXE_LEN)]);
        if has_counts {
            put(hdr::COUNTS_STATE, &self.counts_state.to_le_bytes());
            for (i, &(key, count)) in self.counts.iter().take(hdr::COUNT_SLOTS).enumerate() {
                put(hdr::COUNT_KEYS + 8 * i, &key.to_le_bytes());
                put(hdr::COUNT_VALUES + 8 * i, &count.to_le_bytes());
            }
        }
        b
    }
}
