//! How well a task model tells a server's requests apart (the figures of "one request, one task
//! type"), for one recording.
//!
//! A request is marked by one leaf, the one that writes its response ([`RequestRule`]'s marker),
//! and the load generator's count says how many requests there were. The request task is the
//! group type holding the most markers, one marker per occurrence, among the types whose
//! occurrences also hold a leaf ending at each needed operation (what a reader expects a request
//! to span: Apache's accept as well as the worker's response; a piece of the request would hold
//! as many markers); the lower level, then the lower index, when two hold as many.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use scalpel_model::format::Side;
use scalpel_model::graph::{Graph, Leaf, LeafId, ObjId, ThreadId};
use scalpel_model::read::Endpoint;
use scalpel_model::task::{Model, OccRef, Occurrence, TaskKind, TaskTypeId};

use super::config::RequestRule;

/// The figures.
#[derive(Debug, Default)]
pub struct RequestFigures {
    /// Marker leaves in the graph.
    pub markers: usize,
    /// The request task, if any type holds a marker.
    pub request_type: Option<TaskTypeId>,
    /// The request task types (`RequestRule::request_types` at most), each with the markers it
    /// holds, most first; the first is `request_type`.
    pub request_types: Vec<(TaskTypeId, u64)>,
    /// Markers inside one of their occurrences, one per occurrence.
    pub held: u64,
    /// Of those, occurrences that are top-level or whose nearest group above touches no
    /// connection but the marker's.
    pub top_or_session: u64,
    /// Of those, occurrences directly inside a session.
    pub in_session: u64,
    /// Session types, and sessions.
    pub session_types: usize,
    pub sessions: u64,
    /// How many types cover 95% of the leaves (each leaf under its top-level type), the leaves
    /// and the types in all.
    pub cover_95: usize,
    pub leaves: u64,
    pub types: usize,
    /// Those types with their leaves, most first.
    pub covering: Vec<(TaskTypeId, u64)>,
    /// The names of the types that hold at least 1% of the leaves, sorted.
    pub names: Vec<String>,
    /// The names of the types that hold at least half of that, with the share of the leaves
    /// each holds (what another recording's names are looked up in).
    pub shares: BTreeMap<String, f64>,
    /// Loop types whose body is a loop type (nested loops over one body should be one loop).
    pub nested_loops: Vec<String>,
}

/// Where a leaf sits: the occurrences above it, innermost first.
struct Chains<'a> {
    model: &'a Model,
}

impl Chains<'_> {
    fn occ(&self, r: OccRef) -> &Occurrence {
        &self.model.types[r.ty.index()].occurrences[r.index as usize]
    }

    fn of(&self, leaf: LeafId) -> Vec<OccRef> {
        let mut out = Vec::new();
        let mut at = self.model.leaf_parent.get(leaf.index()).copied().flatten();
        while let Some(r) = at {
            out.push(r);
            at = self.occ(r).parent;
        }
        out
    }

    fn kind(&self, r: OccRef) -> TaskKind {
        self.model.types[r.ty.index()].kind
    }
}

/// A TCP (or other) connection's two directions as one key; `None` for anything else.
fn connection(graph: &Graph, obj: Option<ObjId>) -> Option<(Endpoint, Endpoint)> {
    let ch = graph.objects.get(obj?.index())?.channel.as_ref()?;
    let (a, b) = ch.connection()?;
    Some(if a <= b {
        (a.clone(), b.clone())
    } else {
        (b.clone(), a.clone())
    })
}

fn is_marker(graph: &Graph, l: &Leaf, rule: &RequestRule, waiters: &Waiters) -> bool {
    if l.end_op.map(|o| o.name()).as_deref() != Some(rule.marker_op.as_str()) {
        return false;
    }
    let on_channel = rule.channel.as_ref().is_none_or(|want| {
        l.end_obj
            .and_then(|o| graph.objects.get(o.index()))
            .and_then(|o| o.channel_kind())
            .and_then(|k| k.known())
            .is_some_and(|k| k.name() == want)
    });
    on_channel
        && (!rule.completion || completes(graph, l, waiters))
        && rule.marker_frame.as_ref().is_none_or(|f| {
            graph.types[l.ty.index()]
                .end
                .frames
                .join(" ")
                .contains(f.as_str())
        })
}

/// Per object, the threads that wait on it (end a leaf at an acquiring call on it).
type Waiters = HashMap<ObjId, BTreeSet<ThreadId>>;

