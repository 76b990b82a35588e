//! How far a trace inferred in windows is from the same trace inferred whole, counted by leaf,
//! two ways. A leaf of the whole model is *grouped alike* when a window has a leaf of the same
//! thread with the same start and end, and the task each stands in (the outermost that is not
//! a session, as `top` counts requests) holds the same number of leaves from the same first
//! leaf, or both stand in none. It is *named alike* when, besides, both tasks have one name:
//! the miner names a task by its nesting, and two derivations of one request (its last leaf
//! joined first, or last) nest it differently. The same two counts are kept for the task each
//! leaf is directly part of (its *innermost* task): a task longer than a window (a connection
//! served from the first request to the last, a loop of requests) is cut into one per window at
//! the outermost level, while the requests inside it still come out whole. What crosses a window's
//! boundary (a leaf cut in two, a task whose leaves went to two windows, a wake-up whose signal
//! was in the window before) shows up as leaves that do not agree. Sessions are left out: a
//! connection open across a boundary is a session in each window.

use ahash::AHashMap;
use scalpel_model::graph::Graph;
use scalpel_model::task::{outermost_outside_session, Model, OccRef};

/// A leaf's place: process and thread ids, start and end.
type LeafKey = (u32, u32, u64, u64);

/// A task a leaf stands in: its name (interned), first leaf and number of leaves (`None`: in
/// no task).
type Task = Option<(u32, LeafKey, u32)>;

/// Where a leaf stands: the outermost task outside sessions, and the innermost.
type Standing = (Task, Task);

/// The count (see the module docs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WindowedDifference {
    /// Leaves of the whole model.
    pub leaves: u64,
    /// Of those, leaves grouped alike in a window.
    pub grouped: u64,
    /// Of those, leaves also named alike.
    pub named: u64,
    /// Leaves whose innermost task is grouped alike.
    pub inner_grouped: u64,
    /// Of those, leaves whose innermost task is also named alike.
    pub inner_named: u64,
    /// The whole model's leaves by place, where each stands, and whether a window has it.
    whole: AHashMap<LeafKey, (Standing, bool)>,
    /// Task names, interned.
    names: AHashMap<String, u32>,
    /// Leaves grouped apart in their innermost task, by that task's name in the whole model
    /// and in the window (`u32::MAX`: in no task).
    inner_apart: AHashMap<(u32, u32), u64>,
}

impl WindowedDifference {
    /// Starts the count with the model of the whole trace.
    pub fn new(graph: &Graph, model: &Model) -> WindowedDifference {
        let mut names = AHashMap::new();
        let whole: AHashMap<LeafKey, (Standing, bool)> = standings(graph, model, &mut names)
            .into_iter()
            .map(|(k, s)| (k, (s, false)))
            .collect();
        WindowedDifference {
            leaves: whole.len() as u64,
            whole,
            names,
            ..WindowedDifference::default()
        }
    }

    /// Counts one window's model.
    pub fn add_window(&mut self, graph: &Graph, model: &Model) {
        for (k, s) in standings(graph, model, &mut self.names) {
            let Some((whole, seen)) = self.whole.get_mut(&k) else {
                continue;
            };
            if *seen {
                continue;
            }
            *seen = true;
            let (grouped, named) = alike(&whole.0, &s.0);
            self.grouped += u64::from(grouped);
            self.named += u64::from(named);
            let (grouped, named) = alike(&whole.1, &s.1);
            if !grouped {
                let name = |t: &Task| t.map_or(u32::MAX, |t| t.0);
                *self
                    .inner_apart
                    .entry((name(&whole.1), name(&s.1)))
                    .or_default() += 1;
            }
            self.inner_grouped += u64::from(grouped);
            self.inner_named += u64::from(named);
        }
    }

