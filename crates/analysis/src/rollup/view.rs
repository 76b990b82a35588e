//! The top-down view: top-level tasks by total time, and one task expanded into its children,
//! the leaves and waits that make up its critical path, and the calls and stacks behind them.

use scalpel_model::graph::{Graph, HostInfo};
use scalpel_model::task::{Model, TaskKind, TaskType};
use serde::Serialize;

use super::counts::TraceCounts;
use super::kinds::{nonzero, BlockKind};
use super::stats::{ratio as share, Latency, TypeStats};
use super::{Blame, Rollup};

/// What `scalpel top` shows. `Default`: the top-level list, 20 rows, 3 calls per contributor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopOptions {
    /// A task type to descend into, by name.
    pub expand: Option<String>,
    /// Rows in each list (default 20).
    pub limit: usize,
    /// Blocking calls shown per contributing leaf (default 3).
    pub calls: usize,
}

impl Default for TopOptions {
    fn default() -> Self {
        TopOptions {
            expand: None,
            limit: 20,
            calls: 3,
        }
    }
}

/// A bad view request.
#[derive(Debug, thiserror::Error)]
pub enum TopError {
    /// `--expand` named no task.
    #[error(transparent)]
    UnknownTask(#[from] scalpel_model::lookup::NoSuchTask),
}

/// One task type's figures.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TaskRow {
    /// Its name.
    pub name: String,
    /// Leaf, group or loop.
    pub kind: TaskKind,
    /// Its level.
    pub level: u32,
    /// Instances.
    pub count: u64,
    /// Instances at the top level.
    pub top_level: u64,
    /// Latency percentiles.
    pub latency: Latency,
    /// Latencies added up.
    pub total_ns: u64,
    /// Instances per second while it ran.
    pub per_second: f64,
    /// Bytes read and written.
    pub bytes_in: u64,
    /// Bytes written.
    pub bytes_out: u64,
    /// Bytes per second while it ran.
    pub bandwidth: f64,
    /// Mean CPU time per instance (traces recorded with CPU times).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_mean_ns: Option<u64>,
    /// Share of critical-path time spent running.
    pub running_share: f64,
    /// Shares of critical-path time blocked, by kind, largest first.
    pub blocked_shares: Vec<(BlockKind, f64)>,
}

/// A child of the expanded task.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ChildRow {
    /// The child's figures (over all its instances, inside this task or not).
    pub task: TaskRow,
    /// Occurrences per instance of the parent.
    pub per_parent: f64,
    /// Its latency over the parent's.
    pub latency_share: f64,
    /// Its part of the parent's critical path.
    pub critical_share: f64,
}

/// A leaf and a kind of time on the expanded task's critical path.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ContributorRow {
    /// The leaf type's name.
    pub leaf: String,
    /// `running` or a blocking kind.
    pub what: String,
    /// Set when this leaf's thread spent the time while a path leaf of the named type sat
    /// queued for it: the queue wait charged to the work in its way. `None`: the path leaf's
    /// own time.
    pub while_queued: Option<String>,
    /// Mean per instance of the task.
    pub per_instance_ns: u64,
    /// Part of the critical path.
    pub share: f64,
    /// For a blocking kind: the calls that spent it, largest first.
    pub calls: Vec<CallRow>,
}

/// A blocking call behind a contributor.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CallRow {
    /// The call.
    pub call: String,
    /// The function that made it.
    pub function: Option<String>,
    /// The object.
    pub object: String,
    /// Who held the lock or woke the wait.
    pub peer: Option<String>,
    /// Calls.
    pub count: u64,
    /// Time in them (all of the leaf type's calls, on the path or not).
    pub total_ns: u64,
    /// The longest.
    pub max_ns: u64,
    /// Its call stack, innermost first.
    pub stack: Vec<String>,
}

/// A task descended into.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Expanded {
    /// Its figures.
    pub task: TaskRow,
    /// Critical-path time per instance.
    pub critical_ns: u64,
    /// Its children.
    pub children: Vec<ChildRow>,
    /// Where its critical-path time went, largest first.
    pub contributors: Vec<ContributorRow>,
}

/// Bytes moved on one kind of channel over the whole trace.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ChannelRow {
    /// `tcp`, `pipe`, `file` …
    pub kind: String,
    /// Bytes read.
    pub bytes_in: u64,
    /// Bytes written.
    pub bytes_out: u64,
    /// Bytes written per second of the trace: the achieved bandwidth.
    pub bandwidth: f64,
}

/// The whole view.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TopView {
    /// Processes with leaves.
    pub processes: usize,
    /// Threads with leaves.
    pub threads: usize,
    /// Processes in the graph, with leaves or not (those that made no call ending a leaf, or
    /// whose leaves a filter left out): the count `infer` gives.
    pub processes_recorded: usize,
    /// Threads in the graph, the same way.
    pub threads_recorded: usize,
    /// Leaf instances.
    pub leaves: usize,
    /// The trace's span.
    pub span_ns: u64,
    /// Bytes moved per channel kind over the whole trace, and bytes out per second of it.
    pub channels: Vec<ChannelRow>,
    /// Top-level task types, by total time.
    pub tasks: Vec<TaskRow>,
    /// The task asked for.
    pub expanded: Option<Expanded>,
    /// The machines, when the traces were of several (their clocks on the first's).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<HostInfo>,
    /// The time windows added up, when the trace was inferred in windows (0: inferred whole).
    #[serde(skip_serializing_if = "is_zero")]
    pub windows: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

