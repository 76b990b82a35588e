//! One round of mining: the edges between current nodes, the candidates they give (runs of one
//! symbol on a thread, pairs of adjacent nodes), and a deterministic choice of non-overlapping
//! occurrences.

use ahash::{AHashMap, AHashSet};
use scalpel_model::graph::EdgeKind;

use super::ix::{IxVec, NodeIx, Port, RuleIx, SymIx};
use super::runs::Partners;
use super::work::{kind_index, program_kind, weak_kind, Link, Rule, Work, XEdge};

/// A pair key with its own non-overlapping support and its occurrences.
use super::turns::{even_reverse_pairs, Ranked};
use crate::input::RoundLeaves;
use crate::runs::run_support;

/// A loop's key: the body symbol and the links from one iteration to the next.
type LoopKey = (SymIx, Vec<Link>);

/// Which candidates a round considers, in the order they are tried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Phase {
    /// Runs of one symbol joined by strong program order.
    Loops,
    /// Pairs joined by at least one edge that is not weak program order.
    Strong,
    /// Pairs joined only by weak program order.
    Weak,
}

/// A contraction chosen for this round: `parts` of the proposal become one node of `rule`.
pub(super) struct Proposal {
    pub rule: RuleIx,
    pub parts: Vec<NodeIx>,
}

/// The rules proposals refer to, and the proposals.
#[derive(Default)]
pub(super) struct Proposals {
    pub rules: IxVec<RuleIx, Rule>,
    pub list: Vec<Proposal>,
}

/// Current nodes per symbol.
pub(super) fn symbol_counts(work: &Work) -> IxVec<SymIx, u32> {
    let mut counts = IxVec::from_elem(0u32, work.syms.len());
    for n in work.nodes.iter().filter(|n| n.parent.is_none()) {
        counts[n.sym] += 1;
    }
    counts
}

/// Groups of edges with the same (u, v), as index ranges into the sorted edges.
fn groups(x: &[XEdge]) -> impl Iterator<Item = &[XEdge]> {
    x.chunk_by(|a, b| a.u == b.u && a.v == b.v)
}

fn links(g: &[XEdge]) -> Vec<Link> {
    let mut l: Vec<Link> = g
        .iter()
        .map(|e| Link {
            kind: e.kind,
            from: e.pu,
            to: e.pv,
        })
        .collect();
    l.sort_unstable();
    l.dedup();
    l
}

