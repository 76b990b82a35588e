//! Metrics of one leaf instance: wall, running and blocked time by kind, bytes per channel kind.
//!
//! The graph keeps each leaf's span (`start_ns..end_ns`), the time inside the call that ended it
//! (`block_ns`) and the time inside calls within it that did not cut it (`lock_ns`, `sleep_ns`,
//! `other_ns`). From those: wall = span + block, running = span − the inner calls, and blocked
//! time by kind, where the ending call counts by what it waited on, or as
//! [`BlockKind::Idle`] when the thread went back for new work after it. A trace recorded with
//! CPU times also gives each leaf's CPU time; running time beyond it is [`BlockKind::OffCpu`].

use std::borrow::Cow;

use scalpel_model::format::{ChanKind, ObjKind};
use scalpel_model::graph::{EdgeKind, Graph, LeafId, ObjId, ObjectInfo};
use serde::Serialize;

use super::kinds::{BlockKind, KindTimes};

/// Per-graph facts the metrics need, computed once.
pub struct GraphIndex {
    /// Per leaf: whether the program edge out of it is weak (the thread went back for work).
    pub weak_out: Vec<bool>,
    /// Per leaf: the start of its in-edges from other leaves in `in_from`.
    in_start: Vec<u32>,
    /// Sources of in-edges (leaves only).
    in_from: Vec<u32>,
    /// Their kinds (apart, so that a source takes 5 bytes, not 8 with padding: the index is
    /// the rollups' largest array).
    in_kind: Vec<EdgeKind>,
}

impl GraphIndex {
    /// Indexes `g`'s edges.
    pub fn new(g: &Graph) -> Self {
        let n = g.leaves.len();
        let mut weak_out = vec![false; n];
        let mut counts = vec![0u32; n + 1];
        // Counted into: its pages mapped writable first (`populate`'s docs).
        scalpel_model::memory::populate(&mut counts);
        for e in &g.edges {
            if e.kind == EdgeKind::ProgramWeak && g.is_leaf(e.from) {
                weak_out[e.from.index()] = true;
            }
            if g.is_leaf(e.from) && g.is_leaf(e.to) {
                counts[e.to.index() + 1] += 1;
            }
        }
        for i in 0..n {
            counts[i + 1] += counts[i];
        }
        let mut fill = counts.clone();
        let mut in_from = vec![0; counts[n] as usize];
        let mut in_kind = vec![EdgeKind::Program; counts[n] as usize];
        for e in &g.edges {
            if g.is_leaf(e.from) && g.is_leaf(e.to) {
                let at = &mut fill[e.to.index()];
                in_from[*at as usize] = e.from.get();
                in_kind[*at as usize] = e.kind;
                *at += 1;
            }
        }
        GraphIndex {
            weak_out,
            in_start: counts,
            in_from,
            in_kind,
        }
    }

    /// The leaves with an edge into `leaf`, and the edge kinds.
    pub fn preds(&self, leaf: u32) -> impl Iterator<Item = (u32, EdgeKind)> + '_ {
        let i = leaf as usize;
        let r = self.in_start[i] as usize..self.in_start[i + 1] as usize;
        self.in_from[r.clone()]
            .iter()
            .copied()
            .zip(self.in_kind[r].iter().copied())
    }

    /// The leaf that woke `leaf`'s thread out of the call that ended `leaf`: the source of the
    /// first cross-thread edge into the thread's next leaf.
    pub fn waker(&self, g: &Graph, leaf: u32) -> Option<u32> {
        let next = leaf + 1;
        let same = g
            .leaves
            .get(next as usize)
            .is_some_and(|n| n.thread == g.leaves[leaf as usize].thread);
        if !same {
            return None;
        }
        self.preds(next)
            .find(|(_, k)| !k.in_thread())
            .map(|(f, _)| f)
    }
}

/// The holder of each contended lock acquisition, by the waiter's leaf, the lock and the time
/// it waited (which is how an inner wait names the same acquisition).
pub struct LockHolders(ahash::AHashMap<(LeafId, ObjId, u64), LeafId>);

impl LockHolders {
    /// Indexes `g`'s lock waits whose holder is known.
    pub fn new(g: &Graph) -> Self {
        LockHolders(
            g.lock_waits
                .iter()
                .filter_map(|w| Some(((w.waiter, w.obj, w.wait_ns), w.holder?)))
                .collect(),
        )
    }

    /// The leaf whose release let `leaf` in after waiting `ns` for lock `obj`.
    pub fn of(&self, leaf: LeafId, obj: Option<ObjId>, ns: u64) -> Option<LeafId> {
        self.0.get(&(leaf, obj?, ns)).copied()
    }
}

/// Bytes moved on one kind of channel.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ChannelBytes {
    /// `tcp`, `udp`, `unix`, `pipe`, `eventfd`, `file`, or `other`.
    pub kind: String,
    /// Bytes read.
    pub bytes_in: u64,
    /// Bytes written.
    pub bytes_out: u64,
}

