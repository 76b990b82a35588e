//! Keeping the graph acyclic: a round's contractions are checked together, and those that
//! would close a cycle are refused.
//!
//! Only causal edges and strong program order count. Weak program order joins one unit of work
//! to the next on a thread; two tasks that share threads in opposite orders (a listener that
//! accepts A then B, a LIFO queue that serves B then A) interleave, they do not contradict each
//! other, so a cycle through a weak edge is no reason to refuse.
//!
//! Contractions that are each safe alone can still close a cycle together (A's first part
//! reaches B's second while B's first reaches A's second), so the check runs on the graph as
//! it would be after the whole round: every proposal's parts are one node. Every cycle of that
//! graph lies within one of its strongly connected components. While the components hold
//! proposals of several rules, those of the lowest-priority rule are refused and the check runs
//! again; once one rule is left, the last eighth (at least one) of each component's proposals
//! are refused per pass, up to [`PASSES`] passes, and after that every proposal still inside a
//! component. That ends acyclic: a cycle left would lie within a component whose nodes are
//! then all original nodes of an acyclic graph.

// Kosaraju's components, not Tarjan's: petgraph's Tarjan recurses once per node along a path,
// and a pipe written one byte at a time makes paths of 100,000 leaves (a stack overflow).
use petgraph::algo::{kosaraju_scc, toposort};
use petgraph::graph::{DiGraph, NodeIndex};

use super::ix::{index_type, Idx, IxLists, IxVec, LeafIx, NodeIx, RuleIx};
use super::round::Proposal;
use super::work::{weak_kind, LeafEdge, XEdge};

/// "No component" for a leaf, "not added yet" for a node of the quotient graph.
const NONE: u32 = u32::MAX;

index_type! {
    /// A node of the graph as it would be after the round: node `n` for a node in no proposal
    /// (or a refused one), `n_nodes + i` for proposal `i`.
    QuotIx(u32)
}

/// Passes that refuse only part of each component.
pub(super) const PASSES: usize = 24;

/// Whether the graph on nodes `0..n` is acyclic (Kahn's algorithm on flat arrays: the common
/// case, checked before building anything bigger).
pub(super) fn is_acyclic<I: Idx>(n: usize, edges: &[(I, I)]) -> bool {
    let mut indeg: IxVec<I, u32> = IxVec::from_elem(0, n);
    // Counted into: its pages mapped writable first (`populate`'s docs).
    scalpel_model::memory::populate(indeg.as_mut_slice());
    for &(_, b) in edges {
        indeg[b] += 1;
    }
    let out = IxLists::new(n, edges.iter().copied());
    let mut stack: Vec<I> = indeg.indices().filter(|&i| indeg[i] == 0).collect();
    let mut seen = 0usize;
    while let Some(v) = stack.pop() {
        seen += 1;
        for &w in out.of(v) {
            indeg[w] -= 1;
            if indeg[w] == 0 {
                stack.push(w);
            }
        }
    }
    seen == n
}

/// The components (as proposal indices, ascending) that hold a cycle, or none.
fn cyclic_components(
    x: &[XEdge],
    n_nodes: usize,
    proposals: &[Proposal],
    refused: &[bool],
) -> Vec<Vec<usize>> {
    // The quotient graph's node of each node: itself, or its proposal's.
    let mut rep: IxVec<NodeIx, QuotIx> = (0..n_nodes).map(QuotIx::new).collect();
    for (i, p) in proposals.iter().enumerate() {
        if !refused[i] {
            for &part in &p.parts {
                rep[part] = QuotIx::new(n_nodes + i);
            }
        }
    }
    let weak = weak_kind();
    let quotient: Vec<(QuotIx, QuotIx)> = x
        .iter()
        .filter(|e| e.kind != weak)
        .map(|e| (rep[e.u], rep[e.v]))
        .filter(|(a, b)| a != b)
        .collect();
    if is_acyclic(n_nodes + proposals.len(), &quotient) {
        return Vec::new();
    }
    // Each quotient node's node in `g`, once added.
    let mut index: IxVec<QuotIx, u32> = IxVec::from_elem(NONE, n_nodes + proposals.len());
    let mut g: DiGraph<QuotIx, ()> = DiGraph::with_capacity(quotient.len(), quotient.len());
    let mut node = |g: &mut DiGraph<QuotIx, ()>, id: QuotIx| -> NodeIndex {
        if index[id] == NONE {
            index[id] = g.add_node(id).index() as u32;
        }
        NodeIndex::new(index[id] as usize)
    };
    for &(a, b) in &quotient {
        let (na, nb) = (node(&mut g, a), node(&mut g, b));
        g.add_edge(na, nb, ());
    }
    let mut out = Vec::new();
    for scc in kosaraju_scc(&g) {
        if scc.len() < 2 {
            continue;
        }
        let mut props: Vec<usize> = scc
            .iter()
            .map(|&n| g[n].index())
            .filter(|&id| id >= n_nodes)
            .map(|id| id - n_nodes)
            .collect();
        props.sort_unstable();
        out.push(props);
    }
    out
}

