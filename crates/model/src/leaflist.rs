//! An occurrence's leaf ids, held inline when there are few: most occurrences of a real
//! server's tasks have two to four leaves, and a vector each cost a heap block of 32 bytes
//! besides its 24, about 13 MiB for the 420k occurrences of a 1.77M-event nginx recording.

use std::ops::Deref;

use serde::{Deserialize, Serialize};
use smallvec::SmallVec;

use crate::graph::LeafId;

/// Leaf ids, in the order given (an occurrence keeps them ascending). Reads as a slice;
/// serialized as a sequence, like a vector.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct LeafList(SmallVec<[LeafId; INLINE]>);

/// Ids held without a heap block.
const INLINE: usize = 4;

impl LeafList {
    /// The ids as a slice.
    pub fn as_slice(&self) -> &[LeafId] {
        &self.0
    }

    /// Sorts the ids.
    pub fn sort_unstable(&mut self) {
        self.0.sort_unstable();
    }
}

impl Deref for LeafList {
    type Target = [LeafId];

    fn deref(&self) -> &[LeafId] {
        &self.0
    }
}

impl From<Vec<LeafId>> for LeafList {
    fn from(mut v: Vec<LeafId>) -> LeafList {
        if v.len() <= INLINE {
            return LeafList(SmallVec::from_slice(&v));
        }
        v.shrink_to_fit();
        LeafList(SmallVec::from_vec(v))
    }
}

impl FromIterator<LeafId> for LeafList {
    fn from_iter<I: IntoIterator<Item = LeafId>>(iter: I) -> LeafList {
        let mut l: SmallVec<[LeafId; INLINE]> = iter.into_iter().collect();
        l.shrink_to_fit();
        LeafList(l)
    }
}

impl<'a> IntoIterator for &'a LeafList {
    type Item = &'a LeafId;
    type IntoIter = std::slice::Iter<'a, LeafId>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_serializes_like_a_vector() {
        for n in [0u32, 1, 4, 5, 40] {
            let v: Vec<LeafId> = (0..n).rev().map(LeafId::new).collect();
            let mut l = LeafList::from(v.clone());
            assert_eq!(l.as_slice(), v.as_slice());
            assert_eq!(
                serde_json::to_string(&l).unwrap(),
                serde_json::to_string(&v).unwrap()
            );
            let back: LeafList = serde_json::from_str(&serde_json::to_string(&v).unwrap()).unwrap();
            assert_eq!(back, l);
            l.sort_unstable();
            assert!(l.windows(2).all(|w| w[0] < w[1]));
            assert_eq!(l.iter().count(), n as usize);
        }
    }
}
