//! What the miner reads of a causal graph: the leaf types, the edges, the objects and five
//! fields of each leaf. `scalpel infer` hands the miner this much and lets the rest of the graph go while it
//! mines (the graph is read back from `graph.bin` for the rollups): on a 1.77M-event nginx
//! recording the graph is 101 MiB and this 46 MiB, and mining was the peak of the whole run.

use std::borrow::Cow;

use scalpel_model::graph::{Edge, Graph, Leaf, LeafType, LeafTypeId, ObjId, ObjectInfo, ThreadId};

/// A leaf as the miner sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MineLeaf {
    /// Its type.
    pub ty: LeafTypeId,
    /// When it started (ns).
    pub start_ns: u64,
    /// When it ended (ns).
    pub end_ns: u64,
    /// The object its ending call was on (sessions group leaves by connection).
    pub end_obj: Option<ObjId>,
    /// Its thread (a run of a repeated pattern is on one thread or one pair of threads).
    pub thread: ThreadId,
    /// It is a piece of a leaf that the edge of a window of the trace cut (see [`cut_piece`]).
    pub cut: bool,
    /// It is its thread's first leaf in a part of a sample after the first part that has the
    /// thread (see [`MineInput::joined`]): what lies before it in the recording is left out,
    /// and program order joins it to the thread's last leaf before only where the thread's
    /// cycle goes on there.
    pub resumes: bool,
}

/// Whether `leaf` is a piece of a leaf the edge of a window of the trace cut: the graph stage
/// types such a piece as the whole leaf, but the piece itself has no call at its cut end.
pub(crate) fn cut_piece(leaf: &Leaf, types: &[LeafType]) -> bool {
    let Some(t) = types.get(leaf.ty.index()) else {
        return false;
    };
    (leaf.start_op.is_none() && t.start.op.is_some())
        || (leaf.end_op.is_none() && t.end.op.is_some())
}

/// The miner's input: borrowed from a graph that stays, or owned when the graph is let go.
#[derive(Clone, Debug)]
pub struct MineInput<'a> {
    /// The graph's leaf types.
    pub types: Cow<'a, [LeafType]>,
    /// The graph's leaves, by id.
    pub leaves: Vec<MineLeaf>,
    /// The graph's edges.
    pub edges: Cow<'a, [Edge]>,
    /// The graph's objects (sessions read their connections).
    pub objects: Cow<'a, [ObjectInfo]>,
}

fn slim(graph: &Graph) -> Vec<MineLeaf> {
    graph
        .leaves
        .iter()
        .map(|l| MineLeaf {
            ty: l.ty,
            start_ns: l.start_ns,
            end_ns: l.end_ns,
            end_obj: l.end_obj,
            thread: l.thread,
            cut: cut_piece(l, &graph.types),
            resumes: false,
        })
        .collect()
}

impl MineInput<'_> {
    /// What the miner needs of `graph`, which stays as it is.
    pub fn of(graph: &Graph) -> MineInput<'_> {
        MineInput {
            types: Cow::Borrowed(&graph.types),
            leaves: slim(graph),
            edges: Cow::Borrowed(&graph.edges),
            objects: Cow::Borrowed(&graph.objects),
        }
    }

    /// What the miner needs of `graph`, which is consumed: its edges and types move, the rest
    /// is freed.
    pub fn from_graph(mut graph: Graph) -> MineInput<'static> {
        let leaves = slim(&graph);
        MineInput {
            types: Cow::Owned(std::mem::take(&mut graph.types)),
            leaves,
            edges: Cow::Owned(std::mem::take(&mut graph.edges)),
            objects: Cow::Owned(std::mem::take(&mut graph.objects)),
        }
    }
}

/// The leaves as the rounds read them, with what is worked out of them once per run rather
/// than once per round: the leaves that resume their thread after a sample's gap (see
/// `runs::run_support`) and the threads a window's edge cut (see `turns`); both empty for a
/// trace read whole.
pub(crate) struct RoundLeaves<'a> {
    /// Every leaf, by index.
    pub all: &'a [MineLeaf],
    /// Leaves with [`MineLeaf::resumes`], in order.
    pub resumes: Vec<crate::ix::LeafIx>,
    /// The threads of the leaves with [`MineLeaf::cut`].
    pub cut_threads: ahash::AHashSet<ThreadId>,
}

impl<'a> RoundLeaves<'a> {
    pub(crate) fn new(all: &'a [MineLeaf]) -> RoundLeaves<'a> {
        RoundLeaves {
            all,
            resumes: (0..all.len())
                .filter(|&i| all[i].resumes)
                .map(crate::ix::LeafIx::new)
                .collect(),
            cut_threads: all.iter().filter(|l| l.cut).map(|l| l.thread).collect(),
        }
    }
}
