//! What the miner reads of a causal graph: the leaf types, the edges, the objects and five
//! fields of each leaf. `scalpel infer` hands the miner this much and lets the rest of the graph go while it
//! mines (the graph is read back from `graph.bin` for the rollups): on a 1.77M-event nginx
//! recording the graph is 101 MiB and this 46 MiB, and mining was the peak of the whole run.

use std::borrow::Cow;

use ahash::AHashSet;
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
    /// thread (see [`MineInput::joined`]): what lies before it in the recording is left out.
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
/// `runs::run_support`), the threads, and the leaf types' contents (see `ends`).
pub(crate) struct RoundLeaves<'a> {
    /// Every leaf, by index.
    pub all: &'a [MineLeaf],
    /// Leaves with [`MineLeaf::resumes`], in order.
    pub resumes: Vec<crate::ix::LeafIx>,
    /// The threads of the leaves with [`MineLeaf::resumes`]: each is two parts of the sample.
    pub resumed_threads: AHashSet<ThreadId>,
    /// How many threads the leaves lie on.
    pub threads: usize,
    /// Each leaf type's key as another graph of the program finds it, hashed
    /// (`grammar::hashed_keys`).
    pub type_keys: Vec<u64>,
}

impl<'a> RoundLeaves<'a> {
    /// The leaves `all`, of types with the keys `type_keys` (see the field).
    pub(crate) fn new(all: &'a [MineLeaf], type_keys: Vec<u64>) -> RoundLeaves<'a> {
        let resumes: Vec<crate::ix::LeafIx> = (0..all.len())
            .filter(|&i| all[i].resumes)
            .map(crate::ix::LeafIx::new)
            .collect();
        let threads: AHashSet<ThreadId> = all.iter().map(|l| l.thread).collect();
        RoundLeaves {
            all,
            resumed_threads: resumes.iter().map(|l| all[l.index()].thread).collect(),
            resumes,
            threads: threads.len(),
            type_keys,
        }
    }

    /// How many parts `threads` make (a thread may repeat): one a thread, two a thread a sample
    /// joins from two parts. Each part's run of a cycle begins and ends once, which gives one
    /// of two cuts of the cycle at most one occurrence more than the other (see `ends`).
    pub(crate) fn parts<'t>(&self, threads: impl Iterator<Item = &'t ThreadId>) -> u32 {
        let set: AHashSet<ThreadId> = threads.copied().collect();
        let resumed = set
            .iter()
            .filter(|t| self.resumed_threads.contains(t))
            .count();
        (set.len() + resumed) as u32
    }

    /// The most parts any set of these leaves' threads makes.
    pub(crate) fn most_parts(&self) -> u32 {
        (self.threads + self.resumed_threads.len()) as u32
    }
}
