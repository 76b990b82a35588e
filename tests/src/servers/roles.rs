//! A task found by what its leaves do: the most frequent group type whose core (an occurrence
//! with no extra steps, when the type has variants) holds a leaf of every role, a role being an
//! operation a leaf ends at with a function among its end frames (Apache's listener pushing a
//! connection, the worker's read and `writev`).

use std::collections::BTreeSet;

use scalpel_model::graph::{Graph, LeafId};
use scalpel_model::task::{Model, TaskKind, TaskTypeId};

use super::config::Role;

/// The role a leaf plays, if any.
fn role<'r>(graph: &Graph, roles: &'r [Role], l: LeafId) -> Option<&'r str> {
    let t = &graph.types[graph.leaves[l.index()].ty.index()];
    let op = t.end.op.map(|o| o.name())?;
    let frames = t.end.frames.join(" ");
    roles
        .iter()
        .find(|r| r.end_op == op && frames.contains(r.frame.as_str()))
        .map(|r| r.name.as_str())
}

/// The task type, if one holds every role.
pub fn role_task(graph: &Graph, model: &Model, roles: &[Role]) -> Option<TaskTypeId> {
    let all: BTreeSet<&str> = roles.iter().map(|r| r.name.as_str()).collect();
    let mut best: Option<(usize, u64)> = None;
    for (i, t) in model.types.iter().enumerate() {
        if t.kind != TaskKind::Group || t.occurrences.is_empty() {
            continue;
        }
        let bare = t.variants.iter().position(|v| v.extra.is_empty());
        let core = t
            .occurrences
            .iter()
            .find(|o| o.variant.map(|v| v as usize) == bare)
            .unwrap_or(&t.occurrences[0]);
        let held: BTreeSet<&str> = core
            .leaves
            .as_slice()
            .iter()
            .filter_map(|&l| role(graph, roles, l))
            .collect();
        if held == all && best.is_none_or(|(_, c)| t.count > c) {
            best = Some((i, t.count));
        }
    }
    best.map(|(i, _)| TaskTypeId::at(i))
}

/// The most frequent top-level group type.
pub fn top_group(model: &Model) -> Option<TaskTypeId> {
    model
        .types
        .iter()
        .enumerate()
        .filter(|(_, t)| t.kind == TaskKind::Group)
        .max_by_key(|(i, t)| (t.top_level, std::cmp::Reverse(*i)))
        .map(|(i, _)| TaskTypeId::at(i))
}
