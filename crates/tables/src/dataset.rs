//! The tables as a Parquet dataset: `DIR/<table>/part-0.parquet`, or for a partitioned table
//! `DIR/<table>/host=<machine>/time_window=<k>/part-0.parquet` (Hive-style, which DataFusion,
//! DuckDB, pyarrow and Spark turn into `host` and `time_window` columns), and a manifest
//! (`DIR/scalpel-tables.json`) that says what was written.

use std::fs::{self, File, OpenOptions};
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::RecordBatch;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use serde::{Deserialize, Serialize};

use crate::error::TablesError;
use crate::partition::Part;
use crate::table::{Table, TableName, TableSource};

/// The manifest's file name.
pub(crate) const MANIFEST: &str = "scalpel-tables.json";

/// The manifest's schema tag.
const SCHEMA: &str = "scalpel-tables/1";

/// What a dataset holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// `scalpel-tables/1`.
    pub schema: String,
    /// The partitions' time window.
    pub window_ns: u64,
    /// The machines, by host id (the directories' `host=` values, before escaping).
    pub hosts: Vec<String>,
    /// The tables written.
    pub tables: Vec<ManifestTable>,
}

/// One table of a dataset.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestTable {
    /// Its name, which is its directory's.
    pub name: String,
    /// Whether it is split by `host` and `time_window`.
    pub partitioned: bool,
    /// Its rows.
    pub rows: u64,
    /// Its files.
    pub files: u64,
}

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

/// Reads the manifest of the dataset in `dir`.
pub fn read_manifest(dir: &Path) -> Result<Manifest, TablesError> {
    let path = dir.join(MANIFEST);
    let text = fs::read_to_string(&path).map_err(io_err(&path))?;
    let m: Manifest = serde_json::from_str(&text).map_err(|e| TablesError::Manifest {
        path: path.clone(),
        what: format!("line {} column {}: {e}", e.line(), e.column()),
    })?;
    if m.schema != SCHEMA {
        return Err(TablesError::Manifest {
            path,
            what: format!("schema {:?}, expected {SCHEMA:?}", m.schema),
        });
    }
    Ok(m)
}

/// Makes `dir` ready: created when missing; an earlier dataset's tables removed; anything else
/// in it refused, untouched.
fn prepare(dir: &Path) -> Result<(), TablesError> {
    match fs::read_dir(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return fs::create_dir_all(dir).map_err(io_err(dir));
        }
        Err(e) => return Err(io_err(dir)(e)),
        Ok(mut entries) => {
            if entries.next().is_none() {
                return Ok(());
            }
        }
    }
    let old = read_manifest(dir).map_err(|_| TablesError::NotADataset {
        path: dir.to_path_buf(),
    })?;
    // Only what the earlier manifest names, and only under a table's own name.
    for t in &old.tables {
        if let Ok(name) = t.name.parse::<TableName>() {
            let sub = dir.join(name.name());
            if sub.symlink_metadata().is_ok_and(|m| m.is_dir()) {
                fs::remove_dir_all(&sub).map_err(io_err(&sub))?;
            }
        }
    }
    let manifest = dir.join(MANIFEST);
    fs::remove_file(&manifest).map_err(io_err(&manifest))
}

fn create(path: &Path) -> Result<File, TablesError> {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).map_err(io_err(parent))?;
    }
    // Never through a link or over a file: the directory was emptied of this dataset.
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

fn part_dir(dir: &Path, hosts: &[String], p: Part) -> PathBuf {
    let host = hosts.get(p.host as usize).map_or("", String::as_str);
    dir.join(format!("host={}", escape(host)))
        .join(format!("time_window={}", p.window))
}

/// Writes every table of `src` as a Parquet dataset in `dir` (created when missing; an
/// earlier dataset there is replaced; a directory holding anything else is refused), one table
/// built and written at a time. Returns its manifest.
pub fn write_dataset(dir: &Path, src: &TableSource<'_>) -> Result<Manifest, TablesError> {
    prepare(dir)?;
    let mut out = Vec::new();
    for name in src.names() {
        let table = src.build(name)?;
        out.push(write_table(dir, src.hosts(), &table)?);
    }
    let manifest = Manifest {
        schema: SCHEMA.to_owned(),
        window_ns: src.window_ns(),
        hosts: src.hosts().to_vec(),
        tables: out,
    };
    let path = dir.join(MANIFEST);
    let mut text = serde_json::to_string_pretty(&manifest).map_err(|e| io_err(&path)(e.into()))?;
    text.push('\n');
    std::io::Write::write_all(&mut create(&path)?, text.as_bytes()).map_err(io_err(&path))?;
    Ok(manifest)
}

/// Writes one table's files under `dir`.
fn write_table(dir: &Path, hosts: &[String], t: &Table) -> Result<ManifestTable, TablesError> {
    let name = t.name.name();
    let tdir = dir.join(name);
    let parts = t.partitions()?;
    let mut files = 0;
    if parts.is_empty() {
        // An empty partitioned table still has a file, so that readers know its columns.
        let empty = Part { host: 0, window: 0 };
        let path = part_dir(&tdir, hosts, empty).join("part-0.parquet");
        write_file(&path, name, &t.batch)?;
        files = 1;
    }
    for (p, batch) in &parts {
        let path = match p {
            Some(p) => part_dir(&tdir, hosts, *p),
            None => tdir.clone(),
        }
        .join("part-0.parquet");
        write_file(&path, name, batch)?;
        files += 1;
    }
    Ok(ManifestTable {
        name: name.to_owned(),
        partitioned: t.name.is_partitioned(),
        rows: t.batch.num_rows() as u64,
        files,
    })
}
