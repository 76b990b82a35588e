//! What `scalpel infer` computes and writes, in two steps (the graph and its files, then the model
//! and its files), so that the command and the fuzz target run exactly the same sequence and the
//! command can print the graph's summary before the longer mining step starts.

use std::path::{Path, PathBuf};

use super::{Pipeline, PipelineError};
use crate::graph::Built;
use crate::mine::Mined;
use crate::progress::{Progress, Timings};
use crate::views::outputs::{write_graph_files, write_model_files, GraphFiles, ModelFiles};
use crate::views::{DrawOptions, ModelDraw, ViewError};

/// Why `infer` stopped.
#[derive(Debug, thiserror::Error)]
pub enum InferError {
    /// A stage could not run.
    #[error(transparent)]
    Pipeline(#[from] PipelineError),
    /// The graph's files could not be written.
    #[error("cannot write the outputs to {}: {source}", .dir.display())]
    GraphFiles {
        /// The output directory.
        dir: PathBuf,
        /// Why.
        source: ViewError,
    },
    /// The model's files could not be written.
    #[error("cannot write the model to {}: {source}", .dir.display())]
    ModelFiles {
        /// The output directory.
        dir: PathBuf,
        /// Why.
        source: ViewError,
    },
}

/// The graph of a trace, and the files written of it.
#[derive(Debug)]
pub struct GraphStep {
    /// The graph stage's output.
    pub built: Built,
    /// `graph.json`, `types.dot`, `types.svg`, `graph-summary.txt`.
    pub files: GraphFiles,
}

/// The model of a graph, and the files written of it.
#[derive(Debug)]
pub struct ModelStep {
    /// The miner's output.
    pub mined: Mined,
    /// `model.json`, `model.dot`, `model.svg`, `model-tree.txt`.
    pub files: ModelFiles,
}

impl Pipeline {
    /// The graph stage on the trace in `dir`, its files written into `out` (created if needed).
    /// Phases timed in `t`: `causal graph`, then the files'.
    pub fn infer_graph(
        &self,
        dir: &Path,
        out: &Path,
        draw: &DrawOptions,
        t: &mut Timings,
        progress: &dyn Progress,
    ) -> Result<GraphStep, InferError> {
        let built = t.phase("causal graph", progress, || self.graph(dir))?;
        let files = write_graph_files(&built, out, draw, t, progress).map_err(|source| {
            InferError::GraphFiles {
                dir: out.to_path_buf(),
                source,
            }
        })?;
        Ok(GraphStep { built, files })
    }

    /// The miner and the rollups on `built`'s graph, the model's files written into `out`: the
    /// drawing labels tasks with their mean latency from the rollups, whatever `draw` holds for
    /// it. Phases timed in `t`: `mining`, `rollups`, then the files'.
    pub fn infer_model(
        &self,
        built: &Built,
        out: &Path,
        draw: &ModelDraw,
        t: &mut Timings,
        progress: &dyn Progress,
    ) -> Result<ModelStep, InferError> {
        let graph = &built.graph;
        // The graph's files are written: their buffers go back before the miner's arrays come.
        crate::memory::release_freed_memory();
        let mined = t.phase("mining", progress, || self.model(graph, progress));
        let r = t.phase("rollups", progress, || self.rollup(graph, &mined.model));
        let draw = ModelDraw {
            mean_latency: r.types.iter().map(|s| s.latency.mean_ns).collect(),
            ..draw.clone()
        };
        drop(r);
        let files =
            write_model_files(&mined.model, graph, out, &draw, t, progress).map_err(|source| {
                InferError::ModelFiles {
                    dir: out.to_path_buf(),
                    source,
                }
            })?;
        Ok(ModelStep { mined, files })
    }
}
