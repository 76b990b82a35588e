//! How a graph and a model are kept on disk: a JSON file for what people and scripts read
//! (`graph.json`, `model.json`: processes, threads, types, locks, the task hierarchy) and a binary
//! file beside each for the bulk tables (`graph.bin`: leaves, edges, lock waits, inner waits,
//! samples; `model.bin`: every type's occurrences and each leaf's parent).
//!
//! Why two files: the bulk tables are a few dozen bytes a leaf, and in JSON they made
//! `graph.json` and `model.json` ten times the trace they came from (226 MB and 124 MB for a
//! 22 MB nginx trace), slow to write and to read back, and no person reads them. The binary file
//! is [postcard](https://docs.rs/postcard) (serde's compact varint format, which the design
//! named), with leaf times and occurrence leaf ids stored as differences so that most fit a byte
//! or two. Postcard rather than Parquet or Arrow: readers outside Rust get the same rows as JSON
//! Lines from `scalpel export`, and the format crate's rule of few dependencies holds.
//!
//! A binary file is laid out as: 8 bytes of magic (`SCALPELB`), then each table as a postcard
//! string (its name) followed by its postcard rows, in a fixed order. The JSON file names the
//! binary file, says how many rows each table has and carries the binary file's length and
//! FNV-1a checksum, so a binary file from another run is refused, not misread.
//!
//! The complete documents (`scalpel-graph/5`, `scalpel-model/1`: every table inline, as
//! [`Graph`] and [`Model`] serialize) are what `scalpel export` writes, and are read too.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::graph::{
    BoundaryInfo, External, Graph, HostInfo, LeafFile, LeafType, LockInfo, LockWait, ObjectInfo,
    PeerTransfer, ProcessInfo, ThreadInfo, Unmatched, GRAPH_SCHEMA,
};
use crate::open::{read_all, Dir, OpenError};
use crate::task::{MiningInfo, Model, OccRef, TaskType, TypeEdge, MODEL_SCHEMA};

mod rows;
mod tables;

use rows::{EdgeRow, InnerWaitRow, Rows, SampleRow};
#[cfg(test)]
use tables::fnv1a;
use tables::{len, TableReader, TableWriter, MAGIC};

/// Schema of `graph.json` as `scalpel infer` writes it: the graph less its bulk tables.
pub const GRAPH_FILE_SCHEMA: &str = "scalpel-graph/6";
/// Schema of `model.json` as `scalpel infer` writes it: the model less its occurrences.
pub const MODEL_FILE_SCHEMA: &str = "scalpel-model/2";
/// The binary file beside `graph.json`.
pub const GRAPH_TABLES: &str = "graph.bin";
/// The binary file beside `model.json`.
pub const MODEL_TABLES: &str = "model.bin";
/// The name of `graph.bin`'s optional last table, [`Graph::peer_transfers`].
const PEER_TRANSFERS: &str = "peer_transfers";

/// Why a stored graph or model could not be read.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A file could not be read.
    #[error("cannot read {}: {source}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A file is not one a reader may open: not a regular file, a name that is not a plain file
    /// name, longer than allowed, or sparse.
    #[error(transparent)]
    Open(#[from] OpenError),
    /// A JSON file is not the document it should be.
    #[error("{} is not a valid {what}: {source}", .path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// What it should hold.
        what: &'static str,
        /// The parser's complaint, with line and column.
        source: serde_json::Error,
    },
    /// A JSON file has a schema this reader does not know.
    #[error("{} has schema {found:?}, expected {expected}", .path.display())]
    Schema {
        /// The file.
        path: PathBuf,
        /// Its schema.
        found: String,
        /// What this reader takes.
        expected: String,
    },
    /// A binary file is not the one its JSON file names (another run's, or damaged).
    #[error(
        "{} does not belong to {}: {what} (write both again with `scalpel infer`)",
        .path.display(), .json.display()
    )]
    Stale {
        /// The binary file.
        path: PathBuf,
        /// The JSON file naming it.
        json: PathBuf,
        /// What differs.
        what: String,
    },
    /// A binary file could not be decoded.
    #[error("{} at offset {offset}: expected {expected}: {reason}", .path.display())]
    Decode {
        /// The binary file.
        path: PathBuf,
        /// Where the table or value that failed starts.
        offset: usize,
        /// What should have been there.
        expected: String,
        /// The decoder's complaint.
        reason: String,
    },
}

