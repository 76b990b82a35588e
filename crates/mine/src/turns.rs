//! Where a window of a trace cuts a cycle of two patterns. A closed-loop dialogue runs
//! X → Y → X → Y … (a client's request and the server's answer; a worker's read and its write),
//! and it can be cut into (X, Y) pairs or (Y, X) pairs. In a whole run the two cuts differ only
//! where a run begins and ends, and when their supports are equal the one held by more edges
//! goes first (see `round::pair_proposals`). A window's edges cut runs in the middle, which
//! gives one cut or the other an occurrence or two more, by where the boundary fell: a
//! threadpool window gave (answer to request *i*, request *i + 1*) one more occurrence than
//! (request *i*, its answer), and every later round built on the wrong turn, where the whole
//! trace took the right one. So two candidates over the same two symbols in opposite orders
//! whose supports differ by no more than the window's edges can make (two per thread the edges
//! cut, among the threads they lie on) rank alike when one is held by more links, which then
//! goes first, as in the whole trace. In a trace read whole no thread is cut, and nothing changes.

use ahash::{AHashMap, AHashSet};

use crate::input::RoundLeaves;
use crate::ix::{NodeIx, SymIx};
use crate::work::{Rule, Work};

/// A candidate pair: its support, its rule and its occurrences (see `round::pair_proposals`).
pub(super) type Ranked = (u32, Rule, Vec<(NodeIx, NodeIx)>);

/// Of each two candidates over the same two symbols in opposite orders, ranks the one held by
/// more links at the other's support when that is larger by no more than the window's edges
/// can make (see the module).
pub(super) fn even_reverse_pairs(cands: &mut [Ranked], work: &Work, leaves: &RoundLeaves<'_>) {
    let RoundLeaves {
        all: leaves,
        cut_threads,
        ..
    } = leaves;
    if cut_threads.is_empty() {
        return;
    }
    let mut by_syms: AHashMap<(SymIx, SymIx), Vec<usize>> = AHashMap::new();
    for (i, c) in cands.iter().enumerate() {
        if let Rule::Pair { a, b, .. } = c.1 {
            if a != b {
                by_syms.entry((a, b)).or_default().push(i);
            }
        }
    }
    let mut raise: Vec<(usize, u32)> = Vec::new();
    for (&(a, b), ps) in &by_syms {
        // Each unordered pair of symbols once.
        let Some(qs) = by_syms.get(&(b, a)).filter(|_| a < b) else {
            continue;
        };
        for &p in ps {
            for &q in qs {
                let (np, nq) = (cands[p].0, cands[q].0);
                let mut cut = AHashSet::new();
                for (u, v) in cands[p].2.iter().chain(&cands[q].2) {
                    for n in [u, v] {
                        let t = leaves[work.nodes[*n].head.index()].thread;
                        if cut_threads.contains(&t) {
                            cut.insert(t);
                        }
                    }
                }
                // Only the cut held by more links is raised: between two held alike, the
                // counts decide as in the whole trace.
                let (more, n) = match links(&cands[p].1).cmp(&links(&cands[q].1)) {
                    std::cmp::Ordering::Greater => (p, nq),
                    std::cmp::Ordering::Less => (q, np),
                    std::cmp::Ordering::Equal => continue,
                };
                if np.abs_diff(nq) <= 2 * cut.len() as u32 {
                    raise.push((more, n));
                }
            }
        }
    }
    for (i, n) in raise {
        cands[i].0 = cands[i].0.max(n);
    }
}

fn links(r: &Rule) -> usize {
    match r {
        Rule::Pair { links, .. } => links.len(),
        _ => 0,
    }
}
