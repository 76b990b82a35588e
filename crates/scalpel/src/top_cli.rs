//! `scalpel top` and `scalpel report`: their command lines, and running them.

use std::ffi::OsString;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;

use crate::spinner::Spinner;
use anyhow::{bail, Result};
use clap::{Args, ValueEnum};
use scalpel::pipeline::Loaded;
use scalpel::Pipeline;
use scalpel_analysis::rollup::{off_cpu, on_cpu, sample_period_ns, wall, FlameOptions, Rollup};
use scalpel_analysis::rollup::{top_view, TopOptions};
use scalpel_analysis::waitfor::{wait_for, WaitForOptions};
use scalpel_model::lookup::task_named;
use scalpel_model::progress::Timings;
use scalpel_views::csv::write_csv;
use scalpel_views::flame::{write_flame_svg_as, write_folded_as, Weights};
use scalpel_views::json::write_top_json;
use scalpel_views::outfile::OutDir;
use scalpel_views::report::{write_report, ReportOptions};
use scalpel_views::table::write_table;
use scalpel_views::timings::write_timings;

use crate::args::PipelineArgs;
use crate::{broken_pipe_is_fine, say, warn};

/// How `top` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    /// Aligned text tables.
    Table,
    /// One JSON document.
    Json,
    /// Comma-separated values, one row per task, child or contributor.
    Csv,
}

/// Where the model comes from (shared by `top` and `report`).
#[derive(Args, Debug)]
pub(crate) struct SourceArgs {
    /// A model.json, a directory `scalpel infer` wrote, or a trace directory (inferred on the
    /// spot, with the options below, which only a trace directory takes).
    pub path: PathBuf,
    #[command(flatten)]
    pub pipeline: PipelineArgs,
}

#[derive(Args, Debug)]
pub(crate) struct TopArgs {
    #[command(flatten)]
    pub source: SourceArgs,
    /// Descend into the task type named NAME: its children, the leaves and waits on its
    /// critical path, and the calls and stacks behind them.
    #[arg(long, value_name = "NAME")]
    pub expand: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
    /// Rows per list.
    #[arg(long, value_name = "N", default_value = "20")]
    pub limit: usize,
}

#[derive(Args, Debug)]
pub(crate) struct ReportArgs {
    #[command(flatten)]
    pub source: SourceArgs,
    /// The HTML file to write [default: report.html beside the model, or in DIR/model].
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// How many top-level tasks get a drill-down section.
    #[arg(long, value_name = "N", default_value = "5")]
    pub tasks: usize,
}

#[derive(Args, Debug)]
pub(crate) struct FlameArgs {
    #[command(flatten)]
    pub source: SourceArgs,
    /// Off-CPU time: every blocking call, weighted by the time it blocked, in microseconds
    /// (the default).
    #[arg(long, group = "kind")]
    pub off_cpu: bool,
    /// On-CPU time from the samples of `scalpel record --sample HZ`, in samples.
    #[arg(long, group = "kind")]
    pub on_cpu: bool,
    /// Wall-clock time: on-CPU samples (innermost frame suffixed `_[c]`) and off-CPU waits
    /// (`_[o]`, converted to samples at the sampling rate) in one graph.
    #[arg(long, group = "kind")]
    pub wall: bool,
    /// After each wait another thread ended, a `--` frame and the waker's stack ("off-wake";
    /// off-CPU graphs only).
    #[arg(long, conflicts_with_all = ["on_cpu", "wall"])]
    pub waker: bool,
    /// Only the time inside the task type named NAME (all leaves of its occurrences, on every
    /// thread they ran on).
    #[arg(long, value_name = "NAME")]
    pub task: Option<String>,
    /// One root frame per process (its threads added up) instead of process, then thread.
    #[arg(long)]
    pub per_process: bool,
    /// Print the folded stacks (`frame;frame;… count`) on stdout instead of an SVG.
    #[arg(long)]
    pub folded: bool,
    /// The SVG file to write [default: offcpu.svg, oncpu.svg or wall.svg beside the model, or in
    /// DIR/model].
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Runs the pipeline (or reads what `infer` wrote) for a view.
pub(crate) fn load(
    s: &SourceArgs,
    t: &mut Timings,
    spinner: &Spinner,
) -> Result<(Pipeline, Loaded)> {
    let pipeline = Pipeline::new(s.pipeline.options())?;
    let loaded = pipeline.load(&s.path, spinner, t)?;
    warn(&loaded.warnings, 10, "");
    Ok((pipeline, loaded))
}

/// [`load`], and the rollups.
fn load_source(s: &SourceArgs, t: &mut Timings) -> Result<(Loaded, Rollup)> {
    let spinner = Spinner::new();
    let (pipeline, loaded) = load(s, t, &spinner)?;
    let r = t.phase("rollups", &spinner, || {
        pipeline.rollup(&loaded.graph, &loaded.model)
    });
    Ok((loaded, r))
}

/// Prints the phase timings on stderr when `--timings` asked for them.
pub(crate) fn print_timings(asked: bool, t: &Timings) {
    if asked {
        let mut e = io::stderr().lock();
        let _ = write_timings(&mut e, t);
    }
}

/// Prints the top-down view.
pub(crate) fn run_top(a: &TopArgs) -> Result<()> {
    let mut t = Timings::new();
    let (l, r) = load_source(&a.source, &mut t)?;
    let opts = TopOptions {
        expand: a.expand.clone(),
        limit: a.limit.max(1),
        ..TopOptions::default()
    };
    let view = top_view(&l.graph, &l.model, &r, &opts)?;
    let mut o = crate::text_stdout();
    let written = match a.format {
        Format::Table => write_table(&mut o, &view),
        Format::Csv => write_csv(&mut o, &view),
        Format::Json => write_top_json(&mut o, &view),
    };
    let r = broken_pipe_is_fine(written.and_then(|()| o.flush()));
    print_timings(a.source.pipeline.timings, &t);
    r
}

/// Where a view's file goes: its directory, held open, and its name and path there.
pub(crate) struct Output {
    pub dir: OutDir,
    pub name: OsString,
    pub path: PathBuf,
}

impl Output {
    /// Writes the file through `body` (see [`OutDir::write`]).
    pub(crate) fn write<T>(
        &self,
        body: impl FnOnce(&mut BufWriter<std::fs::File>) -> io::Result<T>,
    ) -> Result<T> {
        Ok(self.dir.write(&self.name, body)?)
    }
}

/// Where a view's file goes: the path given (whose directory must exist), or `name` beside the
/// model (in `DIR/model` for a trace directory, created if needed).
pub(crate) fn output_path(given: Option<&PathBuf>, l: &Loaded, name: &str) -> Result<Output> {
    let out = match given {
        Some(p) => p.clone(),
        None if l.from.is_dir() => l.from.join("model").join(name),
        None => l
            .from
            .parent()
            .map(|p| p.join(name))
            .unwrap_or_else(|| PathBuf::from(name)),
    };
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        if given.is_some() {
            // A path the user gave is written where it says, or not at all: a typo in it must
            // not leave a tree of new directories behind.
            anyhow::ensure!(
                dir.is_dir(),
                "cannot write {}: the directory {} does not exist",
                out.display(),
                dir.display()
            );
        } else if l.from.is_dir() {
            // `DIR/model`, made as `scalpel infer` makes it.
            let dir = OutDir::create(dir)?;
            return Ok(Output {
                dir,
                name: OsString::from(name),
                path: out,
            });
        }
    }
    let (dir, name) = OutDir::parent_of(&out)?;
    Ok(Output {
        dir,
        name,
        path: out,
    })
}

