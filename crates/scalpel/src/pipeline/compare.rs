//! How far a trace inferred in windows is from the same trace inferred whole, counted by leaf:
//! a leaf of the whole model agrees when a window has a leaf of the same thread with the same
//! start and end, and both stand in tasks of one name outside sessions (the outermost task that
//! is not a session, as `top` counts requests; or both in none). What crosses a window's
//! boundary (a leaf cut in two, a task whose leaves went to two windows, a wake-up whose signal
//! was in the window before) shows up as leaves that do not agree. Sessions are left out: a
//! connection open across a boundary is a session in each window.

use ahash::AHashMap;
use scalpel_model::graph::Graph;
use scalpel_model::task::{outermost_outside_session, Model};

/// A leaf's place: process and thread ids, start and end.
type LeafKey = (u32, u32, u64, u64);

/// The count (see the module docs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WindowedDifference {
    /// Leaves of the whole model.
    pub leaves: u64,
    /// Of those, leaves a window has with the same task name.
    pub agreeing: u64,
    /// Of those, leaves no window has (cut differently at a boundary).
    pub missing: u64,
    /// The whole model's leaves by place: the name of their task ("" for none), and whether a
    /// window agreed.
    whole: AHashMap<LeafKey, (String, bool)>,
}

impl WindowedDifference {
    /// Starts the count with the model of the whole trace.
    pub fn new(graph: &Graph, model: &Model) -> WindowedDifference {
        let whole: AHashMap<LeafKey, (String, bool)> = leaf_tasks(graph, model)
            .map(|(k, name)| (k, (name, false)))
            .collect();
        WindowedDifference {
            leaves: whole.len() as u64,
            whole,
            ..WindowedDifference::default()
        }
    }

    /// Counts one window's model.
    pub fn add_window(&mut self, graph: &Graph, model: &Model) {
        for (k, name) in leaf_tasks(graph, model) {
            if let Some((whole, seen)) = self.whole.get_mut(&k) {
                if !*seen && *whole == name {
                    *seen = true;
                    self.agreeing += 1;
                }
            }
        }
        self.missing = self.leaves - self.agreeing;
    }

    /// Leaves that do not agree, as a share of the whole model's.
    pub fn share(&self) -> f64 {
        if self.leaves == 0 {
            return 0.0;
        }
        (self.leaves - self.agreeing) as f64 / self.leaves as f64
    }
}

/// Every leaf of `graph` with the name of the task it stands in ("" for none; see the module
/// docs).
fn leaf_tasks<'a>(
    graph: &'a Graph,
    model: &'a Model,
) -> impl Iterator<Item = (LeafKey, String)> + 'a {
    graph.leaves.iter().enumerate().map(move |(i, l)| {
        let t = graph.threads.get(l.thread.index());
        let key = (
            t.map_or(0, |t| t.pid),
            t.map_or(0, |t| t.tid),
            l.start_ns,
            l.end_ns,
        );
        let top = model.leaf_parent.get(i).copied().flatten().map(|o| {
            let parent = model
                .types
                .get(o.ty.index())
                .and_then(|t| t.occurrences.get(o.index as usize))
                .and_then(|occ| occ.parent);
            outermost_outside_session(&model.types, o, parent)
        });
        let name = top
            .and_then(|o| model.types.get(o.ty.index()))
            .map_or(String::new(), |t| t.name.clone());
        (key, name)
    })
}
