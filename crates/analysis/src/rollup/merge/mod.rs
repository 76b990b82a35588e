//! The rollups of a trace inferred in time windows, added up into one: what `scalpel top` shows
//! of a directory `scalpel infer` wrote window by window.
//!
//! Each window is a model of its own, rolled up and let go before the next is read, so the
//! memory is one window's and the sum's (a few numbers per task type, and latencies kept as
//! [`super::dist`] keeps them). The windows replay one grammar, so a task keeps its name from
//! window to window, and types are matched by name.
//!
//! Exact: instance counts, the sums (latency, critical path, running and blocked time by kind,
//! bytes, CPU), the mean and the longest latency, the children's shares, the blocked calls and
//! the bytes per channel kind. Not exact: the percentiles of a type with more than
//! [`super::EXACT_VALUES`] instances (a sketch, within 0.1%); the contributors to a critical
//! path, which are each window's twelve largest added up (one that is thirteenth in every
//! window is missed); and a type's own span, the windows' spans of it added up. What a window
//! cannot see (a task a boundary cuts is one task in each window) is the windows' own limit.

use std::collections::BTreeSet;

use ahash::AHashMap;
use scalpel_model::graph::{Graph, HostInfo, LeafTypeId};
use scalpel_model::task::{ChildRef, Model, TaskKind, TaskType, TaskTypeId};

mod acc;

use super::blame::Blame;
use super::counts::TraceCounts;
use super::held::{leaves_held, LeavesHeld};
use super::kinds::BlockKind;
use super::leaf::{add_bytes, ChannelBytes};
use super::Rollup;
use acc::Acc;

/// A task type's place in the sum: the order it was first seen in.
type Slot = usize;

/// A blocked call: leaf type, kind, call, function, stack, object, peer.
type BlameKey = (
    Slot,
    BlockKind,
    String,
    Option<String>,
    Vec<String>,
    String,
    Option<Slot>,
);

/// A thread: its process's pid and incarnation, and its tid.
type ThreadKey = (u32, u32, u32);

/// The rollups of windows added up, one window at a time ([`WindowsRollup::add`]), then made
/// one rollup ([`WindowsRollup::finish`]).
#[derive(Debug, Default)]
pub struct WindowsRollup {
    slot_of: AHashMap<String, Slot>,
    types: Vec<SlotType>,
    /// Count, time and longest of each blocked call.
    blame: AHashMap<BlameKey, (u64, u64, u64)>,
    channels: Vec<ChannelBytes>,
    first_ns: Option<u64>,
    last_ns: u64,
    leaves: usize,
    live_threads: BTreeSet<ThreadKey>,
    threads: BTreeSet<ThreadKey>,
    processes: BTreeSet<(u32, u32)>,
    hosts: Vec<HostInfo>,
    windows: usize,
}

/// The windows added up (see [`WindowsRollup::finish`]).
#[derive(Debug)]
pub struct WindowsSum {
    /// The task types of all windows, by name (leaf types first; no occurrences).
    pub types: Vec<TaskType>,
    /// Their rollups added up, indexed as `types`.
    pub rollup: Rollup,
    /// The trace's processes, threads and leaves over all windows.
    pub counts: TraceCounts,
    /// The leaves each type's instances hold, indexed as `types`.
    pub held: Vec<LeavesHeld>,
}

/// What one task type adds up to.
#[derive(Debug)]
struct SlotType {
    name: String,
    kind: TaskKind,
    level: u32,
    count: u64,
    top_level: u64,
    /// Child types and their occurrences, in the order first seen.
    children: Vec<(Slot, u64)>,
    /// All its instances.
    all: Acc,
    /// Its top-level instances alone, when it has any.
    alone: Option<Acc>,
    /// The leaves its instances hold.
    held: LeavesHeld,
}

impl WindowsRollup {
    /// An empty sum.
    pub fn new() -> WindowsRollup {
        WindowsRollup::default()
    }

    /// Adds one window: its `model`, mined from `graph`, and their rollup `r`.
    pub fn add(&mut self, graph: &Graph, model: &Model, r: &Rollup) {
        let slots: Vec<Slot> = model.types.iter().map(|t| self.slot(t)).collect();
        let at = |t: usize| slots.get(t).copied();
        let held = leaves_held(model);
        for ((t, &s), h) in model.types.iter().zip(&slots).zip(held) {
            let e = &mut self.types[s];
            e.count += t.count;
            e.top_level += t.top_level;
            e.held.add(h);
            for c in &t.children {
                if let Some(c_slot) = at(c.ty.index()) {
                    add_child_ref(&mut e.children, c_slot, c.count);
                }
            }
        }
        for st in &r.types {
            if let Some(s) = at(st.ty.index()) {
                self.types[s].all.add(st, &at);
            }
        }
        for st in &r.top_level {
            if let Some(s) = at(st.ty.index()) {
                self.types[s]
                    .alone
                    .get_or_insert_with(Acc::default)
                    .add(st, &at);
            }
        }
        for b in &r.blame {
            let Some(leaf) = at(b.leaf_type.index()) else {
                continue;
            };
            let peer = b.peer.and_then(|p| at(p.index()));
            let key = (
                leaf,
                b.kind,
                b.call.clone(),
                b.function.clone(),
                b.stack.clone(),
                b.object.clone(),
                peer,
            );
            let e = self.blame.entry(key).or_default();
            e.0 += b.count;
            e.1 = e.1.saturating_add(b.total_ns);
            e.2 = e.2.max(b.max_ns);
        }
        for c in &r.channels {
            add_bytes(&mut self.channels, &c.kind, c.bytes_in, c.bytes_out);
        }
        self.add_counts(graph);
        self.windows += 1;
    }

