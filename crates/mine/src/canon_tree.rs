//! Canonical forms of unit graphs that are trees, in linear time (Aho, Hopcroft and Ullman's
//! tree isomorphism), instead of the general search.
//!
//! Most expansions are trees: a request's steps hang off one another by one edge (or one bundle
//! of edges) each. The general search singles out units one at a time and refines after each;
//! on a tree of identical branches it explores every order of the branches up to its budget,
//! and on an nginx recording that took 0.3 s per rule and 80% of mining. A tree is rooted at
//! its centre (the one or two units left when leaves are peeled off); each unit's code is its
//! label and the sorted list of (edge bundle, child code) below it, codes being ranks within
//! their height; the encoding lists every height's sorted codes, so equal encodings are equal
//! trees. Units are then ordered by a walk from the root with children in code order; children
//! with equal codes are interchangeable by an automorphism, so any order of them gives the same
//! encoding.

use ahash::AHashMap;

use super::ix::{index_type, IxVec};

index_type! {
    /// A unit of an expansion (a leaf type or a loop, opaque), numbered in derivation order.
    UnitIx(u32)
}

/// A unit edge: from unit, to unit, kind, canonical port in each (kinds and ports are plain
/// labels here: the unit graph compares them, it indexes nothing with them).
pub(super) type UEdge = (UnitIx, UnitIx, u8, u32, u32);

/// Each unit's neighbours.
type Nbrs = IxVec<UnitIx, Vec<UnitIx>>;

/// The bundle of edges between two adjacent units, seen from one of them: (direction, kind, own
/// port, other's port), sorted.
type Bundle = Vec<(u8, u8, u32, u32)>;

/// Marks a tree encoding: no general encoding starts with it (those start with a unit count).
const TREE: u64 = u64::MAX;

/// The canonical encoding and unit order of the graph, if it is a connected tree (counting the
/// edges between two units as one); `None` otherwise.
pub(super) fn tree_canonical(labels: &[u64], edges: &[UEdge]) -> Option<(Vec<u64>, Vec<UnitIx>)> {
    let n = labels.len();
    if n == 0 {
        return None;
    }
    // Bundles per ordered pair of units.
    let mut bundles: AHashMap<(UnitIx, UnitIx), Bundle> = AHashMap::new();
    for &(a, b, k, pa, pb) in edges {
        if a == b {
            return None;
        }
        bundles.entry((a, b)).or_default().push((0, k, pa, pb));
        bundles.entry((b, a)).or_default().push((1, k, pb, pa));
    }
    if bundles.len() != 2 * (n - 1) {
        return None;
    }
    let mut nbrs: Nbrs = IxVec::from_elem(Vec::new(), n);
    for (&(a, b), bundle) in bundles.iter_mut() {
        bundle.sort_unstable();
        nbrs[a].push(b);
    }
    for l in &mut nbrs {
        l.sort_unstable();
    }
    let centres = centres(&nbrs)?;
    let mut best: Option<(Vec<u64>, Vec<UnitIx>)> = None;
    for root in centres {
        let cand = rooted(root, labels, &nbrs, &bundles);
        if best.as_ref().is_none_or(|b| cand.0 < b.0) {
            best = Some(cand);
        }
    }
    best
}

/// The one or two centres of the tree, or `None` if it is not connected.
fn centres(nbrs: &Nbrs) -> Option<Vec<UnitIx>> {
    let n = nbrs.len();
    let mut degree: IxVec<UnitIx, usize> = nbrs.iter().map(Vec::len).collect();
    let mut layer: Vec<UnitIx> = nbrs.indices().filter(|&u| degree[u] <= 1).collect();
    let mut left = n;
    let mut removed = IxVec::from_elem(false, n);
    while left > 2 {
        let mut next = Vec::new();
        for &u in &layer {
            removed[u] = true;
            left -= 1;
            for &v in &nbrs[u] {
                if !removed[v] {
                    degree[v] -= 1;
                    if degree[v] == 1 {
                        next.push(v);
                    }
                }
            }
        }
        if next.is_empty() {
            // More than two units left with none of degree one: a cycle, or pieces apart.
            return None;
        }
        layer = next;
    }
    let c: Vec<UnitIx> = nbrs.indices().filter(|&u| !removed[u]).collect();
    // A forest peels down to more pieces than one tree's centre: check the edge count held
    // (n - 1 pairs) and that the centre is one unit or one adjacent pair.
    match c.as_slice() {
        [_] => Some(c),
        [a, b] if nbrs[*a].contains(b) => Some(c),
        _ => None,
    }
}

