//! Structure-aware mutation of real recorded traces: a trace is damaged the ways a crash, a full
//! disk, a careless user or an attacker would damage it, and `scalpel dump`, `summary` and
//! `infer` must each end with a clear result (success or an error message), never a panic, an
//! abort, a run far slower than on the intact trace, or gigabytes of memory.
//!
//! Each mutant is one [`Mutation`] of a copy of the trace, chosen by a seeded generator, so a
//! failure is reproduced by its seed alone.

use std::fmt;
use std::path::{Path, PathBuf};

use scalpel_model::format::{hdr, rec, HEADER_SIZE};
use scalpel_model::wire::{Dec, Enc};
// The fuzzer's input crate keeps these: its targets and this module copy and list traces alike.
pub use scalpel_fuzzinput::{copy_trace, trace_files};

/// A small deterministic generator (xorshift64*).
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    /// The next value.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A value below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }

    /// A value chosen to hurt: 0, 1, powers of two near the integer limits, or any.
    pub fn extreme(&mut self) -> u64 {
        match self.below(8) {
            0 => 0,
            1 => 1,
            2 => u64::MAX,
            3 => u64::from(u32::MAX),
            4 => 1 << 31,
            5 => (1 << 63) + self.below(1000) as u64,
            6 => self.below(1 << 20) as u64,
            _ => self.next_u64(),
        }
    }
}

/// One way to damage a trace.
#[derive(Clone, Debug)]
pub enum Mutation {
    /// XOR a byte of a file with a mask.
    FlipByte { file: PathBuf, at: usize, mask: u8 },
    /// Cut a file at a length.
    Truncate { file: PathBuf, len: usize },
    /// Set an 8-, 4- or 2-byte header field to a value.
    HeaderField {
        file: PathBuf,
        at: usize,
        width: usize,
        value: u64,
    },
    /// Re-encode a record's length varint.
    RecordLength {
        file: PathBuf,
        record: usize,
        len: u64,
    },
    /// Overwrite payload bytes of a record with one byte value.
    Payload {
        file: PathBuf,
        record: usize,
        at: usize,
        n: usize,
        byte: u8,
    },
    /// Remove a record; with `lost`, put a LOST record of one event in its place (what the agent
    /// writes when it drops an event).
    Drop {
        file: PathBuf,
        record: usize,
        lost: bool,
    },
    /// Write a record twice.
    Repeat {
        file: PathBuf,
        record: usize,
        times: usize,
    },
    /// Exchange two records.
    Swap { file: PathBuf, a: usize, b: usize },
    /// Remove a file.
    Remove { file: PathBuf },
    /// Copy a file to a new name in the same directory.
    Copy { file: PathBuf, to: PathBuf },
}

impl fmt::Display for Mutation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:?}")
    }
}

impl Mutation {
    /// A short name of the kind, for counts.
    pub fn kind(&self) -> &'static str {
        match self {
            Mutation::FlipByte { .. } => "flip",
            Mutation::Truncate { .. } => "truncate",
            Mutation::HeaderField { .. } => "header",
            Mutation::RecordLength { .. } => "length",
            Mutation::Payload { .. } => "payload",
            Mutation::Drop { lost: false, .. } => "drop",
            Mutation::Drop { lost: true, .. } => "lost",
            Mutation::Repeat { .. } => "repeat",
            Mutation::Swap { .. } => "swap",
            Mutation::Remove { .. } => "remove",
            Mutation::Copy { .. } => "copy",
        }
    }
}

/// A file cut into header and records (kind byte plus its whole encoding).
struct Framed {
    header: Vec<u8>,
    records: Vec<Vec<u8>>,
}

fn frame(bytes: &[u8]) -> Option<Framed> {
    let size = usize::from(u16::from_le_bytes(
        bytes
            .get(hdr::HEADER_SIZE..hdr::HEADER_SIZE + 2)?
            .try_into()
            .ok()?,
    ))
    .max(HEADER_SIZE);
    let committed = u64::from_le_bytes(
        bytes
            .get(hdr::COMMITTED..hdr::COMMITTED + 8)?
            .try_into()
            .ok()?,
    );
    let end = usize::try_from(committed)
        .ok()?
        .checked_add(size)?
        .min(bytes.len());
    let mut records = Vec::new();
    let mut d = Dec::new(bytes.get(size..end)?);
    let mut at = size;
    while d.remaining() > 0 {
        let start = d.pos();
        let kind = d.u8().ok()?;
        if kind != rec::PAD {
            let len = d.varint().ok()?;
            d.bytes(usize::try_from(len).ok()?).ok()?;
        }
        records.push(bytes[at + start..at + d.pos()].to_vec());
        let _ = &mut at;
    }
    Some(Framed {
        header: bytes[..size].to_vec(),
        records,
    })
}

fn unframe(f: &Framed) -> Vec<u8> {
    let mut out = f.header.clone();
    for r in &f.records {
        out.extend_from_slice(r);
    }
    let committed = (out.len() - f.header.len()) as u64;
    out[hdr::COMMITTED..hdr::COMMITTED + 8].copy_from_slice(&committed.to_le_bytes());
    out
}

/// A record of `kind` with `payload`.
fn encode_record(kind: u8, payload: &[u8]) -> Vec<u8> {
    let mut head = [0u8; 11];
    let mut e = Enc::new(&mut head);
    e.u8(kind);
    e.varint(payload.len() as u64);
    let n = e.len();
    let mut out = head[..n].to_vec();
    out.extend_from_slice(payload);
    out
}