    /// The leaves a window has that are grouped apart in their innermost task, by the name of
    /// that task in the whole model and in the window (`None`: in no task), most leaves first;
    /// with [`Self::unmatched`], every leaf apart.
    pub fn inner_apart_by_name(&self) -> Vec<(Option<&str>, Option<&str>, u64)> {
        let mut by_id: Vec<Option<&str>> = vec![None; self.names.len()];
        for (name, &id) in &self.names {
            by_id[id as usize] = Some(name);
        }
        let name = |id: u32| by_id.get(id as usize).copied().flatten();
        let mut v: Vec<_> = self
            .inner_apart
            .iter()
            .map(|(&(w, k), &n)| (name(w), name(k), n))
            .collect();
        v.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| (a.0, a.1).cmp(&(b.0, b.1))));
        v
    }

    /// Leaves of the whole model that no window has with the same thread, start and end: the
    /// pieces of the leaves a window's boundary cut (counted apart too).
    pub fn unmatched(&self) -> u64 {
        self.whole.values().filter(|(_, seen)| !seen).count() as u64
    }

    /// Leaves not grouped alike, as a share of the whole model's.
    pub fn grouped_apart(&self) -> f64 {
        share(self.leaves - self.grouped, self.leaves)
    }

    /// Leaves not named alike (grouped apart included), as a share of the whole model's.
    pub fn named_apart(&self) -> f64 {
        share(self.leaves - self.named, self.leaves)
    }

    /// Leaves whose innermost task is not grouped alike, as a share of the whole model's.
    pub fn inner_grouped_apart(&self) -> f64 {
        share(self.leaves - self.inner_grouped, self.leaves)
    }

    /// Leaves whose innermost task is not named alike, as a share of the whole model's.
    pub fn inner_named_apart(&self) -> f64 {
        share(self.leaves - self.inner_named, self.leaves)
    }
}

/// Whether two tasks are grouped alike, and named alike.
fn alike(a: &Task, b: &Task) -> (bool, bool) {
    match (a, b) {
        (None, None) => (true, true),
        (Some(a), Some(b)) => {
            let grouped = a.1 == b.1 && a.2 == b.2;
            (grouped, grouped && a.0 == b.0)
        }
        _ => (false, false),
    }
}

fn share(part: u64, all: u64) -> f64 {
    if all == 0 {
        return 0.0;
    }
    part as f64 / all as f64
}

/// Every leaf of `graph` by place, with where it stands (see the module docs).
fn standings(
    graph: &Graph,
    model: &Model,
    names: &mut AHashMap<String, u32>,
) -> Vec<(LeafKey, Standing)> {
    let key = |i: usize| {
        let l = &graph.leaves[i];
        let t = graph.threads.get(l.thread.index());
        (
            t.map_or(0, |t| t.pid),
            t.map_or(0, |t| t.tid),
            l.start_ns,
            l.end_ns,
        )
    };
    let parent_of = |o: OccRef| {
        model
            .types
            .get(o.ty.index())
            .and_then(|t| t.occurrences.get(o.index as usize))
            .and_then(|occ| occ.parent)
    };
    let inner: Vec<Option<OccRef>> = (0..graph.leaves.len())
        .map(|i| model.leaf_parent.get(i).copied().flatten())
        .collect();
    let outer: Vec<Option<OccRef>> = inner
        .iter()
        .map(|o| o.map(|o| outermost_outside_session(&model.types, o, parent_of(o))))
        .collect();
    let ids: Vec<u32> = model
        .types
        .iter()
        .map(|t| {
            let next = names.len() as u32;
            *names.entry(t.name.clone()).or_insert(next)
        })
        .collect();
    let outer = tasks_of(&outer, &key, &ids);
    let inner = tasks_of(&inner, &key, &ids);
    (0..graph.leaves.len())
        .map(|i| (key(i), (outer[i], inner[i])))
        .collect()
}

/// Each leaf's task (`task[i]`) as name, first leaf (earliest start, then place) and size.
fn tasks_of(task: &[Option<OccRef>], key: &impl Fn(usize) -> LeafKey, ids: &[u32]) -> Vec<Task> {
    let mut tasks: AHashMap<OccRef, (LeafKey, u32)> = AHashMap::new();
    for (i, t) in task.iter().enumerate() {
        if let Some(t) = t {
            let k = key(i);
            let e = tasks.entry(*t).or_insert((k, 0));
            e.0 = e.0.min(k);
            e.1 += 1;
        }
    }
    task.iter()
        .map(|t| {
            let t = (*t)?;
            let (first, n) = tasks.get(&t)?;
            Some((*ids.get(t.ty.index())?, *first, *n))
        })
        .collect()
}
