//! `scalpel flame`: a flame graph of off-CPU, on-CPU or wall-clock time.

use std::io::{self, Write};
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use scalpel::pipeline::is_windowed;
use scalpel::Pipeline;
use scalpel_analysis::diff::diff_folded;
use scalpel_analysis::rollup::{off_cpu, on_cpu, sample_period_ns, wall, FlameOptions, Folded};
use scalpel_model::graph::Graph;
use scalpel_model::lookup::task_named;
use scalpel_model::progress::Timings;
use scalpel_model::task::{Model, TaskTypeId};
use scalpel_views::flame::{write_flame_svg_as, write_folded_as, Weights};
use scalpel_views::flamediff::{write_diff_flame_svg, write_diff_folded};

use crate::args::SourceArgs;
use crate::output::{broken_pipe_is_fine, print_timings, text_stdout};

use crate::source::{output_path, task_in, Source};
use crate::spinner::Spinner;

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
    /// A differential flame graph of the run before (OLD, in any form PATH takes) and PATH:
    /// widths from PATH, red where a stack gained time, blue where it lost some. With `--task`,
    /// each run's time is divided by the task type's instances in it (per-request profiles);
    /// without, the runs are compared as they are. The options for inferring a trace
    /// directory apply to both.
    #[arg(long, value_name = "OLD")]
    pub diff: Option<PathBuf>,
    /// The SVG file to write [default: offcpu.svg, oncpu.svg or wall.svg beside the model, or in
    /// DIR/model].
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Which time a flame graph shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Time {
    OffCpu,
    OnCpu,
    Wall,
}

impl Time {
    /// The phase's name, the default file's and the graph's title.
    fn names(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Time::OnCpu => ("on-CPU stacks", "oncpu.svg", "On-CPU time"),
            Time::Wall => ("wall-clock stacks", "wall.svg", "Wall-clock time"),
            Time::OffCpu => ("off-CPU stacks", "offcpu.svg", "Off-CPU time"),
        }
    }
}

/// `flame` in the library's terms.
#[derive(Debug)]
pub(crate) struct Flame {
    pub source: Source,
    pub time: Time,
    pub waker: bool,
    /// The task type to keep, by name (looked up once the model is loaded).
    pub task: Option<String>,
    pub per_process: bool,
    pub folded: bool,
    /// The run before, for a differential graph.
    pub diff: Option<Source>,
    pub output: Option<PathBuf>,
}

impl FlameArgs {
    pub(crate) fn options(self) -> Flame {
        let time = if self.on_cpu {
            Time::OnCpu
        } else if self.wall {
            Time::Wall
        } else {
            Time::OffCpu
        };
        let source = self.source.options();
        let diff = self.diff.map(|path| Source {
            path,
            more: Vec::new(),
            pipeline: source.pipeline.clone(),
            timings: source.timings,
            memory: source.memory,
        });
        Flame {
            source,
            diff,
            time,
            waker: self.waker,
            task: self.task,
            per_process: self.per_process,
            folded: self.folded,
            output: self.output,
        }
    }
}

/// The unit of `g`'s graph: samples at its period for on-CPU and wall-clock time (`None` when
/// it has none), microseconds otherwise.
fn unit_of(a: &Flame, g: &Graph) -> Option<Weights> {
    let sampled = a.time != Time::OffCpu;
    match sample_period_ns(g) {
        Some(period_ns) if sampled => Some(Weights::Samples { period_ns }),
        None if sampled => None,
        _ => Some(Weights::Micros),
    }
}

/// One run's folded stacks, for the task type asked for, with what a graph of them needs.
struct Run {
    folded: Folded,
    /// The task type's instances (0 without one).
    count: u64,
    unit: Weights,
    /// The file the stacks were read from, which a graph's default path is beside.
    from: PathBuf,
}

/// The folded stacks of one model for the task type asked for; with the type's instance count.
fn fold(a: &Flame, g: &Graph, m: &Model, task: Option<TaskTypeId>) -> (Folded, u64) {
    let count = task.map_or(0, |t| m.types[t.index()].count);
    let opts = FlameOptions {
        waker: a.waker,
        task,
        per_process: a.per_process,
    };
    let folded = match a.time {
        Time::OnCpu => on_cpu(g, m, &opts),
        Time::Wall => wall(g, m, &opts),
        Time::OffCpu => off_cpu(g, m, &opts),
    };
    (folded, count)
}

/// The error of a run with no samples to draw on-CPU or wall-clock time from.
fn no_samples(source: &Source) -> anyhow::Error {
    anyhow::anyhow!(
        "{}: the trace has no on-CPU samples (record with `scalpel record --sample 99 -- CMD` \
         for --on-cpu and --wall)",
        source.path.display()
    )
}