/// The binary file a JSON file names, and what it must hold.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TablesFile {
    /// The file, relative to the JSON file.
    pub file: String,
    /// Its length in bytes.
    pub bytes: u64,
    /// FNV-1a (64 bits) of its bytes, as 16 hex digits.
    pub fnv1a: String,
    /// Rows per table.
    pub rows: BTreeMap<String, u64>,
}

/// `graph.json`: the graph less its bulk tables (see [`Graph`] for each field).
#[derive(Debug, Serialize, Deserialize)]
struct GraphHead {
    schema: String,
    processes: Vec<ProcessInfo>,
    threads: Vec<ThreadInfo>,
    objects: Vec<ObjectInfo>,
    types: Vec<LeafType>,
    externals: Vec<External>,
    locks: Vec<LockInfo>,
    sites: Vec<BoundaryInfo>,
    sample_period_ns: u64,
    unmatched: Unmatched,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    hosts: Vec<HostInfo>,
    tables: TablesFile,
}

/// `model.json`: the model less its occurrences and leaf parents (see [`Model`]). Its types are
/// written as JSON values without their `occurrences` and read back as task types with none.
#[derive(Debug, Serialize, Deserialize)]
struct ModelHead<T> {
    schema: String,
    graph: String,
    leaves: u64,
    mining: MiningInfo,
    types: Vec<T>,
    top_edges: Vec<TypeEdge>,
    tables: TablesFile,
}

/// Only the schema of a JSON document, to choose how to read the rest.
#[derive(Deserialize)]
struct SchemaOnly {
    schema: String,
}

/// The most a JSON file may hold. A graph or model split from its tables is a few megabytes;
/// a complete document (what `scalpel export` writes) of a large trace some hundreds.
pub const MAX_JSON: u64 = 4 << 30;

/// Reads a whole file Scalpel wrote whole, opened as `crate::open` says (a regular file, no
/// link, no hole), at most `max` bytes.
fn read_whole(dir: &Dir, name: &OsStr, max: u64) -> Result<Vec<u8>, StoreError> {
    let opened = dir.file(name, max)?;
    opened.refuse_holes()?;
    Ok(read_all(opened)?)
}

fn parse<T: serde::de::DeserializeOwned>(
    path: &Path,
    bytes: &[u8],
    what: &'static str,
) -> Result<T, StoreError> {
    serde_json::from_slice(bytes).map_err(|source| StoreError::Json {
        path: path.to_path_buf(),
        what,
        source,
    })
}

/// What a stored JSON file turned out to be.
enum Stored<C, H> {
    /// A complete document, every table inline.
    Complete(C),
    /// A file whose tables are beside it: its head, and the binary file's path and bytes.
    Split(H, PathBuf, Vec<u8>),
}

/// Reads the JSON file at `path`: a complete document of schema `complete`, or a head of schema
/// `split` and the binary file it names (`tables` finds where).
fn open<C: serde::de::DeserializeOwned, H: serde::de::DeserializeOwned>(
    path: &Path,
    what: &'static str,
    complete: &str,
    split: &str,
    tables: impl Fn(&H) -> &TablesFile,
) -> Result<Stored<C, H>, StoreError> {
    let (dir, name) = Dir::parent_of(path)?;
    let bytes = read_whole(&dir, name, MAX_JSON)?;
    let schema = parse::<SchemaOnly>(path, &bytes, what)?.schema;
    if schema == complete {
        return parse(path, &bytes, what).map(Stored::Complete);
    }
    if schema != split {
        return Err(StoreError::Schema {
            path: path.to_path_buf(),
            found: schema,
            expected: format!("{split} or {complete}"),
        });
    }
    let head: H = parse(path, &bytes, what)?;
    drop(bytes);
    let info = tables(&head);
    // The tables file is named by the JSON file: one plain name beside it, never a path (an
    // absolute or `../` name would read any file the user can).
    let bin_name = OsStr::new(&info.file);
    let bin_path = dir.entry_path(bin_name)?;
    // Its length is known before it is read: a longer or shorter file is another run's (or a
    // planted sparse file of gigabytes), refused before a byte of it is held.
    let opened = dir.file(bin_name, info.bytes)?;
    if opened.len != info.bytes {
        return Err(StoreError::Stale {
            path: bin_path,
            json: path.to_path_buf(),
            what: format!(
                "it has {} bytes, the JSON file says {}",
                opened.len, info.bytes
            ),
        });
    }
    opened.refuse_holes()?;
    let bin = read_all(opened)?;
    Ok(Stored::Split(head, bin_path, bin))
}

