//! [`IxLists`]: a list per index, in one array, for adjacency built once and read many times:
//! `scalpel_model`'s [`Lists`] with a typed index.

use std::marker::PhantomData;

use scalpel_model::lists::Lists;

use super::Idx;

/// A list of `T` per index `I` (see [`Lists`]): each in the order its entries came.
pub(crate) struct IxLists<I, T> {
    lists: Lists<T>,
    _ix: PhantomData<fn(I)>,
}

impl<I: Idx, T: Copy> IxLists<I, T> {
    /// The lists of indices `0..n` from `(index, item)` pairs (walked twice: once to count,
    /// once to fill).
    pub(crate) fn new<P>(n: usize, pairs: P) -> Self
    where
        P: IntoIterator<Item = (I, T)>,
        P::IntoIter: Clone,
    {
        let pairs = pairs.into_iter().map(|(i, item)| (i.index(), item));
        IxLists {
            lists: Lists::new(n, pairs),
            _ix: PhantomData,
        }
    }

    /// The list of `i`.
    #[inline]
    pub(crate) fn of(&self, i: I) -> &[T] {
        self.lists.of(i.index())
    }
}

impl<I, T> Default for IxLists<I, T> {
    fn default() -> Self {
        IxLists {
            lists: Lists::default(),
            _ix: PhantomData,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ix::NodeIx;

    #[test]
    fn lists_keep_the_order_entries_came_in() {
        let pairs = [
            (NodeIx::new(2), 7u32),
            (NodeIx::new(0), 1),
            (NodeIx::new(2), 3),
        ];
        let l = IxLists::new(4, pairs);
        assert_eq!(l.of(NodeIx::new(0)), &[1]);
        assert_eq!(l.of(NodeIx::new(1)), &[] as &[u32]);
        assert_eq!(l.of(NodeIx::new(2)), &[7, 3]);
        assert_eq!(l.of(NodeIx::new(3)), &[] as &[u32]);
    }
}
