//! Per-object lists that a thread appends to by the million (a lock's releases, a mutex's
//! plain sections, a lock's wait statistics): a map from object to slot.
//!
//! memcached's workers close about 900,000 sections each on a few mutexes, a lock and the lock
//! taken inside it in turn; a hash lookup for every one of them was a tenth of the graph
//! stage's time on a memcached recording (`docs/BENCHMARKS.md`, session 62). A thread's
//! objects are numbered densely from 0 (the order its file first names them), so the map is a
//! vector indexed by object; a number past [`DENSE`] (none that a sink gives) goes to a hash
//! map, so that one stray number costs no memory in proportion to it.

use ahash::AHashMap;

/// Objects below this are looked up in the vector.
const DENSE: u32 = 1 << 20;

/// Values of type `T` per object (a file-local object index).
#[derive(Debug)]
pub(crate) struct PerObj<T> {
    slots: Vec<(u32, T)>,
    /// Per object below [`DENSE`]: its slot plus one, 0 for none.
    dense: Vec<u32>,
    far: AHashMap<u32, usize>,
}

impl<T> Default for PerObj<T> {
    fn default() -> Self {
        PerObj {
            slots: Vec::new(),
            dense: Vec::new(),
            far: AHashMap::new(),
        }
    }
}

impl<T: Default> PerObj<T> {
    /// The value of `obj`, made empty the first time.
    #[inline]
    pub(crate) fn entry(&mut self, obj: u32) -> &mut T {
        let slot = match self.slot(obj) {
            Some(s) => s,
            None => self.add(obj),
        };
        &mut self.slots[slot].1
    }

    fn slot(&self, obj: u32) -> Option<usize> {
        if obj < DENSE {
            let s = *self.dense.get(obj as usize)?;
            (s != 0).then(|| s as usize - 1)
        } else {
            self.far.get(&obj).copied()
        }
    }

    #[cold]
    fn add(&mut self, obj: u32) -> usize {
        let next = self.slots.len();
        self.slots.push((obj, T::default()));
        if obj < DENSE {
            let i = obj as usize;
            if self.dense.len() <= i {
                self.dense.resize(i + 1, 0);
            }
            // Slots are fewer than objects below DENSE, so the count fits.
            self.dense[i] = u32::try_from(next + 1).unwrap_or(u32::MAX);
        } else {
            self.far.insert(obj, next);
        }
        next
    }

    /// The value of `obj`, if it has one.
    pub(crate) fn get_mut(&mut self, obj: u32) -> Option<&mut T> {
        let s = self.slot(obj)?;
        self.slots.get_mut(s).map(|(_, v)| v)
    }

    /// Takes the value of `obj` out (an empty one if it had none).
    pub(crate) fn take(&mut self, obj: u32) -> T {
        self.get_mut(obj).map(std::mem::take).unwrap_or_default()
    }

    /// Every object and its value, in the order objects were first asked for.
    pub(crate) fn into_values(self) -> impl Iterator<Item = (u32, T)> {
        self.slots.into_iter()
    }
}

#[cfg(test)]
mod tests {
    use super::PerObj;

    #[test]
    fn values_stay_with_their_objects_whatever_the_order() {
        let mut p: PerObj<Vec<u32>> = PerObj::default();
        let far = super::DENSE + 9;
        for (i, obj) in [3u32, 7, 3, 7, far, 3, far, far, 7].into_iter().enumerate() {
            p.entry(obj).push(i as u32);
        }
        assert_eq!(p.get_mut(7).cloned(), Some(vec![1, 3, 8]));
        assert_eq!(p.take(3), vec![0, 2, 5]);
        assert_eq!(p.take(3), Vec::<u32>::new());
        assert_eq!(p.take(4), Vec::<u32>::new());
        let all: Vec<(u32, Vec<u32>)> = p.into_values().collect();
        assert_eq!(all, [(3, vec![]), (7, vec![1, 3, 8]), (far, vec![4, 6, 7])]);
    }
}
