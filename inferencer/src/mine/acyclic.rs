//! Keeping the graph acyclic: a round's contractions are checked together, and those that
//! would close a cycle are refused.
//!
//! Contractions that are each safe alone can still close a cycle together (A's first part
//! reaches B's second while B's first reaches A's second), so the check runs on the graph as
//! it would be after the whole round: every proposal's parts are one node. If that graph has a
//! cycle, every proposal inside a strongly connected component is refused. That is enough in
//! one pass: any cycle left would lie within one component, whose nodes are then all original
//! nodes of an acyclic graph.

use petgraph::algo::{tarjan_scc, toposort};
use petgraph::graph::{DiGraph, NodeIndex};

use super::round::{Proposal, XEdge};
use super::work::NONE;

/// Which proposals to refuse.
pub fn refuse_cycles(x: &[XEdge], n_nodes: usize, proposals: &[Proposal]) -> Vec<bool> {
    let mut refused = vec![false; proposals.len()];
    let mut rep: Vec<u32> = (0..n_nodes as u32).collect();
    for (i, p) in proposals.iter().enumerate() {
        for &part in &p.parts {
            rep[part as usize] = (n_nodes + i) as u32;
        }
    }
    let mut index = vec![NONE; n_nodes + proposals.len()];
    let mut g: DiGraph<u32, ()> = DiGraph::with_capacity(x.len(), x.len());
    let mut node = |g: &mut DiGraph<u32, ()>, id: u32| -> NodeIndex {
        if index[id as usize] == NONE {
            index[id as usize] = g.add_node(id).index() as u32;
        }
        NodeIndex::new(index[id as usize] as usize)
    };
    for e in x {
        let (a, b) = (rep[e.u as usize], rep[e.v as usize]);
        if a != b {
            let (na, nb) = (node(&mut g, a), node(&mut g, b));
            g.add_edge(na, nb, ());
        }
    }
    if toposort(&g, None).is_ok() {
        return refused;
    }
    let debug = std::env::var_os("SCALPEL_MINE_DEBUG").is_some();
    for scc in tarjan_scc(&g) {
        if scc.len() < 2 {
            continue;
        }
        if debug && scc.len() < 12 {
            let ids: Vec<u32> = scc.iter().map(|&n| g[n]).collect();
            eprintln!("scc {ids:?}");
            for &id in &ids {
                if id as usize >= n_nodes {
                    eprintln!(
                        "  proposal {}: {:?}",
                        id as usize - n_nodes,
                        proposals[id as usize - n_nodes].parts
                    );
                }
            }
        }
        for n in scc {
            let id = g[n] as usize;
            if id >= n_nodes {
                refused[id - n_nodes] = true;
            }
        }
    }
    refused
}

/// Leaf-level edges that close cycles (possible only in a damaged or oddly clocked trace):
/// within each strongly connected component, edges that go back in time are dropped, then any
/// edge still inside a component. Returns the edges kept and how many were dropped.
pub fn break_leaf_cycles(
    n_leaves: usize,
    edges: Vec<(u32, u32, u8)>,
    backwards: impl Fn(u32, u32) -> bool,
) -> (Vec<(u32, u32, u8)>, u64) {
    let component = |edges: &[(u32, u32, u8)]| -> Option<Vec<u32>> {
        let mut g: DiGraph<(), ()> = DiGraph::with_capacity(n_leaves, edges.len());
        for _ in 0..n_leaves {
            g.add_node(());
        }
        for &(a, b, _) in edges {
            g.add_edge(NodeIndex::new(a as usize), NodeIndex::new(b as usize), ());
        }
        if toposort(&g, None).is_ok() {
            return None;
        }
        let mut comp = vec![NONE; n_leaves];
        for (c, scc) in tarjan_scc(&g).into_iter().enumerate() {
            if scc.len() > 1 {
                for n in scc {
                    comp[n.index()] = c as u32;
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
            let inside = comp[a as usize] != NONE && comp[a as usize] == comp[b as usize];
            !(inside && (pass == 1 || backwards(a, b)))
        });
    }
    let dropped = (before - edges.len()) as u64;
    (edges, dropped)
}
