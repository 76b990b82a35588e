//! `scalpel export`: the stored graph and model in JSON for readers outside Rust: the complete
//! documents (`scalpel-graph/5`, `scalpel-model/1`, every table inline), or one bulk table as
//! JSON Lines (a row a line, with its id) or as one JSON array.
//!
//! Non-goals: a query language (the rows go to jq, DuckDB or pandas), CSV (rows hold lists).

use std::io::{self, Write};

use scalpel_model::graph::{Graph, LeafId};
use scalpel_model::task::{Model, OccRef, Occurrence, TaskTypeId};
use serde::Serialize;

/// What to export.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Table {
    /// The whole causal graph, every table inline (`scalpel-graph/5`).
    Graph,
    /// The whole model, every occurrence inline (`scalpel-model/1`).
    Model,
    /// Leaf instances (`id` is the leaf id the other tables use).
    Leaves,
    /// Causal edges between nodes (a node id past the last leaf is an external).
    Edges,
    /// Contended lock acquisitions.
    LockWaits,
    /// Calls inside leaves that took time.
    InnerWaits,
    /// On-CPU samples.
    Samples,
    /// Leaves that moved file or terminal bytes.
    LeafFiles,
    /// Each leaf's CPU time (recorded with `--cpu-time`).
    LeafCpu,
    /// Every task type's occurrences (`type`, `index`, the occurrence's fields).
    Occurrences,
    /// Each leaf's parent occurrence.
    LeafParent,
    /// The machines of a graph built from several, with their clocks' alignment (none for a
    /// graph of one machine).
    Hosts,
    /// Transfers with peers outside the trace on connections between routable addresses:
    /// the halves of messages another machine's trace may hold.
    PeerTransfers,
}

impl Table {
    /// Whether the table is the model's (it needs `model.json`).
    pub fn needs_model(self) -> bool {
        matches!(self, Table::Model | Table::Occurrences | Table::LeafParent)
    }

    /// Whether it is a whole document rather than rows.
    pub fn is_document(self) -> bool {
        matches!(self, Table::Graph | Table::Model)
    }
}

scalpel_model::named!(Table, "table" {
    Graph => "graph",
    Model => "model",
    Leaves => "leaves",
    Edges => "edges",
    LockWaits => "lock-waits",
    InnerWaits => "inner-waits",
    Samples => "samples",
    LeafFiles => "leaf-files",
    LeafCpu => "leaf-cpu",
    Occurrences => "occurrences",
    LeafParent => "leaf-parent",
    Hosts => "hosts",
    PeerTransfers => "peer-transfers",
});

/// How rows are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportFormat {
    /// One JSON document (the default for `graph` and `model`; rows as one array).
    Json,
    /// One JSON object per line (the default for row tables).
    Jsonl,
    /// The model's task instances as OpenTelemetry traces, OTLP/JSON (see [`crate::otlp`]):
    /// not a table's rows.
    Otlp,
    /// Every table as a Parquet dataset, a directory ([`write_parquet`]): not a stream.
    Parquet,
}

scalpel_model::named!(ExportFormat, "format" {
    Json => "json",
    Jsonl => "jsonl",
    Otlp => "otlp",
    Parquet => "parquet",
});

/// Why an export could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The table is the model's and only a graph was given.
    #[error(
        "table {0} is the model's: pass a model.json or the directory `scalpel infer` wrote it to"
    )]
    NeedsModel(&'static str),
    /// A whole document has no lines.
    #[error("JSON Lines holds rows; the {0} table is one document")]
    NotRows(&'static str),
    /// OTLP traces were asked for and only a graph was given.
    #[error(
        "OTLP traces are the model's task instances: pass a model.json or the directory \
         `scalpel infer` wrote it to"
    )]
    TracesNeedModel,
    /// OTLP holds the model's task instances, not a table.
    #[error("OTLP holds the model's task instances as traces; the {0} table has no OTLP form")]
    NotTraces(&'static str),
    /// Parquet was asked for as a stream.
    #[error("a Parquet dataset is a directory of files, not one stream: give a directory")]
    ParquetIsADirectory,
    /// Parquet holds every table; one table was asked for.
    #[error("a Parquet dataset holds every table; the {0} table alone has no Parquet form")]
    ParquetHoldsEveryTable(&'static str),
    /// The tables could not be built or written.
    #[cfg(feature = "parquet")]
    #[error(transparent)]
    Tables(#[from] scalpel_tables::TablesError),
    /// A whole document was asked for of a trace inferred in windows.
    #[error(
        "the {0} document is one window's: a trace inferred in windows is exported as row \
         tables (each row with its window), as a Parquet dataset, or window by window"
    )]
    DocumentOfWindows(&'static str),
    /// OTLP traces were asked for of a trace inferred in windows.
    #[error(
        "OTLP traces are one window's task instances (their ids are the window's): export each \
         window's directory"
    )]
    TracesOfWindows,
    /// Writing failed.
    #[error("cannot write: {0}")]
    Io(#[from] io::Error),
}

