//! The edges between current nodes, kept sorted from round to round. The first round, and any
//! round after one that moved an eighth of the leaves or more, maps every leaf-level edge to its
//! nodes and sorts them all; otherwise only the edges at leaves that a contraction moved are
//! mapped and sorted again, and merged with the edges no contraction touched. Why: nginx's 1.6M-event trace mines in 115 rounds over 1.2M edges, and sorting them
//! all every round was a quarter of the miner's time, while late rounds move few leaves.
//!
//! The result is the same sorted list a full recomputation gives: an edge whose two leaves did
//! not move maps to the same nodes and ports as before, and an edge between current nodes that
//! had a leaf move has an endpoint that is no longer current, so dropping those and mapping the
//! moved leaves' edges again replaces exactly what changed.

use rayon::prelude::*;

use super::ix::{IxLists, LeafIx};
use super::work::{LeafEdge, Moved, Work, XEdge};
use scalpel_model::graph::merge_into;

/// The edges at each leaf, to find the moved ones by: built the first time few leaves moved
/// (rounds that move most leaves map every edge and need no index).
#[derive(Default)]
pub(super) struct CrossEdges {
    /// The edges (indices into [`Work::edges`]) at each leaf.
    at: Option<IxLists<LeafIx, u32>>,
    /// Whether the edges have been computed once.
    ready: bool,
}

impl CrossEdges {
    /// Indexes `work`'s leaf-level edges by leaf.
    fn index(work: &Work) -> IxLists<LeafIx, u32> {
        let pairs = work
            .edges
            .iter()
            .enumerate()
            .flat_map(|(i, &(a, b, _))| [(a, i as u32), (b, i as u32)]);
        IxLists::new(work.node_of.len(), pairs)
    }

    /// The edges between `work`'s current nodes, sorted, without duplicates, from `last` (what
    /// the last call returned) and the leaves `work` moved since, which are then forgotten.
    pub(super) fn update(&mut self, work: &mut Work, last: Vec<XEdge>) -> Vec<XEdge> {
        let moved = std::mem::replace(&mut work.moved, Moved::Few(Vec::new()));
        let map = |&(a, b, kind): &LeafEdge| {
            let (u, v) = (work.node_of[a], work.node_of[b]);
            (u != v).then(|| XEdge {
                u,
                v,
                kind,
                pu: work.port[a],
                pv: work.port[b],
            })
        };
        let moved = match moved {
            Moved::Few(m) if self.ready => m,
            // The first round, or one that moved most leaves: mapping everything again costs no
            // more, and holds one list instead of two. Edges now inside one node are dropped for
            // good first, so that the list is collected at its exact size (the index, which
            // points into the edges, is made again when next needed).
            _ => {
                self.ready = true;
                drop(last);
                let node_of = &work.node_of;
                work.edges.retain(|&(a, b, _)| node_of[a] != node_of[b]);
                self.at = None;
                let port = &work.port;
                let mut x: Vec<XEdge> = work
                    .edges
                    .par_iter()
                    .map(|&(a, b, kind)| XEdge {
                        u: node_of[a],
                        v: node_of[b],
                        kind,
                        pu: port[a],
                        pv: port[b],
                    })
                    .collect();
                x.par_sort_unstable();
                x.dedup();
                return x;
            }
        };
        if moved.is_empty() {
            return last;
        }
        let at = self.at.get_or_insert_with(|| CrossEdges::index(work));
        let nodes = &work.nodes;
        let mut kept = last;
        kept.retain(|e| nodes[e.u].parent.is_none() && nodes[e.v].parent.is_none());
        let mut fresh: Vec<XEdge> = moved
            .iter()
            .flat_map(|&l| at.of(l))
            .filter_map(|&i| map(&work.edges[i as usize]))
            .collect();
        fresh.par_sort_unstable();
        fresh.dedup();
        merge(kept, fresh)
    }
}

