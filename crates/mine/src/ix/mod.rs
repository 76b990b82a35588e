//! Typed indices and the vectors they index: leaves, nodes, symbols, ports, edge kinds and a
//! round's proposed rules.
//!
//! Why: the miner holds five index spaces at once, all plain integers before: a leaf's node
//! (`node_of[leaf]`), a node's symbol (`nodes[n].sym`), a symbol's class (`of[sym]`), a leaf's
//! port, an edge's kind. Indexing one table with another space's number compiled and gave a
//! wrong model, silently. Each space is a newtype here, and [`IxVec`] takes only its own index
//! type, so mixing two spaces does not compile. The newtypes hold the same integer as before,
//! and compare as it did, so nothing the miner sorts changes order. ([`index_type!`] also makes
//! the spaces local to one stage: the units of a canonical form, the graph after a round.)
//!
//! [`IxLists`] is the counting-sort adjacency the miner built by hand in five places.

mod lists;
mod vec;

pub(crate) use lists::IxLists;
pub(crate) use vec::IxVec;

use scalpel_model::graph::{LeafId, NodeId};

/// An index type: a number in one index space.
pub(crate) trait Idx: Copy {
    /// The index of entry `i`.
    fn new(i: usize) -> Self;
    /// The index as a position in its table.
    fn index(self) -> usize;
}

/// Declares an index newtype over `$inner`, with [`u32::MAX`] (or `u8::MAX`) as its "none".
macro_rules! index_type {
    ($(#[$doc:meta])* $name:ident($inner:ty)) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub(crate) struct $name($inner);

        // Not every index type needs every helper (edge kinds have no "none").
        #[allow(dead_code)]
        impl $name {
            /// "None": the largest value, which no table reaches.
            pub(crate) const NONE: $name = $name(<$inner>::MAX);

            /// The index of entry `i` (truncated to the inner width, as the `as` casts did).
            #[inline]
            pub(crate) const fn new(i: usize) -> Self {
                $name(i as $inner)
            }

            /// The index with raw value `raw`.
            #[inline]
            pub(crate) const fn from_raw(raw: $inner) -> Self {
                $name(raw)
            }

            /// The raw value.
            #[inline]
            pub(crate) const fn raw(self) -> $inner {
                self.0
            }

            /// The index as a position in its table.
            #[inline]
            pub(crate) const fn index(self) -> usize {
                self.0 as usize
            }

            /// Whether this is [`Self::NONE`].
            #[inline]
            pub(crate) fn is_none(self) -> bool {
                self == Self::NONE
            }

            /// Whether this is not [`Self::NONE`].
            #[inline]
            pub(crate) fn is_some(self) -> bool {
                self != Self::NONE
            }
        }

        impl $crate::ix::Idx for $name {
            #[inline]
            fn new(i: usize) -> Self {
                $name::new(i)
            }
            #[inline]
            fn index(self) -> usize {
                $name::index(self)
            }
        }
    };
}

pub(crate) use index_type;

index_type! {
    /// A leaf of the graph (the graph's leaf id, as the miner numbers it).
    LeafIx(u32)
}

index_type! {
    /// A node of the working graph: a leaf (node `l` is leaf `l`) or a contraction.
    NodeIx(u32)
}

index_type! {
    /// A symbol (rule); symbol `t` below [`crate::work::Work::leaf_types`] is leaf type `t`. A
    /// merge class is named by its smallest symbol, so classes are symbols too.
    SymIx(u32)
}

index_type! {
    /// A position in a symbol's port space (see [`crate::work`]).
    Port(u32)
}

index_type! {
    /// An edge kind: an index into `EdgeKind::ALL`.
    KindIx(u8)
}

index_type! {
    /// A rule proposed in one round: an index into [`crate::round::Proposals::rules`].
    RuleIx(u32)
}

impl NodeIx {
    /// The node of leaf `l` before any contraction: leaves are the first nodes, in order.
    #[inline]
    pub(crate) const fn of_leaf(l: LeafIx) -> NodeIx {
        NodeIx(l.0)
    }
}

impl LeafIx {
    /// The miner's leaf of the graph's node `id`, which must be a leaf (graph nodes below
    /// the leaf count are the leaves, by id).
    #[inline]
    pub(crate) const fn of_node(id: NodeId) -> LeafIx {
        LeafIx(id.get())
    }

    /// The graph's id of this leaf.
    #[inline]
    pub(crate) const fn id(self) -> LeafId {
        LeafId::new(self.0)
    }
}

impl Port {
    /// This port moved `by` places on (past a part whose ports come first).
    #[inline]
    pub(crate) const fn shifted(self, by: u32) -> Port {
        Port(self.0 + by)
    }
}

/// The graph's leaf ids index the tables the naming builds after mining.
impl Idx for LeafId {
    #[inline]
    fn new(i: usize) -> Self {
        LeafId::new(i as u32)
    }
    #[inline]
    fn index(self) -> usize {
        LeafId::index(self)
    }
}