/// Writes the off-CPU flame graph (or prints its folded stacks).
pub(crate) fn run_flame(a: &FlameArgs) -> Result<()> {
    let mut t = Timings::new();
    let spinner = Spinner::new();
    let (_, l) = load(&a.source, &mut t, &spinner)?;
    let task = a
        .task
        .as_deref()
        .map(|name| task_named(&l.model, name))
        .transpose()?;
    let opts = FlameOptions {
        waker: a.waker,
        task,
        per_process: a.per_process,
    };
    let sampled = a.on_cpu || a.wall;
    let unit = match sample_period_ns(&l.graph) {
        Some(period_ns) if sampled => Weights::Samples { period_ns },
        None if sampled => bail!(
            "{}: the trace has no on-CPU samples (record with `scalpel record --sample 99 -- CMD` \
             for --on-cpu and --wall)",
            a.source.path.display()
        ),
        _ => Weights::Micros,
    };
    let (phase, file_name, kind) = if a.on_cpu {
        ("on-CPU stacks", "oncpu.svg", "On-CPU time")
    } else if a.wall {
        ("wall-clock stacks", "wall.svg", "Wall-clock time")
    } else {
        ("off-CPU stacks", "offcpu.svg", "Off-CPU time")
    };
    let folded = t.phase(phase, &spinner, || {
        if a.on_cpu {
            on_cpu(&l.graph, &l.model, &opts)
        } else if a.wall {
            wall(&l.graph, &l.model, &opts)
        } else {
            off_cpu(&l.graph, &l.model, &opts)
        }
    });
    if a.folded {
        let mut o = crate::text_stdout();
        let r =
            broken_pipe_is_fine(write_folded_as(&mut o, &folded, unit).and_then(|()| o.flush()));
        print_timings(a.source.pipeline.timings, &t);
        return r;
    }
    let out = output_path(a.output.as_ref(), &l, file_name)?;
    let title = match &a.task {
        Some(name) => format!("{kind} in {name}"),
        None => kind.to_owned(),
    };
    t.phase("drawing the flame graph", &spinner, || {
        out.write(|w| write_flame_svg_as(w, &folded, &title, unit))
    })?;
    print_timings(a.source.pipeline.timings, &t);
    broken_pipe_is_fine(writeln!(io::stdout(), "wrote {}", out.path.display()))
}

/// Writes the HTML report and says where.
pub(crate) fn run_report(a: &ReportArgs) -> Result<()> {
    let mut t = Timings::new();
    let (l, r) = load_source(&a.source, &mut t)?;
    let out = output_path(a.output.as_ref(), &l, "report.html")?;
    let opts = ReportOptions {
        tasks: a.tasks,
        title: l.from.display().to_string(),
    };
    let waits = t.phase("wait-for graph", &Spinner::new(), || {
        wait_for(&l.graph, &l.model, &WaitForOptions::default())
    });
    let svg_err = t.phase("writing the report", &Spinner::new(), || {
        out.write(|w| write_report(w, &l.graph, &l.model, &r, &waits, &opts))
    })?;
    print_timings(a.source.pipeline.timings, &t);
    if let Some(e) = svg_err {
        say!("scalpel: warning: the report has no drawing: {e}");
    }
    broken_pipe_is_fine(writeln!(io::stdout(), "wrote {}", out.path.display()))
}
