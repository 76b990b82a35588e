//! A call to a helper thread is a wait for its answer.
//!
//! A thread in the middle of its work wakes a helper (a log writer, a resolver, a worker it
//! hands one step to) and waits until the helper wakes it back. The helper's work is part of
//! the caller's, and stays joined to it by the call's edge; the answer is the end of a wait,
//! not a new cause. Cut at, the caller's call and wait split its work into three leaves when it
//! called and one when it did not (the log already held its record, the step was not needed),
//! and the two were two task types. So the answer's edge becomes a wait of the leaf that
//! waited, with the helper's leaf as its holder, and the call and the wait are merged into the
//! caller's leaf (`super::merge`): one leaf type whether or not it called, the helper's work an
//! optional step of it.
//!
//! An answer is a wake-up from a helper's leaf to a thread that goes on with its work (strong
//! program order into the woken leaf), when the helper's current unit of work (its leaves since
//! it last went back for new work) was started by a wake-up from a leaf of that same thread in
//! the same unit of its work, before the woken leaf. A hand-off that is never answered (a pool's
//! dispatcher goes on to other requests) and a completion that comes back after the caller went
//! back for new work (an event loop woken by its thread pool) are not calls.

use scalpel_model::graph::{Edge, Graph, LockWait};
use scalpel_model::lists::Lists;

use super::service::is_wakeup;
use super::waits::{continues, wait_of};

/// What [`helper_calls`] found.
#[derive(Default)]
pub(super) struct Calls {
    /// The callers' waits for their helpers' answers.
    pub waits: Vec<LockWait>,
    /// Leaves that ended at a call whose answer became a wait.
    pub callers: Vec<u32>,
}

/// Turns the answers of helper calls into waits (see the module docs). `weak[i]`: the program
/// edge out of leaf `i` is weak.
pub(super) fn helper_calls(graph: &Graph, edges: &mut Vec<Edge>, weak: &[bool]) -> Calls {
    let leaves = &graph.leaves;
    let n = leaves.len();
    let strong_before = |l: usize| continues(graph, weak, l);
    // unit[l]: the first leaf of l's unit of work (its thread's leaves since the last weak edge).
    let mut unit = vec![0u32; n];
    for l in 0..n {
        unit[l] = if strong_before(l) {
            unit[l - 1]
        } else {
            l as u32
        };
    }
    let other_thread = |a: usize, b: usize| a < n && b < n && leaves[a].thread != leaves[b].thread;
    // Per unit of work, the leaves of other threads that woke it.
    let wakeups = edges
        .iter()
        .filter(|e| is_wakeup(e.kind))
        .map(|e| (e.from.index(), e.to.index()))
        .filter(|&(f, t)| other_thread(f, t))
        .map(|(f, t)| (unit[t] as usize, f as u32));
    let woken_by = Lists::new(n, wakeups);
    // The call an answer from `f` to `t` answers: a leaf of t's thread, in t's unit and before
    // t, that woke f's unit.
    let call_of = |f: usize, t: usize| -> Option<u32> {
        if !strong_before(t) {
            return None;
        }
        woken_by.of(unit[f] as usize).iter().copied().find(|&c| {
            let c = c as usize;
            leaves[c].thread == leaves[t].thread && unit[c] == unit[t] && c < t
        })
    };
    let mut out = Calls::default();
    edges.retain(|e| {
        let (f, t) = (e.from.index(), e.to.index());
        let Some(obj) = e.obj.filter(|_| is_wakeup(e.kind) && other_thread(f, t)) else {
            return true;
        };
        let (Some(call), Some(wait)) = (call_of(f, t), wait_of(graph, f, t, obj)) else {
            return true;
        };
        out.waits.push(wait);
        out.callers.push(call);
        false
    });
    out
}
