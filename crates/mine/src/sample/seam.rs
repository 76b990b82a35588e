//! Where a thread of a sample goes on after the gap between two parts.
//!
//! A thread that loops through a cycle of leaves (write, post, wait, read …) is at some point
//! of it where the first part ends and at another where the next part begins. Two cuts of the
//! cycle (which pairs of it go together) are counted on each piece, and a piece's count of one
//! cut against the other depends on where it begins and ends. In the whole recording that is
//! the thread's start and end only; in a sample each gap adds a piece end and a piece start at
//! points of the cycle that have nothing to do with the recording, and where the whole
//! recording's two cuts are nearly tied (they differ by what the threads' first items made),
//! the gap's ends tip it (LIMITS: 83.3% of leaves in another innermost task).
//!
//! So the later part is entered at the same point of the cycle as the earlier one left off:
//! its leaves are skipped up to one whose predecessors have the types the thread's last leaves
//! before the gap had (the longest such match of up to [`MATCH`] types; which one, by time:
//! see [`seams`]). Those predecessors stand for the leaves before the gap, and an edge from
//! one of them to a leaf kept (program order to the leaf after it, a write to a read that
//! another thread made after its own seam) comes from the leaf it stands for: the edges the
//! gap cut, as the later part shows them. The thread then reads as one shorter run of the same
//! cycle, whose cuts count as the whole recording's do. Other edges of the skipped leaves go
//! with them. Where no such leaf is found, the part is kept whole, and its first leaf only
//! *resumes* the thread.

use ahash::{AHashMap, AHashSet};
use scalpel_model::graph::{Edge, EdgeKind, LeafTypeId, ThreadId};

/// The most leaf types of a thread's end that are matched after a gap: enough to tell apart
/// the points of a cycle of a few steps whose types repeat.
pub(super) const MATCH: usize = 8;

/// How many of a thread's leaves in a part are searched for its seam: several of the longest
/// cycles seen in servers (a request is a few dozen leaves).
const SEARCH: usize = 1 << 12;

/// A thread's end in the parts joined so far.
#[derive(Clone, Debug)]
pub(super) struct Tail {
    /// Its last leaves (at most [`MATCH`]), oldest first: where each is in the sample, and its
    /// type.
    pub leaves: Vec<(u32, LeafTypeId)>,
    /// When the last one started (ns).
    pub last_start: u64,
}

impl Tail {
    /// A thread's end after `leaves` (its leaves kept of a part, in the sample's numbering,
    /// with their types), the last started at `last_start`, following `before` if the thread
    /// had an end already.
    pub(super) fn after(
        before: Option<Tail>,
        leaves: &[(u32, LeafTypeId)],
        last_start: u64,
    ) -> Option<Tail> {
        if leaves.is_empty() {
            return before;
        }
        let mut all = before.map(|t| t.leaves).unwrap_or_default();
        all.extend(leaves.iter().rev().take(MATCH).rev());
        let drop = all.len().saturating_sub(MATCH);
        all.drain(..drop);
        Some(Tail {
            leaves: all,
            last_start,
        })
    }

    fn types(&self) -> Vec<LeafTypeId> {
        self.leaves.iter().map(|&(_, ty)| ty).collect()
    }
}

/// A leaf of a part as the seams read it: its thread and type in the sample, and when it
/// started (ns).
pub(super) type PartLeaf = (ThreadId, LeafTypeId, u64);

/// Where the threads of a part that had leaves before it go on, by the part's leaf indices.
#[derive(Debug, Default)]
pub(super) struct Seams {
    /// Each such thread's first leaf kept.
    first: AHashMap<ThreadId, u32>,
    /// For the skipped leaves that the thread's end before the gap matched, the leaf of that
    /// end they stand for (in the sample's numbering).
    stand_ins: AHashMap<u32, u32>,
}

impl Seams {
    /// Whether leaf `i` of the part, on `thread`, lies before the thread's seam.
    pub(super) fn skips(&self, thread: ThreadId, i: u32) -> bool {
        self.first.get(&thread).is_some_and(|&f| i < f)
    }

