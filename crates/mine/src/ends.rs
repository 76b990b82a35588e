//! What the ends of a recording can make is no evidence.
//!
//! Two candidates that share a symbol compete: the one that goes first takes the symbol's nodes
//! this round. Where they are two ways to cut one cycle (a dialogue X → Y → X … into (X, Y) or
//! (Y, X) pairs; a pipeline's steps X → Y → Z into (X, Y) or (Y, Z)), each pairs nearly every
//! node of the symbol they share, and their counts differ only by where each thread's run of
//! the cycle begins and ends: a run cut anywhere holds at most one occurrence more of one cut
//! than of the other. Such a difference says where the recording (or a window of it, or a part
//! of a sample) began and stopped, not what the program does. Deciding by it nested a written
//! pipeline's requests one way in the whole trace (a margin of 4 in 714,288, from the
//! pipelines' first items) and the other way in a sample whose gap cut each pipeline twice
//! more: 83% of leaves apart. It would also make two recordings of one program, stopped at other
//! moments, nest and name their tasks apart.
//!
//! So where each of two competing candidates pairs all of the shared symbol's nodes but at most
//! one per part of a thread they lie on (a thread is one part; a thread a sample joins from two
//! windows is two), the one held by more links goes first (a request and its answer share
//! hand-offs that an answer and the next request do not), and between two held alike, the one
//! first by content: a hash of the leaf types' names and boundaries and of the links, the same
//! in any graph of the program ([`contents`]). A step that is there only sometimes pairs fewer
//! nodes than that, and the counts decide, as they do for any larger difference.

use ahash::{AHashMap, AHashSet};
use scalpel_model::fnv::Fnv;
use scalpel_model::graph::ThreadId;

use crate::input::RoundLeaves;
use crate::ix::{IxVec, NodeIx, SymIx};
use crate::work::{Rule, Work};

/// A candidate pair: its support, its rule and its occurrences (see `round::pair_proposals`).
pub(super) type Ranked = (u32, Rule, Vec<(NodeIx, NodeIx)>);

/// The most candidates of one symbol compared with each other: the rest are far behind in
/// support or rarely matter, and comparing every two of thousands would cost the square.
const MAX_RIVALS: usize = 64;

/// Each symbol's content: for a leaf type, its key (`RoundLeaves::type_keys`); for a rule, its
/// parts' contents and its links. Rules are numbered after their parts, so one pass in order
/// fills it.
pub(super) fn contents(work: &Work, leaves: &RoundLeaves<'_>) -> IxVec<SymIx, u64> {
    let mut out: IxVec<SymIx, u64> = IxVec::from_elem(0, work.syms.len());
    for (s, sym) in work.syms.iter_enumerated() {
        let mut h = Fnv::new();
        match &sym.rule {
            Rule::Leaf(t) => {
                h.u64(0)
                    .u64(leaves.type_keys.get(t.index()).copied().unwrap_or(0));
            }
            Rule::Pair { a, b, links } => {
                h.u64(1).u64(out[*a]).u64(out[*b]);
                for l in links {
                    h.u64(u64::from(l.kind.raw()))
                        .u64(u64::from(l.from.raw()))
                        .u64(u64::from(l.to.raw()));
                }
            }
            Rule::Loop { body, links } => {
                h.u64(2).u64(out[*body]);
                for l in links {
                    h.u64(u64::from(l.kind.raw()))
                        .u64(u64::from(l.from.raw()))
                        .u64(u64::from(l.to.raw()));
                }
            }
        }
        out[s] = h.get();
    }
    out
}

/// A pair's links.
pub(super) fn links(r: &Rule) -> usize {
    match r {
        Rule::Pair { links, .. } => links.len(),
        _ => 0,
    }
}

/// The order candidates of equal support go in: more links first, then by content, then by
/// rule (two rules of one content differ only in how they were derived).
pub(super) fn tie_order(a: &Ranked, b: &Ranked, content: &IxVec<SymIx, u64>) -> std::cmp::Ordering {
    let key = |r: &Rule| match r {
        Rule::Pair { a, b, .. } => (content[*a], content[*b]),
        _ => (0, 0),
    };
    links(&b.1)
        .cmp(&links(&a.1))
        .then_with(|| key(&a.1).cmp(&key(&b.1)))
        .then_with(|| a.1.cmp(&b.1))
}

/// Raises, of each two competing candidates that differ only by where their threads' runs
/// began and ended, the one first in [`tie_order`] to the other's support (see the module).
pub(super) fn even_near_ties(
    cands: &mut [Ranked],
    work: &Work,
    leaves: &RoundLeaves<'_>,
    content: &IxVec<SymIx, u64>,
) {
    let mut by_sym: AHashMap<SymIx, Vec<usize>> = AHashMap::new();
    for (i, c) in cands.iter().enumerate() {
        if let Rule::Pair { a, b, .. } = c.1 {
            by_sym.entry(a).or_default().push(i);
            if b != a {
                by_sym.entry(b).or_default().push(i);
            }
        }
    }
    let most = leaves.most_parts();
    let counts = work.top_counts();
    let mut threads: AHashMap<usize, Vec<ThreadId>> = AHashMap::new();
    let mut raise: Vec<(usize, u32)> = Vec::new();
    let mut syms: Vec<SymIx> = by_sym.keys().copied().collect();
    syms.sort_unstable();
    for s in syms {
        let list = &mut by_sym.get_mut(&s).expect("a key of the map");
        list.sort_unstable_by(|&p, &q| cands[q].0.cmp(&cands[p].0).then(p.cmp(&q)));
        list.truncate(MAX_RIVALS);
        for (k, &p) in list.iter().enumerate() {
            for &q in &list[k + 1..] {
                let (np, nq) = (cands[p].0, cands[q].0);
                if np.abs_diff(nq) > most || np == nq {
                    continue;
                }
                let parts = {
                    let tp = thread_list(&mut threads, p, cands, work, leaves).clone();
                    let tq = thread_list(&mut threads, q, cands, work, leaves);
                    leaves.parts(tp.iter().chain(tq.iter()))
                };
                // Two cuts of one cycle each pair nearly every node of the symbol they share;
                // a step that is there only sometimes is no other cut of it.
                let short = |n: u32| counts[s].saturating_sub(n) > parts;
                if short(np) || short(nq) {
                    continue;
                }
                // `p` has the larger support; the other is raised only if it goes first.
                if tie_order(&cands[q], &cands[p], content).is_lt() {
                    raise.push((q, np));
                }
            }
        }
    }
    for (i, n) in raise {
        cands[i].0 = cands[i].0.max(n);
    }
}

/// The threads candidate `i`'s occurrences lie on, sorted, worked out once.
fn thread_list<'m>(
    memo: &'m mut AHashMap<usize, Vec<ThreadId>>,
    i: usize,
    cands: &[Ranked],
    work: &Work,
    leaves: &RoundLeaves<'_>,
) -> &'m Vec<ThreadId> {
    memo.entry(i).or_insert_with(|| {
        let mut set: AHashSet<ThreadId> = AHashSet::new();
        for (u, v) in &cands[i].2 {
            for n in [u, v] {
                set.insert(leaves.all[work.nodes[*n].head.index()].thread);
            }
        }
        let mut v: Vec<ThreadId> = set.into_iter().collect();
        v.sort_unstable();
        v
    })
}