/// Runs of one symbol along strong program order, for symbols with at least `min_support`
/// runs. Nodes of such a symbol outside any run become loops of one iteration, so that a step
/// repeated a varying number of times always appears as the same loop symbol.
pub(super) fn loop_proposals(
    (work, leaves): (&Work, &RoundLeaves<'_>),
    x: &[XEdge],
    min_support: u32,
    banned: &AHashSet<Rule>,
    allow: Option<&AHashSet<Rule>>,
) -> Proposals {
    let prog = program_kind();
    let n = work.nodes.len();
    let (mut succ, mut pred) = (
        IxVec::from_elem(NodeIx::NONE, n),
        IxVec::from_elem(NodeIx::NONE, n),
    );
    // Below "none": a node with two successors (or predecessors) of its symbol.
    const AMBIGUOUS: NodeIx = NodeIx::from_raw(NodeIx::NONE.raw() - 1);
    let mut key_of: AHashMap<NodeIx, Vec<Link>> = AHashMap::new();
    for g in groups(x) {
        let (u, v) = (g[0].u, g[0].v);
        if work.nodes[u].sym != work.nodes[v].sym || !g.iter().any(|e| e.kind == prog) {
            continue;
        }
        succ[u] = if succ[u].is_none() { v } else { AMBIGUOUS };
        pred[v] = if pred[v].is_none() { u } else { AMBIGUOUS };
        key_of.insert(u, links(g));
    }
    let link = |u: NodeIx| -> Option<(NodeIx, &Vec<Link>)> {
        let v = succ[u];
        (v < AMBIGUOUS && pred[v] == u).then(|| (v, &key_of[&u]))
    };
    // Runs in node order; a run stops where the link's key changes or a node is taken.
    let mut used = IxVec::from_elem(false, n);
    let mut runs: AHashMap<LoopKey, Vec<Vec<NodeIx>>> = AHashMap::new();
    let mut starts: Vec<NodeIx> = key_of.keys().copied().collect();
    starts.sort_unstable();
    for s in starts {
        if used[s] {
            continue;
        }
        let Some((_, key)) = link(s) else { continue };
        let mut run = vec![s];
        let mut at = s;
        while let Some((v, k)) = link(at) {
            if k != key || used[v] {
                break;
            }
            run.push(v);
            at = v;
        }
        if run.len() < 2 {
            continue;
        }
        for &r in &run {
            used[r] = true;
        }
        let sym = work.nodes[s].sym;
        runs.entry((sym, key.clone())).or_default().push(run);
    }
    // A run is one task repeating only if its iterations share their partners (`runs`).
    let partners = Partners::new(runs.values().flatten(), x, [prog, weak_kind()]);
    for list in runs.values_mut() {
        *list = std::mem::take(list)
            .into_iter()
            .flat_map(|run| partners.split(run))
            .collect();
    }
    // The best key per symbol, if it has the support.
    let mut keys: Vec<(LoopKey, Vec<Vec<NodeIx>>)> = runs.into_iter().collect();
    keys.sort_unstable_by(|a, b| b.1.len().cmp(&a.1.len()).then_with(|| a.0.cmp(&b.0)));
    let mut out = Proposals::default();
    let mut chosen: AHashMap<SymIx, RuleIx> = AHashMap::new();
    let mut parts: Vec<(RuleIx, Vec<NodeIx>)> = Vec::new();
    let mut in_runs: AHashSet<NodeIx> = AHashSet::new();
    for ((sym, key), list) in keys {
        if run_support(&list, work, leaves) < min_support || chosen.contains_key(&sym) {
            continue;
        }
        let candidate = Rule::Loop {
            body: sym,
            links: key,
        };
        if banned.contains(&candidate) || allow.is_some_and(|a| !a.contains(&candidate)) {
            continue;
        }
        let rule = out.rules.push(candidate);
        chosen.insert(sym, rule);
        in_runs.extend(list.iter().flatten().copied());
        parts.extend(list.into_iter().map(|p| (rule, p)));
    }
    if chosen.is_empty() {
        return out;
    }
    for (i, node) in work.nodes.iter_enumerated() {
        if node.parent.is_none() && !in_runs.contains(&i) {
            if let Some(&rule) = chosen.get(&node.sym) {
                parts.push((rule, vec![i]));
            }
        }
    }
    parts.sort_unstable_by_key(|p| p.1[0]);
    out.list.extend(
        parts
            .into_iter()
            .map(|(rule, parts)| Proposal { rule, parts }),
    );
    out
}

/// Pairs of adjacent nodes, by key (both symbols and every edge between them with its ports),
/// most frequent first. Each symbol takes part in at most one chosen key per round, so that all
/// of a symbol's occurrences are offered to the same rule; a key is chosen when its greedy set
/// of non-overlapping occurrences (in node order) reaches `min_support`. Weak pairs must also
/// cover at least half of each symbol's current nodes: joining across a place where a thread
/// fetched new work is only worth it when it is what nearly always happens. Rules in `banned`
/// (refused earlier for closing cycles) are skipped, so that they do not hold their symbols
/// back from the contractions that can go first. `classes` (the weak phase's merge classes)
/// keeps two nodes of one class from pairing. With `allow`, only those keys are candidates,
/// whatever share of their symbols' nodes they cover (a grammar replayed, see `grammar`).
pub(super) fn pair_proposals(
    (work, leaves): (&Work, &RoundLeaves<'_>),
    x: &[XEdge],
    phase: Phase,
    min_support: u32,
    banned: &AHashSet<Rule>,
    classes: Option<&IxVec<SymIx, SymIx>>,
    allow: Option<&AHashSet<Rule>>,
) -> Proposals {
    let (weak, prog) = (weak_kind(), program_kind());
    let handoff = kind_index(EdgeKind::Handoff);
    let wakes = [
        EdgeKind::Cond,
        EdgeKind::Sem,
        EdgeKind::Futex,
        EdgeKind::Eventfd,
        EdgeKind::Ready,
        EdgeKind::Signal,
    ]
    .map(kind_index);
    // In the miner's edges a queue's take and a futex wake are `cond` (`run::pattern_kind`).
    let hands = [
        EdgeKind::Cond,
        EdgeKind::Sem,
        EdgeKind::Eventfd,
        EdgeKind::Handoff,
    ]
    .map(kind_index);
    let same_class = |a: SymIx, b: SymIx| classes.is_some_and(|c| c[a] == c[b]);
    let mut cands: AHashMap<Rule, Vec<(NodeIx, NodeIx)>> = AHashMap::new();
    for g in groups(x) {
        let (u, v) = (g[0].u, g[0].v);
        let (a, b) = (work.nodes[u].sym, work.nodes[v].sym);
        let all_weak = g.iter().all(|e| e.kind == weak);
        let in_thread = g.iter().any(|e| e.kind == weak || e.kind == prog);
        // Same symbol along program order is a loop, never a pair; and two occurrences of one
        // task (even derived in different orders) are never joined across a fetch of work.
        if (a == b && in_thread) || (all_weak != (phase == Phase::Weak)) || same_class(a, b) {
            continue;
        }
        // A pair held by a hand-off or strong program order is keyed by those edges alone: a
        // weak program-order edge beside them only says that one thread happened to serve both
        // parts (one back thread taking both halves of a fan-out), and keying on it would split
        // one pattern's support by scheduling.
        let mut links = links(g);
        if phase != Phase::Weak {
            links.retain(|l| l.kind != weak);
        }
        // A wake-up beside a hand-off between the same two leaves is the hand-off's own
        // notification: there when the taker was already waiting, not when it found the item
        // queued. Keyed on it, one request pattern split in two by timing (Apache: 1,200 of
        // 4,576 hand-offs came with a cond signal).
        let handoffs: Vec<(Port, Port)> = links
            .iter()
            .filter(|l| l.kind == handoff)
            .map(|l| (l.from, l.to))
            .collect();
        if !handoffs.is_empty() {
            links.retain(|l| !(wakes.contains(&l.kind) && handoffs.contains(&(l.from, l.to))));
        }
        // Which puts of a producer's part reach which takes of a consumer's part, and whether a
        // take woke a waiter or found its item queued, is timing: how many puts one take
        // drained, whether the consumer woke early and waited again (XZ Utils' worker, woken
        // to start a block, waits again for its input). So hand-off links key a pair by their
        // kinds alone, each at both parts' first ports: this part hands work to that one.
        let first = (Port::new(0), Port::new(0));
        let mut moved = false;
        for l in links.iter_mut() {
            if hands.contains(&l.kind) && (l.from, l.to) != first {
                (l.from, l.to) = first;
                moved = true;
            }
        }
        if moved {
            links.sort_unstable();
            links.dedup();
        }
        let rule = Rule::Pair { a, b, links };
        if allow.is_some_and(|al| !al.contains(&rule)) {
            continue;
        }
        cands.entry(rule).or_default().push((u, v));
    }
    // Rank by each key's own non-overlapping support: a key whose occurrences share a node (a
    // node with two successors of one label) counts that node once.
    let mut stamp = IxVec::from_elem(u32::MAX, work.nodes.len());
    let mut cands: Vec<Ranked> = cands
        .into_iter()
        .enumerate()
        .map(|(i, (rule, occ))| {
            let i = i as u32;
            let mut n = 0;
            for &(u, v) in &occ {
                if stamp[u] != i && stamp[v] != i {
                    stamp[u] = i;
                    stamp[v] = i;
                    n += 1;
                }
            }
            (n, rule, occ)
        })
        .collect();
    // Among keys of equal support, the one held together by more edges goes first: a closed-loop
    // client's response → next request edge makes "end of one request + start of the next" as
    // frequent as "start + end of one request", but only the latter shares hand-offs and its
    // thread's program order.
    even_reverse_pairs(&mut cands, work, leaves);
    let n_links = |r: &Rule| match r {
        Rule::Pair { links, .. } => links.len(),
        _ => 0,
    };
    cands.sort_unstable_by(|a, b| {
        b.0.cmp(&a.0)
            .then_with(|| n_links(&b.1).cmp(&n_links(&a.1)))
            .then_with(|| a.1.cmp(&b.1))
    });
    let counts = if phase == Phase::Weak && allow.is_none() {
        symbol_counts(work)
    } else {
        IxVec::new()
    };
    let mut used = IxVec::from_elem(false, work.nodes.len());
    let mut claimed: AHashSet<SymIx> = AHashSet::new();
    // Per symbol, the support of the best key it was kept from this round because its partner
    // was claimed. A symbol waits for that key rather than join a rarer one now: a
    // connection's last request-end leaf, whose usual partner (the response write) was just
    // claimed by the request, must not pair with the dequeue after it (5 occurrences of 400)
    // and so drop out of the request pattern that takes the other 395 next round.
    let mut kept_from: AHashMap<SymIx, u32> = AHashMap::new();
    let mut out = Proposals::default();
    for (support, rule, occ) in cands {
        if support < min_support {
            break;
        }
        let Rule::Pair { a, b, .. } = rule else {
            continue;
        };
        if banned.contains(&rule) {
            continue;
        }
        let (ca, cb) = (claimed.contains(&a), claimed.contains(&b));
        if ca || cb {
            for (x, c) in [(a, ca), (b, cb)] {
                if !c {
                    let best = kept_from.entry(x).or_insert(0);
                    *best = (*best).max(support);
                }
            }
            continue;
        }
        let waits = |x: SymIx| kept_from.get(&x).is_some_and(|&k| k > support);
        if waits(a) || waits(b) {
            continue;
        }
        let mut sel = Vec::new();
        for (u, v) in occ {
            if !used[u] && !used[v] {
                used[u] = true;
                used[v] = true;
                sel.push((u, v));
            }
        }
        let support = sel.len() as u32;
        let covers = |s: SymIx| counts.is_empty() || 2 * support >= counts[s];
        if support < min_support || !covers(a) || !covers(b) {
            for (u, v) in sel {
                used[u] = false;
                used[v] = false;
            }
            continue;
        }
        claimed.insert(a);
        claimed.insert(b);
        let r = out.rules.push(rule);
        out.list.extend(sel.into_iter().map(|(u, v)| Proposal {
            rule: r,
            parts: vec![u, v],
        }));
    }
    out
}
