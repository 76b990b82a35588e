//! Which runs of one symbol are one task repeating: iterations that share their partners.
//!
//! A run along a thread's program order is a loop only if its iterations talk to the same
//! nodes on other threads: a reader's iterations fed by one writer do, a dispatcher's
//! hand-offs to different workers (or a pipeline stage's items going to different consumers)
//! do not. A run that fails as a whole is cut where the partners change, and its pieces of two
//! or more iterations are runs of their own. Dropping the whole run instead left it to pair
//! contraction, which can only grow a chain one iteration per round: a writer's 4,096 one-byte
//! writes taken by one read, or a client's 200 requests after one lost event, became hundreds
//! of nested types in as many rounds over the whole graph (minutes on 25,000 leaves).

use ahash::{AHashMap, AHashSet};

use scalpel_model::graph::ThreadId;

use super::input::RoundLeaves;
use super::ix::{KindIx, LeafIx, NodeIx};
use super::work::{Work, XEdge};

/// The partners of the nodes in `runs`: the other ends of their edges that are neither
/// program order (strong or weak), sorted and without duplicates.
pub(super) struct Partners(AHashMap<NodeIx, Vec<NodeIx>>);

impl Partners {
    /// Collects the partners of every node in `runs` from the round's edges.
    pub(super) fn new<'a>(
        runs: impl Iterator<Item = &'a Vec<NodeIx>>,
        x: &[XEdge],
        thread_kinds: [KindIx; 2],
    ) -> Partners {
        let members: AHashSet<NodeIx> = runs.flatten().copied().collect();
        let mut partners: AHashMap<NodeIx, Vec<NodeIx>> = AHashMap::new();
        for e in x.iter().filter(|e| !thread_kinds.contains(&e.kind)) {
            if members.contains(&e.u) {
                partners.entry(e.u).or_default().push(e.v);
            }
            if members.contains(&e.v) {
                partners.entry(e.v).or_default().push(e.u);
            }
        }
        for p in partners.values_mut() {
            p.sort_unstable();
            p.dedup();
        }
        Partners(partners)
    }

    /// The pieces of `run` that are one task repeating (see the module docs), in run order.
    pub(super) fn split(&self, run: Vec<NodeIx>) -> Vec<Vec<NodeIx>> {
        let inside: AHashSet<NodeIx> = run.iter().copied().collect();
        let sets: Vec<Vec<NodeIx>> = run
            .iter()
            .map(|n| {
                self.0
                    .get(n)
                    .map(|v| v.iter().copied().filter(|m| !inside.contains(m)).collect())
                    .unwrap_or_default()
            })
            .collect();
        if whole(&sets) {
            return vec![run];
        }
        let mut pieces = Vec::new();
        let mut start = 0;
        for i in 1..=run.len() {
            if i == run.len() || sets[i] != sets[start] {
                if i - start >= 2 {
                    pieces.push(run[start..i].to_vec());
                }
                start = i;
            }
        }
        pieces
    }
}

/// Whether a whole run's partner sets (`sets[i]` of iteration `i`) make it one task repeating.
/// The loop's entry and exit edges attach to its first and last iterations (a connection's
/// hand-off to the worker that then serves its requests), so with three or more iterations
/// those two may have partners beyond the others'.
fn whole(sets: &[Vec<NodeIx>]) -> bool {
    match sets.len() {
        0..=2 => sets.iter().all(|s| *s == sets[0]),
        len => {
            let inner = &sets[1];
            let within = |outer: &Vec<NodeIx>| inner.iter().all(|p| outer.binary_search(p).is_ok());
            sets[2..len - 1].iter().all(|s| s == inner)
                && within(&sets[0])
                && within(&sets[len - 1])
        }
    }
}

/// How many runs of one loop `runs` (each a run of nodes along one thread) are in the
/// recording: two runs on one thread with a part's resumption (see
/// [`MineLeaf::resumes`](super::input::MineLeaf::resumes)) after the first one began and no
/// later than the second begins may be one run the sample's gap cut in two, and count as one.
/// The resumption may lie inside the first run: a thread joined across the gap where its cycle
/// goes on (`sample::seam`) runs on over it, and breaks a few leaves later, where the leaves
/// of other threads that its leaves had edges with were skipped. Runs the gap did not cut are
/// as many as in the whole recording; so is the loop's support.
pub(crate) fn run_support(runs: &[Vec<NodeIx>], work: &Work, leaves: &RoundLeaves<'_>) -> u32 {
    let RoundLeaves {
        all: leaves,
        resumes,
        ..
    } = leaves;
    if resumes.is_empty() {
        return runs.len() as u32;
    }
    let head = |n: NodeIx| work.nodes[n].head;
    let mut spans: Vec<(ThreadId, LeafIx, LeafIx)> = runs
        .iter()
        .filter_map(|r| {
            let (a, b) = (head(*r.first()?), head(*r.last()?));
            Some((leaves[a.index()].thread, a, b))
        })
        .collect();
    spans.sort_unstable();
    let mut n = spans.len() as u32;
    for w in spans.windows(2) {
        let ((t, began, _), (u, start, _)) = (w[0], w[1]);
        let between = |r: &LeafIx| *r > began && *r <= start && leaves[r.index()].thread == t;
        if t == u && resumes.iter().any(between) {
            n -= 1;
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::ix::Port;

    fn stream(u: u32, v: u32) -> XEdge {
        XEdge {
            u: NodeIx::from_raw(u),
            v: NodeIx::from_raw(v),
            kind: KindIx::from_raw(9),
            pu: Port::from_raw(0),
            pv: Port::from_raw(0),
        }
    }

    fn nodes<const N: usize>(ids: [u32; N]) -> Vec<NodeIx> {
        ids.into_iter().map(NodeIx::from_raw).collect()
    }

    const THREAD: [KindIx; 2] = [KindIx::from_raw(0), KindIx::from_raw(1)];

    /// Writes 0..6 on one thread; 0 and 1 feed read 10, 2 feeds 11, 3..6 feed 12.
    #[test]
    fn a_run_is_cut_where_its_partners_change() {
        let run: Vec<NodeIx> = (0..6).map(NodeIx::from_raw).collect();
        let x = [
            stream(0, 10),
            stream(1, 10),
            stream(2, 11),
            stream(3, 12),
            stream(4, 12),
            stream(5, 12),
        ];
        let p = Partners::new([&run].into_iter(), &x, THREAD);
        assert_eq!(p.split(run), vec![nodes([0, 1]), nodes([3, 4, 5])]);
    }

    /// A connection's hand-off into the first iteration and its close from the last keep the
    /// run whole.
    #[test]
    fn entry_and_exit_partners_keep_a_run_whole() {
        let run: Vec<NodeIx> = (0..4).map(NodeIx::from_raw).collect();
        let x = [
            stream(20, 0),
            stream(0, 10),
            stream(1, 10),
            stream(2, 10),
            stream(3, 10),
            stream(3, 21),
        ];
        let p = Partners::new([&run].into_iter(), &x, THREAD);
        assert_eq!(p.split(run.clone()), vec![run]);
    }
}
