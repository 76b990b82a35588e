//! `scalpel sql`: SQL on a model's tables (DataFusion, embedded), from the model itself or from
//! the Parquet dataset `scalpel export --format parquet` wrote.

use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use scalpel::pipeline::is_windowed;
use scalpel::Pipeline;
use scalpel_model::progress::Timings;
use scalpel_sql::{write_rows, Engine, Place, RowFormat};
use scalpel_tables::{build_tables, DEFAULT_WINDOW_NS};

use crate::args::PipelineArgs;
use crate::output::{broken_pipe_is_fine, print_timings, text_stdout};
use crate::source::Source;
use crate::spinner::Spinner;

/// How `sql` prints its rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    /// An aligned text table.
    Table,
    /// Comma-separated values with a header line.
    Csv,
    /// One JSON object per row.
    Jsonl,
}

#[derive(Args, Debug)]
pub(crate) struct SqlArgs {
    /// What to query, then the query: a Parquet dataset `scalpel export --format parquet`
    /// wrote (or several, one machine's each, queried as one with a `host` column in every
    /// table), a model.json, a directory `scalpel infer` wrote (window by window too: every
    /// window's tables, with an `infer_window` column), or trace directories (inferred
    /// on the spot); the last word is the query, e.g. "SELECT name, count(*) FROM instances
    /// GROUP BY name". The tables, and `clock_fit` (two machines' clocks from their
    /// messages): docs/guide/tables.md.
    // Why `1..` and not `2..`: clap counts a positional's values per run of them, so
    // `DIR --format csv QUERY` would be two runs of one; the count is checked in `options`.
    #[arg(required = true, num_args = 1.., value_name = "PATH|QUERY")]
    pub words: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
    /// Where the query runs: `embedded`, in this process, or `ballista://HOST:PORT`, on the
    /// Ballista cluster whose scheduler that is (`scalpel-ballista` starts one). A cluster
    /// queries a dataset only, and its executors must see the dataset's files by the same
    /// paths (this machine, or a shared mount).
    #[arg(long, default_value = "embedded", value_name = "ENGINE")]
    pub engine: Place,
    #[command(flatten)]
    pub pipeline: PipelineArgs,
}

/// `sql` in the library's terms.
#[derive(Debug)]
pub(crate) struct Sql {
    pub source: Source,
    pub query: String,
    pub format: RowFormat,
    pub engine: Place,
}

impl SqlArgs {
    pub(crate) fn options(mut self) -> Result<Sql> {
        anyhow::ensure!(
            self.words.len() >= 2,
            "expected what to query, then the query; got only {:?}",
            self.words.concat()
        );
        let query = self.words.pop().unwrap_or_default();
        anyhow::ensure!(
            !query.trim().is_empty(),
            "the query (the last argument) is empty"
        );
        let mut paths = self.words.into_iter().map(PathBuf::from);
        Ok(Sql {
            source: Source {
                pipeline: self.pipeline.options(),
                timings: self.pipeline.timings,
                memory: self.pipeline.memory_limit(),
                path: paths.next().unwrap_or_default(),
                more: paths.collect(),
            },
            query,
            format: match self.format {
                Format::Table => RowFormat::Table,
                Format::Csv => RowFormat::Csv,
                Format::Jsonl => RowFormat::Jsonl,
            },
            engine: self.engine,
        })
    }
}

/// The dataset of the windows of the directory `a` names, in a temporary directory.
fn windows_dataset(a: &Sql, t: &mut Timings) -> Result<tempfile::TempDir> {
    let scratch = tempfile::Builder::new()
        .prefix("scalpel-sql-")
        .tempdir()
        .context("cannot make a temporary directory for the windows' tables")?;
    let pipeline = Pipeline::new(a.source.pipeline.clone())?;
    let dir = scratch.path().join("tables");
    crate::commands::export::dataset_of_windows(
        t,
        &pipeline,
        &a.source.path,
        &dir,
        DEFAULT_WINDOW_NS,
    )?;
    Ok(scratch)
}

/// Whether `path` is a dataset (it holds a manifest) rather than a model or traces.
fn is_dataset(path: &Path) -> bool {
    path.join("scalpel-tables.json").is_file()
}

/// The datasets to query, when the paths are datasets (one, or one machine's each); `None`
/// when none is. Refuses a mixture.
fn datasets(s: &Source) -> Result<Option<Vec<PathBuf>>> {
    let paths: Vec<PathBuf> = std::iter::once(&s.path).chain(&s.more).cloned().collect();
    let (sets, other): (Vec<&PathBuf>, Vec<&PathBuf>) = paths.iter().partition(|p| is_dataset(p));
    match (sets.first(), other.first()) {
        (None, _) => Ok(None),
        (Some(_), None) => Ok(Some(paths)),
        (Some(set), Some(not)) => anyhow::bail!(
            "{} is a dataset and {} is not: give datasets (one machine's each) or traces, \
             not both",
            set.display(),
            not.display()
        ),
    }
}

pub(crate) fn run(a: &Sql) -> Result<()> {
    let mut t = Timings::new();
    // A directory `infer` wrote window by window: its dataset of windows, written where only
    // this run sees it, one window at a time (the windows' models are each a model of its own,
    // and held together they might not fit).
    let scratch = if a.source.more.is_empty() && is_windowed(&a.source.path) {
        Some(windows_dataset(a, &mut t)?)
    } else {
        None
    };
    let spinner = Spinner::new();
    let engine = if let Some(dir) = &scratch {
        t.phase("opening the dataset", &spinner, || {
            Engine::from_dataset(&dir.path().join("tables"), &a.engine)
        })?
    } else if let Some(sets) = datasets(&a.source)? {
        t.phase("opening the dataset", &spinner, || {
            Engine::from_datasets(&sets, &a.engine)
        })?
    } else {
        // Why: a cluster's executors are other processes; they read tables from files, not
        // from this process's memory.
        anyhow::ensure!(
            a.engine == Place::Embedded,
            "{}: not a dataset, and a Ballista cluster's executors read the tables from \
             files; write them with `scalpel export {} --format parquet -o DIR` and query DIR",
            a.source.path.display(),
            a.source.path.display()
        );
        let (_, l) = a.source.load(&mut t, &spinner)?;
        let tables = t.phase("building tables", &spinner, || {
            build_tables(&l.graph, Some(&l.model), DEFAULT_WINDOW_NS)
        })?;
        t.phase("registering tables", &spinner, || {
            Engine::from_tables(&tables)
        })?
    };
    let batches = t
        .phase("query", &spinner, || engine.query(&a.query))
        .context("the query failed")?;
    drop(spinner);
    let written = if a.format == RowFormat::Table {
        let mut w = text_stdout();
        write_and_flush(&mut w, &batches, a.format)
    } else {
        let mut w = BufWriter::new(io::stdout().lock());
        write_and_flush(&mut w, &batches, a.format)
    };
    print_timings(a.source.timings, &t);
    written
}

fn write_and_flush(
    w: &mut impl Write,
    batches: &[scalpel_sql::Batch],
    format: RowFormat,
) -> Result<()> {
    match write_rows(w, batches, format) {
        Ok(_) => broken_pipe_is_fine(w.flush()),
        Err(scalpel_sql::SqlError::Io(e)) => broken_pipe_is_fine(Err(e)),
        Err(e) => Err(e.into()),
    }
}
