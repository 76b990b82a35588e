//! Which task classes hold which, across all their nodes: the type graph the model will have.
//!
//! Every class of the derivation holds only classes made before it, so that graph starts
//! acyclic. Two later rewrites can add a containment, and each checks this graph first, since
//! a class that holds itself leaves no level for it or the classes between:
//! - the folds of [`super::variants`] give a wrapper's nodes its core's class, and the wrapper's
//!   extra steps become parts of the core; when such a step's class holds the core in some
//!   other place, the core would hold itself (a timing-dependent case on a syncer and its
//!   handlers made one of six classes, and computing levels never ended);
//! - the merges of [`super::same`] make two classes of one shape one; when a node of one sits
//!   under a node of the other, the class would hold itself (nginx inferred in windows: 21
//!   nodes under a node of their own class).
//!
//! The graph is kept upwards, each class's holders found from its own nodes when a search
//! first reaches it: the merges are tried for few classes, and a pass over every node would
//! cost more than they do.

use ahash::{AHashMap, AHashSet};

use super::ix::{IxVec, NodeIx, SymIx};

/// Each class's holders (from its nodes' parents), and the edges and merges made since.
pub(super) struct Contains<'a> {
    /// A class's holders, before any merge (sorted, distinct).
    up_of: Box<dyn Fn(SymIx) -> Vec<SymIx> + 'a>,
    /// Those asked for so far, with the edges added since.
    ups: AHashMap<SymIx, Vec<SymIx>>,
    /// Each class the merges keep, with the classes merged into it (itself included).
    members: AHashMap<SymIx, Vec<SymIx>>,
    /// Where each merged class went.
    into: AHashMap<SymIx, SymIx>,
}

impl<'a> Contains<'a> {
    /// From each node's class and its parent (or [`NodeIx::NONE`]), over all nodes at once.
    pub(super) fn of_tree(
        class: &IxVec<NodeIx, SymIx>,
        parent: &IxVec<NodeIx, NodeIx>,
    ) -> Contains<'static> {
        // Distinct pairs first: a class has as many nodes as the trace has occurrences, but few
        // kinds of parents.
        let pairs: AHashSet<(SymIx, SymIx)> = parent
            .iter_enumerated()
            .filter(|&(_, &p)| p.is_some())
            .map(|(n, &p)| (class[n], class[p]))
            .collect();
        let mut ups: AHashMap<SymIx, Vec<SymIx>> = AHashMap::new();
        for (c, p) in pairs {
            ups.entry(c).or_default().push(p);
        }
        for u in ups.values_mut() {
            u.sort_unstable();
        }
        Contains::from_fn(move |c| ups.get(&c).cloned().unwrap_or_default())
    }

    /// From the nodes of each class (`by_class`), their parents and their classes, each class
    /// looked up when first reached.
    pub(super) fn lazy(
        by_class: &'a IxVec<SymIx, Vec<NodeIx>>,
        parent: &'a IxVec<NodeIx, NodeIx>,
        class: &'a IxVec<NodeIx, SymIx>,
    ) -> Contains<'a> {
        Contains::from_fn(move |c| {
            let mut ups: Vec<SymIx> = by_class[c]
                .iter()
                .map(|&n| parent[n])
                .filter(|p| p.is_some())
                .map(|p| class[p])
                .collect();
            ups.sort_unstable();
            ups.dedup();
            ups
        })
    }

    /// From what gives a class's holders.
    pub(super) fn from_fn(up_of: impl Fn(SymIx) -> Vec<SymIx> + 'a) -> Contains<'a> {
        Contains {
            up_of: Box::new(up_of),
            ups: AHashMap::new(),
            members: AHashMap::new(),
            into: AHashMap::new(),
        }
    }

    fn find(&self, c: SymIx) -> SymIx {
        self.into.get(&c).copied().unwrap_or(c)
    }

    /// The holders of class `m` (as it was before any merge), with the edges added to it.
    fn ups_of(&mut self, m: SymIx) -> &mut Vec<SymIx> {
        let up_of = &self.up_of;
        self.ups.entry(m).or_insert_with(|| up_of(m))
    }

    /// Whether class `from` holds class `to`, directly or through others (or is it).
    pub(super) fn holds(&mut self, from: SymIx, to: SymIx) -> bool {
        let (from, to) = (self.find(from), self.find(to));
        let mut seen: AHashSet<SymIx> = AHashSet::from_iter([to]);
        // Depth-first with an explicit stack: the graph may be as deep as the derivation.
        let mut todo = vec![to];
        while let Some(c) = todo.pop() {
            if c == from {
                return true;
            }
            let members = self.members.get(&c).cloned().unwrap_or_else(|| vec![c]);
            for m in members {
                for u in self.ups_of(m).clone() {
                    let p = self.find(u);
                    if seen.insert(p) {
                        todo.push(p);
                    }
                }
            }
        }
        false
    }

    /// Whether a node of `a` sits under a node of `b`, or one of `b` under one of `a`.
    pub(super) fn nested(&mut self, a: SymIx, b: SymIx) -> bool {
        self.holds(b, a) || self.holds(a, b)
    }

    /// Records that class `parent` now holds class `child`.
    pub(super) fn add(&mut self, parent: SymIx, child: SymIx) {
        let ups = self.ups_of(child);
        if let Err(i) = ups.binary_search(&parent) {
            ups.insert(i, parent);
        }
    }

    /// Records that class `c` goes into class `x`.
    pub(super) fn merge(&mut self, c: SymIx, x: SymIx) {
        let (c, x) = (self.find(c), self.find(x));
        let moved = self.members.remove(&c).unwrap_or_else(|| vec![c]);
        for &m in &moved {
            self.into.insert(m, x);
        }
        self.members
            .entry(x)
            .or_insert_with(|| vec![x])
            .extend(moved);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holding_is_transitive_and_follows_added_edges() {
        // Nodes 0..4 of classes 0, 1, 2, 3: 1 under 0, 2 under 1; 3 alone.
        let c = SymIx::new;
        let class = (0..4).map(c).collect();
        let parent = [NodeIx::NONE, NodeIx::new(0), NodeIx::new(1), NodeIx::NONE];
        let mut g = Contains::of_tree(&class, &IxVec::from_vec(parent.to_vec()));
        assert!(g.holds(c(0), c(2)));
        assert!(!g.holds(c(2), c(0)));
        assert!(!g.holds(c(0), c(3)));
        g.add(c(2), c(3));
        assert!(g.holds(c(0), c(3)));
        assert!(g.holds(c(3), c(3)));
    }
}