    /// The leaf before the gap that skipped leaf `i` stands for, if any: an edge from it to a
    /// leaf kept is the edge the gap cut, and comes from there.
    pub(super) fn stand_in(&self, i: u32) -> Option<u32> {
        self.stand_ins.get(&i).copied()
    }

    /// The kinds of the edges out of the leaves stood for that `edges` (the sample's so far)
    /// already has, by leaf: those the gap did not cut.
    pub(super) fn kinds_had(&self, edges: &[Edge]) -> AHashSet<(u32, EdgeKind)> {
        let stood_for: AHashSet<u32> = self.stand_ins.values().copied().collect();
        edges
            .iter()
            .filter(|e| stood_for.contains(&e.from.get()))
            .map(|e| (e.from.get(), e.kind))
            .collect()
    }
}

/// The seams of a part's `leaves` for the threads with an end in `tails`, the sample's leaves
/// so far ending by `frontier` (ns).
///
/// A thread in a cycle can go on at the start of any iteration that follows the types of its
/// end; which one is chosen by time, alike for every thread, so that two threads that talk
/// are joined at the same request. Each thread's last leaf before the gap began some time
/// before `frontier`; each place a thread can go on implies where the gap's end falls, that
/// much after the leaf before it began. The gap ends where the threads are nearest places of
/// theirs (see [`gap_end`]), and each thread goes on at its place nearest that.
pub(super) fn seams(leaves: &[PartLeaf], tails: &AHashMap<ThreadId, Tail>, frontier: u64) -> Seams {
    let mut searched: AHashMap<ThreadId, Vec<u32>> = AHashMap::new();
    for (i, (t, ..)) in leaves.iter().enumerate() {
        if tails.contains_key(t) {
            let ix = searched.entry(*t).or_default();
            if ix.len() < SEARCH {
                ix.push(i as u32);
            }
        }
    }
    let mut places: Vec<Places> = Vec::new();
    for (t, ix) in searched {
        let tail = &tails[&t];
        let types: Vec<LeafTypeId> = ix.iter().map(|&i| leaves[i as usize].1).collect();
        let Some((k, at)) = matches(&tail.types(), &types) else {
            continue;
        };
        let before = frontier.saturating_sub(tail.last_start);
        // Not bounded by when that leaf ended: the thread's last leaf before the gap is mostly
        // a piece the window's edge cut, typed as the whole leaf but lasting until the edge,
        // and the leaf that matches it may be short (a written pipeline's waiter: 100 ns
        // against 7 µs, which turned 33% of its leaves).
        let implied = |j: usize| leaves[ix[j - 1] as usize].2.saturating_add(before);
        let at = at.into_iter().map(|j| (j, implied(j))).collect();
        places.push(Places {
            thread: t,
            ix,
            matched: k,
            at,
        });
    }
    let Some(end) = gap_end(&places) else {
        return Seams::default();
    };
    let mut out = Seams::default();
    for Places {
        thread: t,
        ix,
        matched: k,
        at,
    } in places
    {
        let Some((j, _)) = nearest(&at, end) else {
            continue;
        };
        out.first.insert(t, ix[j]);
        let tail = &tails[&t].leaves;
        for d in 1..=k {
            out.stand_ins.insert(ix[j - d], tail[tail.len() - d].0);
        }
    }
    out
}

/// When the gap ends: of the times each thread's first place implies, the one that puts the
/// threads nearest a place of theirs, in all (the sum of the distances; the earliest of equal
/// sums). In a cycle all threads keep to (a pipeline), that is the time of the last thread to
/// reach a place, by which every thread has one; a thread that waited long before the gap
/// (its last leaf began long before the gap), whose places imply times far off, moves only
/// itself. A thread with one place only (a main thread that waits for the others to end) is in
/// no cycle and counts for nothing, unless no thread has more.
fn gap_end(places: &[Places]) -> Option<u64> {
    let cycles: Vec<&Places> = places.iter().filter(|p| p.at.len() > 1).collect();
    let counted: Vec<&Places> = if cycles.is_empty() {
        places.iter().collect()
    } else {
        cycles
    };
    let cost = |end: u64| -> u128 {
        counted
            .iter()
            .filter_map(|p| nearest(&p.at, end))
            .map(|(_, d)| u128::from(d))
            .sum()
    };
    counted
        .iter()
        .filter_map(|p| p.at.first().map(|&(_, time)| time))
        .min_by_key(|&end| (cost(end), end))
}

