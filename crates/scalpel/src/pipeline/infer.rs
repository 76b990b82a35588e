//! What `scalpel infer` computes and writes, in two steps (the graph and its files, then the model
//! and its files), so that the command and the fuzz target run exactly the same sequence and the
//! command can print the graph's summary before the longer mining step starts.

use std::path::{Path, PathBuf};

use scalpel_model::graph::Graph;
use scalpel_model::store::{read_graph, StoreError};

use super::{Pipeline, PipelineError};
use scalpel_graph::Built;
use scalpel_mine::MineInput;
use scalpel_mine::{Grammar, Mined};
use scalpel_model::progress::{Progress, Timings};
use scalpel_views::outputs::{write_graph_files, write_model_files, GraphFiles, ModelFiles};
use scalpel_views::{DrawOptions, ModelDraw, ViewError};

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
    /// The graph, let go while mining, could not be read back from its files.
    #[error("cannot read the graph back from {}: {source}", .file.display())]
    GraphBack {
        /// `graph.json`.
        file: PathBuf,
        /// Why.
        source: StoreError,
    },
    /// The trace could not be read to place its windows.
    #[error("cannot read {} to infer it in windows: {source}", .dir.display())]
    Survey {
        /// The trace directory.
        dir: PathBuf,
        /// Why.
        source: scalpel_model::read::ReadError,
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
        dirs: &[PathBuf],
        out: &Path,
        draw: &DrawOptions,
        t: &mut Timings,
        progress: &dyn Progress,
    ) -> Result<GraphStep, InferError> {
        let built = t.phase("causal graph", progress, || self.graph_of(dirs))?;
        let files = write_graph_files(&built, out, draw, t, progress).map_err(|source| {
            InferError::GraphFiles {
                dir: out.to_path_buf(),
                source,
            }
        })?;
        Ok(GraphStep { built, files })
    }

    /// The miner and the rollups on `step`'s graph, the model's files written into `out`: the
    /// drawing labels tasks with their mean latency from the rollups, whatever `draw` holds for
    /// it. Phases timed in `t`: `mining` (with reading the graph back), `rollups`, then the
    /// files'.
    ///
    /// The miner reads a third of the graph (see [`MineInput`]), so the graph is let go while it
    /// runs and read back from the `graph.json` and `graph.bin` just written: mining set the
    /// peak memory of the whole run, with the graph and the miner's arrays resident together.
    pub fn infer_model(
        &self,
        step: &mut GraphStep,
        out: &Path,
        draw: &ModelDraw,
        t: &mut Timings,
        progress: &dyn Progress,
    ) -> Result<ModelStep, InferError> {
        self.infer_model_with(step, out, draw, None, t, progress)
    }

    /// [`Pipeline::infer_model`] that first replays `grammar` (see
    /// [`scalpel_mine::mine_with`]).
    pub(super) fn infer_model_with(
        &self,
        step: &mut GraphStep,
        out: &Path,
        draw: &ModelDraw,
        grammar: Option<&Grammar>,
        t: &mut Timings,
        progress: &dyn Progress,
    ) -> Result<ModelStep, InferError> {
        let graph = std::mem::replace(
            &mut step.built.graph,
            Graph::new(Vec::new(), Vec::new(), Vec::new(), Vec::new()),
        );
        let mined = t.phase("mining", progress, || {
            let input = MineInput::from_graph(graph);
            // The graph's files are written and the graph let go: its memory goes back before
            // the miner's arrays come.
            scalpel_model::memory::release_freed_memory();
            let mined = self.install(|| {
                scalpel_mine::mine_with(&input, "graph.json", &self.opts.mine, grammar, progress)
            });
            drop(input);
            scalpel_model::memory::release_freed_memory();
            mined
        });
        let json = &step.files.json;
        step.built.graph = t
            .phase("reading graph.json and graph.bin", progress, || {
                let graph = read_graph(json);
                // The file's bytes and the decoder's growing arrays.
                scalpel_model::memory::release_freed_memory();
                graph
            })
            .map_err(|source| InferError::GraphBack {
                file: json.clone(),
                source,
            })?;
        let graph = &step.built.graph;
        let r = t.phase("rollups", progress, || self.rollup(graph, &mined.model));
        let draw = ModelDraw {
            mean_latency: r.types.iter().map(|s| s.latency.mean_ns).collect(),
            ..draw.clone()
        };
        drop(r);
        scalpel_model::memory::release_freed_memory();
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
