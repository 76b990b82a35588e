//! `scalpel infer`: the pipeline, with the files it writes.

use std::io::{self, Write};
use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::{Args, ValueEnum};
use scalpel::pipeline::{trace_bytes, MemoryRoom, MIN_MEMORY, PEAK_PER_TRACE_BYTE};
use scalpel::{Pipeline, PipelineOptions};
use scalpel_graph::Filter;
use scalpel_model::progress::Timings;
use scalpel_views::export::Table;
use scalpel_views::graph::write_graph_summary;
use scalpel_views::tree::{write_tree_head, TREE_HEAD_LINES};
use scalpel_views::{DrawOptions, ModelDraw, ViewError};

use crate::args::PipelineArgs;
use crate::commands::export::{parquet, DEFAULT_WINDOW_NS};
use crate::memory::{mib, within_room};
use crate::output::{broken_pipe_is_fine, print_timings, text_stdout, warn};
use crate::say;
use crate::spinner::Spinner;

/// How far inference goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Stage {
    /// Leaf tasks and the causal graph: graph.json, types.dot, types.svg, graph-summary.txt.
    Graph,
    /// The graph, then the task hierarchy: also model.json, model.dot, model.svg,
    /// model-tree.txt.
    Model,
}

#[derive(Args, Debug)]
pub(crate) struct InferArgs {
    /// The trace directory; several, recorded on several machines, make one model (the first
    /// machine's clock is the one every time is put on).
    #[arg(required = true, value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// Where to write the outputs [default: DIR/model, in the first DIR].
    #[arg(short, long, value_name = "OUT")]
    pub output: Option<PathBuf>,
    /// How far to go.
    #[arg(long, value_enum, default_value = "model")]
    pub stage: Stage,
    #[command(flatten)]
    pub pipeline: PipelineArgs,
    /// Draw only nodes with at least N occurrences in types.dot/svg and model.dot/svg (the JSON
    /// files keep everything).
    #[arg(long, value_name = "N", default_value = "1")]
    pub min_count: u64,
    /// Draw only the top N levels of the model (deeper tasks become one box each).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub depth: Option<u32>,
    /// Draw only the task type named NAME, expanded.
    #[arg(long, value_name = "NAME")]
    pub task: Option<String>,
    /// Also write the tables as a Parquet dataset in DIR, as `scalpel export --format parquet`
    /// does (60 s windows): the graph's with `--stage graph`, the model's too otherwise. A
    /// machine's graph written where its trace is, for `scalpel sql` on several machines'.
    /// A trace inferred in windows (`--memory`) gives one dataset of its windows.
    #[arg(long, value_name = "DIR")]
    pub parquet: Option<PathBuf>,
}

/// What `infer` does, in the library's terms.
#[derive(Debug)]
pub(crate) struct Infer {
    /// The trace directories (one per machine, or one).
    pub dirs: Vec<PathBuf>,
    /// The output directory.
    pub out: PathBuf,
    /// The stage.
    pub stage: Stage,
    /// How the stages run.
    pub pipeline: PipelineOptions,
    /// How the type graph is drawn.
    pub draw: DrawOptions,
    /// How the model is drawn.
    pub model_draw: ModelDraw,
    /// Print the phase timings.
    pub timings: bool,
    /// The memory limit, and whether the user gave it.
    pub memory: (u64, bool),
    /// Where to write the tables as a Parquet dataset, if anywhere.
    pub parquet: Option<PathBuf>,
}

impl InferArgs {
    pub(crate) fn options(self) -> Result<Infer> {
        let a = self;
        if let Some(dir) = &a.parquet {
            crate::commands::export::parent_exists(dir)?;
        }
        Ok(Infer {
            out: a.output.unwrap_or_else(|| a.dirs[0].join("model")),
            dirs: a.dirs,
            stage: a.stage,
            pipeline: a.pipeline.options(),
            timings: a.pipeline.timings,
            memory: a.pipeline.memory_limit(),
            draw: DrawOptions {
                min_count: a.min_count,
            },
            model_draw: ModelDraw {
                depth: a.depth,
                task: a.task,
                min_count: a.min_count,
                mean_latency: Vec::new(),
            },
            parquet: a.parquet,
        })
    }
}

/// Whether `dir` holds an entry named like a traced process's directory (`<pid>.<n>`).
fn holds_a_process_directory(dir: &std::path::Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries.flatten().any(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.split_once('.').is_some_and(|(pid, n)| {
                [pid, n]
                    .iter()
                    .all(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
            })
        })
    })
}

