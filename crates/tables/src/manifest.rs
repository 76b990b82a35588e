//! The dataset's manifest, `DIR/scalpel-tables.json`: which tables there are, their rows and
//! files, the window and the machines; written first as incomplete, and again, complete, once
//! every table is.

use std::fs;
use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::TablesError;

/// The manifest's file name.
pub(crate) const MANIFEST: &str = "scalpel-tables.json";

/// The manifest's schema tag.
const SCHEMA: &str = "scalpel-tables/1";

/// What a dataset holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// `scalpel-tables/1`.
    pub schema: String,
    /// Whether every table was written (false while an export runs, and after one failed).
    pub complete: bool,
    /// The partitions' time window.
    pub window_ns: u64,
    /// The machines, by host id (the directories' `host=` values, before escaping).
    pub hosts: Vec<String>,
    /// The tables.
    pub tables: Vec<ManifestTable>,
    /// For a trace inferred in windows, how many: every table then has `infer_window=<k>`
    /// directories, and ids are each window's own. 0 (and absent) for one model.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub infer_windows: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
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

impl Manifest {
    /// A manifest of `tables` (complete or not).
    pub(crate) fn new(
        window_ns: u64,
        hosts: &[String],
        tables: Vec<ManifestTable>,
        complete: bool,
    ) -> Self {
        Manifest {
            schema: SCHEMA.to_owned(),
            complete,
            window_ns,
            hosts: hosts.to_vec(),
            tables,
            infer_windows: 0,
        }
    }
}

/// Reads the manifest in `dir`, complete or not: `Ok(None)` when there is none.
pub(crate) fn read_any(dir: &Path) -> Result<Option<Manifest>, TablesError> {
    let path = dir.join(MANIFEST);
    let text = match fs::read_to_string(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        r => r.map_err(|source| TablesError::Io {
            path: path.clone(),
            source,
        })?,
    };
    let bad = |what: String| TablesError::Manifest {
        path: path.clone(),
        what,
    };
    // serde_json's message ends with the line and column.
    let m: Manifest = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
    if m.schema != SCHEMA {
        return Err(bad(format!("schema {:?}, expected {SCHEMA:?}", m.schema)));
    }
    Ok(Some(m))
}

/// Reads the manifest of the dataset in `dir`, which must be complete.
pub fn read_manifest(dir: &Path) -> Result<Manifest, TablesError> {
    let path = dir.join(MANIFEST);
    match read_any(dir)? {
        None => Err(TablesError::Io {
            path,
            source: std::io::ErrorKind::NotFound.into(),
        }),
        Some(m) if !m.complete => Err(TablesError::Incomplete { path }),
        Some(m) => Ok(m),
    }
}

/// Writes `m` in `dir` in one step: to a temporary file, then renamed over the old.
pub(crate) fn write_manifest(dir: &Path, m: &Manifest) -> Result<(), TablesError> {
    let path = dir.join(MANIFEST);
    let tmp = dir.join(format!(".{MANIFEST}.new"));
    let io = |source| TablesError::Io {
        path: path.clone(),
        source,
    };
    let mut text = serde_json::to_string_pretty(m).map_err(|e| io(e.into()))?;
    text.push('\n');
    // `create_new`: never through a link someone left at the temporary name.
    let _ = fs::remove_file(&tmp);
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .map_err(io)?;
    f.write_all(text.as_bytes()).map_err(io)?;
    f.sync_all().map_err(io)?;
    fs::rename(&tmp, &path).map_err(io)
}
