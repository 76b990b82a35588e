//! Groups that are one task once the folds are done.
//!
//! Classes are merged by the exact canonical form of their rules' expansions (`canon`). A fold
//! then makes a wrapper's nodes occurrences of the task it wraps (`variants`): the wrapper's
//! extra steps become optional steps of that task. Two rules built on the task and on its
//! wrapper (a request's hand-off paired with the pool thread's work, with and without the pool
//! thread's wait before it) had different expansions and stay two classes, though after the
//! fold each is the same parts joined the same way: the model showed two types with one shape
//! and one name, told apart by a `.2` (nginx under a pipelining client: 75% of its requests
//! split 4,825 and 1,189 between two such types).
//!
//! So a kept group class takes the place of another when a node of each that is no folded
//! wrapper has the same parts (its direct children in the tree, by class after the merges below
//! it) joined by the same causal contacts (each leaf-level causal edge between two parts, by the
//! parts' classes and the leaf types at its ends). The ports are the leaf types at the edge's
//! ends, not positions: two parts joined at two leaves of one type in different places would be
//! taken for one shape. Parts of one class twice in a node make the contacts ambiguous; such
//! shapes are never merged. Children go before parents, so a merge below can make the parents
//! above it equal.

use ahash::AHashMap;

use super::contains::Contains;
use super::ix::{IxVec, LeafIx, NodeIx, SymIx};
use super::variants::Causal;
use super::work::{Rule, Work};

/// A node's shape: its parts' classes (sorted, distinct) and its causal contacts.
type Shape = (Vec<SymIx>, Vec<(SymIx, SymIx, SymIx, SymIx)>);

/// Merges kept group classes whose nodes have equal shapes (see the module docs): every node of
/// a merged class takes the class that stays (the one with the smaller expansion, then the
/// lower id). `kept_parent` is unchanged: both classes were kept. `folds`: the nodes a fold hid,
/// and each folded wrapper's core node. `by_class`: each class's nodes that no fold hid.
pub(super) fn merge_equal(
    work: &Work,
    causal: &Causal,
    kept: &IxVec<SymIx, bool>,
    kept_parent: &IxVec<NodeIx, NodeIx>,
    folds: (&IxVec<NodeIx, bool>, &IxVec<NodeIx, NodeIx>),
    by_class: &IxVec<SymIx, Vec<NodeIx>>,
    class: &mut IxVec<NodeIx, SymIx>,
) {
    let (hidden, core_of) = folds;
    // One node per kept group class that is no folded wrapper, smallest expansions first.
    let mut rep: IxVec<SymIx, NodeIx> = IxVec::from_elem(NodeIx::NONE, work.syms.len());
    for (n, &c) in class.iter_enumerated() {
        let group = matches!(work.syms[c].rule, Rule::Pair { .. });
        if group && kept[c] && !hidden[n] && rep[c].is_none() && core_of[n].is_none() {
            rep[c] = n;
        }
    }
    let mut order: Vec<(u32, SymIx)> = rep
        .iter_enumerated()
        .filter(|(_, n)| n.is_some())
        .map(|(c, &n)| (work.nodes[n].leaves, c))
        .collect();
    order.sort_unstable();
    let len = work.syms.len();
    let nesting = Contains::lazy(by_class, kept_parent, class);
    let order = order.into_iter().map(|(_, c)| c);
    let into = merge_shapes(order, nesting, len, |into, c| {
        shape(work, causal, kept_parent, class, into, rep[c])
    });
    for c in class.iter_mut() {
        *c = into[*c];
    }
}

/// Gives each class, taken in `order`, the first class before it of the same shape, unless a
/// node of one sits under a node of the other (`nesting`). `shape` is asked with the merges so
/// far, since a merge below can make the parents above it equal.
fn merge_shapes(
    order: impl Iterator<Item = SymIx>,
    mut nesting: Contains<'_>,
    len: usize,
    mut shape: impl FnMut(&IxVec<SymIx, SymIx>, SymIx) -> Option<Shape>,
) -> IxVec<SymIx, SymIx> {
    let mut into: IxVec<SymIx, SymIx> = (0..len).map(SymIx::new).collect();
    let mut seen: AHashMap<Shape, SymIx> = AHashMap::new();
    for c in order {
        let Some(shape) = shape(&into, c) else {
            continue;
        };
        match seen.get(&shape) {
            // A task is never a part of itself: two classes of one shape where a node of one
            // sits (at any depth) under a node of the other stay two (nginx in windows: 21
            // nodes under a node of their own class after the merge, and classes in a cycle).
            Some(&x) if !nesting.nested(x, c) => {
                into[c] = x;
                nesting.merge(c, x);
            }
            Some(_) => {}
            None => {
                seen.insert(shape, c);
            }
        }
    }
    into
}

