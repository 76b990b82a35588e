//! A replayed grammar's folds: what the run that learned the rules made of a wrapper (a task of
//! two tasks, or a variant of the task it holds) is what a replay makes of it.

use scalpel_model::graph::{EdgeKind, Graph, LeafTypeId};
use scalpel_model::task::{Model, TaskKind};

use super::{first_leaf_types, graph, mined, replayed, summary, At};
use crate::{mine, MineOptions};

/// A listener (accept 0, push 1) hands `requests` requests to a worker (read 2, write 3). The
/// worker also serves `worker_only` requests whose push is not in the graph (before a part of a
/// recording began), and the listener pushes `listener_only` that no worker took (the
/// recording's end came first).
fn requests(requests: u32, worker_only: u32, listener_only: u32) -> Graph {
    let (mut listener, mut worker) = (Vec::new(), Vec::new());
    let mut edges: Vec<(At, At, EdgeKind)> = Vec::new();
    for _ in 0..worker_only {
        worker.extend([2, 3]);
    }
    for _ in 0..requests {
        let (l, w) = (listener.len() as u32, worker.len() as u32);
        listener.extend([0, 1]);
        worker.extend([2, 3]);
        edges.push(((0, l + 1), (1, w), EdgeKind::Handoff));
    }
    for _ in 0..listener_only {
        listener.extend([0, 1]);
    }
    for (t, list) in [&listener, &worker].into_iter().enumerate() {
        let t = t as u32;
        for i in (0..list.len() as u32).step_by(2) {
            edges.push(((t, i), (t, i + 1), EdgeKind::Program));
            if i + 2 < list.len() as u32 {
                edges.push(((t, i + 1), (t, i + 2), EdgeKind::ProgramWeak));
            }
        }
    }
    graph(&[listener, worker], &edges)
}

/// The instances of the group type whose first occurrence holds exactly the leaf types
/// accept, push, read and write, if there is one.
fn whole_requests(g: &Graph, m: &Model) -> Option<u64> {
    let all = [0, 1, 2, 3].map(LeafTypeId::new);
    m.types
        .iter()
        .find(|t| t.kind == TaskKind::Group && first_leaf_types(g, t) == all)
        .map(|t| t.count)
}

/// Learned where some of the listener's pushes stand alone, the request is a task of two
/// tasks (the listener's part and the worker's); a part of the recording that holds none of
/// those pushes would fold the request into the worker's part alone (a variant of it, the push
/// an optional step), but replaying the rules keeps it as learned. Apache in windows: a window
/// without the pushes the recording's end left alone folded every request so, and 14% of the
/// leaves stood in another innermost task than in the whole model.
#[test]
fn a_task_of_two_tasks_where_learned_is_not_folded_where_replayed() {
    let opts = MineOptions::default();
    let whole = requests(40, 6, 2);
    let learned = mine(&whole, "graph.json", &opts, &scalpel_model::progress::Quiet);
    let s = summary(&whole, &learned.model);
    assert_eq!(whole_requests(&whole, &learned.model), Some(40), "{s:?}");
    let part = requests(30, 6, 0);
    let alone = mined(&part);
    let s = summary(&part, &alone);
    assert_eq!(
        whole_requests(&part, &alone),
        Some(36),
        "mined alone, the part folds the request into the worker's part: {s:?}"
    );
    let again = replayed(&part, &learned.grammar);
    let s = summary(&part, &again);
    assert_eq!(whole_requests(&part, &again), Some(30), "{s:?}");
}
