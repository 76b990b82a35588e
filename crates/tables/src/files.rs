//! The dataset's files and directories: made here, never followed through a link, every file
//! new; an earlier dataset's tables are the only thing removed.

use std::fs::{self, File, OpenOptions};
use std::io::{BufWriter, ErrorKind};
use std::path::Path;
use std::sync::Arc;

use arrow_array::RecordBatch;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

use crate::error::TablesError;
use crate::manifest::read_any;
use crate::table::TableName;

pub(crate) fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> TablesError + '_ {
    move |source| TablesError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// A partition value as a directory name: bytes other than letters, digits, `.`, `-` and `_`
/// percent-encoded, as Hive does.
pub(crate) fn escape(v: &str) -> String {
    let mut s = String::with_capacity(v.len());
    for b in v.bytes() {
        if b.is_ascii_alphanumeric() || b"._-".contains(&b) {
            s.push(b as char);
        } else {
            s.push_str(&format!("%{b:02X}"));
        }
    }
    s
}

/// Makes `dir` ready: created when missing; an earlier dataset's tables removed; anything else
/// in it refused, untouched.
pub(crate) fn prepare(dir: &Path) -> Result<(), TablesError> {
    match fs::read_dir(dir) {
        Err(e) if e.kind() == ErrorKind::NotFound => {
            return fs::create_dir_all(dir).map_err(io_err(dir));
        }
        Err(e) => return Err(io_err(dir)(e)),
        Ok(mut entries) => {
            if entries.next().is_none() {
                return Ok(());
            }
        }
    }
    let Some(old) = read_any(dir)? else {
        return Err(TablesError::NotADataset {
            path: dir.to_path_buf(),
        });
    };
    // Only what the earlier manifest names, and only under a table's own name; a link there
    // is removed, never followed.
    for t in &old.tables {
        if let Ok(name) = t.name.parse::<TableName>() {
            let sub = dir.join(name.name());
            match sub.symlink_metadata() {
                Ok(m) if m.is_dir() => fs::remove_dir_all(&sub).map_err(io_err(&sub))?,
                Ok(_) => fs::remove_file(&sub).map_err(io_err(&sub))?,
                Err(_) => {}
            }
        }
    }
    Ok(())
}

/// Makes directory `path` (its parent exists): `fresh` when nothing may be there yet, else an
/// existing directory is fine; a link or a file there is refused.
pub(crate) fn make_dir(path: &Path, fresh: bool) -> Result<(), TablesError> {
    match fs::create_dir(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == ErrorKind::AlreadyExists && !fresh => match path.symlink_metadata() {
            Ok(m) if m.is_dir() => Ok(()),
            _ => Err(io_err(path)(e)),
        },
        Err(e) => Err(io_err(path)(e)),
    }
}

fn create(path: &Path) -> Result<File, TablesError> {
    // Never through a link or over a file: the directory is new.
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(io_err(path))
}

pub(crate) fn write_file(path: &Path, table: &str, batch: &RecordBatch) -> Result<(), TablesError> {
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .set_key_value_metadata(Some(vec![parquet::file::metadata::KeyValue::new(
            "scalpel.table".to_owned(),
            table.to_owned(),
        )]))
        .build();
    let pq = |source| TablesError::Parquet {
        path: path.to_path_buf(),
        source,
    };
    let file = BufWriter::new(create(path)?);
    let mut w =
        ArrowWriter::try_new(file, Arc::clone(batch.schema_ref()), Some(props)).map_err(pq)?;
    w.write(batch).map_err(pq)?;
    w.close().map_err(pq)?;
    Ok(())
}
