//! A file's object table: index → (kind, key, last absolute sequence number).
//!
//! The agent numbers a thread's objects 1, 2, 3 … and starts again at 1 after a reset (a few
//! thousand at most), and every event that names an object looks its index up. Why not a hash
//! map: that lookup was a tenth of decoding. Small indexes sit in a vector; a larger one (no
//! agent writes one, but a damaged or foreign file may) goes to a map, so that a huge index
//! costs no memory in proportion to it.

use std::collections::BTreeMap;

/// One object: its kind code, key, and last absolute sequence number.
pub(crate) type Entry = (u8, u64, u64);

/// Indexes below this are kept in the vector.
const DENSE: u64 = 1 << 16;

/// The vector's slot of `index`, if it has one there.
#[inline]
fn dense_slot(index: u64) -> Option<usize> {
    usize::try_from(index).ok().filter(|_| index < DENSE)
}

/// The object table (see the module docs).
#[derive(Clone, Debug, Default)]
pub(crate) struct ObjTable {
    dense: Vec<Option<Entry>>,
    sparse: BTreeMap<u64, Entry>,
}

impl ObjTable {
    /// The entry at `index`, to read or update.
    #[inline]
    pub(crate) fn get_mut(&mut self, index: u64) -> Option<&mut Entry> {
        match dense_slot(index) {
            Some(i) => self.dense.get_mut(i)?.as_mut(),
            None => self.sparse.get_mut(&index),
        }
    }

    /// Sets the entry at `index`, replacing any.
    pub(crate) fn insert(&mut self, index: u64, entry: Entry) {
        match dense_slot(index) {
            Some(i) => {
                if self.dense.len() <= i {
                    self.dense.resize(i + 1, None);
                }
                self.dense[i] = Some(entry);
            }
            None => {
                self.sparse.insert(index, entry);
            }
        }
    }

    /// Removes every entry.
    pub(crate) fn clear(&mut self) {
        self.dense.clear();
        self.sparse.clear();
    }

    /// Every entry with its index, in index order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u64, &Entry)> {
        let dense = self
            .dense
            .iter()
            .enumerate()
            .filter_map(|(i, e)| Some((i as u64, e.as_ref()?)));
        dense.chain(self.sparse.iter().map(|(&i, e)| (i, e)))
    }

    /// The largest index in use.
    pub(crate) fn max_index(&self) -> Option<u64> {
        self.sparse.keys().next_back().copied().or_else(|| {
            let i = self.dense.iter().rposition(Option::is_some)?;
            Some(i as u64)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_and_large_indexes_are_kept_alike() {
        let mut t = ObjTable::default();
        assert_eq!(t.max_index(), None);
        t.insert(3, (1, 10, 0));
        t.insert(DENSE + 5, (2, 20, 0));
        t.insert(u64::MAX, (3, 30, 0));
        assert_eq!(t.get_mut(2), None);
        assert_eq!(t.get_mut(DENSE), None);
        t.get_mut(3).unwrap().2 = 7;
        t.get_mut(u64::MAX).unwrap().2 = 9;
        let all: Vec<(u64, Entry)> = t.iter().map(|(i, &e)| (i, e)).collect();
        assert_eq!(
            all,
            [
                (3, (1, 10, 7)),
                (DENSE + 5, (2, 20, 0)),
                (u64::MAX, (3, 30, 9))
            ]
        );
        assert_eq!(t.max_index(), Some(u64::MAX));
        t.insert(3, (4, 40, 0));
        assert_eq!(t.get_mut(3), Some(&mut (4, 40, 0)));
        t.clear();
        assert_eq!(t.iter().count(), 0);
        assert_eq!(t.max_index(), None);
    }
}
