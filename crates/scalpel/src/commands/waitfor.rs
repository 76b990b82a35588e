//! `scalpel waitfor`: the wait-for graph between thread groups, and its knots.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, ValueEnum};
use scalpel::pipeline::is_windowed;
use scalpel::Pipeline;
use scalpel_analysis::rollup::task_leaves;
use scalpel_analysis::waitfor::{wait_for, WaitFor, WaitForOptions, WindowsWaitFor};
use scalpel_model::graph::Graph;
use scalpel_model::lookup::{task_named, NoSuchTask};
use scalpel_model::progress::Timings;
use scalpel_model::task::Model;
use scalpel_views::graphviz::render_svg;
use scalpel_views::waitfor::{write_waitfor_dot, write_waitfor_json, write_waitfor_text};

use crate::args::SourceArgs;
use crate::output::{broken_pipe_is_fine, print_timings, text_stdout};
use crate::source::{output_path, task_in, Source};
use crate::spinner::Spinner;

/// How `waitfor` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum WaitFormat {
    /// The knots first, with the edges and call sites behind them.
    Text,
    /// The whole graph as one JSON document.
    Json,
    /// Graphviz DOT, knots in red.
    Dot,
}

#[derive(Args, Debug)]
pub(crate) struct WaitforArgs {
    #[command(flatten)]
    pub source: SourceArgs,
    /// Only the waits inside the task type named NAME (what they waited behind is followed on
    /// every thread).
    #[arg(long, value_name = "NAME")]
    pub task: Option<String>,
    /// What to print on stdout.
    #[arg(long, value_enum, default_value = "text")]
    pub format: WaitFormat,
    /// Also draw the graph as SVG (Graphviz `dot`) into FILE.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// One node per thread, instead of one per group of threads that play one role.
    #[arg(long)]
    pub by_thread: bool,
    /// Edges lighter than this percentage of all waiting are left out of the knot search.
    #[arg(long, value_name = "PCT", default_value = "1", value_parser = percent)]
    pub min_share: f64,
    /// A knot of several nodes loses its lightest edge while it weighs less than this
    /// percentage of the knot's weight.
    #[arg(long, value_name = "PCT", default_value = "10", value_parser = percent)]
    pub trim: f64,
}

/// A percentage from 0 to 100, as a share.
fn percent(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|_| format!("`{s}` is not a number"))?;
    if (0.0..=100.0).contains(&v) {
        Ok(v / 100.0)
    } else {
        Err(format!("{v} is not a percentage from 0 to 100"))
    }
}

/// `waitfor` in the library's terms.
#[derive(Debug)]
pub(crate) struct Waitfor {
    pub source: Source,
    /// The task type to keep, by name (looked up once the model is loaded).
    pub task: Option<String>,
    /// The analysis's options but the task.
    pub opts: WaitForOptions,
    pub format: WaitFormat,
    pub svg: Option<PathBuf>,
}

impl WaitforArgs {
    pub(crate) fn options(self) -> Waitfor {
        Waitfor {
            source: self.source.options(),
            task: self.task,
            opts: WaitForOptions {
                min_share: self.min_share,
                trim: self.trim,
                groups: !self.by_thread,
                ..WaitForOptions::default()
            },
            format: self.format,
            svg: self.svg,
        }
    }
}

/// Prints the wait-for graph (and draws it when asked).
pub(crate) fn run(a: &Waitfor) -> Result<()> {
    let mut t = Timings::new();
    let spinner = Spinner::new();
    let (w, opts, from) = if a.source.more.is_empty() && is_windowed(&a.source.path) {
        let w = of_windows(&a.source, a.task.as_deref(), a.opts, &mut t, &spinner)?;
        (w, a.opts, a.source.path.join("windows.json"))
    } else {
        let (_, l) = a.source.load(&mut t, &spinner)?;
        let task = task_in(&l, a.task.as_deref())?;
        let opts = WaitForOptions { task, ..a.opts };
        let w = t.phase("wait-for graph", &spinner, || {
            wait_for(&l.graph, &l.model, &opts)
        });
        (w, opts, l.from)
    };
    if let Some(svg) = &a.svg {
        let out = output_path(Some(svg), &from, "waitfor.svg")?;
        let mut dot = Vec::new();
        write_waitfor_dot(&mut dot, &w)?;
        let drawn = t.phase("drawing", &spinner, || {
            render_svg(String::from_utf8_lossy(&dot).into_owned())
        })?;
        out.write(|w| w.write_all(&drawn))?;
    }
    let mut o = text_stdout();
    let written = match a.format {
        WaitFormat::Text => write_waitfor_text(&mut o, &w, &opts),
        WaitFormat::Json => write_waitfor_json(&mut o, &w),
        WaitFormat::Dot => write_waitfor_dot(&mut o, &w),
    };
    let r = broken_pipe_is_fine(written.and_then(|()| o.flush()));
    print_timings(a.source.timings, &t);
    r
}

/// The wait-for graph of a trace inferred in windows: every window weighed and added up, the
/// knots found on the sums, then every window read again for the waiting each knot explains
/// (`WindowsWaitFor`); one window in memory at a time. A task type asked for by name is each
/// window's type of that name.
pub(crate) fn of_windows(
    source: &Source,
    task: Option<&str>,
    opts: WaitForOptions,
    t: &mut Timings,
    sp: &Spinner,
) -> Result<WaitFor> {
    let pipeline = Pipeline::new(source.pipeline.clone())?;
    let dir = &source.path;
    let (mut found, mut missing) = (false, None);
    let mut sum = WindowsWaitFor::new(opts, task.map(str::to_owned));
    pipeline.each_window(dir, sp, t, |g, m, wt| -> Result<()> {
        let kept = match window_keep(g, m, task) {
            Ok(kept) => {
                found = true;
                kept
            }
            Err((none, e)) => {
                missing.get_or_insert(e);
                Some(none)
            }
        };
        wt.phase("wait-for graph", sp, || sum.add(g, kept.as_deref()));
        Ok(())
    })?;
    if let (Some(e), false) = (missing, found) {
        return Err(anyhow::Error::new(e).context(format!(
            "no window of {} has the task type asked for",
            dir.display()
        )));
    }
    let mut knots = sum.knots();
    pipeline.each_window(dir, sp, t, |g, m, wt| -> Result<()> {
        let kept = window_keep(g, m, task).unwrap_or_else(|(none, _)| Some(none));
        wt.phase("knots", sp, || knots.explain(g, kept.as_deref()));
        Ok(())
    })?;
    Ok(knots.finish())
}

/// The leaves of one window whose waits count: all (`None`) without a task; with one, those of
/// the window's type of that name, or none (the error says why) when the window has no such
/// type.
fn window_keep(
    g: &Graph,
    m: &Model,
    task: Option<&str>,
) -> Result<Option<Vec<bool>>, (Vec<bool>, NoSuchTask)> {
    match task.map(|name| task_named(m, name)) {
        None => Ok(None),
        Some(Ok(ty)) => Ok(Some(task_leaves(g, m, ty))),
        Some(Err(e)) => Err((vec![false; g.leaves.len()], e)),
    }
}
