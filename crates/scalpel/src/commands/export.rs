//! `scalpel export`: the stored graph or model, or one of their tables, as JSON for other tools.

use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Args;
use scalpel::pipeline::is_windowed;
use scalpel::Pipeline;
use scalpel_model::progress::Timings;
use scalpel_model::store::read_graph;
use scalpel_views::export::{write_export, ExportError, ExportFormat, Table, WindowRows};
use scalpel_views::outfile::write_named;

use crate::args::SourceArgs;
use crate::choices::{CliExportFormat, CliTable};
use crate::output::{broken_pipe_is_fine, print_timings};
use crate::say;
use crate::source::Source;
use crate::spinner::Spinner;

#[derive(Args, Debug)]
pub(crate) struct ExportArgs {
    #[command(flatten)]
    pub source: SourceArgs,
    /// What to write: a whole document (`graph`, `model`) or one table's rows.
    #[arg(long, value_enum, default_value = "graph")]
    pub table: CliTable,
    /// `json` (one document; rows as one array), `jsonl` (a row a line), `otlp` (the
    /// model's task instances as OpenTelemetry traces, OTLP/JSON, a trace a line) or
    /// `parquet` (every table, a dataset in the directory `-o` names) [default: json for
    /// `graph` and `model`, jsonl for the rows].
    #[arg(long, value_enum)]
    pub format: Option<CliExportFormat>,
    /// The file to write [default: standard output]; with `--format parquet`, the dataset's
    /// directory (created; an earlier dataset there is replaced). Its parent must exist.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// The time window a Parquet dataset's leaves, edges, waits, samples and instances are
    /// partitioned by: a duration such as 60s or 500ms, at least 1ms [default: 60s].
    #[arg(long, value_name = "DURATION", value_parser = window_ns)]
    pub window: Option<u64>,
}

/// A dataset's time window unless `--window` says otherwise: a minute (the tables crate's
/// default, named here too because that crate is optional).
pub(crate) const DEFAULT_WINDOW_NS: u64 = 60_000_000_000;

fn window_ns(s: &str) -> Result<u64, String> {
    match crate::args::duration_ns(s)? {
        ns if ns < 1_000_000 => Err(format!("expected a window of at least 1ms, not {s:?}")),
        ns => Ok(ns),
    }
}

/// `export` in the library's terms.
#[derive(Debug)]
pub(crate) struct Export {
    pub source: Source,
    pub table: Table,
    pub format: Option<ExportFormat>,
    pub output: Option<PathBuf>,
    pub window_ns: u64,
}

/// Refuses an output whose directory does not exist (it is not created: a typo in it would
/// make a tree nobody asked for).
pub(crate) fn parent_exists(output: &Path) -> Result<()> {
    if let Some(dir) = output.parent().filter(|d| !d.as_os_str().is_empty()) {
        anyhow::ensure!(
            dir.is_dir(),
            "cannot write {}: the directory {} does not exist",
            output.display(),
            dir.display()
        );
    }
    Ok(())
}

impl ExportArgs {
    pub(crate) fn options(self) -> Result<Export> {
        if let Some(out) = &self.output {
            parent_exists(out)?;
        }
        let format = self.format.map(Into::into);
        let parquet = format == Some(ExportFormat::Parquet);
        anyhow::ensure!(
            !parquet || self.output.is_some(),
            "a Parquet dataset is a directory of files: name it with -o DIR"
        );
        anyhow::ensure!(
            parquet || self.window.is_none(),
            "--window cuts a Parquet dataset's partitions; give it with --format parquet"
        );
        Ok(Export {
            source: self.source.options(),
            table: self.table.into(),
            format,
            output: self.output,
            window_ns: self.window.unwrap_or(DEFAULT_WINDOW_NS),
        })
    }
}

/// The `graph.json` that `path` names when it holds a graph but no model (what `scalpel infer
/// --stage graph` writes), so that the graph's tables can be exported without a model.
fn graph_only(path: &Path) -> Option<PathBuf> {
    if path.is_dir() {
        let graph = path.join("graph.json");
        return (path.join("model.json").symlink_metadata().is_err()
            && graph.symlink_metadata().is_ok())
        .then_some(graph);
    }
    (path.file_name()? == "graph.json").then(|| path.to_path_buf())
}

