//! Exact canonical forms of rule expansions, so that rules built in different orders but
//! standing for the same subgraph become one task type.
//!
//! A pair rule expands, through the pair rules below it, into *units* (leaf types and loops,
//! which stay opaque) joined by labelled edges at ports. Its canonical form is the smallest
//! encoding (unit labels in order, then the sorted edges) over the unit orders that
//! individualization and refinement reach: colour refinement by each unit's labelled
//! neighbourhood, then, while some colour is shared, each unit of the first shared colour is
//! singled out in turn. Equal encodings mean isomorphic expansions (the encoding *is* the graph);
//! hashes only bucket encodings. The search is capped ([`SEARCH_LEAVES`]); a graph with more
//! symmetry than that keeps the best encoding found, which can only miss a merge, never make a
//! wrong one.

use ahash::AHashMap;

use super::canon_tree::{tree_canonical, UEdge, UnitIx};
use super::ix::{IxVec, KindIx, Port, SymIx};
use super::work::{Link, Rule, Work};

/// Orderings tried per rule at most.
pub const SEARCH_LEAVES: usize = 4096;
/// Refinement work per rule at most (units times refinement rounds, summed over the search):
/// the leaves alone do not bound the search, since each costs a refinement that can take as many
/// rounds as the graph is long. Past it, the search stops as soon as it has one ordering.
pub(super) const SEARCH_WORK: u64 = 1 << 22;
/// Units singled out one after another at most: the search recursion stays this shallow
/// whatever the input (each level is a frame on the miner thread's stack).
const MAX_DEPTH: usize = 128;
/// Port spaces larger than this get no canonical port map (their rules are not merged).
const MAX_SPACE: u32 = 1 << 16;

const TAG_LEAF: u64 = 1;
const TAG_LOOP: u64 = 2;
const TAG_GROUP: u64 = 3;

/// The merge classes of all symbols.
pub(super) struct Classes {
    /// Class of each symbol: the smallest symbol id with the same canonical form.
    pub of: IxVec<SymIx, SymIx>,
}

/// Canonical port of each derivation port of a symbol.
type PortMap = IxVec<Port, Port>;

/// Each symbol's [`PortMap`], if it has one.
type PortMaps = IxVec<SymIx, Option<PortMap>>;

/// A unit's view of an edge: direction, kind, its port, the other's port, the other unit.
type Adj = (u8, u8, u32, u32, UnitIx);

/// Each unit's view of its edges.
type Adjs = IxVec<UnitIx, Vec<Adj>>;

/// A colour per unit (a rank: colours are numbered from 0 without gaps).
type Colours = IxVec<UnitIx, u32>;

/// An encoding and the unit at each canonical position.
type Canonical = (Vec<u64>, Vec<UnitIx>);

struct Expansion {
    /// (unit symbol, derivation offset: its first port's)
    units: Vec<(SymIx, u32)>,
    edges: Vec<(KindIx, Port, Port)>,
}

fn expand(work: &Work, sym: SymIx) -> Expansion {
    let mut e = Expansion {
        units: Vec::new(),
        edges: Vec::new(),
    };
    let mut stack = vec![(sym, 0u32)];
    // Depth-first, first part first, so units come in derivation order.
    while let Some((s, base)) = stack.pop() {
        match &work.syms[s].rule {
            Rule::Pair { a, b, links } => {
                let sa = work.syms[*a].space;
                for l in links {
                    e.edges
                        .push((l.kind, l.from.shifted(base), l.to.shifted(base + sa)));
                }
                stack.push((*b, base + sa));
                stack.push((*a, base));
            }
            _ => e.units.push((s, base)),
        }
    }
    e
}

/// Every symbol's class, kept from round to round: a symbol's rule never changes once made
/// and depends only on older symbols, so each round computes the classes of its new symbols
/// alone. (Recomputing all of them every round took 83% of mining on an nginx recording.)
#[derive(Default)]
pub(super) struct ClassCache {
    of: IxVec<SymIx, SymIx>,
    maps: PortMaps,
    seen: AHashMap<Vec<u64>, SymIx>,
}