/// A row with its id (the index other tables use).
#[derive(Serialize)]
struct Row<'a, T> {
    id: usize,
    #[serde(flatten)]
    row: &'a T,
}

/// A row of a trace inferred in windows: its window, then the row (whose ids are the window's).
#[derive(Serialize)]
struct InWindow<'a, T> {
    infer_window: usize,
    #[serde(flatten)]
    row: &'a T,
}

/// An occurrence with the type it belongs to.
#[derive(Serialize)]
struct OccRow<'a> {
    #[serde(rename = "type")]
    ty: TaskTypeId,
    index: usize,
    #[serde(flatten)]
    occ: &'a Occurrence,
}

#[derive(Serialize)]
struct LeafCpu {
    leaf: LeafId,
    cpu_ns: Option<u64>,
}

#[derive(Serialize)]
struct LeafParent {
    leaf: LeafId,
    parent: Option<OccRef>,
}

/// Writes rows as lines, or as one array.
struct RowWriter<'w, W: Write + ?Sized> {
    w: &'w mut W,
    lines: bool,
    rows: u64,
    /// The window the rows are of, in a trace inferred in windows.
    window: Option<usize>,
}

impl<W: Write + ?Sized> RowWriter<'_, W> {
    fn row(&mut self, value: &impl Serialize) -> io::Result<()> {
        if !self.lines {
            self.w
                .write_all(if self.rows == 0 { b"[\n" } else { b",\n" })?;
        }
        match self.window {
            Some(infer_window) => serde_json::to_writer(
                &mut *self.w,
                &InWindow {
                    infer_window,
                    row: value,
                },
            ),
            None => serde_json::to_writer(&mut *self.w, value),
        }
        .map_err(io::Error::from)?;
        if self.lines {
            self.w.write_all(b"\n")?;
        }
        self.rows += 1;
        Ok(())
    }

    fn finish(self) -> io::Result<u64> {
        if !self.lines {
            self.w
                .write_all(if self.rows == 0 { b"[]\n" } else { b"\n]\n" })?;
        }
        Ok(self.rows)
    }
}

fn rows<T: Serialize, W: Write + ?Sized>(r: &mut RowWriter<'_, W>, table: &[T]) -> io::Result<()> {
    table
        .iter()
        .enumerate()
        .try_for_each(|(id, row)| r.row(&Row { id, row }))
}

/// Writes `table` of `graph` (and `model`, for the model's tables) to `w` in `format`
/// (`None`: the table's default). Returns the rows written (1 for a whole document).
pub fn write_export(
    w: &mut impl Write,
    graph: &Graph,
    model: Option<&Model>,
    table: Table,
    format: Option<ExportFormat>,
) -> Result<u64, ExportError> {
    let name = table.name();
    match format {
        Some(ExportFormat::Otlp) => return write_traces(w, graph, model, table),
        Some(ExportFormat::Parquet) => return Err(ExportError::ParquetIsADirectory),
        _ => {}
    }
    let model = match (table.needs_model(), model) {
        (true, None) => return Err(ExportError::NeedsModel(name)),
        (_, m) => m,
    };
    let format = format.unwrap_or(if table.is_document() {
        ExportFormat::Json
    } else {
        ExportFormat::Jsonl
    });
    if table.is_document() {
        if format == ExportFormat::Jsonl {
            return Err(ExportError::NotRows(name));
        }
        match (table, model) {
            (Table::Model, Some(m)) => serde_json::to_writer(&mut *w, m),
            _ => serde_json::to_writer(&mut *w, graph),
        }
        .map_err(io::Error::from)?;
        w.write_all(b"\n")?;
        return Ok(1);
    }
    let mut r = RowWriter {
        w,
        lines: format == ExportFormat::Jsonl,
        rows: 0,
        window: None,
    };
    table_rows(&mut r, graph, model, table)?;
    Ok(r.finish()?)
}