/// The two files of `graph`: `graph.json`'s text (one line) and `graph.bin`'s bytes.
pub fn encode_graph(graph: &Graph) -> std::io::Result<(Vec<u8>, Vec<u8>)> {
    let mut w = TableWriter::new();
    let n = |v: usize| v as u64;
    w.table(
        "leaves",
        n(graph.leaves.len()),
        &rows::LeafRows(&graph.leaves),
    )?;
    w.table(
        "edges",
        n(graph.edges.len()),
        &Rows(&graph.edges, EdgeRow::of),
    )?;
    w.table("lock_waits", n(graph.lock_waits.len()), &graph.lock_waits)?;
    let inner = Rows(&graph.inner_waits, InnerWaitRow::of);
    w.table("inner_waits", n(graph.inner_waits.len()), &inner)?;
    w.table(
        "leaf_cpu_ns",
        n(graph.leaf_cpu_ns.len()),
        &graph.leaf_cpu_ns,
    )?;
    w.table("leaf_files", n(graph.leaf_files.len()), &graph.leaf_files)?;
    let samples = Rows(&graph.samples, SampleRow::of);
    w.table("samples", n(graph.samples.len()), &samples)?;
    // Last and only when there are some, so that a graph without them (every graph of one
    // machine on loopback) is stored as before this table existed.
    if !graph.peer_transfers.is_empty() {
        let peers = &graph.peer_transfers;
        w.table(PEER_TRANSFERS, n(peers.len()), peers)?;
    }
    let (bin, tables) = w.finish(GRAPH_TABLES);
    let head = GraphHead {
        schema: GRAPH_FILE_SCHEMA.to_owned(),
        processes: graph.processes.clone(),
        threads: graph.threads.clone(),
        objects: graph.objects.clone(),
        types: graph.types.clone(),
        externals: graph.externals.clone(),
        locks: graph.locks.clone(),
        sites: graph.sites.clone(),
        sample_period_ns: graph.sample_period_ns,
        unmatched: graph.unmatched.clone(),
        hosts: graph.hosts.clone(),
        tables,
    };
    let mut json = serde_json::to_vec(&head).map_err(std::io::Error::other)?;
    json.push(b'\n');
    Ok((json, bin))
}

/// A task type as `model.json` shows it: without its occurrences.
fn head_type(t: &TaskType) -> serde_json::Result<serde_json::Value> {
    let mut v = serde_json::to_value(t.without_occurrences())?;
    if let Some(o) = v.as_object_mut() {
        o.remove("occurrences");
    }
    Ok(v)
}

/// The two files of `model`: `model.json`'s text (one line) and `model.bin`'s bytes.
pub fn encode_model(model: &Model) -> std::io::Result<(Vec<u8>, Vec<u8>)> {
    let mut w = TableWriter::new();
    let occurrences: u64 = model.types.iter().map(|t| t.occurrences.len() as u64).sum();
    w.table(
        "occurrences",
        occurrences,
        &rows::OccurrenceRows(&model.types),
    )?;
    w.table(
        "leaf_parent",
        model.leaf_parent.len() as u64,
        &model.leaf_parent,
    )?;
    let (bin, tables) = w.finish(MODEL_TABLES);
    let head = ModelHead {
        schema: MODEL_FILE_SCHEMA.to_owned(),
        graph: model.graph.clone(),
        leaves: model.leaves,
        mining: model.mining.clone(),
        types: model
            .types
            .iter()
            .map(head_type)
            .collect::<Result<_, _>>()
            .map_err(std::io::Error::other)?,
        top_edges: model.top_edges.clone(),
        tables,
    };
    let mut json = serde_json::to_vec(&head).map_err(std::io::Error::other)?;
    json.push(b'\n');
    Ok((json, bin))
}