impl ClassCache {
    /// The classes of every symbol of `work`, computing those of symbols new since last time.
    pub(super) fn update(&mut self, work: &Work) -> Classes {
        let n = work.syms.len();
        for s in (self.of.len()..n).map(SymIx::new) {
            self.maps.push(None);
            let key: Option<Vec<u64>> = match &work.syms[s].rule {
                Rule::Leaf(t) => {
                    self.maps[s] = Some(IxVec::from_vec(vec![Port::new(0)]));
                    Some(vec![TAG_LEAF, u64::from(t.get())])
                }
                Rule::Loop { body, links } => loop_key(work, &self.of, &self.maps, *body, links)
                    .map(|(k, m)| {
                        self.maps[s] = Some(m);
                        k
                    }),
                Rule::Pair { .. } => group_key(work, &self.of, &self.maps, s).map(|(k, m)| {
                    self.maps[s] = Some(m);
                    k
                }),
            };
            let class = match key {
                Some(k) => *self.seen.entry(k).or_insert(s),
                None => s,
            };
            self.of.push(class);
        }
        Classes {
            of: self.of.clone(),
        }
    }
}

/// Canonical port of derivation port `p` of unit symbol `u`.
fn unit_port(work: &Work, maps: &PortMaps, u: SymIx, p: Port) -> Option<Port> {
    maps[u]
        .as_ref()?
        .get(p)
        .copied()
        .or_else(|| (work.syms[u].space == 1).then_some(Port::new(0)))
}

fn loop_key(
    work: &Work,
    of: &IxVec<SymIx, SymIx>,
    maps: &PortMaps,
    body: SymIx,
    links: &[Link],
) -> Option<(Vec<u64>, PortMap)> {
    let bmap = maps[body].as_ref()?;
    let space = work.syms[body].space;
    if space > MAX_SPACE {
        return None;
    }
    let mut l: Vec<(KindIx, Port, Port)> = links
        .iter()
        .map(|k| Some((k.kind, *bmap.get(k.from)?, *bmap.get(k.to)?)))
        .collect::<Option<_>>()?;
    l.sort_unstable();
    let mut key = vec![TAG_LOOP, u64::from(of[body].raw()), l.len() as u64];
    for (k, a, b) in l {
        key.extend([u64::from(k.raw()), u64::from(a.raw()), u64::from(b.raw())]);
    }
    let map = bmap.clone();
    Some((key, map))
}

fn group_key(
    work: &Work,
    of: &IxVec<SymIx, SymIx>,
    maps: &PortMaps,
    s: SymIx,
) -> Option<(Vec<u64>, PortMap)> {
    if work.syms[s].space > MAX_SPACE {
        return None;
    }
    let exp = expand(work, s);
    let offsets: Vec<u32> = exp.units.iter().map(|u| u.1).collect();
    // The unit a derivation port lies in, and its canonical port there (the unit graph of
    // `canon_tree` is raw numbers: units, kinds and ports of its own).
    let locate = |p: Port| -> Option<(UnitIx, u32)> {
        let i = offsets.partition_point(|&o| o <= p.raw()).checked_sub(1)?;
        let (u, off) = exp.units[i];
        Some((
            UnitIx::new(i),
            unit_port(work, maps, u, Port::from_raw(p.raw() - off))?.raw(),
        ))
    };
    let mut edges: Vec<UEdge> = Vec::with_capacity(exp.edges.len());
    for &(k, a, b) in &exp.edges {
        let (ua, pa) = locate(a)?;
        let (ub, pb) = locate(b)?;
        edges.push((ua, ub, k.raw(), pa, pb));
    }
    let labels: Vec<u64> = exp.units.iter().map(|u| u64::from(of[u.0].raw())).collect();
    let (mut enc, order) = canonical(&labels, &edges);
    // order[c] = the unit at canonical position c.
    let spaces: IxVec<UnitIx, u32> = exp.units.iter().map(|u| work.syms[u.0].space).collect();
    let mut canon_offset: IxVec<UnitIx, u32> = IxVec::from_elem(0, labels.len());
    let mut acc = 0;
    for &u in &order {
        canon_offset[u] = acc;
        acc += spaces[u];
    }
    let mut map = IxVec::from_elem(Port::new(0), work.syms[s].space as usize);
    for (i, &(u, off)) in exp.units.iter().enumerate() {
        let i = UnitIx::new(i);
        for p in (0..spaces[i]).map(Port::from_raw) {
            map[p.shifted(off)] = unit_port(work, maps, u, p)?.shifted(canon_offset[i]);
        }
    }
    enc.insert(0, TAG_GROUP);
    Some((enc, map))
}

