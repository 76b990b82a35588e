//! The wait-for graph (`scalpel waitfor`): which thread groups wait on which, with the time
//! passed on down chains of waits, and the knots where waiting ends, in the manner of wPerf
//! (OSDI 2018; see `paper-notes/wperf.md`).
//!
//! Scope: computed from `graph.json` and `model.json` alone. Nodes are groups of threads that
//! play one role (`groups`) and pseudo-threads for what is not a traced thread ([`Pseudo`]).
//! An edge A → B carries the time A waited on something B ended (`waits`: the same waker
//! matching as the causal edges, with lock holders added, since here a mutex wait *is* a wait on
//! its holder), plus the time passed on to B's own waits while A waited (`cascade`). Knots are
//! strongly connected components no edge leaves (`knots`); each is reported with the share of
//! all waiting that ends in it.
//!
//! Non-goals: what cannot be seen from user space (scheduler latency hidden inside measured
//! calls, interrupts, involuntary preemption without `--cpu-time`), false wake-ups (a wait that
//! returns and waits again counts as two waits), and writing (`scalpel_views::waitfor`).

mod cascade;
mod finish;
mod groups;
mod knots;
mod roles;
mod waits;
mod windows;

use scalpel_model::graph::{BoundaryInfo, Graph, ThreadId};
use scalpel_model::task::{Model, TaskTypeId};
use serde::Serialize;

use crate::rollup::BlockKind;

pub use windows::{WindowsKnots, WindowsWaitFor};

/// A node of the wait-for graph: an index into [`WaitFor::nodes`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct WaitNodeId(pub u32);

/// An edge of the wait-for graph: an index into [`WaitFor::edges`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct WaitEdgeId(pub u32);

impl WaitNodeId {
    /// The id as an index into [`WaitFor::nodes`].
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl WaitEdgeId {
    /// The id as an index into [`WaitFor::edges`].
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// What is not a traced thread but is waited on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Pseudo {
    /// File I/O and flushes (`fsync`, `fdatasync`, file reads and writes that took time).
    Disk,
    /// Peers outside the trace: bytes or connections from an untraced process.
    Network,
    /// Runnable but not running: a thread's time off the CPU outside every call (known only
    /// for traces recorded with `--cpu-time`).
    Scheduler,
    /// Sleeps and timers.
    Timer,
    /// A wait whose waker the trace does not show (a timeout, a wake-up from an untraced
    /// thread). Left out of knots.
    Unknown,
}

impl Pseudo {
    /// Every pseudo-thread, in node order (they follow the thread groups).
    pub const ALL: [Pseudo; 5] = [
        Pseudo::Disk,
        Pseudo::Network,
        Pseudo::Scheduler,
        Pseudo::Timer,
        Pseudo::Unknown,
    ];

    /// Its name in outputs.
    pub fn name(self) -> &'static str {
        match self {
            Pseudo::Disk => "[disk]",
            Pseudo::Network => "[network]",
            Pseudo::Scheduler => "[scheduler]",
            Pseudo::Timer => "[timer]",
            Pseudo::Unknown => "[unknown]",
        }
    }

    /// Whether its idle time is a wait on the threads that use it (a device is idle while
    /// nobody gives it work; a timer or the scheduler is not).
    pub fn is_device(self) -> bool {
        matches!(self, Pseudo::Disk | Pseudo::Network)
    }
}

/// A node: a group of threads, or a pseudo-thread.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WaitNode {
    /// `process: thread (role) ×N` for a group, `[disk]` and the like for a pseudo-thread.
    pub name: String,
    /// The pseudo-thread it is, if it is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pseudo: Option<Pseudo>,
    /// The threads of the group (empty for a pseudo-thread).
    pub threads: Vec<ThreadId>,
    /// Time its threads waited, on anything (direct waits only).
    pub waited_ns: u64,
}

/// One call site behind an edge: what the waiting threads were in.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WaitSite {
    /// The kind of wait.
    pub kind: BlockKind,
    /// The call that waited.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call: Option<scalpel_model::graph::OpName>,
    /// Where it was made: its function and stack.
    pub site: BoundaryInfo,
    /// Direct waiting time at this site on this edge.
    pub ns: u64,
    /// How many waits.
    pub count: u64,
}

/// An edge: `from` waited on `to`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WaitEdge {
    /// The waiting node.
    pub from: WaitNodeId,
    /// The node it waited on.
    pub to: WaitNodeId,
    /// Time `from`'s threads waited on `to` themselves.
    pub direct_ns: u64,
    /// Time passed on: `from` waited on `to` while something waited on `from` (cascaded
    /// redistribution; see `cascade`).
    pub cascaded_ns: u64,
    /// For a device: the time it was idle, charged to the threads that use it in proportion to
    /// their use (`from` is the device).
    pub idle_ns: u64,
    /// Direct waiting time by kind, largest first.
    pub kinds: Vec<(BlockKind, u64)>,
    /// The call sites of the direct waits, heaviest first (at most [`SITES`]).
    pub sites: Vec<WaitSite>,
}

