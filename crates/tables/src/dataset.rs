//! The tables as a Parquet dataset: `DIR/<table>/part-0.parquet`, or for a partitioned table
//! `DIR/<table>/host=<machine>/time_window=<k>/part-0.parquet` (Hive-style, which DataFusion,
//! DuckDB, pyarrow and Spark turn into `host` and `time_window` columns), and a manifest
//! ([`crate::manifest`]) that says what was written.
//!
//! A trace inferred in windows (each window a model of its own, with ids of its own) is one
//! dataset of windows: every table gains a first directory level `infer_window=<k>`, which
//! readers turn into an `infer_window` column, and the time windows count from the trace's
//! first leaf, not each window's. The windows are written one after the other
//! ([`DatasetWriter::add`]), so that only one window's model is held at a time.
//!
//! What it touches: a missing or empty directory is made a dataset; in an earlier dataset's
//! directory only the tables its manifest names, and the manifest, are replaced; a directory
//! without a manifest is refused untouched (`files`).

use std::path::{Path, PathBuf};

use crate::error::TablesError;
use crate::files::{escape, make_dir, prepare, write_file};
use crate::manifest::{write_manifest, Manifest, ManifestTable};
use crate::partition::Part;
use crate::table::{Table, TableName, TableSource};

/// The most partitions one table may have: more would be a directory per handful of rows
/// (a window of nanoseconds), which no engine reads well.
pub const MAX_PARTITIONS: u64 = 100_000;

/// Refuses `partitions` over [`MAX_PARTITIONS`].
fn within_most(partitions: u64) -> Result<(), TablesError> {
    if partitions > MAX_PARTITIONS {
        return Err(TablesError::TooManyPartitions {
            partitions,
            most: MAX_PARTITIONS,
        });
    }
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

/// Writes a dataset from one model, or from the windows of one trace one after the other;
/// [`DatasetWriter::finish`] makes it complete. Dropped unfinished, it leaves a dataset that
/// readers refuse and the next export replaces.
pub struct DatasetWriter {
    dir: PathBuf,
    window_ns: u64,
    /// Whether it is a dataset of windows (`infer_window=<k>` directories).
    windowed: bool,
    /// The machines, as the first source named them.
    hosts: Option<Vec<String>>,
    /// The time windows' origin: the first source's first leaf.
    origin_ns: Option<u64>,
    /// The windows added.
    added: u32,
    /// The partitions a partitioned table may have so far, over every window.
    partitions: u64,
    tables: Vec<ManifestTable>,
}

impl DatasetWriter {
    /// Makes `dir` a dataset to write (created when missing; an earlier dataset there is
    /// replaced; a directory holding anything else is refused untouched), time windows of
    /// `window_ns`, of one model or (`windowed`) of a trace's windows. The manifest is written
    /// first as incomplete, naming every table there could be, so that a failed export is
    /// still recognised (and replaced) by the next.
    pub fn create(dir: &Path, window_ns: u64, windowed: bool) -> Result<Self, TablesError> {
        prepare(dir)?;
        let planned = TableName::ALL
            .iter()
            .map(|n| ManifestTable {
                name: n.name().to_owned(),
                partitioned: n.is_partitioned(),
                rows: 0,
                files: 0,
            })
            .collect();
        write_manifest(dir, &Manifest::new(window_ns, &[], planned, false))?;
        Ok(DatasetWriter {
            dir: dir.to_path_buf(),
            window_ns: window_ns.max(1),
            windowed,
            hosts: None,
            origin_ns: None,
            added: 0,
            partitions: 0,
            tables: Vec::new(),
        })
    }

    /// Writes every table of `src` (of the next window, in a dataset of windows), one table
    /// built and written at a time. `src`'s time windows are counted from the first source's
    /// first leaf.
    pub fn add(&mut self, src: TableSource<'_>) -> Result<(), TablesError> {
        if self.added > 0 && !self.windowed {
            return Err(TablesError::OneModel);
        }
        let origin = *self.origin_ns.get_or_insert(src.origin_ns());
        let src = src.with_origin(origin, self.window_ns);
        let hosts = self.hosts.get_or_insert_with(|| src.hosts().to_vec());
        if hosts.as_slice() != src.hosts() {
            return Err(TablesError::OtherMachines {
                window: self.added,
                first: hosts.join(", "),
                these: src.hosts().join(", "),
            });
        }
        let hosts = hosts.clone();
        self.partitions = self.partitions.saturating_add(src.partitions_at_most());
        within_most(self.partitions)?;
        for name in src.names() {
            let table = src.build(name)?;
            let at = self.table_dir(name)?;
            let (rows, files) = write_table(&at, &hosts, &table)?;
            match self.tables.iter_mut().find(|t| t.name == name.name()) {
                Some(t) => {
                    t.rows += rows;
                    t.files += files;
                }
                None => self.tables.push(ManifestTable {
                    name: name.name().to_owned(),
                    partitioned: name.is_partitioned(),
                    rows,
                    files,
                }),
            }
        }
        self.added += 1;
        Ok(())
    }

    /// The directory the next source's rows of table `name` go to, made.
    fn table_dir(&self, name: TableName) -> Result<PathBuf, TablesError> {
        let tdir = self.dir.join(name.name());
        // The table's directory is new for the first source: never an earlier one's.
        make_dir(&tdir, self.added == 0)?;
        if !self.windowed {
            return Ok(tdir);
        }
        let w = tdir.join(format!("infer_window={}", self.added));
        make_dir(&w, true)?;
        Ok(w)
    }

    /// Writes the complete manifest; returns it.
    pub fn finish(self) -> Result<Manifest, TablesError> {
        let hosts = self.hosts.unwrap_or_default();
        let mut m = Manifest::new(self.window_ns, &hosts, self.tables, true);
        if self.windowed {
            m.infer_windows = self.added;
        }
        write_manifest(&self.dir, &m)?;
        Ok(m)
    }
}

/// Writes every table of `src` as a Parquet dataset in `dir` (created when missing; an
/// earlier dataset there is replaced; a directory holding anything else is refused), one table
/// built and written at a time (see [`DatasetWriter`]). Returns the complete manifest.
pub fn write_dataset(dir: &Path, src: TableSource<'_>) -> Result<Manifest, TablesError> {
    // Refused before anything is touched.
    within_most(src.partitions_at_most())?;
    let mut w = DatasetWriter::create(dir, src.window_ns(), false)?;
    w.add(src)?;
    w.finish()
}

/// Writes one table's files under `tdir`; returns its rows and files.
fn write_table(tdir: &Path, hosts: &[String], t: &Table) -> Result<(u64, u64), TablesError> {
    let name = t.name.name();
    let mut parts = t.partitions()?;
    if parts.is_empty() {
        // An empty partitioned table still has a file, so that readers know its columns.
        parts.push((Some(Part { host: 0, window: 0 }), t.batch.clone()));
    }
    for (p, batch) in &parts {
        let at = match p {
            Some(p) => part_dir(tdir, hosts, *p)?,
            None => tdir.to_path_buf(),
        };
        write_file(&at.join("part-0.parquet"), name, batch)?;
    }
    Ok((t.batch.num_rows() as u64, parts.len() as u64))
}