/// The encoding and order of the tree rooted at `root`.
fn rooted(
    root: UnitIx,
    labels: &[u64],
    nbrs: &Nbrs,
    bundles: &AHashMap<(UnitIx, UnitIx), Bundle>,
) -> (Vec<u64>, Vec<UnitIx>) {
    let n = labels.len();
    // Parents and a breadth-first order from the root (no recursion: trees can be long paths).
    let mut parent = IxVec::from_elem(UnitIx::NONE, n);
    let mut bfs = vec![root];
    parent[root] = root;
    let mut i = 0;
    while i < bfs.len() {
        let u = bfs[i];
        i += 1;
        for &v in &nbrs[u] {
            if parent[v].is_none() {
                parent[v] = u;
                bfs.push(v);
            }
        }
    }
    // Heights, children first (reverse breadth-first order).
    let mut height = IxVec::from_elem(0u32, n);
    for &u in bfs.iter().rev() {
        let p = parent[u];
        if p != u {
            height[p] = height[p].max(height[u] + 1);
        }
    }
    let top = height[root] as usize;
    let mut by_height: Vec<Vec<UnitIx>> = vec![Vec::new(); top + 1];
    for &u in &bfs {
        by_height[height[u] as usize].push(u);
    }
    // Codes per height: a unit's tuple is its label and its children's (bundle, height, rank),
    // sorted; its rank is its tuple's place among the distinct tuples of its height.
    type Tuple = (u64, Vec<(Bundle, u32, u32)>);
    let mut rank = IxVec::from_elem(0u32, n);
    let mut enc = vec![TREE, n as u64];
    let mut kids_of: IxVec<UnitIx, Vec<(Bundle, u32, u32, UnitIx)>> =
        IxVec::from_elem(Vec::new(), n);
    for &u in bfs.iter().skip(1) {
        let p = parent[u];
        let b = bundles[&(p, u)].clone();
        kids_of[p].push((b, height[u], 0, u));
    }
    for level in &by_height {
        let mut tuples: Vec<(Tuple, UnitIx)> = level
            .iter()
            .map(|&u| {
                let kids = &mut kids_of[u];
                for k in kids.iter_mut() {
                    k.2 = rank[k.3];
                }
                kids.sort_unstable();
                let t: Vec<(Bundle, u32, u32)> =
                    kids.iter().map(|k| (k.0.clone(), k.1, k.2)).collect();
                ((labels[u.index()], t), u)
            })
            .collect();
        tuples.sort_unstable();
        let mut distinct: Vec<&Tuple> = Vec::new();
        for (t, u) in &tuples {
            if distinct.last() != Some(&t) {
                distinct.push(t);
            }
            rank[*u] = distinct.len() as u32 - 1;
        }
        enc.push(distinct.len() as u64);
        for (label, kids) in distinct {
            enc.push(*label);
            enc.push(kids.len() as u64);
            for (bundle, h, r) in kids {
                enc.push(bundle.len() as u64);
                for &(d, k, a, b) in bundle {
                    enc.extend([u64::from(d), u64::from(k), u64::from(a), u64::from(b)]);
                }
                enc.extend([u64::from(*h), u64::from(*r)]);
            }
        }
    }
    enc.push(u64::from(rank[root]));
    // The order: a depth-first walk from the root, children in their sorted (code) order.
    let mut order = Vec::with_capacity(n);
    let mut stack = vec![root];
    while let Some(u) = stack.pop() {
        order.push(u);
        stack.extend(kids_of[u].iter().rev().map(|k| k.3));
    }
    (enc, order)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(a: u32, b: u32) -> UEdge {
        edge(a, b, 0, 0)
    }

    /// An edge of kind `k` from port `pa` of unit `a` to port 0 of unit `b`.
    fn edge(a: u32, b: u32, k: u8, pa: u32) -> UEdge {
        (UnitIx::from_raw(a), UnitIx::from_raw(b), k, pa, 0)
    }

    #[test]
    fn relabelled_trees_have_one_encoding() {
        // A hub (label 1) with two branches 2 → 3 and one leaf 2, numbered two ways.
        let l1 = [1, 2, 3, 2, 3, 2];
        let e1 = [e(0, 1), e(1, 2), e(0, 3), e(3, 4), e(0, 5)];
        let l2 = [2, 3, 2, 1, 3, 2];
        let e2 = [e(3, 5), e(3, 0), e(0, 1), e(3, 2), e(2, 4)];
        let (a, oa) = tree_canonical(&l1, &e1).unwrap();
        let (b, ob) = tree_canonical(&l2, &e2).unwrap();
        assert_eq!(a, b);
        assert_eq!(oa.len(), 6);
        assert_eq!(l1[oa[0].index()], 1);
        assert_eq!(l2[ob[0].index()], 1);
    }

    #[test]
    fn direction_and_ports_tell_trees_apart() {
        let l = [1, 2];
        let a = tree_canonical(&l, &[edge(0, 1, 0, 0)]).unwrap().0;
        let b = tree_canonical(&l, &[edge(1, 0, 0, 0)]).unwrap().0;
        let c = tree_canonical(&l, &[edge(0, 1, 0, 1)]).unwrap().0;
        assert_ne!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn cycles_and_forests_are_not_trees() {
        assert!(tree_canonical(&[1, 1, 1], &[e(0, 1), e(1, 2), e(2, 0)]).is_none());
        assert!(tree_canonical(&[1, 1, 1, 1], &[e(0, 1), e(2, 3)]).is_none());
        // Two edges between one pair are one bundle: still a tree.
        assert!(tree_canonical(&[1, 2], &[e(0, 1), edge(0, 1, 3, 0)]).is_some());
    }

    /// Small random trees, each also relabelled at random: the tree encoding says two are equal
    /// exactly when the general search does (which is exact on graphs this small).
    #[test]
    fn tree_forms_agree_with_the_general_search() {
        use super::super::canon::search_canonical;
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |m: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % m
        };
        let mut graphs: Vec<(Vec<u64>, Vec<UEdge>)> = Vec::new();
        for _ in 0..150 {
            let n = 1 + next(7) as u32;
            let labels: Vec<u64> = (0..n).map(|_| 1 + next(2)).collect();
            let edges: Vec<UEdge> = (1..n)
                .map(|v| {
                    let u = next(u64::from(v)) as u32;
                    let k = next(2) as u8;
                    if next(2) == 0 {
                        edge(u, v, k, 0)
                    } else {
                        edge(v, u, k, 0)
                    }
                })
                .collect();
            // The same tree with its units numbered in reverse.
            let flip = |u: UnitIx| UnitIx::from_raw(n - 1 - u.raw());
            let relabelled: Vec<u64> = (0..n)
                .map(|u| labels[flip(UnitIx::from_raw(u)).index()])
                .collect();
            let moved: Vec<UEdge> = edges
                .iter()
                .map(|&(a, b, k, pa, pb)| (flip(a), flip(b), k, pa, pb))
                .collect();
            graphs.push((labels, edges));
            graphs.push((relabelled, moved));
        }
        let tree: Vec<Vec<u64>> = graphs
            .iter()
            .map(|(l, e)| tree_canonical(l, e).unwrap().0)
            .collect();
        let general: Vec<Vec<u64>> = graphs
            .iter()
            .map(|(l, e)| search_canonical(l, e).0)
            .collect();
        for i in 0..graphs.len() {
            for j in 0..graphs.len() {
                assert_eq!(
                    tree[i] == tree[j],
                    general[i] == general[j],
                    "{:?} / {:?}",
                    graphs[i],
                    graphs[j]
                );
            }
        }
        for i in (0..graphs.len()).step_by(2) {
            assert_eq!(tree[i], tree[i + 1], "a tree and its renumbering");
        }
    }

    #[test]
    fn a_long_path_needs_no_recursion() {
        let n = 200_000u32;
        let labels = vec![7u64; n as usize];
        let edges: Vec<UEdge> = (1..n).map(|i| e(i - 1, i)).collect();
        let (enc, order) = tree_canonical(&labels, &edges).unwrap();
        assert_eq!(order.len(), n as usize);
        assert!(enc.len() > n as usize);
    }
}