/// Which proposals to refuse.
pub(super) fn refuse_cycles(x: &[XEdge], n_nodes: usize, proposals: &[Proposal]) -> Vec<bool> {
    let mut refused = vec![false; proposals.len()];
    let mut pass = 0;
    loop {
        let comps = cyclic_components(x, n_nodes, proposals, &refused);
        if comps.is_empty() {
            break;
        }
        let rules = |f: fn(std::slice::Iter<'_, usize>) -> Option<&usize>| -> Option<RuleIx> {
            comps
                .iter()
                .filter_map(|c| f(c.iter()).map(|&p| proposals[p].rule))
                .min()
        };
        let lowest = comps.iter().flatten().map(|&p| proposals[p].rule).max();
        let highest = rules(|mut it| it.next());
        if let (Some(lo), Some(hi)) = (lowest, highest) {
            if lo != hi {
                for &p in comps.iter().flatten() {
                    if proposals[p].rule == lo {
                        refused[p] = true;
                    }
                }
                continue;
            }
        }
        pass += 1;
        for props in comps {
            let drop = if pass >= PASSES {
                props.len()
            } else {
                (props.len() / 8).max(1)
            };
            for &p in &props[props.len() - drop..] {
                refused[p] = true;
            }
        }
    }
    refused
}

/// Leaf-level edges that close cycles (possible only in a damaged or oddly clocked trace):
/// within each strongly connected component, edges that go back in time are dropped, then any
/// edge still inside a component. Returns the edges kept and how many were dropped.
pub(super) fn break_leaf_cycles(
    n_leaves: usize,
    edges: Vec<LeafEdge>,
    backwards: impl Fn(LeafIx, LeafIx) -> bool,
) -> (Vec<LeafEdge>, u64) {
    let component = |edges: &[LeafEdge]| -> Option<IxVec<LeafIx, u32>> {
        let pairs: Vec<(LeafIx, LeafIx)> = edges.iter().map(|&(a, b, _)| (a, b)).collect();
        if is_acyclic(n_leaves, &pairs) {
            return None;
        }
        let mut g: DiGraph<(), ()> = DiGraph::with_capacity(n_leaves, edges.len());
        for _ in 0..n_leaves {
            g.add_node(());
        }
        for &(a, b, _) in edges {
            g.add_edge(NodeIndex::new(a.index()), NodeIndex::new(b.index()), ());
        }
        if toposort(&g, None).is_ok() {
            return None;
        }
        let mut comp = IxVec::from_elem(NONE, n_leaves);
        for (c, scc) in kosaraju_scc(&g).into_iter().enumerate() {
            if scc.len() > 1 {
                for n in scc {
                    comp[LeafIx::new(n.index())] = c as u32;
                }
            }
        }
        Some(comp)
    };
    let before = edges.len();
    let mut edges = edges;
    for pass in 0..2 {
        let Some(comp) = component(&edges) else { break };
        edges.retain(|&(a, b, _)| {
            let inside = comp[a] != NONE && comp[a] == comp[b];
            !(inside && (pass == 1 || backwards(a, b)))
        });
    }
    let dropped = (before - edges.len()) as u64;
    (edges, dropped)
}
