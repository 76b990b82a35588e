//! Wake-ups that turned out to be waits: the two questions every pass that turns a cause into
//! a wait asks (which wait does the edge become; does the woken leaf go on with its thread's
//! work). Why a module of its own: the passes that find such waits (queues, services, helper
//! calls, condition locks) run before edges are final, and the merge of their cuts runs after,
//! so neither may depend on the other.

use scalpel_model::graph::{Graph, LeafId, LockWait, ObjId};

/// The wait a wake-up edge from leaf `from` to leaf `to` (on `obj`) becomes: the leaf before
/// `to` on its thread ended at the wait, and `from` let it go on. `None` when `to` starts its
/// thread or either leaf is out of range.
pub(super) fn wait_of(graph: &Graph, from: usize, to: usize, obj: ObjId) -> Option<LockWait> {
    let leaves = &graph.leaves;
    let waiter = to.checked_sub(1)?;
    let (w, t) = (leaves.get(waiter)?, leaves.get(to)?);
    (from < leaves.len() && w.thread == t.thread).then(|| LockWait {
        obj,
        waiter: LeafId::at(waiter),
        holder: Some(LeafId::at(from)),
        wait_ns: w.block_ns,
    })
}

/// Whether leaf `l` goes on with its thread's work: the leaf before it is its thread's and the
/// program edge between them is strong (`weak[i]`: the edge out of leaf `i` is weak).
pub(super) fn continues(graph: &Graph, weak: &[bool], l: usize) -> bool {
    let leaves = &graph.leaves;
    l > 0
        && l < leaves.len()
        && leaves[l - 1].thread == leaves[l].thread
        && !weak.get(l - 1).copied().unwrap_or(true)
}