/// Reads the graph stored at `path` (a `graph.json` as `scalpel infer` writes it, with the
/// `graph.bin` it names, or a complete graph as `scalpel export` writes it).
pub fn read_graph(path: &Path) -> Result<Graph, StoreError> {
    const WHAT: &str = "causal graph (graph.json)";
    let (head, bin_path, bin): (GraphHead, _, _) = match open(
        path,
        WHAT,
        GRAPH_SCHEMA,
        GRAPH_FILE_SCHEMA,
        |h: &GraphHead| &h.tables,
    )? {
        Stored::Complete(graph) => return Ok(graph),
        Stored::Split(head, bin_path, bin) => (head, bin_path, bin),
    };
    let mut r = TableReader::new(&bin_path, path, &bin, &head.tables)?;
    let leaves = r.table("leaves", |v: &rows::Leaves| v.0.len() as u64)?.0;
    let edges = EdgeRow::edges(r.table("edges", len::<EdgeRow>)?);
    let lock_waits: Vec<LockWait> = r.table("lock_waits", len)?;
    let inner_waits: Vec<InnerWaitRow> = r.table("inner_waits", len)?;
    let leaf_cpu_ns: Vec<Option<u64>> = r.table("leaf_cpu_ns", len)?;
    let leaf_files: Vec<LeafFile> = r.table("leaf_files", len)?;
    let samples: Vec<SampleRow> = r.table("samples", len)?;
    let peer_transfers: Vec<PeerTransfer> = if head.tables.rows.contains_key(PEER_TRANSFERS) {
        r.table(PEER_TRANSFERS, len)?
    } else {
        Vec::new()
    };
    r.finish()?;
    Ok(Graph {
        schema: GRAPH_SCHEMA.to_owned(),
        processes: head.processes,
        threads: head.threads,
        objects: head.objects,
        types: head.types,
        leaves,
        externals: head.externals,
        edges,
        locks: head.locks,
        lock_waits,
        inner_waits: inner_waits.into_iter().map(InnerWaitRow::wait).collect(),
        sites: head.sites,
        leaf_cpu_ns,
        leaf_files,
        samples: samples.into_iter().map(SampleRow::sample).collect(),
        sample_period_ns: head.sample_period_ns,
        peer_transfers,
        unmatched: head.unmatched,
        hosts: head.hosts,
    })
}

/// Reads the model stored at `path` (a `model.json` as `scalpel infer` writes it, with the
/// `model.bin` it names, or a complete model as `scalpel export` writes it).
pub fn read_model(path: &Path) -> Result<Model, StoreError> {
    const WHAT: &str = "model (model.json)";
    let (mut head, bin_path, bin): (ModelHead<TaskType>, _, _) = match open(
        path,
        WHAT,
        MODEL_SCHEMA,
        MODEL_FILE_SCHEMA,
        |h: &ModelHead<TaskType>| &h.tables,
    )? {
        Stored::Complete(model) => return Ok(model),
        Stored::Split(head, bin_path, bin) => (head, bin_path, bin),
    };
    let mut r = TableReader::new(&bin_path, path, &bin, &head.tables)?;
    let types = head.types.len();
    let occurrences = r
        .table("occurrences", |v: &rows::Occurrences| {
            v.0.iter().map(|o| o.len() as u64).sum()
        })?
        .0;
    if occurrences.len() != types {
        return Err(StoreError::Decode {
            path: bin_path,
            offset: MAGIC.len(),
            expected: format!("occurrences of {types} task types"),
            reason: format!("found {}", occurrences.len()),
        });
    }
    let leaf_parent: Vec<Option<OccRef>> = r.table("leaf_parent", len)?;
    r.finish()?;
    for (t, occ) in head.types.iter_mut().zip(occurrences) {
        t.occurrences = occ;
    }
    Ok(Model {
        schema: MODEL_SCHEMA.to_owned(),
        graph: head.graph,
        leaves: head.leaves,
        mining: head.mining,
        types: head.types,
        top_edges: head.top_edges,
        leaf_parent,
    })
}

#[cfg(test)]
mod tests;