/// The shape of node `n`, or `None` when two of its parts are of one class.
fn shape(
    work: &Work,
    causal: &Causal,
    kept_parent: &IxVec<NodeIx, NodeIx>,
    class: &IxVec<NodeIx, SymIx>,
    into: &IxVec<SymIx, SymIx>,
    n: NodeIx,
) -> Option<Shape> {
    // Each leaf's part: the child of `n` in the tree that holds it (or the leaf itself).
    let mut part_of: AHashMap<LeafIx, NodeIx> = AHashMap::new();
    for l in work.leaves_of(n) {
        let mut p = NodeIx::of_leaf(l);
        // Bounded by the depth of the tree; a broken chain leaves the leaf out.
        for _ in 0..work.nodes.len() {
            let up = kept_parent[p];
            if up == n || up.is_none() {
                break;
            }
            p = up;
        }
        if kept_parent[p] == n {
            part_of.insert(l, p);
        }
    }
    let label = |p: NodeIx| into[class[p]];
    let mut parts: Vec<SymIx> = part_of.values().map(|&p| label(p)).collect();
    parts.sort_unstable();
    let mut distinct: Vec<NodeIx> = part_of.values().copied().collect();
    distinct.sort_unstable();
    distinct.dedup();
    parts.dedup();
    if parts.len() != distinct.len() || parts.len() < 2 {
        return None;
    }
    let leaf_type = |l: LeafIx| class[NodeIx::of_leaf(l)];
    let mut contacts: Vec<(SymIx, SymIx, SymIx, SymIx)> = Vec::new();
    for (&l, &a) in &part_of {
        for &m in causal.of(l) {
            match part_of.get(&m) {
                Some(&b) if b != a => {
                    contacts.push((label(a), leaf_type(l), label(b), leaf_type(m)));
                }
                _ => {}
            }
        }
    }
    contacts.sort_unstable();
    contacts.dedup();
    Some((parts, contacts))
}

#[cfg(test)]
mod tests {
    use super::super::contains::Contains;
    use super::super::ix::{IxVec, SymIx};
    use super::{merge_shapes, Shape};

    fn c(i: usize) -> SymIx {
        SymIx::new(i)
    }

    /// Classes 1.. merged by `merge_shapes` with the shapes given (by class) and the nesting
    /// given as (child, parent) pairs; what each class went into.
    fn merged(shapes: &[u32], pairs: &[(usize, usize)]) -> Vec<usize> {
        let nesting = Contains::from_fn(|x| {
            let ups = pairs
                .iter()
                .filter(|&&(a, _)| c(a) == x)
                .map(|&(_, b)| c(b));
            ups.collect()
        });
        let shape_of = |_: &IxVec<SymIx, SymIx>, x: SymIx| -> Option<Shape> {
            Some((vec![SymIx::from_raw(shapes[x.index()])], Vec::new()))
        };
        let into = merge_shapes((0..shapes.len()).map(c), nesting, shapes.len(), shape_of);
        into.iter().map(|x| x.index()).collect()
    }

    #[test]
    fn two_classes_of_one_shape_side_by_side_are_one() {
        // 0 and 1 both under 2.
        assert_eq!(merged(&[7, 7, 8], &[(0, 2), (1, 2)]), vec![0, 0, 2]);
    }

    #[test]
    fn a_class_under_another_of_its_shape_stays_apart() {
        // 0 under 1: a task that is a part of a task of the same shape.
        assert_eq!(merged(&[7, 7], &[(0, 1)]), vec![0, 1]);
    }

    #[test]
    fn a_class_at_any_depth_under_another_of_its_shape_stays_apart() {
        // 0 under 1 under 2; 0 and 2 have one shape.
        assert_eq!(merged(&[7, 8, 7], &[(0, 1), (1, 2)]), vec![0, 1, 2]);
    }

    #[test]
    fn a_merge_carries_the_nesting_of_both_classes() {
        // 0 and 1 are one (side by side under 3); 2 sits under 1 and has 0's shape, so it may not
        // join the class 1 went into.
        let got = merged(&[7, 7, 7, 8], &[(0, 3), (1, 3), (2, 1)]);
        assert_eq!(got, vec![0, 0, 2, 3]);
    }
}
