//! Connection hand-offs (a listener giving an accepted connection to a worker thread): how many
//! `handoff` edges land on the worker's notification read, the leaf a notification (`eventfd`,
//! `stream` or `ready`) from the same leaf started.

use std::collections::BTreeMap;

use scalpel_model::graph::{EdgeKind, Graph, NodeId};

/// The figures.
#[derive(Debug, Default)]
pub struct HandoffFigures {
    /// Hand-off edges, and those that land.
    pub handoffs: usize,
    pub landed: usize,
    /// The median delay from the hand-off to the landing, in nanoseconds.
    pub median_delay_ns: Option<u64>,
}

/// Computes the figures.
pub fn handoff_figures(graph: &Graph) -> HandoffFigures {
    let mut by_to: BTreeMap<NodeId, Vec<(EdgeKind, NodeId)>> = BTreeMap::new();
    for e in &graph.edges {
        by_to.entry(e.to).or_default().push((e.kind, e.from));
    }
    let hand: Vec<_> = graph
        .edges
        .iter()
        .filter(|e| e.kind == EdgeKind::Handoff)
        .collect();
    let mut delays = Vec::new();
    for e in &hand {
        let lands = by_to.get(&e.to).is_some_and(|v| {
            v.iter().any(|&(k, from)| {
                from == e.from
                    && matches!(k, EdgeKind::Eventfd | EdgeKind::Stream | EdgeKind::Ready)
            })
        });
        if let (true, Some(a), Some(b)) = (lands, graph.leaf_of(e.from), graph.leaf_of(e.to)) {
            let (a, b) = (graph.leaf(a), graph.leaf(b));
            delays.push(b.start_ns.saturating_sub(a.end_ns));
        }
    }
    delays.sort_unstable();
    HandoffFigures {
        handoffs: hand.len(),
        landed: delays.len(),
        median_delay_ns: delays.get(delays.len() / 2).copied(),
    }
}