/// The folded stacks of `source`: one model, or the windows of a trace inferred in windows
/// added up, one window at a time.
fn folded_run(a: &Flame, source: &Source, t: &mut Timings, spinner: &Spinner) -> Result<Run> {
    if source.more.is_empty() && is_windowed(&source.path) {
        return folded_windows(a, source, t, spinner);
    }
    let (_, l) = source.load(t, spinner)?;
    let unit = unit_of(a, &l.graph).ok_or_else(|| no_samples(source))?;
    let task = task_in(&l, a.task.as_deref())?;
    let (phase, _, _) = a.time.names();
    let (folded, count) = t.phase(phase, spinner, || fold(a, &l.graph, &l.model, task));
    Ok(Run {
        folded,
        count,
        unit,
        from: l.from,
    })
}

/// The folded stacks of every window of `source`, added up. A task type asked for by name is
/// each window's type of that name; a window without one adds nothing.
fn folded_windows(a: &Flame, source: &Source, t: &mut Timings, sp: &Spinner) -> Result<Run> {
    let pipeline = Pipeline::new(source.pipeline.clone())?;
    let (mut all, mut count) = (Folded::default(), 0u64);
    let (mut unit, mut missing) = (None, None);
    let mut found = false;
    let (phase, _, _) = a.time.names();
    pipeline.each_window(&source.path, sp, t, |g, m, wt| -> Result<()> {
        unit = unit.or(unit_of(a, g));
        let task = match a.task.as_deref().map(|n| task_named(m, n)) {
            None => None,
            Some(Ok(ty)) => Some(ty),
            Some(Err(e)) => {
                missing.get_or_insert(e);
                return Ok(());
            }
        };
        found |= task.is_some();
        let (f, n) = wt.phase(phase, sp, || fold(a, g, m, task));
        for (stack, ns) in f.stacks {
            *all.stacks.entry(stack).or_default() += ns;
        }
        count += n;
        Ok(())
    })?;
    if let (Some(e), false) = (missing, found) {
        return Err(anyhow::Error::new(e).context(format!(
            "no window of {} has the task type asked for",
            source.path.display()
        )));
    }
    Ok(Run {
        folded: all,
        count,
        unit: unit.ok_or_else(|| no_samples(source))?,
        from: source.path.join("windows.json"),
    })
}

/// Writes the flame graph (or prints its folded stacks).
pub(crate) fn run(a: &Flame) -> Result<()> {
    if let Some(old) = &a.diff {
        return run_diff(a, old);
    }
    let mut t = Timings::new();
    let spinner = Spinner::new();
    let r = folded_run(a, &a.source, &mut t, &spinner)?;
    let (_, file_name, kind) = a.time.names();
    if a.folded {
        let mut o = text_stdout();
        let w = write_folded_as(&mut o, &r.folded, r.unit).and_then(|()| o.flush());
        print_timings(a.source.timings, &t);
        return broken_pipe_is_fine(w);
    }
    let out = output_path(a.output.as_ref(), &r.from, file_name)?;
    let title = match &a.task {
        Some(name) => format!("{kind} in {name}"),
        None => kind.to_owned(),
    };
    t.phase("drawing the flame graph", &spinner, || {
        out.write(|w| write_flame_svg_as(w, &r.folded, &title, r.unit))
    })?;
    print_timings(a.source.timings, &t);
    broken_pipe_is_fine(writeln!(io::stdout(), "wrote {}", out.path.display()))
}

/// Writes the differential flame graph of `old` and `a.source` (or prints its folded stacks).
fn run_diff(a: &Flame, old: &Source) -> Result<()> {
    let mut t = Timings::new();
    let spinner = Spinner::new();
    let label = |s: &Source, which: &str| format!("the {which} run, {}", s.path.display());
    let o = folded_run(a, old, &mut t, &spinner).with_context(|| label(old, "old"))?;
    // Both runs' time is in ns; on-CPU samples are counted at the new run's period.
    let n = folded_run(a, &a.source, &mut t, &spinner).with_context(|| label(&a.source, "new"))?;
    let (of, oc, nf, nc, whole_unit) = (&o.folded, o.count, &n.folded, n.count, n.unit);
    let per_instance = a.task.is_some().then_some((oc, nc));
    let d = diff_folded(of, nf, per_instance);
    let unit = if per_instance.is_some() {
        Weights::Nanos
    } else {
        whole_unit
    };
    if a.folded {
        let mut o = text_stdout();
        let r = broken_pipe_is_fine(write_diff_folded(&mut o, &d, unit).and_then(|()| o.flush()));
        print_timings(a.source.timings, &t);
        return r;
    }
    let (_, file_name, kind) = a.time.names();
    let file_name = file_name.replace(".svg", "-diff.svg");
    let out = output_path(a.output.as_ref(), &n.from, &file_name)?;
    let (what, note) = match (&a.task, per_instance) {
        (Some(name), Some((o, n))) => (
            format!("{kind} per instance of {name}"),
            format!(" ({o} and {n} instances)"),
        ),
        _ => (kind.to_owned(), String::new()),
    };
    let runs = (old.path.to_string_lossy(), a.source.path.to_string_lossy());
    t.phase("drawing the flame graph", &spinner, || {
        out.write(|w| write_diff_flame_svg(w, &d, &what, (&runs.0, &runs.1), &note, unit))
    })?;
    print_timings(a.source.timings, &t);
    broken_pipe_is_fine(writeln!(io::stdout(), "wrote {}", out.path.display()))
}
