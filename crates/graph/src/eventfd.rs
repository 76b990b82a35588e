//! Which write an eventfd read took.
//!
//! An eventfd is a counter: a write adds to it, a read takes from it. Counting (the default),
//! a read takes the whole count, so it depends on every write since the read before it. In
//! semaphore mode (`EFD_SEMAPHORE`) a read takes one unit: the oldest write not yet taken, as a
//! semaphore's wait takes the oldest post. A work queue whose items are counted by an eventfd
//! in semaphore mode has readers that find three writes and take one, then two reads that find
//! none; read as counting, the first read got all three items and the other two came from
//! nowhere.
//!
//! The mode is not in the trace (the agent records calls and results, not what their flags
//! mean); it shows in the order of the calls. Units are conserved: in semaphore mode every
//! write that a read found beside another is taken by a later read that finds no write since
//! the read before it. Counting, a read finds nothing new only when a write took its sequence
//! number before the read and made its call after it, a race inside the hooks' few
//! instructions. So an eventfd counts in semaphore mode when such empty reads (after the first
//! read, which may take the initial value) are more than half of the writes found beside
//! another.
//!
//! What it assumes: a write adds one (its value is payload, which is never recorded); units
//! are taken in the order they were given. A semaphore-mode eventfd whose reads always found
//! exactly one write gives the same edges either way.

use std::collections::VecDeque;

/// How an eventfd's reads take its count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Mode {
    /// A read takes every write since the previous read.
    Counting,
    /// A read takes the oldest write not yet taken.
    Semaphore,
}

/// One successful transfer, in sequence order: the leaf it cut, and whether it was a read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Transfer {
    pub leaf: u32,
    pub read: bool,
}

/// The mode the transfers show (see the module docs).
pub(super) fn mode(transfers: &[Transfer]) -> Mode {
    let (mut pending, mut reads, mut empty, mut beside) = (0u64, 0u64, 0u64, 0u64);
    for t in transfers {
        if !t.read {
            pending += 1;
            continue;
        }
        if pending == 0 && reads > 0 {
            empty += 1;
        }
        beside += pending.saturating_sub(1);
        pending = 0;
        reads += 1;
    }
    if empty > 0 && empty * 2 > beside {
        Mode::Semaphore
    } else {
        Mode::Counting
    }
}

/// What the transfers pair into.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Paired {
    /// (write's leaf, read's leaf).
    pub edges: Vec<(u32, u32)>,
    /// Reads that took no traced write (the initial value, or a write before recording).
    pub from_outside: Vec<u32>,
    /// Writes no read took.
    pub untaken: Vec<u32>,
}

/// Pairs writes with the reads that took them, in `mode`.
pub(super) fn pair(transfers: &[Transfer], mode: Mode) -> Paired {
    let mut out = Paired::default();
    let mut pending: VecDeque<u32> = VecDeque::new();
    for t in transfers {
        if !t.read {
            pending.push_back(t.leaf);
            continue;
        }
        if pending.is_empty() {
            out.from_outside.push(t.leaf);
        }
        let took = match mode {
            Mode::Counting => pending.len(),
            Mode::Semaphore => pending.len().min(1),
        };
        out.edges.extend(pending.drain(..took).map(|w| (w, t.leaf)));
    }
    out.untaken = pending.into();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `w` a write, `r` a read; leaves numbered by position.
    fn calls(s: &str) -> Vec<Transfer> {
        s.chars()
            .enumerate()
            .map(|(i, c)| Transfer {
                leaf: i as u32,
                read: c == 'r',
            })
            .collect()
    }

    #[test]
    fn a_queue_counted_in_semaphore_mode_gives_each_read_one_write() {
        // Three items put, three workers take one each, then the same again.
        let t = calls("wwwrrrwwrr");
        assert_eq!(mode(&t), Mode::Semaphore);
        let p = pair(&t, Mode::Semaphore);
        assert_eq!(p.edges, vec![(0, 3), (1, 4), (2, 5), (6, 8), (7, 9)]);
        assert!(p.from_outside.is_empty() && p.untaken.is_empty());
    }

    #[test]
    fn a_wakeup_counter_read_whole_takes_every_write_since_the_last_read() {
        // A notify eventfd: several completions, one read for all of them, and one empty read
        // from a race in the hooks' window.
        let t = calls("wwwrwwrwwwwrrw");
        assert_eq!(mode(&t), Mode::Counting);
        let p = pair(&t, Mode::Counting);
        assert_eq!(p.edges.len(), 9);
        assert!(p.edges.contains(&(2, 3)) && p.edges.contains(&(10, 11)));
        assert_eq!(p.from_outside, vec![12]);
        assert_eq!(p.untaken, vec![13]);
    }

    #[test]
    fn one_write_per_read_is_the_same_either_way() {
        let t = calls("rwrwrwr");
        assert_eq!(mode(&t), Mode::Counting);
        assert_eq!(pair(&t, Mode::Counting), pair(&t, Mode::Semaphore));
        // The first read took the initial value: from outside the trace.
        assert_eq!(pair(&t, Mode::Counting).from_outside, vec![0]);
    }
}
