//! The binary file's framing: magic, then each table as its postcard name and rows, in the order
//! written; the JSON file's length, checksum and row counts checked on the way back in.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use super::{StoreError, TablesFile};

/// The first bytes of every binary table file.
pub(super) const MAGIC: &[u8; 8] = b"SCALPELB";

/// FNV-1a, 64 bits, as 16 hex digits.
pub(super) fn fnv1a(bytes: &[u8]) -> String {
    format!("{:016x}", crate::fnv::Fnv::new().raw(bytes).get())
}

/// Writes the tables into a buffer: magic, then per table its name and rows.
pub(super) struct TableWriter {
    buf: Vec<u8>,
    rows: BTreeMap<String, u64>,
}

impl TableWriter {
    pub(super) fn new() -> Self {
        TableWriter {
            buf: MAGIC.to_vec(),
            rows: BTreeMap::new(),
        }
    }

    pub(super) fn table<T: Serialize>(
        &mut self,
        name: &str,
        rows: u64,
        value: &T,
    ) -> std::io::Result<()> {
        let err = |e: postcard::Error| std::io::Error::other(format!("table {name}: {e}"));
        let buf = std::mem::take(&mut self.buf);
        let buf = postcard::to_extend(name, buf).map_err(err)?;
        self.buf = postcard::to_extend(value, buf).map_err(err)?;
        self.rows.insert(name.to_owned(), rows);
        Ok(())
    }

    /// The bytes, and what the JSON file says of them.
    pub(super) fn finish(self, file: &str) -> (Vec<u8>, TablesFile) {
        let info = TablesFile {
            file: file.to_owned(),
            bytes: self.buf.len() as u64,
            fnv1a: fnv1a(&self.buf),
            rows: self.rows,
        };
        (self.buf, info)
    }
}

/// Reads the tables back in the order they were written, checking each name and row count.
pub(super) struct TableReader<'a> {
    path: &'a Path,
    bytes: &'a [u8],
    at: usize,
    info: &'a TablesFile,
}

impl<'a> TableReader<'a> {
    pub(super) fn new(
        path: &'a Path,
        json: &Path,
        bytes: &'a [u8],
        info: &'a TablesFile,
    ) -> Result<Self, StoreError> {
        let stale = |what: String| StoreError::Stale {
            path: path.to_path_buf(),
            json: json.to_path_buf(),
            what,
        };
        if bytes.len() as u64 != info.bytes {
            return Err(stale(format!(
                "it has {} bytes, the JSON file says {}",
                bytes.len(),
                info.bytes
            )));
        }
        let sum = fnv1a(bytes);
        if sum != info.fnv1a {
            return Err(stale(format!(
                "its checksum is {sum}, the JSON file says {}",
                info.fnv1a
            )));
        }
        if !bytes.starts_with(MAGIC) {
            return Err(StoreError::Decode {
                path: path.to_path_buf(),
                offset: 0,
                expected: "the magic bytes SCALPELB".to_owned(),
                reason: "they differ".to_owned(),
            });
        }
        Ok(TableReader {
            path,
            bytes,
            at: MAGIC.len(),
            info,
        })
    }

    fn decode<T: serde::de::DeserializeOwned>(&mut self, expected: &str) -> Result<T, StoreError> {
        let rest = &self.bytes[self.at..];
        let (value, left) =
            postcard::take_from_bytes::<T>(rest).map_err(|e| StoreError::Decode {
                path: self.path.to_path_buf(),
                offset: self.at,
                expected: expected.to_owned(),
                reason: e.to_string(),
            })?;
        self.at += rest.len() - left.len();
        Ok(value)
    }

    /// The next table, which must be `name` with as many rows as the JSON file says (`len`
    /// counts them in what was decoded).
    pub(super) fn table<T: serde::de::DeserializeOwned>(
        &mut self,
        name: &str,
        len: impl Fn(&T) -> u64,
    ) -> Result<T, StoreError> {
        let start = self.at;
        let found: String = self.decode(&format!("the name of table {name}"))?;
        let bad = |reason: String| StoreError::Decode {
            path: self.path.to_path_buf(),
            offset: start,
            expected: format!("table {name}"),
            reason,
        };
        if found != name {
            return Err(bad(format!("found table {found:?}")));
        }
        let value: T = self.decode(&format!("the rows of table {name}"))?;
        let want = self.info.rows.get(name).copied().unwrap_or(0);
        if len(&value) != want {
            return Err(bad(format!(
                "{} rows, the JSON file says {want}",
                len(&value)
            )));
        }
        Ok(value)
    }

    pub(super) fn finish(self) -> Result<(), StoreError> {
        if self.at == self.bytes.len() {
            return Ok(());
        }
        Err(StoreError::Decode {
            path: self.path.to_path_buf(),
            offset: self.at,
            expected: "the end of the file".to_owned(),
            reason: format!("{} more bytes", self.bytes.len() - self.at),
        })
    }
}

/// The rows of a table read as a vector. (It takes `&Vec` because it is passed where a
/// `Fn(&Vec<T>)` is expected, which a slice parameter would not fit.)
#[allow(clippy::ptr_arg)]
pub(super) fn len<T>(v: &Vec<T>) -> u64 {
    v.len() as u64
}