/// Writes the export where asked, and says what on stderr when it is a file.
pub(crate) fn run(a: &Export) -> Result<()> {
    let mut t = Timings::new();
    let spinner = Spinner::new();
    // A graph alone is read alone; several paths are traces to infer together.
    let alone = a.source.more.is_empty();
    if let Some(dir) = a
        .output
        .as_ref()
        .filter(|_| alone && a.format == Some(ExportFormat::Parquet) && is_windowed(&a.source.path))
    {
        drop(spinner);
        anyhow::ensure!(
            a.table.is_document(),
            ExportError::ParquetHoldsEveryTable(a.table.name())
        );
        let pipeline = Pipeline::new(a.source.pipeline.clone())?;
        parquet_of_windows(&mut t, &pipeline, &a.source.path, dir, a.window_ns)?;
        print_timings(a.source.timings, &t);
        return Ok(());
    }
    if alone && is_windowed(&a.source.path) {
        drop(spinner);
        rows_of_windows(&mut t, a)?;
        print_timings(a.source.timings, &t);
        return Ok(());
    }
    let (graph, model) = match graph_only(&a.source.path).filter(|_| alone) {
        Some(path) => {
            let g = t.phase("reading graph.json and graph.bin", &spinner, || {
                read_graph(&path)
            })?;
            (g, None)
        }
        None => {
            let (_, l) = a.source.load(&mut t, &spinner)?;
            (l.graph, Some(l.model))
        }
    };
    drop(spinner);
    let (table, format) = (a.table, a.format);
    let name = table.name();
    let written = match &a.output {
        Some(dir) if format == Some(ExportFormat::Parquet) => {
            parquet(&mut t, dir, &graph, model.as_ref(), table, a.window_ns)
        }
        Some(path) => {
            // Created as every output is (see `outfile`): never through a link.
            let rows = write_named(path, |w| {
                write_export(w, &graph, model.as_ref(), table, format).map_err(|e| match e {
                    ExportError::Io(e) => e,
                    e => io::Error::other(e),
                })
            })?;
            if format == Some(ExportFormat::Otlp) {
                say!("scalpel: wrote {} (otlp, {rows} traces)", path.display());
            } else {
                say!("scalpel: wrote {} ({name}, {rows} rows)", path.display());
            }
            Ok(())
        }
        None => {
            let mut w = BufWriter::new(io::stdout().lock());
            match write_export(&mut w, &graph, model.as_ref(), table, format) {
                Ok(_) => broken_pipe_is_fine(w.flush()),
                Err(ExportError::Io(e)) => broken_pipe_is_fine(Err(e)),
                Err(e) => Err(e.into()),
            }
        }
    };
    print_timings(a.source.timings, &t);
    written
}

/// Writes one row table of every window of a trace inferred in windows, each row with its
/// window (`infer_window`), to `-o` or standard output, one window read at a time.
fn rows_of_windows(t: &mut Timings, a: &Export) -> Result<()> {
    let pipeline = Pipeline::new(a.source.pipeline.clone())?;
    let dir = &a.source.path;
    let write = |w: &mut dyn Write, t: &mut Timings| -> Result<u64> {
        let mut rows = WindowRows::new(w, a.table, a.format).map_err(|e| {
            anyhow::anyhow!(
                "{}: {e} (the first window's is {})",
                dir.display(),
                dir.join("window-0000").display()
            )
        })?;
        let sp = Spinner::new();
        pipeline.each_window_where(
            dir,
            &sp,
            t,
            |_| true,
            |b, g, m, _| -> Result<()> {
                rows.add(b.index, g, m)?;
                Ok(())
            },
        )?;
        Ok(rows.finish()?)
    };
    match &a.output {
        Some(path) => {
            let rows = write_named(path, |w| {
                // The file is not kept when a window cannot be read.
                write(w, t).map_err(|e| io::Error::other(format!("{e:#}")))
            })?;
            say!(
                "scalpel: wrote {} ({}, {rows} rows of every window)",
                path.display(),
                a.table.name()
            );
            Ok(())
        }
        None => {
            let mut w = BufWriter::new(io::stdout().lock());
            match write(&mut w, t) {
                Ok(_) => broken_pipe_is_fine(w.flush()),
                Err(e) => match e.downcast::<io::Error>() {
                    Ok(e) => broken_pipe_is_fine(Err(e)),
                    Err(e) => Err(e),
                },
            }
        }
    }
}

