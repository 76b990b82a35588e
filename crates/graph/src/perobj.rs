//! Per-object lists that a thread appends to by the million (a lock's releases, a mutex's
//! plain sections): a map from object to slot, with the two objects used last remembered.
//!
//! memcached's workers close about 900,000 sections each on a few mutexes, a lock and the lock
//! taken inside it in turn; a hash lookup for every one of them was a tenth of the graph
//! stage's time on a memcached recording (`docs/BENCHMARKS.md`, session 62).

use ahash::AHashMap;

/// Values of type `T` per object (a file-local object index).
#[derive(Debug)]
pub(crate) struct PerObj<T> {
    slots: Vec<(u32, T)>,
    index: AHashMap<u32, usize>,
    /// The last two objects asked for, and their slots, the last first.
    recent: [Option<(u32, usize)>; 2],
}

impl<T> Default for PerObj<T> {
    fn default() -> Self {
        PerObj {
            slots: Vec::new(),
            index: AHashMap::new(),
            recent: [None, None],
        }
    }
}

impl<T: Default> PerObj<T> {
    /// The value of `obj`, made empty the first time.
    pub(crate) fn entry(&mut self, obj: u32) -> &mut T {
        let slot = match self.recent {
            [Some((o, s)), _] if o == obj => s,
            [a, Some((o, s))] if o == obj => {
                self.recent = [Some((o, s)), a];
                s
            }
            [a, _] => {
                let next = self.slots.len();
                let s = *self.index.entry(obj).or_insert(next);
                if s == next {
                    self.slots.push((obj, T::default()));
                }
                self.recent = [Some((obj, s)), a];
                s
            }
        };
        &mut self.slots[slot].1
    }

    /// The value of `obj`, if it has one.
    pub(crate) fn get_mut(&mut self, obj: u32) -> Option<&mut T> {
        let s = *self.index.get(&obj)?;
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
        for (i, obj) in [3u32, 7, 3, 7, 9, 3, 9, 9, 7].into_iter().enumerate() {
            p.entry(obj).push(i as u32);
        }
        assert_eq!(p.get_mut(7).cloned(), Some(vec![1, 3, 8]));
        assert_eq!(p.take(3), vec![0, 2, 5]);
        assert_eq!(p.take(3), Vec::<u32>::new());
        assert_eq!(p.take(4), Vec::<u32>::new());
        let all: Vec<(u32, Vec<u32>)> = p.into_values().collect();
        assert_eq!(all, [(3, vec![]), (7, vec![1, 3, 8]), (9, vec![4, 6, 7])]);
    }
}
