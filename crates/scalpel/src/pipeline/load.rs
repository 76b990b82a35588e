//! Finding the graph and model that `scalpel top`, `scalpel report` and later views work on: a
//! `model.json` (with the `graph.json` it names, and the binary tables beside both), a
//! directory `scalpel infer` wrote, or a trace directory, which is inferred on the spot with the
//! options given.

use std::path::{Path, PathBuf};

use scalpel_model::check::Invalid;
use scalpel_model::graph::Graph;
use scalpel_model::open::OpenError;
use scalpel_model::store::{read_graph, read_model, StoreError};
use scalpel_model::task::Model;

use super::{Pipeline, PipelineError, Warning};
use scalpel_model::progress::{Progress, Timings};

/// Why the inputs could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// A stored graph or model could not be read.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The model and the graph do not belong together.
    #[error("{} refers to {model} leaves but {} has {graph}", .model_path.display(), .graph_path.display())]
    Mismatch {
        /// The model file.
        model_path: PathBuf,
        /// Its leaf count.
        model: u64,
        /// The graph file.
        graph_path: PathBuf,
        /// Its leaf count.
        graph: usize,
    },
    /// A file holds an index that names nothing (an edited or damaged file).
    #[error("{} is not a consistent {what}: {problem}", .path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What it should hold.
        what: &'static str,
        /// The first bad index.
        problem: Invalid,
    },
    /// Several paths were given and one is not a trace directory: only the traces of several
    /// machines are inferred together.
    #[error(
        "{}: not a trace directory; several paths are the trace directories of several \
         machines, inferred together (a model `scalpel infer` wrote is given alone)",
        .path.display()
    )]
    NotATrace {
        /// The path.
        path: PathBuf,
    },
    /// Options that only inferring applies were given with a model already inferred.
    #[error(
        "{} is an inferred model, and these options apply only to a trace directory: {}; pass \
         the trace directory, or run `scalpel infer` with them",
        .path.display(),
        .options.join(", ")
    )]
    InferOnly {
        /// The model file.
        path: PathBuf,
        /// The options, as on the command line.
        options: Vec<&'static str>,
    },
    /// A directory `infer` wrote window by window, given to a view that reads one model: each
    /// window is a model of its own.
    #[error(
        "{} holds a trace inferred in {windows} windows (windows.json), each a model of its own: \
         `scalpel top` adds them all up, and `scalpel sql` and `scalpel export --format parquet` \
         take all their tables; this view reads one window: give one of them, such as {}",
        .path.display(),
        .first.display()
    )]
    Windowed {
        /// The directory.
        path: PathBuf,
        /// How many windows it holds.
        windows: usize,
        /// The first window's directory.
        first: PathBuf,
    },
    /// A directory `infer` began to write window by window and did not finish (it writes
    /// `windows.json` last): a full disk, or a run stopped.
    #[error(
        "{}: holds {windows} windows `scalpel infer` wrote, but not windows.json, which it writes \
         when every window is done: that run did not finish (a full disk, or a stop); infer the \
         trace again, or give one window that has its model, such as {}",
        .path.display(),
        .first.display()
    )]
    UnfinishedWindows {
        /// The directory.
        path: PathBuf,
        /// How many windows it holds.
        windows: usize,
        /// The first window's directory.
        first: PathBuf,
    },
    /// The list of a windowed inference's windows cannot be used.
    #[error("{}: not a list of windows `scalpel infer` wrote: {problem}", .path.display())]
    WindowList {
        /// `windows.json`.
        path: PathBuf,
        /// What is wrong with it.
        problem: String,
    },
    /// A window `windows.json` lists holds no model.
    #[error(
        "{}: no model.json in this window (inferred with `--stage graph`, or removed): \
         infer the trace again to the model",
        .dir.display()
    )]
    WindowWithoutModel {
        /// The window's directory.
        dir: PathBuf,
    },
    /// A trace directory could not be inferred.
    #[error(transparent)]
    Pipeline(#[from] PipelineError),
}

/// A graph and the model mined from it.
pub struct Loaded {
    /// The causal graph.
    pub graph: Graph,
    /// The model.
    pub model: Model,
    /// Where the model came from (the model file, or the trace directory).
    pub from: PathBuf,
    /// Warnings from inferring a trace directory.
    pub warnings: Vec<Warning>,
}