/// Writes the Parquet dataset and says what it holds.
#[cfg(feature = "tables")]
pub(crate) fn parquet(
    t: &mut Timings,
    dir: &Path,
    graph: &scalpel_model::graph::Graph,
    model: Option<&scalpel_model::task::Model>,
    table: Table,
    window_ns: u64,
) -> Result<()> {
    let m = t.phase("writing Parquet", &Spinner::new(), || {
        scalpel_views::export::write_parquet(dir, graph, model, table, window_ns)
    })?;
    say_written(dir, &m);
    Ok(())
}

#[cfg(feature = "tables")]
fn say_written(dir: &Path, m: &scalpel_tables::Manifest) {
    let rows: u64 = m.tables.iter().map(|t| t.rows).sum();
    let files: u64 = m.tables.iter().map(|t| t.files).sum();
    let windows = match m.infer_windows {
        0 => String::new(),
        n => format!(" of {n} windows"),
    };
    say!(
        "scalpel: wrote {} (parquet, {} tables{windows}, {rows} rows in {files} files)",
        dir.display(),
        m.tables.len()
    );
}

/// Writes the Parquet dataset of the windows of `windows` (a directory `infer` wrote window by
/// window) in `dir`, and says what it holds.
#[cfg(feature = "tables")]
pub(crate) fn parquet_of_windows(
    t: &mut Timings,
    pipeline: &scalpel::Pipeline,
    windows: &Path,
    dir: &Path,
    window_ns: u64,
) -> Result<()> {
    let m = dataset_of_windows(t, pipeline, windows, dir, window_ns)?;
    say_written(dir, &m);
    Ok(())
}

/// Writes the Parquet dataset of the windows of `windows` in `dir`, one window read and
/// written at a time; returns its manifest.
#[cfg(feature = "tables")]
pub(crate) fn dataset_of_windows(
    t: &mut Timings,
    pipeline: &scalpel::Pipeline,
    windows: &Path,
    dir: &Path,
    window_ns: u64,
) -> Result<scalpel_tables::Manifest> {
    use scalpel_tables::{DatasetWriter, TableSource};
    let spinner = Spinner::new();
    let mut w = DatasetWriter::create(dir, window_ns, true)?;
    pipeline.each_window(windows, &spinner, t, |g, m, wt| -> Result<()> {
        wt.phase("writing Parquet", &spinner, || {
            w.add(TableSource::new(g, Some(m), window_ns))
        })?;
        Ok(())
    })?;
    Ok(w.finish()?)
}

/// Without the tables feature there is no Parquet.
#[cfg(not(feature = "tables"))]
pub(crate) fn parquet(
    _: &mut Timings,
    _: &Path,
    _: &scalpel_model::graph::Graph,
    _: Option<&scalpel_model::task::Model>,
    _: Table,
    _: u64,
) -> Result<()> {
    anyhow::bail!("this scalpel was built without its `tables` feature: no Parquet export")
}

/// Without the tables feature there is no Parquet.
#[cfg(not(feature = "tables"))]
pub(crate) fn parquet_of_windows(
    _: &mut Timings,
    _: &scalpel::Pipeline,
    _: &Path,
    _: &Path,
    _: u64,
) -> Result<()> {
    anyhow::bail!("this scalpel was built without its `tables` feature: no Parquet export")
}

#[cfg(all(test, feature = "tables"))]
mod tests {
    #[test]
    fn the_default_window_is_the_tables_crates() {
        assert_eq!(super::DEFAULT_WINDOW_NS, scalpel_tables::DEFAULT_WINDOW_NS);
    }
}