/// Runs the stages and reports on stdout (results) and stderr (warnings).
pub(crate) fn run(job: &Infer) -> Result<()> {
    // A directory `infer` wrote is not a trace; reading it as one would say "no trace found"
    // and leave the user guessing.
    for dir in &job.dirs {
        if ["model.json", "graph.json"]
            .iter()
            .any(|f| dir.join(f).is_file())
            && !holds_a_process_directory(dir)
        {
            bail!(
                "{}: this is a directory `scalpel infer` wrote (it holds its model or graph), \
                 not a trace; `scalpel top`, `report`, `flame` and the other views read it as it \
                 is, and `scalpel infer` takes the trace directory it came from",
                dir.display()
            );
        }
        if let Some(windows) =
            scalpel::pipeline::unfinished_windows(dir).filter(|_| !holds_a_process_directory(dir))
        {
            bail!(
                "{}: this is a directory `scalpel infer` began to write in windows ({windows} \
                 of them) and did not finish, not a trace; `scalpel infer` takes the trace \
                 directory it came from",
                dir.display()
            );
        }
    }
    if let Some(limit) = windowed(job)? {
        if let Some(dir) = job.parquet.as_ref().filter(|_| job.stage == Stage::Graph) {
            bail!(
                "cannot write {}: this trace is inferred in windows, and a dataset of windows \
                 is written from their models: drop --stage graph",
                dir.display()
            );
        }
        return crate::commands::windows::run(job, limit);
    }
    let mut t = Timings::new();
    let spinner = Spinner::new();
    let pipeline = Pipeline::new(job.pipeline.clone())?;
    let mut step = pipeline.infer_graph(&job.dirs, &job.out, &job.draw, &mut t, &spinner)?;
    warn(&step.built.warnings, 10, " (see the summary file)");
    let mut o = text_stdout();
    let files = &step.files;
    let r = (|| -> io::Result<()> {
        write_graph_summary(&mut o, &step.built)?;
        writeln!(o, "wrote {}", files.json.display())?;
        writeln!(o, "wrote {}", files.dot.display())?;
        report_svg(&mut o, &files.svg)?;
        writeln!(o, "wrote {}", files.summary.display())?;
        o.flush()
    })();
    broken_pipe_is_fine(r)?;
    if job.stage == Stage::Graph {
        if let Some(dir) = &job.parquet {
            parquet(
                &mut t,
                dir,
                &step.built.graph,
                None,
                Table::Graph,
                DEFAULT_WINDOW_NS,
            )?;
        }
        print_timings(job.timings, &t);
        return Ok(());
    }
    let model = pipeline.infer_model(&mut step, &job.out, &job.model_draw, &mut t, &spinner)?;
    warn(&model.mined.warnings, usize::MAX, "");
    let files = &model.files;
    let r = (|| -> io::Result<()> {
        let file = files.tree.display().to_string();
        write_tree_head(&mut o, &model.mined.model, TREE_HEAD_LINES, &file)?;
        writeln!(o, "wrote {}", files.json.display())?;
        writeln!(o, "wrote {}", files.dot.display())?;
        report_svg(&mut o, &files.svg)?;
        writeln!(o, "wrote {}", files.tree.display())?;
        o.flush()
    })();
    if let Some(dir) = &job.parquet {
        let m = Some(&model.mined.model);
        parquet(
            &mut t,
            dir,
            &step.built.graph,
            m,
            Table::Model,
            DEFAULT_WINDOW_NS,
        )?;
    }
    print_timings(job.timings, &t);
    broken_pipe_is_fine(r)
}

/// The memory limit windows are made for, when the trace needs more memory than `--memory`
/// allows; `None` to infer it whole.
fn windowed(job: &Infer) -> Result<Option<u64>> {
    let (limit, given) = job.memory;
    // The default keeps within the room by itself, unless the room is less than the least limit.
    within_room(limit, given, &MemoryRoom::of_this_process())?;
    let needs: u64 = job
        .dirs
        .iter()
        .map(|d| trace_bytes(d).saturating_mul(PEAK_PER_TRACE_BYTE))
        .sum();
    if needs <= limit {
        return Ok(None);
    }
    if job.dirs.len() > 1 {
        if given {
            say!(
                "scalpel: warning: traces of several machines are inferred whole (about {} \
                 needed, --memory {}): only one machine's trace is inferred in windows",
                mib(needs),
                mib(limit)
            );
        }
        return Ok(None);
    }
    if limit < MIN_MEMORY {
        bail!(
            "--memory {}: too small to infer {} (about {} whole); windows need at least {}",
            mib(limit),
            job.dirs[0].display(),
            mib(needs),
            mib(MIN_MEMORY)
        );
    }
    let timed = job
        .pipeline
        .graph
        .include
        .iter()
        .chain(&job.pipeline.graph.exclude);
    if timed.clone().any(|f| matches!(f, Filter::Time(..))) {
        bail!(
            "{} needs about {} to infer whole, more than --memory {}, and is inferred in \
             windows, where time filters would count from each window's start: drop the \
             time: filter, or give a larger --memory",
            job.dirs[0].display(),
            mib(needs),
            mib(limit)
        );
    }
    Ok(Some(limit))
}

pub(crate) fn report_svg(o: &mut impl Write, svg: &Result<PathBuf, ViewError>) -> io::Result<()> {
    match svg {
        Ok(p) => writeln!(o, "wrote {}", p.display()),
        Err(e) => {
            say!("scalpel: warning: no SVG: {e}");
            Ok(())
        }
    }
}
