//! Rollups: where the time and the bytes went, per leaf instance, per task instance and per
//! task type, and the top-down view built on them (`scalpel top`, `scalpel report`).
//!
//! Scope: numbers computed from `graph.json` and `model.json` alone: latency percentiles,
//! critical paths, blocked time by kind with the call, stack and peer that explain it, bytes and
//! bandwidth, and the rows of the top-down view ([`TopView`]). Non-goals: writing them (the
//! table, CSV and report are in `scalpel-views`), wait-for-graph bottleneck analysis (planned on
//! the same traces), and anything that needs the raw trace again. The rollups of a trace
//! inferred in windows are added up window by window ([`WindowsRollup`]). Folded stacks are here
//! (off-CPU [`off_cpu`], on-CPU samples [`on_cpu`], both at once [`wall`]); their drawing is a
//! view.

mod batch;
mod behind;
mod blame;
mod children;
mod counts;
mod dist;
mod each;
mod flame;
mod fold;
mod held;
mod instance;
mod kinds;
mod leaf;
mod merge;
mod part;
mod samples;
mod spans;
mod stats;
mod thinned;
mod view;

use scalpel_model::graph::Graph;
use scalpel_model::task::Model;
use serde::ser::SerializeMap;

pub use behind::{Behind, MAX_BEHIND};
pub use blame::{Blame, STACK_FRAMES};
pub use dist::EXACT_VALUES;
pub use each::{each_instance, InstanceOf};
pub use flame::{kind_tag, off_cpu, task_leaves, FlameOptions, Folded};
pub use held::{leaves_held, LeavesHeld};
pub use instance::{Instance, PathStep};
pub use kinds::{BlockKind, KindTimes};
pub use leaf::{leaf_metrics, ChannelBytes, GraphIndex, LeafMetrics, LockHolders};
pub use merge::{WindowsRollup, WindowsSum};
pub use samples::{on_cpu, sample_period_ns, wall, AGENT_FRAME, OFF_CPU_SUFFIX, ON_CPU_SUFFIX};
pub use spans::{task_spans, TaskSpan};
pub use stats::{ChildStats, Contributor, Latency, TypeStats, CONTRIBUTORS};

pub use counts::TraceCounts;
use leaf::add_bytes;
use part::type_stats;
pub use view::{top_view, top_view_of, Expanded, TaskRow, TopError, TopOptions, TopView};

/// The rollups of one model.
#[derive(Clone, Debug, PartialEq)]
pub struct Rollup {
    /// Per model type, in the model's order.
    pub types: Vec<TypeStats>,
    /// Per type that has top-level instances, in the model's order: those instances alone.
    pub top_level: Vec<TypeStats>,
    /// Blocked time per leaf type by call, object and peer.
    pub blame: Vec<Blame>,
    /// From the first leaf's start to the last leaf's end.
    pub span_ns: u64,
    /// Bytes moved by all leaves, per channel kind.
    pub channels: Vec<ChannelBytes>,
}

/// Rolls up `model`, mined from `graph`.
pub fn rollup(graph: &Graph, model: &Model) -> Rollup {
    let idx = GraphIndex::new(graph);
    let span_ns = bounds(graph).map_or(0, |(first, last)| last.saturating_sub(first));
    // The leaves' bytes and blame read the graph alone, beside the types' folds.
    let ((types, top_level), (channels, blame)) = rayon::join(
        || type_stats(graph, model, &idx, span_ns),
        || (channels(graph, &idx), blame::blame(graph, &idx)),
    );
    Rollup {
        types,
        top_level,
        blame,
        span_ns,
        channels,
    }
}

/// From the first leaf's start to the last leaf's end (with its wait), or `None` for no leaf.
fn bounds(graph: &Graph) -> Option<(u64, u64)> {
    let first = graph.leaves.iter().map(|l| l.start_ns).min()?;
    let last = graph.leaves.iter().map(|l| l.end_ns + l.block_ns).max()?;
    Some((first, last))
}

/// Bytes moved by all leaves of `graph`, per channel kind, by kind.
fn channels(graph: &Graph, idx: &GraphIndex) -> Vec<ChannelBytes> {
    let mut channels: Vec<ChannelBytes> = Vec::new();
    for i in 0..graph.leaves.len() as u32 {
        for c in leaf_metrics(graph, idx, i).channels {
            add_bytes(&mut channels, &c.kind, c.bytes_in, c.bytes_out);
        }
    }
    channels.sort_by(|a, b| a.kind.cmp(&b.kind));
    channels
}

/// Serializes per-kind times as a map of the kinds that have time.
fn ser_kinds<S: serde::Serializer>(t: &KindTimes, s: S) -> Result<S::Ok, S::Error> {
    let mut m = s.serialize_map(None)?;
    for k in BlockKind::ALL {
        if t[k.index()] > 0 {
            m.serialize_entry(k.name(), &t[k.index()])?;
        }
    }
    m.end()
}

#[cfg(test)]
mod tests;