/// The place of `at` (places by index, with the times they imply, in order) nearest `end`,
/// with its distance (the earlier of two as near).
fn nearest(at: &[(usize, u64)], end: u64) -> Option<(usize, u64)> {
    let i = at.partition_point(|&(_, time)| time < end);
    [i.checked_sub(1), Some(i)]
        .into_iter()
        .flatten()
        .filter_map(|i| at.get(i))
        .map(|&(j, time)| (j, time.abs_diff(end)))
        .min_by_key(|&(j, d)| (d, j))
}

/// Where one thread can go on after a gap.
struct Places {
    thread: ThreadId,
    /// Its leaves searched, by the part's leaf index.
    ix: Vec<u32>,
    /// How many of its end's types are matched before each place.
    matched: usize,
    /// Each place, by index into `ix`, with when it implies that the gap ends (ns).
    at: Vec<(usize, u64)>,
}

/// The longest run of `tail`'s last types (at most [`MATCH`]) found in `seq`, and every index
/// of `seq` it is found just before; `None` if not even the last type is found.
fn matches(tail: &[LeafTypeId], seq: &[LeafTypeId]) -> Option<(usize, Vec<usize>)> {
    (1..=tail.len().min(MATCH)).rev().find_map(|k| {
        let want = &tail[tail.len() - k..];
        let at: Vec<usize> = (k..seq.len()).filter(|&j| &seq[j - k..j] == want).collect();
        (!at.is_empty()).then_some((k, at))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tys(v: &[u32]) -> Vec<LeafTypeId> {
        v.iter().map(|&t| LeafTypeId::new(t)).collect()
    }

    #[test]
    fn a_thread_goes_on_where_its_cycle_does() {
        // The cycle a b c d; the first part left off after "b c", the next begins at "d".
        let tail = tys(&[0, 1, 2, 3, 0, 1, 2]);
        assert_eq!(
            matches(&tail, &tys(&[3, 0, 1, 2, 3, 0, 1, 2, 3, 0])),
            Some((7, vec![8]))
        );
        assert_eq!(
            matches(&tail[3..], &tys(&[3, 0, 1, 2, 3, 0, 1, 2, 3])),
            Some((4, vec![4, 8]))
        );
        // A cycle whose types repeat (a b a c): one type matched alone would stop too soon.
        let tail = tys(&[0, 1, 0, 2, 0, 1]);
        assert_eq!(
            matches(&tail, &tys(&[0, 2, 0, 1, 0, 2])),
            Some((4, vec![4]))
        );
    }

    #[test]
    fn a_shorter_match_is_taken_when_no_longer_one_is_found() {
        let tail = tys(&[5, 0, 1]);
        assert_eq!(matches(&tail, &tys(&[2, 0, 1, 3])), Some((2, vec![3])));
        assert_eq!(matches(&tail, &tys(&[2, 1, 3])), Some((1, vec![2])));
        assert_eq!(matches(&tail, &tys(&[2, 3])), None);
        assert_eq!(matches(&[], &tys(&[2, 3])), None);
    }

    #[test]
    fn a_tail_keeps_the_last_leaves_across_parts() {
        let first: Vec<(u32, LeafTypeId)> = (0..10).map(|i| (i, LeafTypeId::new(i))).collect();
        let t = Tail::after(None, &first, 90).unwrap();
        assert_eq!((t.leaves.len(), t.last_start), (MATCH, 90));
        assert_eq!(t.leaves[0], (2, LeafTypeId::new(2)));
        let t = Tail::after(Some(t), &[(20, LeafTypeId::new(7))], 200).unwrap();
        assert_eq!(
            t.leaves[..2],
            [(3, LeafTypeId::new(3)), (4, LeafTypeId::new(4))]
        );
        assert_eq!(t.leaves[MATCH - 1], (20, LeafTypeId::new(7)));
        assert!(Tail::after(None, &[], 0).is_none());
        let kept = Tail::after(Some(t.clone()), &[], 0).unwrap();
        assert_eq!((kept.leaves, kept.last_start), (t.leaves, t.last_start));
    }

    /// Two threads in one cycle of period 100 ns, the second a step behind the first: each
    /// goes on at the same iteration, the one whose time after the first's is what it was
    /// before the gap, not at its first place.
    #[test]
    fn threads_go_on_at_the_same_time() {
        let (p, q) = (ThreadId::new(0), ThreadId::new(1));
        let (a, b) = (LeafTypeId::new(0), LeafTypeId::new(1));
        let tail = |i: u32, start| Tail {
            leaves: vec![(i, a), (i + 1, b)],
            last_start: start,
        };
        // Before the gap: p's last leaf began at 950, q's at 990; the sample ends by 1000.
        let tails: AHashMap<ThreadId, Tail> = [(p, tail(0, 950)), (q, tail(2, 990))].into();
        // After it: p begins a cycle at 5000 (a at 5000, b at 5050), q a step later.
        let mut leaves: Vec<PartLeaf> = Vec::new();
        for c in 0..4u64 {
            leaves.push((p, a, 5_000 + 100 * c));
            leaves.push((p, b, 5_050 + 100 * c));
        }
        leaves.push((q, b, 5_090));
        for c in 1..4u64 {
            leaves.push((q, a, 5_000 + 100 * c));
            leaves.push((q, b, 5_090 + 100 * c));
        }
        let s = seams(&leaves, &tails, 1_000);
        // q's first place, after its a at 5,100 and b at 5,190, implies that the gap ends at
        // 5,200; p's imply 5,100, 5,200 and 5,300: both go on at 5,200.
        assert_eq!(
            s.first[&q], 11,
            "q goes on after its a at 5,100 and b at 5,190"
        );
        assert_eq!(s.first[&p], 4, "p goes on after its b at 5,150");
        assert!(s.skips(p, 3) && !s.skips(p, 4) && !s.skips(q, 11));
        assert_eq!(s.stand_in(3), Some(1));
        assert_eq!(s.stand_in(2), Some(0));
        assert_eq!(s.stand_in(1), None);
        assert_eq!(s.stand_in(10), Some(3));
    }

    fn places(thread: u32, at: &[(usize, u64)]) -> Places {
        Places {
            thread: ThreadId::new(thread),
            ix: Vec::new(),
            matched: 1,
            at: at.to_vec(),
        }
    }

    #[test]
    fn the_nearest_place_is_found_either_side() {
        let at = [(1, 100), (3, 200), (5, 300)];
        assert_eq!(nearest(&at, 0), Some((1, 100)));
        assert_eq!(nearest(&at, 240), Some((3, 40)));
        assert_eq!(
            nearest(&at, 250),
            Some((3, 50)),
            "the earlier of two as near"
        );
        assert_eq!(nearest(&at, 999), Some((5, 699)));
        assert_eq!(nearest(&[], 5), None);
    }

    /// Threads in one cycle of period 100: the gap ends when the last of them reaches a place.
    /// A thread whose places imply times far later (it waited long before the gap) moves only
    /// itself, and a thread with one place counts for nothing.
    #[test]
    fn the_gap_ends_where_the_threads_in_cycles_are_nearest_a_place() {
        let cycle = |t, from: u64| {
            places(
                t,
                &(0..20)
                    .map(|i| (i + 1, from + 100 * i as u64))
                    .collect::<Vec<_>>(),
            )
        };
        let mut all = vec![cycle(0, 1_000), cycle(1, 1_030), cycle(2, 1_100)];
        assert_eq!(gap_end(&all), Some(1_100));
        all.push(cycle(3, 90_000));
        assert_eq!(
            gap_end(&all),
            Some(1_100),
            "the late thread moves only itself"
        );
        all.push(places(4, &[(1, 50_000)]));
        assert_eq!(
            gap_end(&all),
            Some(1_100),
            "a thread with one place counts for nothing"
        );
        assert_eq!(gap_end(&[places(4, &[(1, 50_000)])]), Some(50_000));
        assert_eq!(gap_end(&[]), None);
    }
}
