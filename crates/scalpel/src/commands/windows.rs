//! `scalpel infer` of a trace too large for `--memory`: window by window (see
//! [`scalpel::pipeline::WindowedInfer`]), a line per window on stdout as it is written.

use std::io::{self, Write};
use std::path::Path;

use anyhow::Result;
use scalpel::pipeline::{
    trace_bytes, WindowPlan, WindowSummary, WindowedInfer, PEAK_PER_TRACE_BYTE,
};
use scalpel::Pipeline;
use scalpel_model::progress::Timings;

use super::export::DEFAULT_WINDOW_NS;
use super::infer::{Infer, Stage};
use crate::memory::mib;
use crate::output::{broken_pipe_is_fine, print_timings, text_stdout, warn};
use crate::spinner::Spinner;

/// The top-level task types a window's line names.
const NAMED: usize = 3;

/// Infers `job`'s one trace directory in windows made for a memory limit of `limit` bytes.
pub(crate) fn run(job: &Infer, limit: u64) -> Result<()> {
    let dir = &job.dirs[0];
    let mut o = text_stdout();
    let needs = trace_bytes(dir).saturating_mul(PEAK_PER_TRACE_BYTE);
    let pipeline = Pipeline::new(job.pipeline.clone())?;
    let plan = WindowPlan::for_limit(limit);
    let side = if plan.at_once > 1 {
        format!(", {} mined side by side", plan.at_once)
    } else {
        String::new()
    };
    broken_pipe_is_fine(writeln!(
        o,
        "{}: about {} to infer whole, more than the limit of {}: inferring it in windows of \
         about {} events{side}",
        dir.display(),
        mib(needs),
        mib(limit),
        plan.events_per_window,
    ))?;
    let mut t = Timings::new();
    let spinner = Spinner::new();
    let how = WindowedInfer {
        events_per_window: plan.events_per_window,
        at_once: plan.at_once,
        model: job.stage == Stage::Model,
        draw: &job.draw,
        model_draw: &job.model_draw,
    };
    let mut failed: io::Result<()> = Ok(());
    let summary = pipeline.infer_windows(dir, &job.out, &how, &mut t, &spinner, &mut |w, ws| {
        warn(ws, 10, " (see the window's summary file)");
        if failed.is_ok() {
            failed = window_line(&mut o, &job.out, w);
        }
    })?;
    let r = failed.and_then(|()| {
        // Why the windows were mined more than once, which the timings show.
        let again = match summary.kept_apart {
            0 => String::new(),
            n => format!(
                "; {n} rule(s) the sample inlined stand apart over the windows, kept as tasks \
                 ({} passes)",
                summary.passes
            ),
        };
        writeln!(
            o,
            "{} windows, {} events{again}; wrote {}",
            summary.windows.len(),
            summary.events,
            job.out.join("windows.json").display()
        )?;
        o.flush()
    });
    drop(spinner);
    if let Some(tables) = &job.parquet {
        // The windows are read back as models: the options of inferring are spent.
        let mut opts = job.pipeline.clone();
        opts.infer_only.clear();
        let written = Pipeline::new(opts)?;
        super::export::parquet_of_windows(&mut t, &written, &job.out, tables, DEFAULT_WINDOW_NS)?;
    }
    print_timings(job.timings, &t);
    broken_pipe_is_fine(r)
}

/// One window's line: its number, events, leaves and largest top-level task types.
fn window_line(o: &mut impl Write, out: &Path, w: &WindowSummary) -> io::Result<()> {
    let tasks: Vec<String> = w
        .top_level
        .iter()
        .take(NAMED)
        .map(|(name, n)| format!("{name} ×{n}"))
        .collect();
    let more = w.top_level.len().saturating_sub(NAMED);
    let more = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    writeln!(
        o,
        "{}: {} events, {} leaves{}{}{}",
        out.join(&w.dir).display(),
        w.events,
        w.leaves,
        if tasks.is_empty() { "" } else { "; " },
        tasks.join(", "),
        more
    )
}