fn waiters(graph: &Graph) -> Waiters {
    let mut out = Waiters::new();
    for l in &graph.leaves {
        let acquires = l
            .end_op
            .and_then(|o| o.op())
            .is_some_and(|o| o.side() == Side::Acquire);
        if let (true, Some(obj)) = (acquires, l.end_obj) {
            out.entry(obj).or_default().insert(l.thread);
        }
    }
    out
}

/// Whether `l` tells another thread its work is done ([`RequestRule::completion`]).
fn completes(graph: &Graph, l: &Leaf, waiters: &Waiters) -> bool {
    let spawned = graph
        .threads
        .get(l.thread.index())
        .is_some_and(|t| t.tid != t.pid);
    let others_wait = l
        .end_obj
        .and_then(|o| waiters.get(&o))
        .is_some_and(|w| !w.is_empty() && !w.contains(&l.thread));
    spawned && others_wait
}

/// Whether most of type `t`'s occurrences hold a leaf ending at every needed operation. Not
/// its first alone: a step that is sometimes skipped (`xz`'s wait for a free worker, which the
/// first blocks never make) would make the type's shape hang on which occurrence came first.
fn spans_type(graph: &Graph, model: &Model, rule: &RequestRule, t: TaskTypeId) -> bool {
    let occs = &model.types[t.index()].occurrences;
    let holds = |o: &scalpel_model::task::Occurrence| {
        let ops: BTreeSet<String> = o
            .leaves
            .as_slice()
            .iter()
            .filter_map(|l| graph.leaves[l.index()].end_op.map(|o| o.name()))
            .collect();
        rule.needs.iter().all(|n| ops.contains(n))
    };
    !occs.is_empty() && 2 * occs.iter().filter(|o| holds(o)).count() >= occs.len()
}

/// Computes the figures of `model` (mined from `graph`) under `rule`.
pub fn request_figures(graph: &Graph, model: &Model, rule: &RequestRule) -> RequestFigures {
    let chains = Chains { model };
    let waiters = if rule.completion {
        waiters(graph)
    } else {
        Waiters::new()
    };
    let is_marker: Vec<bool> = graph
        .leaves
        .iter()
        .map(|l| is_marker(graph, l, rule, &waiters))
        .collect();
    let markers: Vec<LeafId> = graph.leaf_ids().filter(|l| is_marker[l.index()]).collect();
    let mut markers_in: HashMap<OccRef, usize> = HashMap::new();
    let mut count_markers = |r: OccRef| -> usize {
        *markers_in.entry(r).or_insert_with(|| {
            chains
                .occ(r)
                .leaves
                .as_slice()
                .iter()
                .filter(|l| is_marker[l.index()])
                .count()
        })
    };
    let mut spans_memo: HashMap<TaskTypeId, bool> = HashMap::new();
    let mut spans = |t: TaskTypeId| -> bool {
        *spans_memo
            .entry(t)
            .or_insert_with(|| spans_type(graph, model, rule, t))
    };
    let mut holders: HashMap<TaskTypeId, u64> = HashMap::new();
    let mut marker_chains = Vec::with_capacity(markers.len());
    for &m in &markers {
        let c = chains.of(m);
        for &r in &c {
            if count_markers(r) > 1 {
                break;
            }
            if chains.kind(r) == TaskKind::Group && spans(r.ty) {
                *holders.entry(r.ty).or_default() += 1;
            }
        }
        marker_chains.push((m, c));
    }
    let mut f = RequestFigures {
        markers: markers.len(),
        types: model.types.len(),
        ..RequestFigures::default()
    };
    let mut ranked: Vec<(TaskTypeId, u64)> = holders.into_iter().collect();
    ranked.sort_by_key(|&(t, n)| {
        (
            std::cmp::Reverse(n),
            model.types[t.index()].level,
            t.index(),
        )
    });
    ranked.truncate(rule.request_types.max(1));
    f.request_type = ranked.first().map(|&(t, _)| t);
    for &(req, held) in &ranked {
        f.held += held;
        place(
            graph,
            &chains,
            &marker_chains,
            req,
            &mut count_markers,
            &mut f,
        );
    }
    f.request_types = ranked;
    let sessions: Vec<_> = model
        .types
        .iter()
        .filter(|t| t.kind == TaskKind::Session)
        .collect();
    f.session_types = sessions.len();
    f.sessions = sessions.iter().map(|t| t.count).sum();
    cover(graph, model, &mut f);
    f.nested_loops = model
        .types
        .iter()
        .filter(|t| {
            t.kind == TaskKind::Loop
                && t.children
                    .first()
                    .is_some_and(|c| model.types[c.ty.index()].kind == TaskKind::Loop)
        })
        .map(|t| t.name.clone())
        .collect();
    f
}