/// One row table of every window of a trace inferred in windows, as one stream: each row with
/// its window's index (`infer_window`) first, its ids the window's own.
pub struct WindowRows<'w, W: Write + ?Sized> {
    r: RowWriter<'w, W>,
    table: Table,
}

impl<'w, W: Write + ?Sized> WindowRows<'w, W> {
    /// Begins `table` in `format` (`None`: JSON Lines; `Json`: one array) on `w`.
    pub fn new(
        w: &'w mut W,
        table: Table,
        format: Option<ExportFormat>,
    ) -> Result<Self, ExportError> {
        match format {
            Some(ExportFormat::Otlp) => return Err(ExportError::TracesOfWindows),
            Some(ExportFormat::Parquet) => return Err(ExportError::ParquetIsADirectory),
            _ if table.is_document() => return Err(ExportError::DocumentOfWindows(table.name())),
            _ => {}
        }
        let r = RowWriter {
            w,
            lines: format != Some(ExportFormat::Json),
            rows: 0,
            window: None,
        };
        Ok(WindowRows { r, table })
    }

    /// Adds window `window`'s rows, from its graph and model.
    pub fn add(&mut self, window: usize, graph: &Graph, model: &Model) -> io::Result<()> {
        self.r.window = Some(window);
        table_rows(&mut self.r, graph, Some(model), self.table)
    }

    /// Ends the stream; returns the rows written.
    pub fn finish(self) -> io::Result<u64> {
        self.r.finish()
    }
}

/// Writes the rows of `table` (not a whole document) of `graph` and `model` to `r`.
fn table_rows<W: Write + ?Sized>(
    r: &mut RowWriter<'_, W>,
    graph: &Graph,
    model: Option<&Model>,
    table: Table,
) -> io::Result<()> {
    match table {
        Table::Leaves => rows(r, &graph.leaves)?,
        Table::Edges => rows(r, &graph.edges)?,
        Table::LockWaits => rows(r, &graph.lock_waits)?,
        Table::InnerWaits => rows(r, &graph.inner_waits)?,
        Table::Samples => rows(r, &graph.samples)?,
        Table::LeafFiles => rows(r, &graph.leaf_files)?,
        Table::PeerTransfers => rows(r, &graph.peer_transfers)?,
        // One object per machine as it is: its name is its key.
        Table::Hosts => graph.hosts.iter().try_for_each(|h| r.row(h))?,
        Table::LeafCpu => {
            for (leaf, cpu) in graph.leaf_ids().zip(&graph.leaf_cpu_ns) {
                r.row(&LeafCpu { leaf, cpu_ns: *cpu })?;
            }
        }
        Table::Occurrences => {
            for (t, ty) in model.iter().flat_map(|m| m.types.iter().enumerate()) {
                for (index, occ) in ty.occurrences.iter().enumerate() {
                    r.row(&OccRow {
                        ty: TaskTypeId::at(t),
                        index,
                        occ,
                    })?;
                }
            }
        }
        Table::LeafParent => {
            let parents = model.map_or(&[][..], |m| &m.leaf_parent);
            for (leaf, parent) in graph.leaf_ids().zip(parents) {
                r.row(&LeafParent {
                    leaf,
                    parent: *parent,
                })?;
            }
        }
        // Documents are written whole by the callers, never as rows.
        Table::Graph | Table::Model => {}
    }
    Ok(())
}

#[cfg(feature = "parquet")]
/// Writes every table of `graph` (and of `model`, when given) as a Parquet dataset in `dir`,
/// partitioned by machine and windows of `window_ns` (see `scalpel_tables`); `table` must be a
/// whole document (the default). Returns the dataset's manifest.
pub fn write_parquet(
    dir: &std::path::Path,
    graph: &Graph,
    model: Option<&Model>,
    table: Table,
    window_ns: u64,
) -> Result<scalpel_tables::Manifest, ExportError> {
    if !table.is_document() {
        return Err(ExportError::ParquetHoldsEveryTable(table.name()));
    }
    let src = scalpel_tables::TableSource::new(graph, model, window_ns);
    Ok(scalpel_tables::write_dataset(dir, src)?)
}

