//! Typed indices and the vectors they index: leaves, nodes, symbols, ports, edge kinds and a
//! round's proposed rules.
//!
//! Why: the miner holds five index spaces at once, all plain integers before: a leaf's node
//! (`node_of[leaf]`), a node's symbol (`nodes[n].sym`), a symbol's class (`of[sym]`), a leaf's
//! port, an edge's kind. Indexing one table with another space's number compiled and gave a
//! wrong model, silently. Each space is a newtype here, and [`IxVec`] takes only its own index
//! type, so mixing two spaces does not compile. The newtypes hold the same integer as before
//! (same size, same order, same hash), so nothing the miner sorts or hashes changes.

use std::marker::PhantomData;
use std::ops::{Index, IndexMut};

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

/// A vector indexed by one index type only.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct IxVec<I, T> {
    raw: Vec<T>,
    _ix: PhantomData<fn(I)>,
}

impl<I, T> Default for IxVec<I, T> {
    fn default() -> Self {
        IxVec {
            raw: Vec::new(),
            _ix: PhantomData,
        }
    }
}

impl<I: Idx, T> IxVec<I, T> {
    /// An empty vector.
    pub(crate) fn new() -> Self {
        IxVec::from_vec(Vec::new())
    }

    /// `n` copies of `value`.
    pub(crate) fn from_elem(value: T, n: usize) -> Self
    where
        T: Clone,
    {
        IxVec::from_vec(vec![value; n])
    }

    /// Entries in order: entry `i` gets index `I::new(i)`.
    pub(crate) fn from_vec(raw: Vec<T>) -> Self {
        IxVec {
            raw,
            _ix: PhantomData,
        }
    }

    /// Appends `value`, returning its index.
    pub(crate) fn push(&mut self, value: T) -> I {
        let i = I::new(self.raw.len());
        self.raw.push(value);
        i
    }

    pub(crate) fn len(&self) -> usize {
        self.raw.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }

    /// The entry at `i`, if there is one.
    pub(crate) fn get(&self, i: I) -> Option<&T> {
        self.raw.get(i.index())
    }

    pub(crate) fn iter(&self) -> std::slice::Iter<'_, T> {
        self.raw.iter()
    }

    pub(crate) fn iter_mut(&mut self) -> std::slice::IterMut<'_, T> {
        self.raw.iter_mut()
    }

    /// Every index, in order.
    pub(crate) fn indices(&self) -> std::iter::Map<std::ops::Range<usize>, fn(usize) -> I> {
        (0..self.raw.len()).map(I::new)
    }

    /// Entries with their indices, in order.
    pub(crate) fn iter_enumerated(&self) -> impl DoubleEndedIterator<Item = (I, &T)> + Clone + '_ {
        self.raw.iter().enumerate().map(|(i, v)| (I::new(i), v))
    }

    /// Sets every entry to `value`.
    pub(crate) fn fill(&mut self, value: T)
    where
        T: Clone,
    {
        self.raw.fill(value);
    }

    /// Entries with their indices, in order, taken out.
    pub(crate) fn into_iter_enumerated(self) -> impl Iterator<Item = (I, T)> {
        self.raw
            .into_iter()
            .enumerate()
            .map(|(i, v)| (I::new(i), v))
    }
}

impl<I: Idx, T> Index<I> for IxVec<I, T> {
    type Output = T;
    #[inline]
    fn index(&self, i: I) -> &T {
        &self.raw[i.index()]
    }
}

impl<I: Idx, T> IndexMut<I> for IxVec<I, T> {
    #[inline]
    fn index_mut(&mut self, i: I) -> &mut T {
        &mut self.raw[i.index()]
    }
}

impl<I: Idx, T> FromIterator<T> for IxVec<I, T> {
    fn from_iter<It: IntoIterator<Item = T>>(it: It) -> Self {
        IxVec::from_vec(it.into_iter().collect())
    }
}

impl<'a, I: Idx, T> IntoIterator for &'a IxVec<I, T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.raw.iter()
    }
}

impl<'a, I: Idx, T> IntoIterator for &'a mut IxVec<I, T> {
    type Item = &'a mut T;
    type IntoIter = std::slice::IterMut<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.raw.iter_mut()
    }
}

/// A list of `T` per index `I`, in one array (a vector per index costs an allocation each, a
/// quarter of the miner's time at 10^7 leaves): the lists of a counting sort, each in the order
/// its entries came.
pub(crate) struct IxLists<I, T> {
    start: Vec<u32>,
    items: Vec<T>,
    _ix: PhantomData<fn(I)>,
}

impl<I: Idx, T: Copy> IxLists<I, T> {
    /// The lists of indices `0..n` from `(index, item)` pairs (walked twice: once to count,
    /// once to fill). `blank` only fills the array before it is written.
    pub(crate) fn new<P>(n: usize, pairs: P, blank: T) -> Self
    where
        P: IntoIterator<Item = (I, T)> + Clone,
    {
        let mut start = vec![0u32; n + 1];
        for (i, _) in pairs.clone() {
            start[i.index() + 1] += 1;
        }
        for i in 0..n {
            start[i + 1] += start[i];
        }
        let mut fill = start.clone();
        let mut items = vec![blank; start[n] as usize];
        for (i, item) in pairs {
            let at = &mut fill[i.index()];
            items[*at as usize] = item;
            *at += 1;
        }
        IxLists {
            start,
            items,
            _ix: PhantomData,
        }
    }

    /// The list of `i`.
    #[inline]
    pub(crate) fn of(&self, i: I) -> &[T] {
        let at = i.index();
        &self.items[self.start[at] as usize..self.start[at + 1] as usize]
    }
}

impl<I, T> Default for IxLists<I, T> {
    fn default() -> Self {
        IxLists {
            start: Vec::new(),
            items: Vec::new(),
            _ix: PhantomData,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_keep_the_order_entries_came_in() {
        let pairs = [
            (NodeIx::new(2), 7u32),
            (NodeIx::new(0), 1),
            (NodeIx::new(2), 3),
        ];
        let l = IxLists::new(4, pairs, 0);
        assert_eq!(l.of(NodeIx::new(0)), &[1]);
        assert_eq!(l.of(NodeIx::new(1)), &[] as &[u32]);
        assert_eq!(l.of(NodeIx::new(2)), &[7, 3]);
        assert_eq!(l.of(NodeIx::new(3)), &[] as &[u32]);
    }

    #[test]
    fn push_returns_the_new_index() {
        let mut v: IxVec<SymIx, &str> = IxVec::new();
        assert_eq!(v.push("a"), SymIx::new(0));
        assert_eq!(v.push("b"), SymIx::new(1));
        assert_eq!(v[SymIx::new(1)], "b");
        assert!(SymIx::NONE > SymIx::new(1));
    }
}
