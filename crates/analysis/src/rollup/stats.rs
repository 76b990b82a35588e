//! Rollups per task type, as data: latency percentiles, throughput, bytes and bandwidth, where
//! the time on the critical path went (by kind and by leaf), and each child's share of the
//! parent. [`super::fold`] computes them.

use scalpel_model::graph::LeafTypeId;
use scalpel_model::task::TaskTypeId;
use serde::Serialize;

use super::kinds::{BlockKind, KindTimes};

/// Latency percentiles (nearest rank) of a type's instances.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Latency {
    /// Mean.
    pub mean_ns: u64,
    /// Median.
    pub p50_ns: u64,
    /// 90th percentile.
    pub p90_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// Longest.
    pub max_ns: u64,
}

impl Latency {
    /// The percentiles of `v` (sorted here).
    pub fn of(v: &mut [u64]) -> Latency {
        if v.is_empty() {
            return Latency::default();
        }
        v.sort_unstable();
        let rank = |p: u64| v[((v.len() as u64 * p).div_ceil(100) as usize).clamp(1, v.len()) - 1];
        Latency {
            mean_ns: (v.iter().map(|&x| u128::from(x)).sum::<u128>() / v.len() as u128) as u64,
            p50_ns: rank(50),
            p90_ns: rank(90),
            p99_ns: rank(99),
            max_ns: v[v.len() - 1],
        }
    }
}

/// Time on critical paths spent in one leaf type, of one kind (`None`: running).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Contributor {
    /// The leaf type (also the model's task type of the same number).
    pub leaf_type: LeafTypeId,
    /// What the time was: a blocking kind, or `None` for running.
    pub kind: Option<BlockKind>,
    /// Set when the time was spent in earlier leaves of `leaf_type` on a thread while a path
    /// leaf of this type sat queued for that thread (see [`super::Behind`]); `None` when the
    /// path leaf spent it itself.
    pub while_queued: Option<LeafTypeId>,
    /// Total over the type's instances.
    pub ns: u64,
}

/// A child type's part in its parent.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ChildStats {
    /// The child type.
    pub ty: TaskTypeId,
    /// Its occurrences inside the parent's.
    pub count: u64,
    /// Its instances' latencies added up, over the parent's (above 1 when children overlap).
    pub latency_share: f64,
    /// Its part of the parent's critical paths.
    pub critical_share: f64,
}

/// Everything rolled up for one task type.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TypeStats {
    /// The model type.
    pub ty: TaskTypeId,
    /// Instances.
    pub count: u64,
    /// Instance latencies.
    pub latency: Latency,
    /// Latencies added up.
    pub total_ns: u64,
    /// Critical path lengths added up.
    pub critical_ns: u64,
    /// From the first instance's start to the last one's end.
    pub span_ns: u64,
    /// Instances per second of the trace's span ([`Rollup::span_ns`](super::Rollup)).
    pub per_second: f64,
    /// Bytes read by its leaves.
    pub bytes_in: u64,
    /// Bytes written.
    pub bytes_out: u64,
    /// Bytes in and out per second of the trace's span.
    pub bandwidth: f64,
    /// CPU time its instances used, added up (traces recorded with CPU times).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_ns: Option<u64>,
    /// Running time on the critical paths.
    pub running_ns: u64,
    /// Blocked time on the critical paths, by kind.
    #[serde(serialize_with = "super::ser_kinds")]
    pub blocked: KindTimes,
    /// Where critical-path time went, largest first.
    pub contributors: Vec<Contributor>,
    /// Its child types, in the model's order.
    pub children: Vec<ChildStats>,
    /// Every instance's latency, in the order the instances started: the sample two runs'
    /// latencies are compared on (`diff`, which needs the order: neighbours in time are alike).
    /// Not serialized: the percentiles above are its summary. In the rollups of a trace's
    /// windows added up ([`super::WindowsRollup`]), a regular sample of them once there are
    /// more than [`super::EXACT_VALUES`] (`thinned`).
    #[serde(skip)]
    pub by_start_ns: Vec<u64>,
}

/// How many contributors each type keeps.
pub const CONTRIBUTORS: usize = 12;

/// Sorts `contributors` largest first (ties by leaf type, kind and queue) and keeps the
/// [`CONTRIBUTORS`] largest.
pub(super) fn keep_largest(contributors: &mut Vec<Contributor>) {
    contributors.sort_by(|a, b| {
        b.ns.cmp(&a.ns)
            .then(a.leaf_type.cmp(&b.leaf_type))
            .then(a.kind.cmp(&b.kind))
            .then(a.while_queued.cmp(&b.while_queued))
    });
    contributors.truncate(CONTRIBUTORS);
}

/// `x` per second of a span of `span_ns`, or 0 for an empty span. Rates are over the trace's
/// span, not a type's own: fifteen thread exits in the last milliseconds of a three-second
/// trace are five per second, not thousands.
pub(super) fn per_second(x: f64, span_ns: u64) -> f64 {
    if span_ns == 0 {
        0.0
    } else {
        x * 1e9 / span_ns as f64
    }
}

/// `*sum += ns`, saturating: sums over instances must not overflow, and a file whose clock base
/// was damaged keeps its events (with a warning) at times a century off, a few of which pass u64.
pub(super) fn add(sum: &mut u64, ns: u64) {
    *sum = sum.saturating_add(ns);
}

/// `ns * num / den` rounded down, for `num <= den` (a share of `ns`), or 0 when `den` is.
/// Why the 64-bit path: a 128-bit division is a library call several times slower than the
/// machine's, and an instance's every step takes one; where the product fits in 64 bits both
/// give the same quotient.
pub(super) fn scale(ns: u64, num: u64, den: u64) -> u64 {
    if den == 0 {
        return 0;
    }
    match ns.checked_mul(num) {
        Some(p) => p / den,
        None => (u128::from(ns) * u128::from(num) / u128::from(den)) as u64,
    }
}

/// `a / b`, or 0 when `b` is.
pub(super) fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}