/// The OTLP export: from a model, whatever document was asked for (a graph's default), as
/// traces; a table's rows have no such form. Returns the traces written.
fn write_traces(
    w: &mut impl Write,
    graph: &Graph,
    model: Option<&Model>,
    table: Table,
) -> Result<u64, ExportError> {
    if !table.is_document() {
        return Err(ExportError::NotTraces(table.name()));
    }
    let model = model.ok_or(ExportError::TracesNeedModel)?;
    let spans = scalpel_analysis::rollup::task_spans(graph, model);
    Ok(crate::otlp::write_otlp(w, graph, model, &spans)?.traces)
}

#[cfg(test)]
mod tests {
    use scalpel_model::graph::{EdgeKind, LeafTypeId};

    use super::*;
    use scalpel_mine::{mine, MineOptions};
    use scalpel_model::progress::Quiet;
    use scalpel_model::testgraph::GraphBuilder;

    /// A thread that reads and writes ten times, each write feeding the next read on another.
    fn graph_and_model() -> (Graph, Model) {
        let mut b = GraphBuilder::new();
        let (read, write) = (b.leaf_type("read", None), b.leaf_type("write", None));
        let (a, z) = (b.thread("a"), b.thread("z"));
        for i in 0..10u64 {
            let t = 1_000 * i;
            let w = b.leaf(a, write, t, t + 5);
            let r = b.leaf(z, read, t + 10, t + 20);
            b.edge(w, r, EdgeKind::Stream);
        }
        b.program_order(|_, _| Some(EdgeKind::Program));
        let graph = b.build();
        let model = mine(&graph, "graph.json", &MineOptions::default(), &Quiet).model;
        assert!(graph.leaves.iter().any(|l| l.ty == LeafTypeId::new(1)));
        (graph, model)
    }

    fn export(table: Table, format: Option<ExportFormat>) -> Result<String, ExportError> {
        let (graph, model) = graph_and_model();
        let mut out = Vec::new();
        write_export(&mut out, &graph, Some(&model), table, format)?;
        Ok(String::from_utf8(out).unwrap())
    }

    #[test]
    fn rows_carry_their_ids_and_arrays_parse() {
        let (graph, _) = graph_and_model();
        let lines = export(Table::Leaves, None).unwrap();
        assert_eq!(lines.lines().count(), graph.leaves.len());
        for (i, line) in lines.lines().enumerate() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            assert_eq!(v["id"], i);
            assert_eq!(v["start_ns"], graph.leaves[i].start_ns);
        }
        let array: Vec<serde_json::Value> =
            serde_json::from_str(&export(Table::Edges, Some(ExportFormat::Json)).unwrap()).unwrap();
        assert_eq!(array.len(), graph.edges.len());
        let none: Vec<serde_json::Value> =
            serde_json::from_str(&export(Table::Samples, Some(ExportFormat::Json)).unwrap())
                .unwrap();
        assert!(none.is_empty());
    }

    #[test]
    fn documents_are_the_complete_schemas() {
        let (graph, model) = graph_and_model();
        let g: Graph = serde_json::from_str(&export(Table::Graph, None).unwrap()).unwrap();
        assert_eq!(g, graph);
        let m: Model = serde_json::from_str(&export(Table::Model, None).unwrap()).unwrap();
        assert_eq!(m, model);
        let occurrences = export(Table::Occurrences, None).unwrap();
        let groups: usize = model.types.iter().map(|t| t.occurrences.len()).sum();
        assert!(
            groups > 0 && occurrences.lines().count() == groups,
            "{occurrences}"
        );
        assert!(matches!(
            export(Table::Model, Some(ExportFormat::Jsonl)),
            Err(ExportError::NotRows("model"))
        ));
        let mut out = Vec::new();
        let err = write_export(&mut out, &graph, None, Table::Occurrences, None).unwrap_err();
        assert!(err.to_string().contains("model.json"), "{err}");
    }
}