/// Chooses a mutation of the trace in `dir`.
pub fn choose(dir: &Path, rng: &mut Rng) -> Option<Mutation> {
    let files = trace_files(dir);
    let file = files.get(rng.below(files.len()))?.clone();
    let bytes = std::fs::read(&file).ok()?;
    let framed = frame(&bytes);
    let records = framed.as_ref().map_or(0, |f| f.records.len());
    let fields: [(usize, usize); 10] = [
        (hdr::COMMITTED, 8),
        (hdr::TICKS_PER_SEC, 8),
        (hdr::CLOCK0, 8),
        (hdr::DROPPED, 8),
        (hdr::PID, 4),
        (hdr::TID, 4),
        (hdr::HEADER_SIZE, 2),
        (hdr::VERSION, 2),
        (hdr::FILE_KIND, 1),
        (hdr::STATE, 4),
    ];
    Some(match rng.below(11) {
        0 | 1 => {
            // Mostly in the records, where the decoder works hardest.
            let at = if rng.below(4) == 0 || bytes.len() <= HEADER_SIZE {
                rng.below(bytes.len().min(HEADER_SIZE))
            } else {
                HEADER_SIZE + rng.below(bytes.len() - HEADER_SIZE)
            };
            Mutation::FlipByte {
                file,
                at,
                mask: 1 << rng.below(8),
            }
        }
        2 => Mutation::Truncate {
            len: rng.below(bytes.len() + 1),
            file,
        },
        3 => {
            let (at, width) = fields[rng.below(fields.len())];
            Mutation::HeaderField {
                file,
                at,
                width,
                value: rng.extreme(),
            }
        }
        4 if records > 0 => Mutation::RecordLength {
            record: rng.below(records),
            len: rng.extreme(),
            file,
        },
        5 if records > 0 => Mutation::Payload {
            record: rng.below(records),
            at: rng.below(16),
            n: 1 + rng.below(12),
            byte: [0xff, 0x80, 0x00, 0x7f][rng.below(4)],
            file,
        },
        6 | 7 if records > 0 => Mutation::Drop {
            record: rng.below(records),
            lost: rng.below(2) == 0,
            file,
        },
        8 if records > 0 => Mutation::Repeat {
            record: rng.below(records),
            times: 1 + rng.below(3),
            file,
        },
        9 if records > 1 => Mutation::Swap {
            a: rng.below(records),
            b: rng.below(records),
            file,
        },
        _ if rng.below(2) == 0 => Mutation::Remove { file },
        _ => {
            let to = file.with_file_name(format!("t{}.trace", 900_000 + rng.below(1000)));
            Mutation::Copy { file, to }
        }
    })
}

/// Applies `m` (whose paths are under `from`) to the copy of the trace at `to`.
pub fn apply(m: &Mutation, from: &Path, to: &Path) -> std::io::Result<()> {
    let moved = |p: &Path| to.join(p.strip_prefix(from).unwrap_or(p));
    let rewrite = |p: &Path, edit: &mut dyn FnMut(&mut Vec<u8>)| -> std::io::Result<()> {
        let p = moved(p);
        let mut b = std::fs::read(&p)?;
        edit(&mut b);
        std::fs::write(&p, b)
    };
    let reframe = |p: &Path, edit: &mut dyn FnMut(&mut Vec<Vec<u8>>)| -> std::io::Result<()> {
        rewrite(p, &mut |b| {
            if let Some(mut f) = frame(b) {
                edit(&mut f.records);
                *b = unframe(&f);
            }
        })
    };
    match m {
        Mutation::FlipByte { file, at, mask } => rewrite(file, &mut |b| {
            if let Some(x) = b.get_mut(*at) {
                *x ^= mask;
            }
        }),
        Mutation::Truncate { file, len } => rewrite(file, &mut |b| b.truncate(*len)),
        Mutation::HeaderField {
            file,
            at,
            width,
            value,
        } => rewrite(file, &mut |b| {
            if b.len() >= at + width {
                b[*at..at + width].copy_from_slice(&value.to_le_bytes()[..*width]);
            }
        }),
        Mutation::RecordLength { file, record, len } => reframe(file, &mut |rs| {
            let r = &mut rs[*record];
            if r[0] != rec::PAD {
                let mut d = Dec::new(&r[1..]);
                if let Ok(old) = d.varint() {
                    let body = r[1 + d.pos()..].to_vec();
                    let mut head = [0u8; 11];
                    let mut e = Enc::new(&mut head);
                    e.u8(r[0]);
                    e.varint(*len);
                    let n = e.len();
                    let _ = old;
                    *r = [&head[..n], &body[..]].concat();
                }
            }
        }),
        Mutation::Payload {
            file,
            record,
            at,
            n,
            byte,
        } => reframe(file, &mut |rs| {
            let r = &mut rs[*record];
            let from = (2 + at).min(r.len());
            let upto = (from + n).min(r.len());
            r[from..upto].fill(*byte);
        }),
        Mutation::Drop { file, record, lost } => reframe(file, &mut |rs| {
            if *lost {
                let mut one = [0u8; 10];
                let mut e = Enc::new(&mut one);
                e.varint(1);
                let n = e.len();
                rs[*record] = encode_record(rec::LOST, &one[..n]);
            } else {
                rs.remove(*record);
            }
        }),
        Mutation::Repeat {
            file,
            record,
            times,
        } => reframe(file, &mut |rs| {
            let r = rs[*record].clone();
            for _ in 0..*times {
                rs.insert(*record, r.clone());
            }
        }),
        Mutation::Swap { file, a, b } => reframe(file, &mut |rs| rs.swap(*a, *b)),
        Mutation::Remove { file } => std::fs::remove_file(moved(file)),
        Mutation::Copy { file, to: name } => std::fs::copy(moved(file), moved(name)).map(|_| ()),
    }
}
