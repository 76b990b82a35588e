//! [`IxVec`]: a vector that only its own index type indexes (see the parent module for why).

use std::marker::PhantomData;
use std::ops::{Index, IndexMut};

use super::Idx;

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

    /// The entries as a slice, in index order.
    pub(crate) fn as_mut_slice(&mut self) -> &mut [T] {
        &mut self.raw
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ix::SymIx;

    #[test]
    fn push_returns_the_new_index() {
        let mut v: IxVec<SymIx, &str> = IxVec::new();
        assert_eq!(v.push("a"), SymIx::new(0));
        assert_eq!(v.push("b"), SymIx::new(1));
        assert_eq!(v[SymIx::new(1)], "b");
        assert!(SymIx::NONE > SymIx::new(1));
    }
}
