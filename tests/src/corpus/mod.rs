//! The golden trace corpus (`tests/corpus/`): small recorded trace directories, each with the
//! rows of what the graph stage and the miner make of it, compared byte for byte by
//! `tests/tests/corpus.rs` (see `tests/corpus/README.md`).
//!
//! A case is a directory `tests/corpus/<case>/` holding `trace/` (what `scalpel record` wrote,
//! scrubbed by [`scrub`] so that it needs no file of the recording machine) and the golden files
//! [`GOLDEN`]. The rows come from the library's types ([`graph_rows`], [`model_rows`]), never from
//! another stage's display text.

mod graph_rows;
mod model_rows;
pub mod scrub;

use std::path::{Path, PathBuf};

use scalpel_graph::{build_graph, GraphError, GraphOptions};
use scalpel_mine::{mine, MineOptions};
use scalpel_model::progress::Quiet;

pub use graph_rows::{edge_rows, graph_rows, node};
pub use model_rows::{leaf_ranges, model_rows};

/// The golden files of a case, in the order [`rows`] returns them.
pub const GOLDEN: [&str; 3] = ["graph.txt", "edges.txt", "model.txt"];

/// The switch that rewrites golden files instead of comparing them.
pub const BLESS: &str = "SCALPEL_BLESS";

/// Why a case could not be run.
#[derive(Debug, thiserror::Error)]
pub enum CaseError {
    /// The graph stage refused the trace.
    #[error(transparent)]
    Graph(#[from] GraphError),
    /// A frame was symbolized: the trace names a module file by an absolute path (it was not
    /// scrubbed), so its rows would depend on the files of the machine that runs the test.
    #[error("{trace}: frame {frame:?} was symbolized; run corpus-scrub on the trace")]
    Symbolized {
        /// The trace directory.
        trace: PathBuf,
        /// The frame's name.
        frame: String,
    },
    /// No worker pool of that size could be made.
    #[error("a pool of {threads} worker threads: {source}")]
    Pool {
        /// Threads asked for.
        threads: usize,
        /// What failed.
        source: rayon::ThreadPoolBuildError,
    },
}

/// The directory holding the cases.
pub fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus")
}

/// Every case directory (one holding `trace/`), sorted by name.
pub fn cases() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .map(|d| d.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default();
    v.retain(|p| p.join("trace").is_dir());
    v.sort();
    v
}

/// The golden rows of the trace in `trace`, built and mined with default options on a pool of
/// `threads` worker threads: the contents of the files [`GOLDEN`] names, in that order.
pub fn rows(trace: &Path, threads: usize) -> Result<[String; 3], CaseError> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|source| CaseError::Pool { threads, source })?;
    pool.install(|| {
        let built = build_graph(trace, &GraphOptions::default())?;
        let g = built.graph;
        // A scrubbed trace names no module, so every frame is an address (`[0x…]`) or a
        // pseudo-module of the kernel (`[vdso]`).
        let frames = g
            .types
            .iter()
            .flat_map(|t| t.start.frames.iter().chain(&t.end.frames));
        if let Some(f) = frames
            .chain(g.sites.iter().flat_map(|s| &s.frames))
            .find(|f| !f.starts_with('['))
        {
            return Err(CaseError::Symbolized {
                trace: trace.to_path_buf(),
                frame: f.clone(),
            });
        }
        let model = mine(&g, "graph.json", &MineOptions::default(), &Quiet).model;
        Ok([graph_rows(&g), edge_rows(&g), model_rows(&model)])
    })
}

/// A case may also keep a graph as the graph stage once built it (`stored-graph/`, the
/// `graph.json` and `graph.bin` that `scalpel infer` wrote), when its trace exercised a miner
/// rule only through that graph: a later change of the graph stage that is right on its own
/// must not take the miner's case away. Its golden file is [`STORED_GOLDEN`].
pub const STORED_GRAPH: &str = "stored-graph";

/// The golden model rows of a case's stored graph.
pub const STORED_GOLDEN: &str = "stored-model.txt";

/// The cases that keep a stored graph, sorted by name.
pub fn stored_cases() -> Vec<PathBuf> {
    let mut v = cases();
    v.retain(|p| p.join(STORED_GRAPH).join("graph.json").is_file());
    v
}

/// The model rows of the graph stored in `case`, mined with default options on a pool of
/// `threads` worker threads.
pub fn stored_rows(case: &Path, threads: usize) -> Result<String, String> {
    let json = case.join(STORED_GRAPH).join("graph.json");
    let g = scalpel_model::store::read_graph(&json).map_err(|e| e.to_string())?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| format!("a pool of {threads} worker threads: {e}"))?;
    let model = pool.install(|| mine(&g, "graph.json", &MineOptions::default(), &Quiet).model);
    Ok(model_rows(&model))
}

/// Whether `SCALPEL_BLESS=1` asks for golden files to be rewritten.
pub fn blessing() -> bool {
    std::env::var_os(BLESS).is_some_and(|v| v == "1")
}

/// Compares `actual` with the golden file at `path` (or writes it when blessing); a message
/// naming the file, the first differing line and the switch that rewrites it when they differ.
pub fn check_golden(path: &Path, actual: &str) -> Result<(), String> {
    let hint = format!("{BLESS}=1 cargo test -p scalpel-e2e --test corpus rewrites it");
    if blessing() {
        return std::fs::write(path, actual).map_err(|e| format!("{}: {e}", path.display()));
    }
    let expected =
        std::fs::read_to_string(path).map_err(|e| format!("{}: {e} ({hint})", path.display()))?;
    if expected == actual {
        return Ok(());
    }
    let line = expected
        .lines()
        .zip(actual.lines())
        .position(|(x, y)| x != y)
        .unwrap_or_else(|| expected.lines().count().min(actual.lines().count()));
    Err(format!(
        "{} differs (first at line {}; {hint}; review the diff):\n--- expected\n{}\n--- actual\n{}",
        path.display(),
        line + 1,
        expected.lines().nth(line).unwrap_or("(end)"),
        actual.lines().nth(line).unwrap_or("(end)"),
    ))
}
