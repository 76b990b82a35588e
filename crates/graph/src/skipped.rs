//! A loop head passed without waiting: the leaf that went through it is new work too.
//!
//! A thread whose loop head is a condition or futex wait (see [`super::weak`]) calls it only when
//! its predicate is false: `while (!ready) pthread_cond_wait(…)`. When the predicate already
//! holds (a free worker, an item queued), the thread goes straight on, and what would have been
//! two leaves, the one that ends at the wait and the one after it, run as one leaf from the call
//! before the wait to the call after it. That leaf holds the head's crossing, so the program
//! edge into it is weak, like the edge out of a wait at the head, and its type is the one the
//! leaf after a wait gets (its end alone, see [`super::retype`]): whether the thread had to wait
//! is timing, not structure.
//!
//! Without it, such a leaf was a type of its own, strongly after the last item's work: `xz -T2`'s
//! main thread, finding a worker free when it had fed a block's last piece, signalled the next
//! block in the leaf that began at the last piece's signal, and each such block was joined to
//! the next (9 of 165 blocks in pairs, the block task at 89% top-level).
//!
//! The calls are told by their sites (operation and call stack): a leaf from the site that
//! begins a leaf ending at the head to the site that ends the leaf after that head wait, where
//! the thread was seen to wait between the two. A semaphore wait or a read is called every
//! time, so a head of that kind is never passed without its call.

use std::hash::Hash;

use ahash::AHashSet;
use scalpel_model::format::Op;

/// Whether a wait at operation `op` is made only when its predicate is false.
pub(super) fn skippable(op: Op) -> bool {
    matches!(
        op,
        Op::CondWait | Op::CondTimedwait | Op::CondClockwait | Op::FutexWait
    )
}

/// The leaves (by index) that passed the loop head without waiting. `at_head(i)`: leaf `i` ends
/// at the head; `site(i)`: the site of the call that ends leaf `i` (and so starts leaf `i + 1`),
/// `None` when no call ends it.
pub(super) fn passed_heads<S: Hash + Eq>(
    n: usize,
    at_head: impl Fn(usize) -> bool,
    site: impl Fn(usize) -> Option<S>,
) -> Vec<usize> {
    // (the call before a head wait, the call after it), for every wait at the head with a call
    // on both sides that is not the head again (a wake-up that found nothing waits again).
    let around = |i: usize| -> Option<(S, S)> {
        if i == 0 || i + 1 >= n || at_head(i - 1) || at_head(i + 1) {
            return None;
        }
        Some((site(i - 1)?, site(i + 1)?))
    };
    let pairs: AHashSet<(S, S)> = (0..n).filter(|&i| at_head(i)).filter_map(around).collect();
    if pairs.is_empty() {
        return Vec::new();
    }
    (1..n)
        .filter(|&j| !at_head(j) && !at_head(j - 1))
        .filter(|&j| {
            let (Some(before), Some(after)) = (site(j - 1), site(j)) else {
                return false;
            };
            pairs.contains(&(before, after))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::passed_heads;

    /// Sites by letter; `H` is the head.
    fn passed(sites: &str) -> Vec<usize> {
        let s: Vec<char> = sites.chars().collect();
        passed_heads(s.len(), |i| s[i] == 'H', |i| (s[i] != '.').then_some(s[i]))
    }

    #[test]
    fn a_leaf_from_the_call_before_the_head_to_the_call_after_it_passed_the_head() {
        // a b H c | a b c (no wait) | a b H c
        assert_eq!(passed("abHcabcabHc"), vec![6]);
    }

    #[test]
    fn waits_again_at_the_head_and_calls_elsewhere_are_not_passes() {
        // The second wait at the head is a wake-up that found nothing: no pair (H, c) or (b, H).
        assert_eq!(passed("abHHcabdc"), Vec::<usize>::new());
        // b then c, but never around a wait: no head wait has b before and c after.
        assert_eq!(passed("abHdbc"), Vec::<usize>::new());
        // A leaf no call ends matches nothing.
        assert_eq!(passed("abHc.c"), Vec::<usize>::new());
    }
}
