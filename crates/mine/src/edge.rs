//! What the edge of a window of a trace leaves of an occurrence (see
//! `scalpel_model::read::Windows`). A window cuts each thread in the middle of what it was
//! doing: the occurrence in progress at the edge is in two windows, and neither holds it whole.
//! What one window holds of it stands alone there, though in the whole trace it has a parent,
//! and the tree's choices that count where a class's occurrences stand (inlining a class into
//! the one parent it always has; keeping a class because it stands beside one that recurs in
//! several places) would be made for it, not for the class: one such remnant of a request kept
//! a step of the request as a task of its own in every request of the window.
//!
//! A remnant is a node that stands alone (no kept ancestor) and holds a piece of a leaf the edge
//! cut (`input::cut_piece`), or that a run of loose leaves joins, along a thread it is on, to
//! such a piece. A trace read whole has no cut pieces and so no remnant.

use crate::input::MineLeaf;
use crate::ix::{LeafIx, NodeIx};
use crate::work::Work;

/// How far along a thread a run of loose leaves is followed to a cut piece: an occurrence in
/// progress is a few leaves per thread, and a longer run is loose for another reason.
const EDGE_WALK: usize = 64;

/// Whether node `n`, standing alone, is a remnant of an occurrence a window's edge cut (see the
/// module). `alone(l)`: leaf `l` has no kept ancestor.
pub(super) fn remnant(
    work: &Work,
    leaves: &[MineLeaf],
    alone: impl Fn(LeafIx) -> bool,
    n: NodeIx,
) -> bool {
    work.leaves_of(n).any(|l| {
        leaves[l.index()].cut
            || run_to_cut(leaves, &alone, l, false)
            || run_to_cut(leaves, &alone, l, true)
    })
}

/// Whether the loose leaves after (`forward`) or before leaf `from` on its thread reach a cut
/// piece within [`EDGE_WALK`] leaves. A thread's leaves are numbered one after another.
fn run_to_cut(
    leaves: &[MineLeaf],
    alone: &impl Fn(LeafIx) -> bool,
    from: LeafIx,
    forward: bool,
) -> bool {
    let thread = leaves[from.index()].thread;
    let mut at = from.index();
    for _ in 0..EDGE_WALK {
        let next = if forward {
            at.checked_add(1)
        } else {
            at.checked_sub(1)
        };
        let Some(l) = next.filter(|&i| leaves.get(i).is_some_and(|l| l.thread == thread)) else {
            return false;
        };
        if leaves[l].cut {
            return true;
        }
        if !alone(LeafIx::new(l)) {
            return false;
        }
        at = l;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use scalpel_model::graph::{LeafTypeId, ThreadId};

    fn leaf(thread: u32, cut: bool) -> MineLeaf {
        MineLeaf {
            ty: LeafTypeId::new(0),
            start_ns: 0,
            end_ns: 0,
            end_obj: None,
            thread: ThreadId::new(thread),
            cut,
            resumes: false,
        }
    }

    #[test]
    fn loose_leaves_reach_the_piece_the_edge_cut_on_their_thread_only() {
        // Thread 0: the piece the window's start cut, two loose leaves, one in a task. Thread
        // 1: one loose leaf, then the piece the window's end cut.
        let leaves = [
            leaf(0, true),
            leaf(0, false),
            leaf(0, false),
            leaf(0, false),
            leaf(1, false),
            leaf(1, true),
        ];
        let alone = |l: LeafIx| l.index() != 3;
        let walk =
            |from: usize, forward: bool| run_to_cut(&leaves, &alone, LeafIx::new(from), forward);
        assert!(
            walk(2, false),
            "back over a loose leaf to the start's piece"
        );
        assert!(!walk(2, true), "a leaf in a task ends the run");
        assert!(
            !walk(3, true),
            "the next thread's piece is not this thread's"
        );
        assert!(walk(4, true));
        assert!(!walk(4, false));
    }
}
