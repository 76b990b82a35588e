//! What a queued leaf waited behind: the work its own thread was doing meanwhile.
//!
//! A leaf on a critical path is *queued* when it starts later than the leaf that enabled it
//! completed: the thread that runs it was busy. Leaving that time as "queued" names the symptom,
//! not the cause. Following wPerf, the waiting is charged to what the awaited thread did in the
//! gap: the earlier leaves of the same thread, each split into running time and the kinds of
//! wait inside it. A producer-consumer queue whose consumers all sleep then shows the sleep,
//! which is how a storage service's commits, queued for sender threads stalled in flow control,
//! point at the flow-control sleep.

use scalpel_model::graph::Graph;

use super::kinds::BlockKind;
use super::leaf::{end_kind, inner_times, GraphIndex};
use super::stats::scale;

/// How many earlier leaves of a thread one gap may be charged to. A gap longer than that many
/// leaves keeps its remainder as plain queued time; the bound keeps a rollup linear when a
/// thread ran thousands of short leaves while one item waited.
pub const MAX_BEHIND: usize = 4096;

/// Time a path leaf spent queued, charged to a leaf its thread ran meanwhile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Behind {
    /// The earlier leaf of the same thread.
    pub leaf: u32,
    /// What that leaf was doing: running (`None`) or a kind of wait.
    pub kind: Option<BlockKind>,
    /// Time of the gap it covers.
    pub ns: u64,
}

/// The overlap of `a..b` with `from..to`.
fn overlap(a: u64, b: u64, from: u64, to: u64) -> u64 {
    b.min(to).saturating_sub(a.max(from))
}

/// Charges the gap `from..to`, in which `leaf` waited for its thread, to the thread's earlier
/// leaves, appending to `out` (at most `to - from` in all). Idle waits (the
/// thread waiting for new work) and time no leaf covers stay uncharged: that is the thread
/// waking up, not work in the way. Returns the time left unexamined when the walk stopped at
/// [`MAX_BEHIND`] leaves.
pub(super) fn charge(
    g: &Graph,
    idx: &GraphIndex,
    leaf: u32,
    from: u64,
    to: u64,
    out: &mut Vec<Behind>,
) -> u64 {
    let thread = g.leaves[leaf as usize].thread;
    let mut left = to.saturating_sub(from);
    let mut p = leaf;
    let mut walked = 0;
    // The earliest time the walk has looked at.
    let mut reached = to;
    while left > 0 && p > 0 {
        if walked == MAX_BEHIND {
            return reached.saturating_sub(from).min(left);
        }
        p -= 1;
        walked += 1;
        let l = &g.leaves[p as usize];
        if l.thread != thread || l.end_ns + l.block_ns <= from {
            break;
        }
        reached = l.start_ns.max(from);
        let mut add = |kind: Option<BlockKind>, ns: u64| {
            let ns = ns.min(left);
            if ns > 0 {
                out.push(Behind { leaf: p, kind, ns });
                left -= ns;
            }
        };
        let end = end_kind(g, idx, p);
        if end != BlockKind::Idle {
            add(
                Some(end),
                overlap(l.end_ns, l.end_ns + l.block_ns, from, to),
            );
        }
        // Inside the span the calls' positions are not kept: split the overlap in proportion.
        let span = l.end_ns.saturating_sub(l.start_ns);
        let ov = overlap(l.start_ns, l.end_ns, from, to);
        if ov > 0 {
            let scale = |ns: u64| scale(ns.min(span), ov, span);
            let mut inner = 0;
            for (k, ns) in inner_times(g, p) {
                let s = scale(ns).min(ov - inner);
                add(Some(k), s);
                inner += s;
            }
            add(None, ov - inner);
        }
        if l.start_ns <= from {
            break;
        }
    }
    0
}
