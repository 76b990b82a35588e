//! [`Lists`]: a list of values per number `0..n`, in two arrays, for adjacency built once and
//! read many times (a leaf's senders, a node's out-edges, a unit's wakers).
//!
//! A vector per number costs an allocation each: a quarter of the miner's time at 10^7
//! leaves, and in the graph stage more `malloc` and `free` than work (`docs/BENCHMARKS.md`,
//! sessions 44 and 65). Laid out by a counting sort instead: one pass over the pairs to count,
//! one to place, each number's values in the order they came.

use crate::memory::populate;

/// Values per number `0..n`, each number's in the order given.
#[derive(Clone, Debug)]
pub struct Lists<T> {
    /// Number k's values are `values[starts[k]..starts[k + 1]]`.
    starts: Vec<u32>,
    values: Vec<T>,
}

impl<T> Default for Lists<T> {
    fn default() -> Self {
        Lists {
            starts: Vec::new(),
            values: Vec::new(),
        }
    }
}

impl<T: Copy> Lists<T> {
    /// The lists of `0..n` from `(number, value)` pairs, walked twice (to count, then to
    /// place). Numbers at or past `n` are left out: a lookup of one finds none.
    ///
    /// # Panics
    /// When the pairs are more than `u32::MAX` (an index of edges of one graph, which numbers
    /// its nodes in `u32`, holds fewer).
    pub fn new(n: usize, pairs: impl Iterator<Item = (usize, T)> + Clone) -> Self {
        let mut starts = vec![0u32; n + 1];
        // The counts are read before they are written: pages mapped writable first (see
        // `populate`).
        populate(&mut starts);
        for (k, _) in pairs.clone() {
            if k < n {
                starts[k + 1] += 1;
            }
        }
        for k in 0..n {
            starts[k + 1] += starts[k];
        }
        let mut next = starts.clone();
        // Every slot is written below; the first value only fills them until then.
        let filler = pairs.clone().find(|&(k, _)| k < n).map(|(_, v)| v);
        let mut values = filler.map_or_else(Vec::new, |v| vec![v; starts[n] as usize]);
        for (k, v) in pairs {
            if k < n {
                values[next[k] as usize] = v;
                next[k] += 1;
            }
        }
        Lists { starts, values }
    }

    /// Number `k`'s values, in the order given (empty for none, or past `n`).
    #[inline]
    pub fn of(&self, k: usize) -> &[T] {
        match (self.starts.get(k), self.starts.get(k + 1)) {
            (Some(&a), Some(&b)) => &self.values[a as usize..b as usize],
            _ => &[],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Lists;

    #[test]
    fn lists_keep_the_order_values_came_in_and_drop_numbers_past_n() {
        let pairs = [(2usize, 'a'), (0, 'b'), (2, 'c'), (5, 'x'), (0, 'd')];
        let l = Lists::new(3, pairs.iter().copied());
        assert_eq!(l.of(0), &['b', 'd']);
        assert_eq!(l.of(1), &[] as &[char]);
        assert_eq!(l.of(2), &['a', 'c']);
        assert_eq!(l.of(3), &[] as &[char]);
        assert_eq!(l.of(5), &[] as &[char]);
        let none = Lists::new(4, pairs.iter().copied().filter(|&(k, _)| k > 4));
        assert_eq!(none.of(0), &[] as &[char]);
        assert_eq!(Lists::<char>::default().of(0), &[] as &[char]);
    }
}
