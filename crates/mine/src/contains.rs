//! Which task classes hold which, across all their nodes: the type graph the model will have.
//!
//! Every class of the derivation holds only classes made before it, so that graph starts
//! acyclic; the folds of [`super::variants`] give a wrapper's nodes its core's class, and with
//! them the wrapper's extra steps become parts of the core. When such a step's class holds the
//! core in some other place, the core would hold itself: a cycle in the type graph, which leaves
//! no level for either type (a timing-dependent case on a syncer and its handlers made one of
//! six classes, and computing levels never ended). A fold checks with this graph first.

use super::ix::{IxVec, NodeIx, SymIx};

/// Parent class → child classes, as the kept tree showed it, plus the folds made since.
pub(super) struct Contains {
    kids: IxVec<SymIx, Vec<SymIx>>,
    /// Per class: the search that last visited it (no clearing between searches).
    seen: IxVec<SymIx, u32>,
    search: u32,
    queue: Vec<SymIx>,
}

impl Contains {
    /// From each kept node's class and its kept parent (or [`NodeIx::NONE`]), over
    /// `n_classes`.
    pub(super) fn new(
        n_classes: usize,
        class: &IxVec<NodeIx, SymIx>,
        parent: &IxVec<NodeIx, NodeIx>,
    ) -> Contains {
        // Distinct pairs first: a class has as many nodes as the trace has occurrences, but few
        // kinds of children.
        let pairs: ahash::AHashSet<(SymIx, SymIx)> = parent
            .iter_enumerated()
            .filter(|&(_, &p)| p.is_some())
            .map(|(n, &p)| (class[p], class[n]))
            .collect();
        let mut kids = IxVec::from_elem(Vec::new(), n_classes);
        for (p, c) in pairs {
            kids[p].push(c);
        }
        for k in &mut kids {
            k.sort_unstable();
        }
        Contains {
            kids,
            seen: IxVec::from_elem(0, n_classes),
            search: 0,
            queue: Vec::new(),
        }
    }

    /// Records that class `parent` now holds class `child`.
    pub(super) fn add(&mut self, parent: SymIx, child: SymIx) {
        let k = &mut self.kids[parent];
        if let Err(i) = k.binary_search(&child) {
            k.insert(i, child);
        }
    }

    /// Whether class `from` holds class `to`, directly or through others (or is it).
    pub(super) fn holds(&mut self, from: SymIx, to: SymIx) -> bool {
        self.search += 1;
        if self.search == 0 {
            // Wrapped after 2^32 searches: start the stamps afresh.
            self.seen.fill(0);
            self.search = 1;
        }
        self.queue.clear();
        self.queue.push(from);
        self.seen[from] = self.search;
        // Breadth-first with an explicit queue: the graph may be as deep as the derivation.
        let mut i = 0;
        while let Some(&c) = self.queue.get(i) {
            i += 1;
            if c == to {
                return true;
            }
            for &k in &self.kids[c] {
                if self.seen[k] != self.search {
                    self.seen[k] = self.search;
                    self.queue.push(k);
                }
            }
        }
        false
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
        let mut g = Contains::new(4, &class, &IxVec::from_vec(parent.to_vec()));
        assert!(g.holds(c(0), c(2)));
        assert!(!g.holds(c(2), c(0)));
        assert!(!g.holds(c(0), c(3)));
        g.add(c(2), c(3));
        assert!(g.holds(c(0), c(3)));
        assert!(g.holds(c(3), c(3)));
    }
}