impl WaitEdge {
    /// Its weight: direct, passed on and idle time together.
    pub fn weight(&self) -> u64 {
        self.direct_ns + self.cascaded_ns + self.idle_ns
    }
}

/// Call sites kept per edge.
pub const SITES: usize = 3;

/// A knot: nodes that wait only on each other (or, for one node, on nothing), where chains of
/// waits end.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Knot {
    /// Its nodes.
    pub members: Vec<WaitNodeId>,
    /// Direct waiting time, of every thread, that ends in the knot: the moments at which a
    /// waiting thread's chain of waits reached one of its members.
    pub explained_ns: u64,
    /// `explained_ns` over all direct waiting.
    pub share: f64,
    /// Edges between its members, heaviest first.
    pub inside: Vec<WaitEdgeId>,
    /// Edges into it from other nodes, heaviest first.
    pub into: Vec<WaitEdgeId>,
}

/// The wait-for graph of a run, or of one task type's leaves.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WaitFor {
    /// Thread groups, then the pseudo-threads that have edges.
    pub nodes: Vec<WaitNode>,
    /// Edges, heaviest first.
    pub edges: Vec<WaitEdge>,
    /// Knots, by the waiting they explain, largest first.
    pub knots: Vec<Knot>,
    /// Edges left out of the knot search: to `[unknown]`, lighter than `min_share` of all
    /// waiting, or trimmed from a knot (`trimmed`).
    pub left_out: Vec<WaitEdgeId>,
    /// Edges removed from knots as the lightest in them (see [`WaitForOptions::trim`]).
    pub trimmed: Vec<WaitEdgeId>,
    /// All direct waiting time (the denominator of the knots' shares).
    pub total_wait_ns: u64,
    /// From the first leaf's start to the last wait's end.
    pub span_ns: u64,
    /// Cascade steps taken, and whether the budget stopped it early.
    pub cascade_steps: u64,
    /// Whether [`WaitForOptions::max_steps`] cut the cascade short (the weights passed on are
    /// then lower bounds).
    pub cascade_cut: bool,
    /// The task type the graph was restricted to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
}

/// What the wait-for graph holds and how knots are found.
#[derive(Clone, Copy, Debug)]
pub struct WaitForOptions {
    /// Only the waits of this task type's leaves (the waiting side; what they waited behind is
    /// followed everywhere). Default: every leaf.
    pub task: Option<TaskTypeId>,
    /// Edges lighter than this share of all direct waiting are left out of the knot search, as
    /// wPerf drops edges under 1% of the time; a device's idle edges stay (a saturated device
    /// is a knot with the threads that keep it busy). Default 0.01.
    pub min_share: f64,
    /// A knot of several nodes loses its lightest edge out of a thread group while that edge
    /// weighs less than this share of the knot's inner weight, and the knots are found again:
    /// the light edges that tie a bottleneck to the threads that feed it go. A device's idle
    /// edge is never trimmed (it is light exactly when the device is the bottleneck).
    /// Default 0.10.
    pub trim: f64,
    /// Threads that play one role are one node (see `groups`); off, every thread is a node.
    /// Default on.
    pub groups: bool,
    /// Waits followed from one direct wait, at most. Default 16.
    pub max_depth: usize,
    /// Cascade steps over the whole graph, at most (a bound on time for any input). Default
    /// 50,000,000.
    pub max_steps: u64,
}

impl Default for WaitForOptions {
    fn default() -> Self {
        WaitForOptions {
            task: None,
            min_share: 0.01,
            trim: 0.10,
            groups: true,
            max_depth: 16,
            max_steps: 50_000_000,
        }
    }
}

/// Builds the wait-for graph of `g` (with `model` for the task restriction and its name).
pub fn wait_for(g: &Graph, model: &Model, opts: &WaitForOptions) -> WaitFor {
    let keep = opts.task.map(|t| crate::rollup::task_leaves(g, model, t));
    let name = opts
        .task
        .and_then(|t| model.types.get(t.index()))
        .map(|t| t.name.clone());
    build(g, keep.as_deref(), opts, name)
}

/// [`wait_for`] with the direct waits of the leaves `keep` marks (all when `None`).
fn build(g: &Graph, keep: Option<&[bool]>, opts: &WaitForOptions, task: Option<String>) -> WaitFor {
    let grouping = groups::group_threads(g, opts.groups);
    let timelines = waits::timelines(g, keep);
    let built = cascade::weigh(g, &grouping, &timelines, opts);
    let groups = grouping.groups.len();
    let weights: Vec<(u32, u32, u64)> = built
        .edges
        .iter()
        .map(|&((f, t), ref a)| (f, t, a.weight()))
        .collect();
    let found = knots::find(
        &weights,
        built.nodes.len(),
        groups,
        built.total_wait_ns,
        opts,
    );
    let explained = cascade::explain(&grouping, &timelines, &found, opts);
    built.finish(found, explained, task)
}

#[cfg(test)]
mod tests;