/// The canonical encoding of a labelled unit graph and the unit order that gives it.
pub(super) fn canonical(labels: &[u64], edges: &[UEdge]) -> Canonical {
    match tree_canonical(labels, edges) {
        Some(tree) => tree,
        None => search_canonical(labels, edges),
    }
}

/// The canonical encoding by individualization and refinement, for any unit graph.
pub(super) fn search_canonical(labels: &[u64], edges: &[UEdge]) -> Canonical {
    let n = labels.len();
    let mut adj: Adjs = IxVec::from_elem(Vec::new(), n);
    for &(a, b, k, pa, pb) in edges {
        adj[a].push((0, k, pa, pb, b));
        adj[b].push((1, k, pb, pa, a));
    }
    let mut budget = Budget {
        leaves: SEARCH_LEAVES,
        work: 0,
        depth: 0,
    };
    let colours = refine(&rank(labels), &adj, &mut budget);
    let twins = twin_classes(labels, &adj);
    let mut best: Option<Canonical> = None;
    let g = Searched {
        labels,
        edges,
        adj: &adj,
        twins: &twins,
    };
    search(colours, &g, &mut best, &mut budget);
    best.unwrap_or_default()
}

/// What the search may still spend, and how deep it is.
struct Budget {
    leaves: usize,
    work: u64,
    depth: usize,
}

impl Budget {
    fn spent(&self) -> bool {
        self.leaves == 0 || self.work > SEARCH_WORK
    }
}

/// Units with the same label and the same neighbours through the same edges (false twins): an
/// automorphism swaps any two of them and fixes everything else, so singling out one gives the
/// same orderings as singling out the other. A fan-out of many identical units (one task that
/// starts the same step many times) would otherwise cost a factorial search. Returns a class per
/// unit: the first unit with its neighbourhood.
fn twin_classes(labels: &[u64], adj: &Adjs) -> IxVec<UnitIx, UnitIx> {
    let mut first: AHashMap<(u64, Vec<Adj>), UnitIx> = AHashMap::new();
    adj.iter_enumerated()
        .map(|(u, nb)| {
            let mut key = nb.clone();
            key.sort_unstable();
            *first.entry((labels[u.index()], key)).or_insert(u)
        })
        .collect()
}

/// Each unit's key's rank among the distinct keys (`keys[u]`: unit `u`'s).
fn rank<T: Ord + Clone>(keys: &[T]) -> Colours {
    let mut sorted: Vec<T> = keys.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    keys.iter()
        .map(|k| sorted.binary_search(k).unwrap_or(0) as u32)
        .collect()
}

fn distinct(c: &Colours) -> usize {
    let mut v: Vec<u32> = c.iter().copied().collect();
    v.sort_unstable();
    v.dedup();
    v.len()
}

/// Colour refinement: split colours by the labelled colours of each unit's neighbours.
///
/// Each round's signatures (a unit's colour and its sorted neighbourhood) live in one flat
/// buffer and are ranked by sorting unit indices: the same ranks as sorting the distinct
/// signatures themselves, without a vector per unit (the search refines thousands of times).
fn refine(start: &Colours, adj: &Adjs, budget: &mut Budget) -> Colours {
    let n = adj.len();
    let mut c = start.clone();
    let mut classes = distinct(&c);
    let edges: usize = adj.iter().map(Vec::len).sum();
    // An edge as in `Adj`, with the other unit's colour in place of the unit.
    let mut flat: Vec<(u8, u8, u32, u32, u32)> = Vec::with_capacity(edges);
    // Unit `u`'s signature is `flat[off[u]..off[u + 1]]`.
    let mut off = vec![0usize; n + 1];
    let mut order: Vec<UnitIx> = adj.indices().collect();
    let mut next: Colours = IxVec::from_elem(0, n);
    loop {
        budget.work += (n + edges) as u64;
        flat.clear();
        for (i, nb) in adj.iter().enumerate() {
            let from = flat.len();
            flat.extend(
                nb.iter()
                    .map(|&(d, k, mine, theirs, other)| (d, k, mine, theirs, c[other])),
            );
            flat[from..].sort_unstable();
            off[i + 1] = flat.len();
        }
        let sig = |i: UnitIx| (c[i], &flat[off[i.index()]..off[i.index() + 1]]);
        order.sort_unstable_by(|&a, &b| sig(a).cmp(&sig(b)));
        let mut rank = 0u32;
        for w in 0..n {
            if w > 0 && sig(order[w - 1]) != sig(order[w]) {
                rank += 1;
            }
            next[order[w]] = rank;
        }
        let now = if n == 0 { 0 } else { rank as usize + 1 };
        std::mem::swap(&mut c, &mut next);
        if now == classes {
            return c;
        }
        classes = now;
    }
}

