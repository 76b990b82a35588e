//! Edges between leaf types, as the type graph (`types.dot`) draws them: a type is named by its
//! operations, `START → END` (`-` for a leaf that starts where its thread went back for new
//! work), and an external node by `external source KIND` or `external sink KIND`.

use std::collections::BTreeSet;

use scalpel_model::graph::{EdgeKind, ExternalRole, Graph, NodeId, OpName};

use super::config::TypeEdge;

/// What a leaf type is called: its operations; `None` with fewer than `min_count` leaves.
fn type_labels(graph: &Graph, min_count: u64) -> Vec<Option<String>> {
    let op = |o: Option<OpName>| o.map_or_else(|| "-".to_owned(), |o| o.name());
    graph
        .types
        .iter()
        .map(|t| (t.count >= min_count).then(|| format!("{} → {}", op(t.start.op), op(t.end.op))))
        .collect()
}

/// What an external node is called: its role and channel kind.
fn external_label(graph: &Graph, id: NodeId) -> Option<String> {
    let x = graph.external(id)?;
    let kind = graph
        .objects
        .get(x.obj.index())
        .and_then(|o| o.channel_kind())
        .and_then(|k| k.known())
        .map_or("other", |k| k.name());
    let role = match x.role {
        ExternalRole::Source => "source",
        ExternalRole::Sink => "sink",
    };
    Some(format!("external {role} {kind}"))
}

/// Every (from, to, kind) among the graph's edges, by label.
pub fn type_edges(graph: &Graph, min_count: u64) -> BTreeSet<(String, String, EdgeKind)> {
    let types = type_labels(graph, min_count);
    let label = |id: NodeId| match graph.leaf_of(id) {
        Some(l) => types[graph.leaf(l).ty.index()].clone(),
        None => external_label(graph, id),
    };
    graph
        .edges
        .iter()
        .filter_map(|e| Some((label(e.from)?, label(e.to)?, e.kind)))
        .collect()
}

/// Whether some edge matches: its ends' labels contain `from` and `to`, and its kind is
/// `kind` when given.
pub fn has_edge(edges: &BTreeSet<(String, String, EdgeKind)>, want: &TypeEdge) -> bool {
    edges.iter().any(|(a, b, k)| {
        a.contains(want.from.as_str())
            && b.contains(want.to.as_str())
            && want.kind.as_ref().is_none_or(|w| k.name() == w)
    })
}