/// Loads the traces of several machines, inferred together: `paths` must all be trace
/// directories.
pub(super) fn load_traces(
    pipeline: &Pipeline,
    paths: &[PathBuf],
    progress: &dyn Progress,
    t: &mut Timings,
) -> Result<Loaded, SourceError> {
    if let [one] = paths {
        return load(pipeline, one, progress, t);
    }
    if let Some(p) = paths
        .iter()
        .find(|p| !p.is_dir() || p.join("model.json").exists())
    {
        return Err(SourceError::NotATrace { path: p.clone() });
    }
    infer(pipeline, paths, progress, t)
}

/// Loads `path`: a model file, a directory holding `model.json`, or a trace directory (inferred
/// with `opts`, which a model already inferred refuses when they ask for anything but defaults).
pub(super) fn load(
    pipeline: &Pipeline,
    path: &Path,
    progress: &dyn Progress,
    t: &mut Timings,
) -> Result<Loaded, SourceError> {
    let opts = &pipeline.opts;
    if super::is_windowed(path) {
        let windows = (0..)
            .take_while(|&k| path.join(super::window_dir_name(k)).is_dir())
            .count();
        return Err(SourceError::Windowed {
            path: path.to_path_buf(),
            windows,
            first: path.join(super::window_dir_name(0)),
        });
    }
    let model_path = if path.is_dir() {
        path.join("model.json")
    } else {
        path.to_path_buf()
    };
    // Whatever is at `model.json` is read as the model (and refused with a clear error when it
    // is no regular file), never passed over for the trace directory.
    if !path.is_dir() || model_path.symlink_metadata().is_ok() {
        if !opts.infer_only.is_empty() {
            return Err(SourceError::InferOnly {
                path: model_path,
                options: opts.infer_only.clone(),
            });
        }
        let model: Model = t.phase("reading model.json and model.bin", progress, || {
            read_model(&model_path)
        })?;
        let base = model_path.parent().unwrap_or(Path::new("."));
        // The model names its graph: one plain file name beside it, never a path.
        if !scalpel_model::open::is_plain_name(model.graph.as_ref()) {
            return Err(SourceError::Store(StoreError::Open(OpenError::BadName {
                dir: base.to_path_buf(),
                name: model.graph.clone(),
            })));
        }
        let graph_path = base.join(&model.graph);
        let graph: Graph = t.phase("reading graph.json and graph.bin", progress, || {
            read_graph(&graph_path)
        })?;
        if model.leaves != graph.leaves.len() as u64
            || model.leaf_parent.len() != graph.leaves.len()
        {
            return Err(SourceError::Mismatch {
                model_path,
                model: model.leaves,
                graph_path,
                graph: graph.leaves.len(),
            });
        }
        graph.check().map_err(|problem| SourceError::Invalid {
            path: graph_path.clone(),
            what: "causal graph",
            problem,
        })?;
        model
            .check(&graph)
            .map_err(|problem| SourceError::Invalid {
                path: model_path.clone(),
                what: "model",
                problem,
            })?;
        return Ok(Loaded {
            graph,
            model,
            from: model_path,
            warnings: Vec::new(),
        });
    }
    if let Some(windows) = super::unfinished_windows(path) {
        return Err(SourceError::UnfinishedWindows {
            path: path.to_path_buf(),
            windows,
            first: path.join(super::window_dir_name(0)),
        });
    }
    infer(pipeline, &[path.to_path_buf()], progress, t)
}

/// The graph and the model of the trace directories `dirs` (one machine's, or several's).
fn infer(
    pipeline: &Pipeline,
    dirs: &[PathBuf],
    progress: &dyn Progress,
    t: &mut Timings,
) -> Result<Loaded, SourceError> {
    let built = t.phase("causal graph", progress, || pipeline.graph_of(dirs))?;
    let mined = t.phase("mining", progress, || {
        pipeline.model(&built.graph, progress)
    });
    let mut warnings: Vec<Warning> = built.warnings.into_iter().map(Warning::Graph).collect();
    warnings.extend(mined.warnings.into_iter().map(Warning::Mine));
    Ok(Loaded {
        graph: built.graph,
        model: mined.model,
        from: dirs.first().cloned().unwrap_or_default(),
        warnings,
    })
}