/// What one leaf instance spent its time on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LeafMetrics {
    /// From its start to the next leaf's start: its span plus the ending call.
    pub wall_ns: u64,
    /// Its span minus the calls inside it (and, with CPU times, minus the time off the CPU).
    pub running_ns: u64,
    /// The CPU time it used, its ending call included (traces recorded with CPU times).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_ns: Option<u64>,
    /// Blocked time by kind (see [`BlockKind::ALL`] for the order).
    #[serde(serialize_with = "super::ser_kinds")]
    pub blocked: KindTimes,
    /// Bytes by channel kind, in kind order.
    pub channels: Vec<ChannelBytes>,
}

/// Adds bytes in and out on a kind of channel to `channels` (kept unsorted; nothing added for
/// zero bytes).
pub(super) fn add_bytes(
    channels: &mut Vec<ChannelBytes>,
    kind: &str,
    bytes_in: u64,
    bytes_out: u64,
) {
    if bytes_in == 0 && bytes_out == 0 {
        return;
    }
    match channels.iter_mut().find(|c| c.kind == kind) {
        Some(c) => {
            c.bytes_in += bytes_in;
            c.bytes_out += bytes_out;
        }
        None => channels.push(ChannelBytes {
            kind: kind.to_string(),
            bytes_in,
            bytes_out,
        }),
    }
}

/// The channel kind of object `o` by name: a stream's channel kind, `other` for the rest.
pub(super) fn channel_kind(g: &Graph, o: Option<ObjId>) -> Cow<'static, str> {
    let kind = o
        .and_then(|o| g.objects.get(o.index()))
        .filter(|info| info.kind.is(ObjKind::Stream))
        .and_then(ObjectInfo::channel_kind);
    match kind {
        Some(k) => k
            .known()
            .map_or_else(|| Cow::Owned(k.to_string()), |k| Cow::Borrowed(k.name())),
        None => Cow::Borrowed(ChanKind::Other.name()),
    }
}

/// The kind the call that ended `leaf` counts as.
pub(super) fn end_kind(g: &Graph, idx: &GraphIndex, leaf: u32) -> BlockKind {
    if idx.weak_out[leaf as usize] {
        return BlockKind::Idle;
    }
    BlockKind::of(g.leaves[leaf as usize].end_op.and_then(|o| o.op()))
}

/// The time within `leaf`'s span that it did not run on a CPU, by kind: lock waits, sleeps and
/// other calls inside it, then (for a trace with CPU times) [`BlockKind::OffCpu`], the rest of
/// the span minus its CPU time. The CPU time runs to the return of the ending call and the calls
/// are taken to use none, so CPU spent inside calls (copying a large write) hides as much
/// off-CPU time: the figure is a lower bound.
pub(super) fn inner_times(g: &Graph, leaf: u32) -> [(BlockKind, u64); 4] {
    let l = &g.leaves[leaf as usize];
    let span = l.end_ns.saturating_sub(l.start_ns);
    let calls = l.lock_ns + l.sleep_ns + l.other_ns;
    let off = g
        .leaf_cpu(LeafId::new(leaf))
        .map_or(0, |cpu| span.saturating_sub(calls).saturating_sub(cpu));
    [
        (BlockKind::Lock, l.lock_ns),
        (BlockKind::Sleep, l.sleep_ns),
        (BlockKind::Io, l.other_ns),
        (BlockKind::OffCpu, off),
    ]
}

/// The metrics of `leaf`.
pub fn leaf_metrics(g: &Graph, idx: &GraphIndex, leaf: u32) -> LeafMetrics {
    let l = &g.leaves[leaf as usize];
    let span = l.end_ns.saturating_sub(l.start_ns);
    let mut blocked = [0u64; BlockKind::ALL.len()];
    let mut inner = 0;
    for (k, ns) in inner_times(g, leaf) {
        blocked[k.index()] += ns;
        inner += ns;
    }
    blocked[end_kind(g, idx, leaf).index()] += l.block_ns;
    let mut channels: Vec<ChannelBytes> = Vec::new();
    let mut add = |kind: &str, i: u64, o: u64| add_bytes(&mut channels, kind, i, o);
    // Channel bytes in came with the call that started the leaf, which ended the previous leaf
    // of the thread.
    let prev_obj = (leaf > 0)
        .then(|| &g.leaves[leaf as usize - 1])
        .filter(|p| p.thread == l.thread)
        .and_then(|p| p.end_obj);
    let (file_in, file_out) = g.leaf_file(LeafId::new(leaf));
    add(
        &channel_kind(g, prev_obj),
        l.bytes_in.saturating_sub(file_in),
        0,
    );
    add(
        &channel_kind(g, l.end_obj),
        0,
        l.bytes_out.saturating_sub(file_out),
    );
    add("file", file_in, file_out);
    channels.sort_by(|a, b| a.kind.cmp(&b.kind));
    LeafMetrics {
        wall_ns: span + l.block_ns,
        running_ns: span.saturating_sub(inner),
        cpu_ns: g.leaf_cpu(LeafId::new(leaf)),
        blocked,
        channels,
    }
}
