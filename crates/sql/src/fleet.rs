//! Several machines' datasets as one: each written where its machine's trace is (`scalpel
//! infer --stage graph` there, then `scalpel export --format parquet`), queried together. Every
//! table is the union of the datasets' tables, with a `host` column naming each row's machine
//! (the partitioned tables have it already; the others gain it), so that a query joins one
//! machine's rows with another's, as the messages between them do.
//!
//! A dataset joins a fleet as one machine: one written from the traces of several machines
//! inferred together is refused (it is a fleet already). A machine is named as its dataset
//! names it; a recording of one machine, whose dataset calls it `local`, by the dataset's
//! directory name instead.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use datafusion::prelude::{lit, DataFrame};
use scalpel_tables::{read_manifest, Manifest, TableName};

use crate::engine::{partition_cols, table_name, table_root, Engine};
use crate::error::SqlError;
use crate::place::Place;

/// The name a dataset of one recording gives its machine.
const LOCAL: &str = "local";

/// Each dataset's machine: its one machine's name, or its directory's for `local`; distinct.
fn machine_names(sets: &[(PathBuf, Manifest)]) -> Result<Vec<String>, SqlError> {
    let mut names: Vec<String> = Vec::with_capacity(sets.len());
    for (dir, m) in sets {
        let bad = |what: String| SqlError::Dataset {
            path: dir.clone(),
            what,
        };
        if m.infer_windows > 0 {
            return Err(bad(format!(
                "it holds a trace inferred in {} windows; a dataset of windows is queried \
                 alone",
                m.infer_windows
            )));
        }
        let [one] = m.hosts.as_slice() else {
            return Err(bad(format!(
                "it holds the tables of {} machines ({}); datasets are queried together only \
                 when each is one machine's (give it alone)",
                m.hosts.len(),
                m.hosts.join(", ")
            )));
        };
        let name = if one == LOCAL {
            dir_name(dir)?
        } else {
            one.clone()
        };
        if let Some(i) = names.iter().position(|n| *n == name) {
            return Err(bad(format!(
                "its machine is named {name:?}, as {}'s is; each machine's dataset must have \
                 a name of its own (a recording of one machine is named by its directory)",
                sets[i].0.display()
            )));
        }
        names.push(name);
    }
    Ok(names)
}

/// A directory's last component, as a machine's name.
fn dir_name(dir: &Path) -> Result<String, SqlError> {
    let abs = dir.canonicalize().map_err(|e| SqlError::Dataset {
        path: dir.to_path_buf(),
        what: e.to_string(),
    })?;
    abs.file_name()
        .and_then(|n| n.to_str())
        .map(str::to_owned)
        .ok_or_else(|| SqlError::Dataset {
            path: dir.to_path_buf(),
            what: "its directory has no name in UTF-8 to call its machine by".to_owned(),
        })
}

/// Refuses datasets whose time windows differ: `time_window` would mean two things.
fn same_window(sets: &[(PathBuf, Manifest)]) -> Result<(), SqlError> {
    let Some((first, m0)) = sets.first() else {
        return Ok(());
    };
    match sets.iter().find(|(_, m)| m.window_ns != m0.window_ns) {
        None => Ok(()),
        Some((dir, m)) => Err(SqlError::Dataset {
            path: dir.clone(),
            what: format!(
                "its partitions' window is {} ns, {}'s {} ns; export them with one --window",
                m.window_ns,
                first.display(),
                m0.window_ns
            ),
        }),
    }
}

impl Engine {
    /// An engine on the Parquet datasets in `dirs`, one machine each, running its queries at
    /// `place` (see the module's documentation). One directory is [`Engine::from_dataset`].
    pub fn from_datasets(dirs: &[PathBuf], place: &Place) -> Result<Engine, SqlError> {
        if let [one] = dirs {
            return Engine::from_dataset(one, place);
        }
        let sets = dirs
            .iter()
            .map(|d| Ok((d.clone(), read_manifest(d)?)))
            .collect::<Result<Vec<_>, SqlError>>()?;
        let names = machine_names(&sets)?;
        same_window(&sets)?;
        let e = Engine::new(place)?;
        let mut tables: BTreeMap<TableName, Vec<DataFrame>> = BTreeMap::new();
        for ((dir, m), name) in sets.iter().zip(&names) {
            let root = table_root(dir)?;
            for t in &m.tables {
                let table = table_name(dir, t)?;
                let files = e.table_files(&root, table, partition_cols(t, false))?;
                let df =
                    e.rt.block_on(e.ctx.read_parquet(files.url.as_str(), files.options()))?;
                tables
                    .entry(table)
                    .or_default()
                    .push(df.with_column("host", lit(name.as_str()))?);
            }
        }
        for (table, frames) in tables {
            let mut frames = frames.into_iter();
            let Some(first) = frames.next() else { continue };
            let all = frames.try_fold(first, DataFrame::union)?;
            e.ctx.register_table(table.name(), all.into_view())?;
        }
        Ok(e)
    }
}