    /// The sum's slot for `t`, made when its name is new.
    fn slot(&mut self, t: &TaskType) -> Slot {
        if let Some(&s) = self.slot_of.get(&t.name) {
            return s;
        }
        let s = self.types.len();
        self.slot_of.insert(t.name.clone(), s);
        self.types.push(SlotType {
            name: t.name.clone(),
            kind: t.kind,
            level: t.level,
            count: 0,
            top_level: 0,
            children: Vec::new(),
            all: Acc::default(),
            alone: None,
            held: LeavesHeld::default(),
        });
        s
    }

    /// Adds `graph`'s span, leaves, threads and processes.
    fn add_counts(&mut self, graph: &Graph) {
        if let Some((first, last)) = super::bounds(graph) {
            self.first_ns = Some(self.first_ns.map_or(first, |f| f.min(first)));
            self.last_ns = self.last_ns.max(last);
        }
        self.leaves += graph.leaves.len();
        // A process by its pid and incarnation (by its place in a graph that lists none).
        let process = |i: usize| {
            graph
                .processes
                .get(i)
                .map_or((i as u32, u32::MAX), |p| (p.pid, p.incarnation))
        };
        for i in 0..graph.processes.len() {
            self.processes.insert(process(i));
        }
        for t in &graph.threads {
            let (pid, incarnation) = process(t.process.index());
            let key = (pid, incarnation, t.tid);
            self.threads.insert(key);
            if t.leaves > 0 {
                self.live_threads.insert(key);
            }
        }
        if self.hosts.is_empty() {
            self.hosts = graph.hosts.clone();
        }
    }

    /// The windows as one rollup: the task types (leaf types first, then the others, each in
    /// the order first seen; no occurrences), their rollup and the leaves their instances
    /// hold, indexed as they are, and the trace's counts.
    pub fn finish(self) -> WindowsSum {
        let leaf = |s: &SlotType| s.kind == TaskKind::Leaf;
        let order: Vec<Slot> = (0..self.types.len())
            .filter(|&s| leaf(&self.types[s]))
            .chain((0..self.types.len()).filter(|&s| !leaf(&self.types[s])))
            .collect();
        let mut id = vec![0u32; order.len()];
        for (i, &s) in order.iter().enumerate() {
            id[s] = i as u32;
        }
        let span_ns = self.first_ns.map_or(0, |f| self.last_ns.saturating_sub(f));
        let mut types = Vec::with_capacity(order.len());
        let mut stats = Vec::with_capacity(order.len());
        let mut top_level = Vec::new();
        let held = order.iter().map(|&s| self.types[s].held).collect();
        for &s in &order {
            let e = &self.types[s];
            let ty = TaskTypeId::new(id[s]);
            types.push(TaskType {
                name: e.name.clone(),
                kind: e.kind,
                level: e.level,
                leaf_type: leaf(e).then(|| LeafTypeId::new(id[s])),
                count: e.count,
                top_level: e.top_level,
                children: e
                    .children
                    .iter()
                    .map(|&(c, count)| ChildRef {
                        ty: TaskTypeId::new(id[c]),
                        count,
                    })
                    .collect(),
                edges: Vec::new(),
                variants: Vec::new(),
                occurrences: Vec::new(),
            });
            stats.push(e.all.stats(ty, &id, span_ns));
            if let Some(a) = &e.alone {
                top_level.push(a.stats(ty, &id, span_ns));
            }
        }
        let counts = self.counts();
        let mut channels = self.channels;
        channels.sort_by(|a, b| a.kind.cmp(&b.kind));
        let rollup = Rollup {
            types: stats,
            top_level,
            blame: blame_rows(self.blame, &id),
            span_ns,
            channels,
        };
        WindowsSum {
            types,
            rollup,
            counts,
            held,
        }
    }

    fn counts(&self) -> TraceCounts {
        let live: BTreeSet<(u32, u32)> =
            self.live_threads.iter().map(|&(p, i, _)| (p, i)).collect();
        TraceCounts {
            processes: live.len(),
            threads: self.live_threads.len(),
            processes_recorded: self.processes.len(),
            threads_recorded: self.threads.len(),
            leaves: self.leaves,
            hosts: self.hosts.clone(),
            windows: self.windows,
        }
    }
}

/// Adds `count` occurrences of child `c` to `children`.
fn add_child_ref(children: &mut Vec<(Slot, u64)>, c: Slot, count: u64) {
    match children.iter_mut().find(|e| e.0 == c) {
        Some(e) => e.1 += count,
        None => children.push((c, count)),
    }
}

/// The blocked calls summed, by leaf type, largest first (as one rollup orders them).
fn blame_rows(blame: AHashMap<BlameKey, (u64, u64, u64)>, id: &[u32]) -> Vec<Blame> {
    let mut rows: Vec<Blame> = blame
        .into_iter()
        .map(
            |((leaf, kind, call, function, stack, object, peer), (count, total, max))| Blame {
                leaf_type: LeafTypeId::new(id[leaf]),
                kind,
                call,
                function,
                stack,
                object,
                peer: peer.map(|p| LeafTypeId::new(id[p])),
                count,
                total_ns: total,
                max_ns: max,
            },
        )
        .collect();
    rows.sort_by(|a, b| {
        (a.leaf_type, std::cmp::Reverse(a.total_ns), a.kind, &a.call)
            .cmp(&(b.leaf_type, std::cmp::Reverse(b.total_ns), b.kind, &b.call))
            .then_with(|| {
                (&a.function, &a.stack, &a.object, a.peer).cmp(&(
                    &b.function,
                    &b.stack,
                    &b.object,
                    b.peer,
                ))
            })
    });
    rows
}
