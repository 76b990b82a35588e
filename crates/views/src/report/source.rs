//! What a report is made of, whatever it is read from: the top-level view and each drilled
//! task's expansion and flame graph, the drawing of the task model, and the type counts. One
//! model gives them ([`ReportSource::of_model`]); a trace inferred in windows gives them from
//! its windows added up (the CLI reads the windows and fills this in).

use std::collections::BTreeMap;

use scalpel_analysis::rollup::{off_cpu, sample_period_ns, top_view, wall, Expanded, Folded};
use scalpel_analysis::rollup::{FlameOptions, Rollup, TaskRow, TopOptions, TopView};
use scalpel_model::graph::Graph;
use scalpel_model::task::{Model, TaskKind, TaskTypeId};

use crate::graphviz::DrawError;
use crate::model::{model_svg, ModelDraw};

/// A drilled task's flame graph: wall-clock stacks in samples of `period_ns` when the trace
/// has on-CPU samples, else off-CPU stacks with wakers, in ns.
#[derive(Clone, Debug, Default)]
pub struct TaskFlame {
    /// The folded stacks.
    pub folded: Folded,
    /// The sampling period, when the stacks are wall-clock samples.
    pub period_ns: Option<u64>,
}

impl TaskFlame {
    /// Adds `other`'s stacks (a window's, say) to these.
    pub fn add(&mut self, other: TaskFlame) {
        for (stack, n) in other.folded.stacks {
            *self.folded.stacks.entry(stack).or_default() += n;
        }
        self.period_ns = self.period_ns.or(other.period_ns);
    }
}

/// The flame graph of the task type named `name` in `model` (mined from `graph`), if it has
/// one.
pub fn task_flame(graph: &Graph, model: &Model, name: &str) -> Option<TaskFlame> {
    let t = model.types.iter().position(|t| t.name == name)?;
    let opts = FlameOptions {
        waker: true,
        task: Some(TaskTypeId::at(t)),
        per_process: false,
    };
    Some(match sample_period_ns(graph) {
        Some(period_ns) => TaskFlame {
            folded: wall(graph, model, &opts),
            period_ns: Some(period_ns),
        },
        None => TaskFlame {
            folded: off_cpu(graph, model, &opts),
            period_ns: None,
        },
    })
}

/// The names of the top-level tasks `view` drills into, at most `n`: those that recur, or
/// those seen once when none recurs.
pub fn drilled_tasks(view: &TopView, n: usize) -> Vec<String> {
    let (recurring, once): (Vec<&TaskRow>, Vec<&TaskRow>) =
        view.tasks.iter().partition(|t| t.count > 1);
    let drilled = if recurring.is_empty() {
        once
    } else {
        recurring
    };
    drilled.iter().take(n).map(|t| t.name.clone()).collect()
}

/// The options that expand the task `name` in a top view.
pub fn expanding(name: &str) -> TopOptions {
    TopOptions {
        expand: Some(name.to_owned()),
        limit: 10,
        ..TopOptions::default()
    }
}

/// How many leaf types and task types (groups and loops) `model` has, as `infer` counts them.
pub fn type_counts(model: &Model) -> (u64, u64) {
    let tasks = model
        .types
        .iter()
        .filter(|t| t.kind != TaskKind::Leaf)
        .count() as u64;
    (model.types.len() as u64 - tasks, tasks)
}

/// The drawing of `model` (mined from `graph`, `r` its rollup): steps seen once (start-up,
/// shutdown) left out, as from the table, since they took half of the demo's picture; a model
/// of nothing but those drawn whole.
pub fn draw_model(model: &Model, graph: &Graph, r: &Rollup) -> Result<Vec<u8>, DrawError> {
    let draw = ModelDraw {
        mean_latency: r.types.iter().map(|s| s.latency.mean_ns).collect(),
        min_count: 2,
        ..ModelDraw::default()
    };
    match model_svg(model, graph, &draw) {
        Err(DrawError::Empty) => model_svg(
            model,
            graph,
            &ModelDraw {
                min_count: 1,
                ..draw
            },
        ),
        other => other,
    }
}

/// Everything a report shows but the wait-for graph and the baseline.
pub struct ReportSource {
    /// The top-level view (none when it could not be built).
    pub view: Option<TopView>,
    /// Leaf types and task types.
    pub types: (u64, u64),
    /// Each drilled task's expanded view, in the order of [`drilled_tasks`].
    pub drills: Vec<(String, Expanded)>,
    /// Each drilled task's flame graph, by name.
    pub flames: BTreeMap<String, TaskFlame>,
    /// The drawing of the task model, or why there is none.
    pub drawing: Result<Vec<u8>, DrawError>,
    /// What the drawing is of, when it is not the whole run (a window's model, say).
    pub drawing_note: Option<String>,
}

impl ReportSource {
    /// The report's parts of one model, drilling into `tasks` top-level tasks.
    pub fn of_model(graph: &Graph, model: &Model, r: &Rollup, tasks: usize) -> ReportSource {
        let view = top_view(graph, model, r, &TopOptions::default()).ok();
        let names = view
            .as_ref()
            .map_or_else(Vec::new, |v| drilled_tasks(v, tasks));
        let drills = names
            .iter()
            .filter_map(|name| {
                let e = top_view(graph, model, r, &expanding(name)).ok()?.expanded?;
                Some((name.clone(), e))
            })
            .collect();
        let flames = names
            .iter()
            .filter_map(|name| Some((name.clone(), task_flame(graph, model, name)?)))
            .collect();
        ReportSource {
            view,
            types: type_counts(model),
            drills,
            flames,
            drawing: draw_model(model, graph, r),
            drawing_note: None,
        }
    }
}
