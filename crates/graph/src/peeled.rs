//! A loop's peeled first call: the loop's own call, reached from a copy of its first iteration.
//!
//! A compiler that peels or rotates a loop (or inlines the callee into both copies) makes the
//! first iteration's call from other code than the later ones: the same operation on the same
//! object, with a stack that differs from the loop's in exactly one return address. Whatever
//! the loop's call site tells (a worker's loop head in `weak`, a consumer's dequeue site in
//! `queues`), the peeled copy tells too, though nothing at the copy shows it: it ran once, and
//! under load it may not have waited at all (the work was there before the worker started).
//!
//! The rule, for one thread: a site reached exactly once, before the first visit of a known
//! site with the same operation and object whose stack is its own but for one return address,
//! is that known site's first visit.

use ahash::AHashMap;
use std::hash::Hash;

/// Whether two stacks have the same depth and differ in exactly one frame.
pub(super) fn one_frame_apart(a: &[u64], b: &[u64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).filter(|(x, y)| x != y).count() == 1
}

/// For each call of one thread, in its order (`calls[i]` = (key, stack id), the key standing for
/// operation and object), the site it counts as: its own stack id, or, for a peeled copy of a
/// site in `known`, that site's (see the module docs). `frames` gives a stack id's return
/// addresses; calls whose stack has none keep their own.
pub(super) fn as_known_sites<'a, K: Eq + Hash + Copy>(
    calls: &[(K, u32)],
    known: &[(K, u32)],
    frames: &dyn Fn(u32) -> Option<&'a [u64]>,
) -> Vec<u32> {
    let mut out: Vec<u32> = calls.iter().map(|&(_, s)| s).collect();
    if known.is_empty() {
        return out;
    }
    // Per site: how many calls reached it, and the first.
    let mut visits: AHashMap<(K, u32), (usize, usize)> = AHashMap::new();
    for (i, &c) in calls.iter().enumerate() {
        visits.entry(c).or_insert((0, i)).0 += 1;
    }
    let first = |site: &(K, u32)| visits.get(site).map_or(usize::MAX, |v| v.1);
    for (&(key, stack), &(count, at)) in &visits {
        let Some(mine) = frames(stack).filter(|_| count == 1 && !known.contains(&(key, stack)))
        else {
            continue;
        };
        let twin = known.iter().find(|&&(k, s)| {
            k == key && first(&(k, s)) > at && frames(s).is_some_and(|f| one_frame_apart(f, mine))
        });
        if let Some(&(_, s)) = twin {
            out[at] = s;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(s: u32) -> Option<&'static [u64]> {
        match s {
            1 => Some(&[0x10, 0x200, 0x300]), // the loop's take
            2 => Some(&[0x11, 0x200, 0x300]), // its peeled copy, one address apart
            3 => Some(&[0x12, 0x201, 0x300]), // two addresses apart
            _ => None,
        }
    }

    #[test]
    fn a_copy_reached_once_before_the_loop_is_the_loops_first_visit() {
        let calls = [(7, 2), (7, 1), (7, 1)];
        assert_eq!(as_known_sites(&calls, &[(7, 1)], &frames), vec![1, 1, 1]);
    }

    #[test]
    fn a_copy_after_the_loop_or_reached_twice_or_elsewhere_keeps_its_site() {
        let known = [(7, 1)];
        assert_eq!(
            as_known_sites(&[(7, 1), (7, 2)], &known, &frames),
            vec![1, 2]
        );
        assert_eq!(
            as_known_sites(&[(7, 2), (7, 2), (7, 1)], &known, &frames),
            vec![2, 2, 1]
        );
        assert_eq!(
            as_known_sites(&[(8, 2), (7, 1)], &known, &frames),
            vec![2, 1]
        );
        assert_eq!(
            as_known_sites(&[(7, 3), (7, 1)], &known, &frames),
            vec![3, 1]
        );
        assert_eq!(
            as_known_sites(&[(7, 9), (7, 1)], &known, &frames),
            vec![9, 1]
        );
    }
}
