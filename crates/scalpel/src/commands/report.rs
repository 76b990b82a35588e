//! `scalpel report`: a one-page HTML report.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Args;
use scalpel::pipeline::is_windowed;
use scalpel_analysis::diff::{diff, Diff, DiffOptions, Run};
use scalpel_analysis::rollup::leaves_held;
use scalpel_analysis::waitfor::{wait_for, WaitForOptions};
use scalpel_model::progress::Timings;
use scalpel_views::graphviz::DrawError;
use scalpel_views::report::{write_report, ReportOptions};

use crate::args::SourceArgs;
use crate::output::{broken_pipe_is_fine, print_timings};
use crate::say;
use crate::source::{output_path, Source};
use crate::spinner::Spinner;

mod windows;

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
    /// An earlier run (a trace directory, a directory `infer` wrote, or a model.json) to
    /// compare with: the report then opens with what changed, as `scalpel diff` finds it.
    #[arg(long, value_name = "OLD")]
    pub baseline: Option<PathBuf>,
}

/// `report` in the library's terms.
#[derive(Debug)]
pub(crate) struct Report {
    pub source: Source,
    pub output: Option<PathBuf>,
    pub tasks: usize,
    /// The earlier run, inferred with the same options.
    pub baseline: Option<Source>,
}

impl ReportArgs {
    pub(crate) fn options(self) -> Report {
        let source = self.source.options();
        let baseline = self.baseline.map(|path| Source {
            path,
            more: Vec::new(),
            pipeline: source.pipeline.clone(),
            timings: source.timings,
            memory: source.memory,
        });
        Report {
            source,
            output: self.output,
            tasks: self.tasks,
            baseline,
        }
    }
}

/// The diff of `now` against the baseline, when one was asked for.
fn baseline_diff(a: &Report, now: Run<'_>, t: &mut Timings) -> Result<Option<(String, Diff)>> {
    let Some(old) = &a.baseline else {
        return Ok(None);
    };
    let before = old
        .rolled(t)
        .with_context(|| format!("the baseline, {}", old.path.display()))?;
    let d = diff(before.run(), now, &DiffOptions::default());
    Ok(Some((old.path.display().to_string(), d)))
}

/// Writes the HTML report and says where.
pub(crate) fn run(a: &Report) -> Result<()> {
    let mut t = Timings::new();
    if a.source.more.is_empty() && is_windowed(&a.source.path) {
        return windows::run(a, &mut t);
    }
    let (l, r) = a.source.load_rollups(&mut t)?;
    let out = output_path(a.output.as_ref(), &l.from, "report.html")?;
    let held = leaves_held(&l.model);
    let now = Run {
        model: &l.model,
        rollup: &r,
        held: &held,
    };
    let opts = ReportOptions {
        tasks: a.tasks,
        title: l.from.display().to_string(),
        baseline: baseline_diff(a, now, &mut t)?,
    };
    let waits = t.phase("wait-for graph", &Spinner::new(), || {
        wait_for(&l.graph, &l.model, &WaitForOptions::default())
    });
    let svg_err = t.phase("writing the report", &Spinner::new(), || {
        out.write(|w| write_report(w, &l.graph, &l.model, &r, &waits, &opts))
    })?;
    finish(a, &t, svg_err, &out.path)
}

/// Says what was written, and what is missing from it.
fn finish(a: &Report, t: &Timings, svg_err: Option<DrawError>, out: &Path) -> Result<()> {
    print_timings(a.source.timings, t);
    if let Some(e) = svg_err {
        say!("scalpel: warning: the report has no drawing: {e}");
    }
    broken_pipe_is_fine(writeln!(io::stdout(), "wrote {}", out.display()))
}
