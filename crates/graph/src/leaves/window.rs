//! Leaves that the edge of a window of the trace cuts (see `scalpel_model::read::Windows`). A
//! window ends each thread in the middle of a leaf, and the next window begins the thread in
//! the middle of the same leaf. Left as they are, both pieces would be leaves of types the
//! whole trace never has (one with no end, one with no start): a few per window, but each an
//! extra leaf type whose occurrences the miner counts apart, which is enough to tip a choice
//! between two patterns of nearly equal support. So each piece takes the type of the whole
//! leaf: the window's last piece ends, for its type, at the call past the window that ends the
//! leaf in the whole trace (the reader shows the events past the window's end, see
//! `FileSink::beyond`), and the next window's first piece starts at the call that started it,
//! which the window before kept ([`super::ThreadOut::cut_start`]). The pieces stay two leaves,
//! one in each window, and only their types change: the leaves themselves keep no call at the
//! cut end (`start_op` or `end_op` is none where their type's is not, which is how a later
//! stage tells a piece from a whole leaf), and no edge is drawn for a call a window does not
//! hold.

use scalpel_model::graph::OpName;

use super::{class_with, ends_leaf, open, Cutter};
use crate::event::{Ev, LocalObj};
use crate::local::LocalLeaf;

/// A call at the edge of a window that a cut leaf takes its type from: its operation, the
/// file's stack id, and its auxiliary value (as [`super::Cutter`] keeps for loop heads).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct WindowEdge {
    pub op: Option<OpName>,
    pub stack: u32,
    pub x: u64,
}

/// What a thread's cutter knows of the calls around its window.
#[derive(Debug, Default)]
pub(super) struct Edges {
    /// The call that started the open leaf, in the window before (taken by the first leaf).
    known_start: Option<WindowEdge>,
    /// The thread goes on past the window's end.
    cut: bool,
    /// The call past the window's end that ends the open leaf, once seen.
    end: Option<WindowEdge>,
    /// The first leaf's starting call for its type, until the leaf is closed.
    first_op: Option<OpName>,
}

impl Edges {
    /// Opens the thread's first leaf in the window, at `t` and event `at`: where the window
    /// before left it, when one did. Returns the leaf and its starting call's stack.
    pub(super) fn open_first(&mut self, t: u64, at: u32) -> (LocalLeaf, u32) {
        let start = self.known_start.take();
        self.first_op = start.and_then(|s| s.op);
        (open(t, None, at), start.map_or(0, |s| s.stack))
    }

    /// The starting call, for its type, of the leaf being closed when it began the window
    /// where an earlier window left it.
    pub(super) fn take_first_op(&mut self) -> Option<OpName> {
        self.first_op.take()
    }

    /// The call past the window's end that ends the open leaf, when the reader showed it.
    pub(super) fn cut_end(&self) -> Option<WindowEdge> {
        self.end
    }

    /// The call that started `open` (the leaf open at the end: its start op and stack), when
    /// the window's end cut it.
    pub(super) fn cut_start(&self, open: Option<(Option<OpName>, u32)>) -> Option<WindowEdge> {
        let (op, stack) = open.filter(|_| self.cut)?;
        Some(WindowEdge { op, stack, x: 0 })
    }
}

impl Cutter {
    /// The call that started the thread's open leaf, as the window before found it.
    pub(crate) fn known_start(&mut self, start: Option<WindowEdge>) {
        self.edges.known_start = start;
    }

    /// An event past the window's end (see [`Edges`]); `o` is its object and `lock_word` as
    /// for [`Cutter::feed`]. Returns whether the next one is wanted too: until the event that
    /// ends the open leaf.
    pub(crate) fn beyond(&mut self, e: &Ev, o: Option<&LocalObj>, lock_word: bool) -> bool {
        self.edges.cut = true;
        if self.cur.is_none() {
            return false;
        }
        let op = e.op.op();
        if !ends_leaf(
            class_with(op, e, o, lock_word, false),
            op,
            e,
            self.lock_cuts,
        ) {
            return true;
        }
        self.edges.end = Some(WindowEdge {
            op: Some(e.op),
            stack: e.stack,
            x: e.x,
        });
        false
    }
}
