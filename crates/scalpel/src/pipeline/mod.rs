//! The one driver: trace directory → [`Graph`] (the graph stage)
//! → [`Model`] (the miner) → [`Rollup`] (the rollups), for every
//! subcommand that reads a trace (`infer`, `top`, `report`, and every later view).
//!
//! Each subcommand turns its shared command-line arguments into one [`PipelineOptions`] and
//! runs the stages through a [`Pipeline`]; no other code calls a stage's entry point with
//! options of its own, so the stages run the same way whichever view asked for them.

mod compare;
mod infer;
mod load;
mod plan;
mod room;
mod summed;
mod windows;

use std::path::{Path, PathBuf};

use scalpel_model::graph::Graph;
use scalpel_model::task::Model;

use scalpel_analysis::rollup::Rollup;
use scalpel_graph::{build_graph_of, Built, GraphError, GraphOptions, GraphWarning};
use scalpel_mine::{MineInput, MineOptions, MineWarning, Mined, NameOverrides, NamesError};
use scalpel_model::progress::{Progress, Timings};

pub use compare::WindowedDifference;
pub use infer::{GraphStep, InferError, ModelStep};
pub use load::{Loaded, SourceError};
pub use plan::{
    default_memory_limit, trace_bytes, WindowPlan, MAX_WINDOW_EVENTS, MIN_MEMORY, PEAK_PER_EVENT,
    PEAK_PER_TRACE_BYTE,
};
pub use room::{MemoryRoom, ADDRESS_SPACE_FIXED, ADDRESS_SPACE_PER_BYTE};
pub use summed::{is_windowed, unfinished_windows, window_bounds, WindowBounds};
pub use windows::{window_dir_name, WindowSummary, WindowedInfer, WindowsSummary};

/// How the stages run. `Default`: the stages' own defaults, no names file, a worker per core.
#[derive(Clone, Debug, Default)]
pub struct PipelineOptions {
    /// Graph-stage options. Default: [`GraphOptions::default`].
    pub graph: GraphOptions,
    /// Mining options; the names come from [`names`](Self::names). Default:
    /// [`MineOptions::default`].
    pub mine: MineOptions,
    /// A TOML file renaming tasks. Default: none.
    pub names: Option<PathBuf>,
    /// Worker threads. Default: one per core.
    pub threads: Option<u16>,
    /// The options above the user set, named as on the command line (`--cut-at-locks`): a
    /// model already inferred cannot honour them, so loading one refuses them. Default: none.
    pub infer_only: Vec<&'static str>,
}

/// Why a stage could not run.
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    /// The graph stage failed.
    #[error("cannot build the causal graph of {}: {source}", .dir.display())]
    Graph {
        /// The trace directory.
        dir: PathBuf,
        /// Why.
        source: GraphError,
    },
    /// The names file could not be used.
    #[error(transparent)]
    Names(#[from] NamesError),
    /// The worker threads could not be started.
    #[error("cannot start the worker threads: {0}")]
    Threads(#[from] rayon::ThreadPoolBuildError),
}

/// What the stages had to do without or work around, for the user to hear about.
#[derive(Debug, thiserror::Error)]
pub enum Warning {
    /// From the graph stage.
    #[error(transparent)]
    Graph(GraphWarning),
    /// From the miner.
    #[error(transparent)]
    Mine(MineWarning),
}

/// The stages, set up once with their options (names file read, worker threads started).
///
/// A pipeline given a number of threads owns its worker pool and runs every stage in it, so
/// several pipelines with their own counts live in one process; without one, stages run in
/// rayon's global pool. The allocator's policy is the program's to set
/// ([`scalpel_model::memory::set_policy`]), not the library's.
#[derive(Debug)]
pub struct Pipeline {
    opts: PipelineOptions,
    pool: Option<rayon::ThreadPool>,
}

impl Pipeline {
    /// Reads the names file and starts the worker threads, if a number was given.
    pub fn new(mut opts: PipelineOptions) -> Result<Pipeline, PipelineError> {
        let pool = match opts.threads {
            Some(n) => Some(
                rayon::ThreadPoolBuilder::new()
                    .num_threads(usize::from(n))
                    .build()?,
            ),
            None => None,
        };
        if let Some(p) = &opts.names {
            opts.mine.names = NameOverrides::load(p)?;
        }
        Ok(Pipeline { opts, pool })
    }

    /// Runs `f` in this pipeline's worker pool (rayon's global one when it has none).
    fn install<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        match &self.pool {
            Some(pool) => pool.install(f),
            None => f(),
        }
    }

    /// The graph stage: the causal graph of the trace in `dir`.
    pub fn graph(&self, dir: &Path) -> Result<Built, PipelineError> {
        self.graph_of(&[dir.to_path_buf()])
    }

    /// The graph stage on the traces of one machine or several: one causal graph, every time
    /// on the first directory's machine's clock.
    pub fn graph_of(&self, dirs: &[PathBuf]) -> Result<Built, PipelineError> {
        let built = self
            .install(|| build_graph_of(dirs, &self.opts.graph))
            .map_err(|source| PipelineError::Graph {
                dir: dirs.first().cloned().unwrap_or_default(),
                source,
            });
        scalpel_model::memory::release_freed_memory();
        built
    }

    /// The miner: the task model of `graph`, whose file is `graph.json` beside the model's.
    pub fn model(&self, graph: &Graph, progress: &dyn Progress) -> Mined {
        self.install(|| scalpel_mine::mine(graph, "graph.json", &self.opts.mine, progress))
    }

    /// The miner on what it reads of a graph.
    pub fn mine_input(&self, input: &MineInput<'_>, progress: &dyn Progress) -> Mined {
        self.install(|| scalpel_mine::mine_input(input, "graph.json", &self.opts.mine, progress))
    }

    /// The rollups of `model`, mined from `graph`.
    pub fn rollup(&self, graph: &Graph, model: &Model) -> Rollup {
        self.install(|| scalpel_analysis::rollup::rollup(graph, model))
    }

    /// What a view reads: `path` is a model file, a directory holding `model.json`, or a trace
    /// directory, inferred with these options (a model already inferred refuses the options
    /// that only inferring applies).
    /// Each phase is timed in `t`.
    pub fn load(
        &self,
        path: &Path,
        progress: &dyn Progress,
        t: &mut Timings,
    ) -> Result<Loaded, SourceError> {
        load::load(self, path, progress, t)
    }

    /// [`Pipeline::load`] of several paths: the trace directories of several machines,
    /// inferred together (one path is read as [`Pipeline::load`] reads it).
    pub fn load_all(
        &self,
        paths: &[PathBuf],
        progress: &dyn Progress,
        t: &mut Timings,
    ) -> Result<Loaded, SourceError> {
        load::load_traces(self, paths, progress, t)
    }
}