/// The union of two sorted lists without duplicates, sorted, without duplicates.
fn merge(mut a: Vec<XEdge>, b: Vec<XEdge>) -> Vec<XEdge> {
    merge_into(&mut a, &b);
    a.dedup();
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::ix::{KindIx, NodeIx, Port, SymIx};
    use scalpel_model::graph::LeafTypeId;

    fn e(u: u32, v: u32) -> XEdge {
        XEdge {
            u: NodeIx::from_raw(u),
            v: NodeIx::from_raw(v),
            kind: KindIx::from_raw(0),
            pu: Port::from_raw(0),
            pv: Port::from_raw(0),
        }
    }

    fn nodes(ids: [u32; 2]) -> [NodeIx; 2] {
        ids.map(NodeIx::from_raw)
    }

    #[test]
    fn merging_keeps_order_and_drops_repeats() {
        let m = merge(
            vec![e(0, 1), e(2, 3), e(5, 6)],
            vec![e(1, 2), e(2, 3), e(7, 8)],
        );
        assert_eq!(m, vec![e(0, 1), e(1, 2), e(2, 3), e(5, 6), e(7, 8)]);
    }

    /// After contractions, the kept list equals a full recomputation.
    #[test]
    fn kept_edges_equal_a_full_recomputation() {
        // 40 leaves of types 0 and 1 alternating; a chain of program edges, and edges from each
        // leaf to the one three on.
        let types: Vec<LeafTypeId> = (0..40).map(|i| LeafTypeId::new(i % 2)).collect();
        let leaf = LeafIx::from_raw;
        let kind = KindIx::from_raw;
        let mut edges: Vec<LeafEdge> = (0..39).map(|i| (leaf(i), leaf(i + 1), kind(0))).collect();
        edges.extend((0..37).map(|i| (leaf(i), leaf(i + 3), kind(1))));
        let mut work = Work::new(&types, 2, edges);
        // What a full recomputation gives, without touching `work` (the kept index points into
        // its edges).
        let full = |work: &Work| {
            let mut x: Vec<XEdge> = work
                .edges
                .iter()
                .filter(|&&(a, b, _)| work.node_of[a] != work.node_of[b])
                .map(|&(a, b, kind)| XEdge {
                    u: work.node_of[a],
                    v: work.node_of[b],
                    kind,
                    pu: work.port[a],
                    pv: work.port[b],
                })
                .collect();
            x.sort_unstable();
            x.dedup();
            x
        };
        let mut kept = CrossEdges::default();
        let x = kept.update(&mut work, Vec::new());
        assert_eq!(x, full(&work));
        let sym = work
            .add_symbol(super::super::work::Rule::Pair {
                a: SymIx::new(0),
                b: SymIx::new(1),
                links: Vec::new(),
            })
            .unwrap();
        // Few leaves move: the kept list is updated, not computed again.
        let p = work.contract(&nodes([0, 1]), sym, false);
        work.contract(&nodes([4, 5]), sym, false);
        let x = kept.update(&mut work, x);
        assert!(kept.at.is_some(), "the incremental path ran");
        assert_eq!(x, full(&work));
        assert!(x.iter().any(|e| e.u == p), "{x:?}");
        work.contract(&nodes([2, 3]), sym, false);
        let x = kept.update(&mut work, x);
        assert_eq!(x, full(&work));
        assert_eq!(kept.update(&mut work, x.clone()), x, "nothing moved");
        // Most leaves move: computed again.
        let pairs: Vec<NodeIx> = (6..40)
            .step_by(2)
            .map(|i| work.contract(&nodes([i, i + 1]), sym, false))
            .collect();
        assert!(matches!(work.moved, super::super::work::Moved::Many));
        let x = kept.update(&mut work, x);
        assert_eq!(x, full(&work));
        assert!(x.iter().any(|e| e.u == pairs[0]), "{x:?}");
    }
}