fn row(types: &[TaskType], s: &TypeStats) -> TaskRow {
    let ty = &types[s.ty.index()];
    let crit = s.critical_ns;
    TaskRow {
        name: ty.name.clone(),
        kind: ty.kind,
        level: ty.level,
        count: s.count,
        top_level: ty.top_level,
        latency: s.latency.clone(),
        total_ns: s.total_ns,
        per_second: s.per_second,
        bytes_in: s.bytes_in,
        bytes_out: s.bytes_out,
        bandwidth: s.bandwidth,
        cpu_mean_ns: s.cpu_ns.map(|c| c / s.count.max(1)),
        running_share: share(s.running_ns, crit),
        blocked_shares: nonzero(&s.blocked)
            .into_iter()
            .map(|(k, ns)| (k, share(ns, crit)))
            .collect(),
    }
}

/// Builds the view of `model` (mined from `graph`) with its rollup `r`.
pub fn top_view(
    graph: &Graph,
    model: &Model,
    r: &Rollup,
    opts: &TopOptions,
) -> Result<TopView, TopError> {
    top_view_of(&TraceCounts::of(graph), &model.types, r, opts)
}

/// Builds the view of the task types `types` with their rollup `r` (indexed as `types`), and
/// the trace's `counts`: [`top_view`] of a model, or of the windows of a trace added up.
pub fn top_view_of(
    counts: &TraceCounts,
    types: &[TaskType],
    r: &Rollup,
    opts: &TopOptions,
) -> Result<TopView, TopError> {
    let mut top: Vec<&TypeStats> = r.top_level.iter().collect();
    top.sort_by(|a, b| b.total_ns.cmp(&a.total_ns).then(a.ty.cmp(&b.ty)));
    let expanded = match &opts.expand {
        None => None,
        Some(name) => {
            let t = scalpel_model::lookup::type_named(types, name)?;
            Some(expand(types, r, &r.types[t.index()], opts))
        }
    };
    Ok(TopView {
        processes: counts.processes,
        threads: counts.threads,
        processes_recorded: counts.processes_recorded,
        threads_recorded: counts.threads_recorded,
        hosts: counts.hosts.clone(),
        leaves: counts.leaves,
        span_ns: r.span_ns,
        channels: r
            .channels
            .iter()
            .map(|c| ChannelRow {
                kind: c.kind.clone(),
                bytes_in: c.bytes_in,
                bytes_out: c.bytes_out,
                bandwidth: if r.span_ns == 0 {
                    0.0
                } else {
                    c.bytes_out as f64 * 1e9 / r.span_ns as f64
                },
            })
            .collect(),
        tasks: top
            .into_iter()
            .take(opts.limit)
            .map(|s| row(types, s))
            .collect(),
        expanded,
        windows: counts.windows,
    })
}

fn expand(types: &[TaskType], r: &Rollup, s: &TypeStats, o: &TopOptions) -> Expanded {
    let n = s.count.max(1);
    let children = s
        .children
        .iter()
        .map(|c| ChildRow {
            task: row(types, &r.types[c.ty.index()]),
            per_parent: c.count as f64 / n as f64,
            latency_share: c.latency_share,
            critical_share: c.critical_share,
        })
        .collect();
    let contributors = s
        .contributors
        .iter()
        .take(o.limit)
        .map(|c| {
            let calls = match c.kind {
                Some(k) => r
                    .blame
                    .iter()
                    .filter(|b| b.leaf_type == c.leaf_type && b.kind == k)
                    .take(o.calls)
                    .map(|b| call_row(types, b))
                    .collect(),
                None => Vec::new(),
            };
            ContributorRow {
                leaf: types[c.leaf_type.index()].name.clone(),
                what: c.kind.map_or("running", |k| k.name()).to_string(),
                while_queued: c.while_queued.map(|t| types[t.index()].name.clone()),
                per_instance_ns: c.ns / n,
                share: share(c.ns, s.critical_ns),
                calls,
            }
        })
        .collect();
    Expanded {
        task: row(types, s),
        critical_ns: s.critical_ns / n,
        children,
        contributors,
    }
}

fn call_row(types: &[TaskType], b: &Blame) -> CallRow {
    CallRow {
        call: b.call.clone(),
        function: b.function.clone(),
        object: b.object.clone(),
        peer: b.peer.map(|p| types[p.index()].name.clone()),
        count: b.count,
        total_ns: b.total_ns,
        max_ns: b.max_ns,
        stack: b.stack.clone(),
    }
}
