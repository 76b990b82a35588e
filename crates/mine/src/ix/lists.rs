//! [`IxLists`]: a list per index, in one array, for adjacency built once and read many times.

use std::marker::PhantomData;

use super::Idx;

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
    use crate::ix::NodeIx;

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
}
