//! `scalpel infer`: the command line of the inference stages, and running them.

use std::io::{self, Write};
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use scalpel_inferencer::graph::{
    build_graph, summary_text, write_outputs, DrawOptions, Filter, GraphOptions,
};
use scalpel_inferencer::mine::{
    mine, tree_text, write_model, MineOptions, ModelDraw, NameOverrides, DEFAULT_MIN_SUPPORT,
};
use scalpel_inferencer::rollup::rollup;

/// How far inference goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Stage {
    /// Leaf tasks and the causal graph: graph.json, types.dot, types.svg, graph-summary.txt.
    Graph,
    /// The graph, then the task hierarchy: also model.json, model.dot, model.svg,
    /// model-tree.txt.
    Model,
}

#[derive(Args, Debug)]
pub struct InferArgs {
    /// The trace directory.
    pub dir: PathBuf,
    /// Where to write the outputs [default: DIR/model].
    #[arg(short, long, value_name = "OUT")]
    pub output: Option<PathBuf>,
    /// How far to go.
    #[arg(long, value_enum, default_value = "model")]
    pub stage: Stage,
    /// Fail on any data loss (a damaged or unreadable file, lost events) instead of warning.
    #[arg(long)]
    pub strict: bool,
    /// Cut leaves at mutex and rwlock calls too, so that each critical section is a leaf: for
    /// programs that hand work over under locks alone (lock order still draws no edges).
    #[arg(long)]
    pub cut_at_locks: bool,
    /// Keep only leaves matching FILTER: pid:N, tid:N, process:NAME, thread:NAME or time:A..B
    /// (seconds from the start). Repeatable; one match per kind given is needed.
    #[arg(long = "include", value_name = "FILTER")]
    pub include: Vec<Filter>,
    /// Drop leaves matching FILTER (same forms as --include). Repeatable.
    #[arg(long = "exclude", value_name = "FILTER")]
    pub exclude: Vec<Filter>,
    /// Draw only nodes with at least N occurrences in types.dot/svg and model.dot/svg (the JSON
    /// files keep everything).
    #[arg(long, value_name = "N", default_value = "1")]
    pub min_count: u64,
    /// Fewest non-overlapping occurrences a repeated pattern needs to become a task.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MIN_SUPPORT,
          value_parser = clap::value_parser!(u32).range(2..))]
    pub min_support: u32,
    /// Draw only the top N levels of the model (deeper tasks become one box each).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub depth: Option<u32>,
    /// Draw only the task type named NAME, expanded.
    #[arg(long, value_name = "NAME")]
    pub task: Option<String>,
    /// A TOML file renaming tasks: a [names] table of "generated name" = "new name".
    #[arg(long, value_name = "FILE")]
    pub names: Option<PathBuf>,
    /// Worker threads [default: one per core].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub threads: Option<u16>,
}

/// What `infer` does, in the library's terms.
#[derive(Debug)]
pub struct InferJob {
    /// The trace directory.
    pub dir: PathBuf,
    /// The output directory.
    pub out: PathBuf,
    /// The stage.
    pub stage: Stage,
    /// Graph options.
    pub graph: GraphOptions,
    /// Worker threads.
    pub threads: Option<u16>,
    /// How the type graph is drawn.
    pub draw: DrawOptions,
    /// Mining options (without the names, loaded when the job runs).
    pub mine: MineOptions,
    /// The names file.
    pub names: Option<PathBuf>,
    /// How the model is drawn.
    pub model_draw: ModelDraw,
}

impl From<InferArgs> for InferJob {
    fn from(a: InferArgs) -> Self {
        InferJob {
            out: a.output.unwrap_or_else(|| a.dir.join("model")),
            dir: a.dir,
            stage: a.stage,
            graph: GraphOptions {
                strict: a.strict,
                lock_cuts: a.cut_at_locks,
                include: a.include,
                exclude: a.exclude,
                ..GraphOptions::default()
            },
            threads: a.threads,
            draw: DrawOptions {
                min_count: a.min_count,
            },
            mine: MineOptions {
                min_support: a.min_support,
                progress: true,
                ..MineOptions::default()
            },
            names: a.names,
            model_draw: ModelDraw {
                depth: a.depth,
                task: a.task,
                min_count: a.min_count,
                mean_latency: Vec::new(),
            },
        }
    }
}

/// Runs the stages and reports on stdout (results) and stderr (warnings).
pub fn run_infer(job: &InferJob) -> Result<()> {
    if let Some(n) = job.threads {
        rayon::ThreadPoolBuilder::new()
            .num_threads(usize::from(n))
            .build_global()
            .context("cannot start the worker threads")?;
    }
    let mut mine_opts = job.mine.clone();
    if let Some(p) = &job.names {
        mine_opts.names = NameOverrides::load(p)?;
    }
    let built = build_graph(&job.dir, &job.graph)
        .with_context(|| format!("cannot build the causal graph of {}", job.dir.display()))?;
    const SHOWN: usize = 10;
    for w in built.warnings.iter().take(SHOWN) {
        let _ = writeln!(io::stderr(), "scalpel: warning: {w}");
    }
    if built.warnings.len() > SHOWN {
        let more = built.warnings.len() - SHOWN;
        let _ = writeln!(
            io::stderr(),
            "scalpel: ... and {more} more warnings (see the summary file)"
        );
    }
    let out = write_outputs(&built, &job.out, &job.draw)
        .with_context(|| format!("cannot write the outputs to {}", job.out.display()))?;
    let mut o = io::stdout().lock();
    let _ = write!(o, "{}", summary_text(&built));
    let _ = writeln!(o, "wrote {}", out.json.display());
    let _ = writeln!(o, "wrote {}", out.dot.display());
    report_svg(&mut o, &out.svg);
    let _ = writeln!(o, "wrote {}", out.summary.display());
    if job.stage == Stage::Graph {
        return Ok(());
    }
    let mined = mine(&built.graph, "graph.json", &mine_opts);
    for w in &mined.warnings {
        let _ = writeln!(io::stderr(), "scalpel: warning: {w}");
    }
    let r = rollup(&built.graph, &mined.model);
    let draw = ModelDraw {
        mean_latency: r.types.iter().map(|s| s.latency.mean_ns).collect(),
        ..job.model_draw.clone()
    };
    let out = write_model(&mined.model, &built.graph, &job.out, &draw)
        .with_context(|| format!("cannot write the model to {}", job.out.display()))?;
    let _ = write!(o, "{}", tree_text(&mined.model));
    let _ = writeln!(o, "wrote {}", out.json.display());
    let _ = writeln!(o, "wrote {}", out.dot.display());
    report_svg(&mut o, &out.svg);
    let _ = writeln!(o, "wrote {}", out.tree.display());
    Ok(())
}

fn report_svg(o: &mut impl Write, svg: &Result<PathBuf, String>) {
    match svg {
        Ok(p) => {
            let _ = writeln!(o, "wrote {}", p.display());
        }
        Err(e) => {
            let _ = writeln!(io::stderr(), "scalpel: warning: no SVG: {e}");
        }
    }
}
