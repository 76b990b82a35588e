//! `scalpel report` of a trace inferred in windows: the windows' rollups added up (as `top`
//! reads them), their wait-for graphs added up (as `waitfor`), each drilled task's flame graph
//! added up over the windows (as `flame --task`), and the drawing of the window with the most
//! leaves, whose task types every window shares (the windows replay one grammar). One window
//! is in memory at a time.

use std::collections::BTreeMap;

use anyhow::Result;
use scalpel::pipeline::window_bounds;
use scalpel::Pipeline;
use scalpel_analysis::diff::Run;
use scalpel_analysis::rollup::{top_view_of, TopOptions};
use scalpel_analysis::waitfor::WaitForOptions;
use scalpel_model::progress::Timings;
use scalpel_model::task::Model;
use scalpel_views::graphviz::DrawError;
use scalpel_views::report::{draw_model, drilled_tasks, expanding, task_flame, type_counts};
use scalpel_views::report::{write_report_from, ReportOptions, ReportSource, TaskFlame};

use super::{baseline_diff, finish, Report};
use crate::commands::waitfor::of_windows;
use crate::source::output_path;
use crate::spinner::Spinner;

/// Writes the report of the windows of `a`'s directory and says where.
pub(super) fn run(a: &Report, t: &mut Timings) -> Result<()> {
    let sp = Spinner::new();
    let dir = &a.source.path;
    let out = output_path(a.output.as_ref(), &dir.join("windows.json"), "report.html")?;
    let sum = a.source.sum_windows(t)?;
    let view = top_view_of(&sum.counts, &sum.types, &sum.rollup, &TopOptions::default())?;
    let names = drilled_tasks(&view, a.tasks);
    let drills = names
        .iter()
        .filter_map(|name| {
            let v = top_view_of(&sum.counts, &sum.types, &sum.rollup, &expanding(name)).ok()?;
            Some((name.clone(), v.expanded?))
        })
        .collect();
    let catalog = Model::of_types(sum.types, sum.counts.leaves as u64);
    let now = Run {
        model: &catalog,
        rollup: &sum.rollup,
        held: &sum.held,
    };
    let baseline = baseline_diff(a, now, t)?;
    let waits = of_windows(&a.source, None, WaitForOptions::default(), t, &sp)?;
    let pictures = flames_and_drawing(a, &names, t, &sp)?;
    let source = ReportSource {
        view: Some(view),
        types: type_counts(&catalog),
        drills,
        flames: pictures.flames,
        drawing: pictures.drawing,
        drawing_note: Some(pictures.note),
    };
    let opts = ReportOptions {
        tasks: a.tasks,
        title: dir.display().to_string(),
        baseline,
    };
    let svg_err = t.phase("writing the report", &sp, || {
        out.write(|w| write_report_from(w, source, &waits, &opts))
    })?;
    finish(a, t, svg_err, &out.path)
}

/// What the windows give the report's pictures.
struct Pictures {
    /// Each drilled task's flame graph, added up over the windows.
    flames: BTreeMap<String, TaskFlame>,
    /// The drawing of one window's model, or why there is none.
    drawing: Result<Vec<u8>, DrawError>,
    /// Which window that is.
    note: String,
}

/// Each task of `names`' flame graph added up over the windows, and the drawing of the window
/// with the most leaves, with a note saying which it is; one pass over the windows.
fn flames_and_drawing(
    a: &Report,
    names: &[String],
    t: &mut Timings,
    sp: &Spinner,
) -> Result<Pictures> {
    let pipeline = Pipeline::new(a.source.pipeline.clone())?;
    let dir = &a.source.path;
    let bounds = window_bounds(dir)?;
    // The first of the windows with the most leaves.
    let drawn = bounds
        .iter()
        .max_by_key(|b| (b.leaves, std::cmp::Reverse(b.index)))
        .map_or(0, |b| b.index);
    let mut flames = BTreeMap::<String, TaskFlame>::new();
    let mut drawing = None;
    pipeline.each_window_where(
        dir,
        sp,
        t,
        |_| true,
        |b, g, m, wt| -> Result<()> {
            wt.phase("flame graphs", sp, || {
                for name in names {
                    if let Some(f) = task_flame(g, m, name) {
                        flames.entry(name.clone()).or_default().add(f);
                    }
                }
            });
            if b.index == drawn {
                let r = wt.phase("rollups", sp, || pipeline.rollup(g, m));
                drawing = Some(wt.phase("drawing", sp, || draw_model(m, g, &r)));
            }
            Ok(())
        },
    )?;
    let note = format!(
        "The task model of window {drawn} of {} (the one with the most leaves): every window \
         has its task types, which the tables and the flame graphs add up over all of them.",
        bounds.len()
    );
    Ok(Pictures {
        flames,
        drawing: drawing.unwrap_or(Err(DrawError::Empty)),
        note,
    })
}
