//! The tables as a Parquet dataset: `DIR/<table>/part-0.parquet`, or for a partitioned table
//! `DIR/<table>/host=<machine>/time_window=<k>/part-0.parquet` (Hive-style, which DataFusion,
//! DuckDB, pyarrow and Spark turn into `host` and `time_window` columns), and a manifest
//! ([`crate::manifest`]) that says what was written.
//!
//! What it touches: a missing or empty directory is made a dataset; in an earlier dataset's
//! directory only the tables its manifest names, and the manifest, are replaced; a directory
//! without a manifest is refused untouched. Every directory below `DIR` is made here, never
//! followed through a link, and every file is new.

use std::fs::{self, File, OpenOptions};
use std::io::{BufWriter, ErrorKind};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::RecordBatch;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

use crate::error::TablesError;
use crate::manifest::{read_any, write_manifest, Manifest, ManifestTable};
use crate::partition::Part;
use crate::table::{Table, TableName, TableSource};

/// The most partitions one table may have: more would be a directory per handful of rows
/// (a window of nanoseconds), which no engine reads well.
pub const MAX_PARTITIONS: u64 = 100_000;

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> TablesError + '_ {
    move |source| TablesError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// A partition value as a directory name: bytes other than letters, digits, `.`, `-` and `_`
/// percent-encoded, as Hive does.
fn escape(v: &str) -> String {
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
fn prepare(dir: &Path) -> Result<(), TablesError> {
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
fn make_dir(path: &Path, fresh: bool) -> Result<(), TablesError> {
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

fn write_file(path: &Path, table: &str, batch: &RecordBatch) -> Result<(), TablesError> {
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

/// The directory of part `p` under table directory `tdir`, made.
fn part_dir(tdir: &Path, hosts: &[String], p: Part) -> Result<PathBuf, TablesError> {
    let host = hosts.get(p.host as usize).map_or("", String::as_str);
    let h = tdir.join(format!("host={}", escape(host)));
    make_dir(&h, false)?;
    let w = h.join(format!("time_window={}", p.window));
    make_dir(&w, false)?;
    Ok(w)
}

/// Writes every table of `src` as a Parquet dataset in `dir` (created when missing; an
/// earlier dataset there is replaced; a directory holding anything else is refused), one table
/// built and written at a time. The manifest is written first as incomplete, so that a failed
/// export is still recognised (and replaced) by the next. Returns the complete manifest.
pub fn write_dataset(dir: &Path, src: &TableSource<'_>) -> Result<Manifest, TablesError> {
    let most = src.partitions_at_most();
    if most > MAX_PARTITIONS {
        return Err(TablesError::TooManyPartitions {
            partitions: most,
            most: MAX_PARTITIONS,
        });
    }
    prepare(dir)?;
    let names = src.names();
    let planned = names
        .iter()
        .map(|n| ManifestTable {
            name: n.name().to_owned(),
            partitioned: n.is_partitioned(),
            rows: 0,
            files: 0,
        })
        .collect();
    write_manifest(
        dir,
        &Manifest::new(src.window_ns(), src.hosts(), planned, false),
    )?;
    let mut out = Vec::new();
    for name in names {
        let table = src.build(name)?;
        out.push(write_table(dir, src.hosts(), &table)?);
    }
    let manifest = Manifest::new(src.window_ns(), src.hosts(), out, true);
    write_manifest(dir, &manifest)?;
    Ok(manifest)
}

/// Writes one table's files under `dir`.
fn write_table(dir: &Path, hosts: &[String], t: &Table) -> Result<ManifestTable, TablesError> {
    let name = t.name.name();
    let tdir = dir.join(name);
    make_dir(&tdir, true)?;
    let mut parts = t.partitions()?;
    if parts.is_empty() {
        // An empty partitioned table still has a file, so that readers know its columns.
        parts.push((Some(Part { host: 0, window: 0 }), t.batch.clone()));
    }
    for (p, batch) in &parts {
        let at = match p {
            Some(p) => part_dir(&tdir, hosts, *p)?,
            None => tdir.clone(),
        };
        write_file(&at.join("part-0.parquet"), name, batch)?;
    }
    Ok(ManifestTable {
        name: name.to_owned(),
        partitioned: t.name.is_partitioned(),
        rows: t.batch.num_rows() as u64,
        files: parts.len() as u64,
    })
}