/// The graph a search runs on: labels, edges, each unit's view of its edges, twin classes.
struct Searched<'a> {
    labels: &'a [u64],
    edges: &'a [UEdge],
    adj: &'a Adjs,
    twins: &'a IxVec<UnitIx, UnitIx>,
}

fn search(colours: Colours, g: &Searched<'_>, best: &mut Option<Canonical>, budget: &mut Budget) {
    // Past the budget, only the first descent goes on, so there is always an ordering.
    if best.is_some() && budget.spent() {
        return;
    }
    let n = colours.len();
    // The first colour shared by several units (`count` is by colour, not by unit).
    let mut count = vec![0u32; n];
    for &c in &colours {
        count[c as usize] += 1;
    }
    let cell = (0..n).find(|&c| count[c] > 1);
    if cell.is_none() || budget.depth >= MAX_DEPTH {
        // A leaf of the search; at the depth cap, the rest is ordered by index: a faithful
        // encoding still (no wrong merge), only perhaps not the canonical one (a missed merge).
        let colours = match cell {
            None => colours,
            Some(_) => {
                let keyed: Vec<(u32, usize)> =
                    colours.iter().enumerate().map(|(i, &c)| (c, i)).collect();
                rank(&keyed)
            }
        };
        budget.leaves = budget.leaves.saturating_sub(1);
        let enc = encode(&colours, g.labels, g.edges);
        let better = match best {
            Some(b) => enc.0 < b.0,
            None => true,
        };
        if better {
            *best = Some(enc);
        }
        return;
    }
    let cell = cell.unwrap_or(0);
    budget.depth += 1;
    individualize(colours, cell, g, best, budget);
    budget.depth -= 1;
}

/// Searches below every way of singling out one unit of `cell` (one per twin class).
fn individualize(
    colours: Colours,
    cell: usize,
    g: &Searched<'_>,
    best: &mut Option<Canonical>,
    budget: &mut Budget,
) {
    let in_cell = |m: UnitIx| colours[m] as usize == cell;
    // A cell of twins only: every order of them is the same under an automorphism, so all are
    // singled out at once, in index order, instead of one level of search each.
    let first = colours
        .indices()
        .find(|&m| in_cell(m))
        .unwrap_or(UnitIx::new(0));
    if colours
        .indices()
        .all(|m| !in_cell(m) || g.twins[m] == g.twins[first])
    {
        let mut k = 0u32;
        let split: Vec<(u32, u32)> = colours
            .iter()
            .map(|&c| {
                if c as usize == cell {
                    k += 1;
                    (c, k)
                } else {
                    (c, 0)
                }
            })
            .collect();
        let refined = refine(&rank(&split), g.adj, budget);
        search(refined, g, best, budget);
        return;
    }
    let mut tried: Vec<UnitIx> = Vec::new();
    for m in colours.indices() {
        if !in_cell(m) || tried.contains(&g.twins[m]) {
            continue;
        }
        tried.push(g.twins[m]);
        let split: Vec<u32> = colours
            .iter_enumerated()
            .map(|(i, &c)| 2 * c + u32::from(i != m && c as usize == cell))
            .collect();
        let refined = refine(&rank(&split), g.adj, budget);
        search(refined, g, best, budget);
    }
}

/// Encoding of a discrete colouring (colour = canonical position).
fn encode(colours: &Colours, labels: &[u64], edges: &[UEdge]) -> Canonical {
    let n = colours.len();
    // By colour: the unit at each canonical position.
    let mut order = vec![UnitIx::new(0); n];
    for (u, &c) in colours.iter_enumerated() {
        order[c as usize] = u;
    }
    let mut enc = Vec::with_capacity(2 + n + 5 * edges.len());
    enc.push(n as u64);
    enc.extend(order.iter().map(|&u| labels[u.index()]));
    let mut e: Vec<[u64; 5]> = edges
        .iter()
        .map(|&(a, b, k, pa, pb)| {
            [
                u64::from(colours[a]),
                u64::from(colours[b]),
                u64::from(k),
                u64::from(pa),
                u64::from(pb),
            ]
        })
        .collect();
    e.sort_unstable();
    enc.push(e.len() as u64);
    enc.extend(e.into_iter().flatten());
    (enc, order)
}