/// Counts the request occurrences that are top-level or under a session, and in a session.
fn place(
    graph: &Graph,
    chains: &Chains<'_>,
    marker_chains: &[(LeafId, Vec<OccRef>)],
    req: TaskTypeId,
    count_markers: &mut impl FnMut(OccRef) -> usize,
    f: &mut RequestFigures,
) {
    // Per occurrence: the connections its leaves end on (a session holds thousands of leaves).
    let mut connections: HashMap<OccRef, BTreeSet<(Endpoint, Endpoint)>> = HashMap::new();
    for (m, c) in marker_chains {
        let Some(at) = c.iter().position(|r| r.ty == req && count_markers(*r) == 1) else {
            continue;
        };
        let above = c[at + 1..]
            .iter()
            .find(|r| matches!(chains.kind(**r), TaskKind::Group | TaskKind::Session));
        let mine = connection(graph, graph.leaves[m.index()].end_obj);
        // A marker on no connection has no session to sit in: its top-level task must be
        // about its request alone.
        if mine.is_none() {
            let top = c.last().copied();
            f.top_or_session += u64::from(top.is_some_and(|r| count_markers(r) == 1));
            continue;
        }
        let alone = above.is_none_or(|r| {
            let within = connections.entry(*r).or_insert_with(|| {
                chains
                    .occ(*r)
                    .leaves
                    .as_slice()
                    .iter()
                    .filter_map(|l| connection(graph, graph.leaves[l.index()].end_obj))
                    .collect()
            });
            within.iter().all(|c| Some(c) == mine.as_ref())
        });
        f.top_or_session += u64::from(alone);
        f.in_session += u64::from(above.is_some_and(|r| chains.kind(*r) == TaskKind::Session));
    }
}

/// Each leaf under its top-level type (a leaf in no task: its leaf type's model type): the
/// types that cover 95% of them, most leaves first, with their leaves.
pub fn top_level_cover(graph: &Graph, model: &Model) -> Vec<(TaskTypeId, u64)> {
    let chains = Chains { model };
    let leaf_model_type: HashMap<_, _> = model
        .types
        .iter()
        .enumerate()
        .filter(|(_, t)| t.kind == TaskKind::Leaf)
        .filter_map(|(i, t)| Some((t.leaf_type?, i)))
        .collect();
    // Per type: leaves, and the first leaf counted (ties in the order first seen).
    let mut under: HashMap<usize, (u64, usize)> = HashMap::new();
    for (i, l) in graph.leaves.iter().enumerate() {
        let top = match chains.of(LeafId::at(i)).last() {
            Some(r) => r.ty.index(),
            None => leaf_model_type.get(&l.ty).copied().unwrap_or(usize::MAX),
        };
        under.entry(top).or_insert((0, i)).0 += 1;
    }
    let total: u64 = under.values().map(|v| v.0).sum();
    let mut order: Vec<(usize, u64, usize)> = under
        .into_iter()
        .map(|(t, (n, first))| (t, n, first))
        .collect();
    order.sort_by_key(|&(_, n, first)| (std::cmp::Reverse(n), first));
    let mut acc = 0;
    let mut covering = Vec::new();
    for (t, n, _) in order {
        if acc * 100 >= total * 95 {
            break;
        }
        acc += n;
        covering.push((TaskTypeId::at(t), n));
    }
    covering
}

/// The share of the leaves a type holds for its name to be checked across recordings.
pub const NAMED_SHARE: f64 = 0.01;

/// The names (sorted) of the types in `shares` that hold [`NAMED_SHARE`].
pub fn named(shares: &BTreeMap<String, f64>) -> Vec<String> {
    let at_least = shares.iter().filter(|&(_, &s)| s >= NAMED_SHARE);
    at_least.map(|(n, _)| n.clone()).collect()
}

/// The types that cover 95% of the leaves (see [`top_level_cover`]), the names of those that
/// hold 1%, and the shares of those that hold half a percent.
fn cover(graph: &Graph, model: &Model, f: &mut RequestFigures) {
    f.covering = top_level_cover(graph, model);
    f.cover_95 = f.covering.len();
    let total = graph.leaves.len() as u64;
    f.leaves = total;
    let held = |t: &scalpel_model::task::TaskType| -> u64 {
        match t.kind {
            TaskKind::Leaf => t.count,
            _ => t
                .occurrences
                .iter()
                .map(|o| o.leaves.as_slice().len() as u64)
                .sum(),
        }
    };
    f.shares = model
        .types
        .iter()
        .map(|t| (t.name.clone(), held(t) as f64 / total.max(1) as f64))
        .filter(|&(_, s)| s >= NAMED_SHARE / 2.0)
        .collect();
    f.names = named(&f.shares);
}
