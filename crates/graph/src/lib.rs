//! Stage 1 of inference: a trace directory turned into leaf tasks and the causal graph between
//! them (`scalpel infer DIR --stage graph`).
//!
//! Files are decoded in parallel and each is cut into leaves on the thread that decoded it
//! (`sink`, `leaves`), so memory holds leaves and the cuts the matchers need rather than
//! events. The pieces are then numbered trace-wide (`assemble`), notification edges are
//! matched per object (`notify`, `streams`), mutex order becomes contention data
//! (`locks`), and program order joins each thread's leaves (`weak` marks where it is weak).
//!
//! Scope: the instance graph. Non-goals: the hierarchy (the miner reads this graph), rollups,
//! and drawing (`crate::views`).

mod assemble;
mod event;
mod eventloop;
mod filter;
mod futexlocks;
mod latches;
mod leaves;
mod locks;
mod naming;
mod notify;
mod queues;
mod ready;
mod retype;
mod signals;
mod sink;
mod streamorder;
mod streams;
mod types;
mod weak;

use scalpel_model::graph::ChannelKind;
use std::path::{Path, PathBuf};

use ahash::AHashMap;
use rayon::prelude::*;
use scalpel_model::format::{ChanKind, ObjKind, Op};
use scalpel_model::graph::merge_into;
use scalpel_model::graph::{
    Edge, EdgeKind, External, ExternalRole, Graph, NodeId, ObjId, ThreadId,
};
use scalpel_model::read::{read_dir_with, ReadError, RecordingLosses};

use scalpel_symbols::ModuleWarning;

pub use filter::{Filter, FilterError};

use event::{KindOf, HAS_SEQ, HAS_X, NO_OBJ};
use leaves::Bound;
use notify::GroupOut;
use sink::ThreadSink;
use weak::WeakOrder;

/// Options of the graph stage. `Default`: lenient loading, no filters, the default skip list.
#[derive(Clone, Debug, Default)]
pub struct GraphOptions {
    /// Fail on any data loss (damaged or unreadable files, lost events) instead of warning.
    pub strict: bool,
    /// Keep only leaves matching these (one match per filter kind given).
    pub include: Vec<Filter>,
    /// Drop leaves matching any of these.
    pub exclude: Vec<Filter>,
    /// Frames that never name a leaf type.
    pub skip: scalpel_symbols::SkipList,
    /// Cut leaves at mutex and rwlock calls too (default off): for programs that hand work over
    /// under locks alone, where each critical section then becomes a leaf. Lock order still
    /// draws no edges.
    pub lock_cuts: bool,
}

/// Why the graph could not be built.
#[derive(Debug, thiserror::Error)]
pub enum GraphError {
    /// The directory could not be read at all.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// Strict mode (`GraphOptions::strict`) and the trace lost data.
    #[error("{}: the trace lost data, which strict mode refuses:\n  {}", .dir.display(), lines(.problems))]
    Strict {
        /// The trace directory.
        dir: PathBuf,
        /// Each loss, naming its file and offset.
        problems: Vec<GraphWarning>,
    },
    /// The filters (`GraphOptions::skip`) kept none of the trace's leaves.
    #[error(
        "{}: the filters keep none of its {leaves} leaf tasks (check their pid, tid, name or \
         time range against what the trace holds)",
        .dir.display()
    )]
    NothingKept {
        /// The trace directory.
        dir: PathBuf,
        /// Leaves before filtering.
        leaves: usize,
    },
}

/// Data the graph stage had to do without: each names its file (and offset, if any). What is
/// valid is used all the same.
#[derive(Debug, thiserror::Error)]
pub enum GraphWarning {
    /// Damage the reader found (a truncated file, a bad record …).
    #[error(transparent)]
    Read(ReadError),
    /// Events the agent dropped while recording, as its file counts them.
    #[error("{}: {count} event(s) lost while recording", .path.display())]
    Lost {
        /// The thread file.
        path: PathBuf,
        /// Events lost.
        count: u64,
    },
    /// A module whose frames cannot be symbolized.
    #[error(transparent)]
    Module(ModuleWarning),
    /// Cutting at locks on a trace whose uncontended mutex pairs were counted, not recorded:
    /// there is no call to cut at for them. Not data loss (strict mode passes).
    #[error(
        "{}: {pairs} uncontended mutex lock+unlock pair(s) were counted, not recorded: leaves \
         are cut only at the recorded ones",
        .path.display()
    )]
    CountedLocks {
        /// The trace directory.
        path: PathBuf,
        /// Pairs counted.
        pairs: u64,
    },
    /// Threads or processes the agent could not give a file: their events are missing.
    #[error("{}: the recording lost {losses}", .path.display())]
    Unrecorded {
        /// The trace directory (its `shared.tbl` counts them).
        path: PathBuf,
        /// What was lost.
        losses: RecordingLosses,
    },
}

/// Warnings one per line, indented.
fn lines(ws: &[GraphWarning]) -> String {
    let v: Vec<String> = ws.iter().map(ToString::to_string).collect();
    v.join("\n  ")
}

/// A built graph and what was noticed on the way.
#[derive(Debug)]
pub struct Built {
    /// The graph.
    pub graph: Graph,
    /// Data-loss and symbolization warnings (each names its file, and its offset if any).
    pub warnings: Vec<GraphWarning>,
    /// Events read.
    pub events: u64,
}

/// Builds the causal graph of the trace in `dir`.
pub fn build_graph(dir: &Path, opts: &GraphOptions) -> Result<Built, GraphError> {
    let (mut trace, mut sinks) = read_dir_with(dir, |_| ThreadSink::new(opts.lock_cuts))?;
    // Reading grew every thread's arrays by doubling; the blocks they left are garbage.
    scalpel_model::memory::release_freed_memory();
    let words = futexlocks::lock_words(&sinks);
    let latched = latches::latch_wakeups(&trace, &sinks);
    futexlocks::recut(&trace, &mut sinks, words, latched.uncut, opts.lock_cuts);
    let mut warnings: Vec<GraphWarning> = trace
        .take_warnings()
        .into_iter()
        .map(GraphWarning::Read)
        .collect();
    if trace.losses.any() {
        warnings.push(GraphWarning::Unrecorded {
            path: trace.path.clone(),
            losses: trace.losses,
        });
    }
    for (_, f) in trace.files() {
        if f.lost_events() > 0 {
            warnings.push(GraphWarning::Lost {
                path: f.path.clone(),
                count: f.lost_events(),
            });
        }
    }
    if opts.strict && !warnings.is_empty() {
        return Err(GraphError::Strict {
            dir: dir.to_path_buf(),
            problems: warnings,
        });
    }
    let events = sinks
        .iter()
        .flat_map(|p| p.threads.iter())
        .map(|s| s.events)
        .sum();
    let counted: u64 = sinks
        .iter()
        .flat_map(|p| p.threads.iter())
        .filter_map(|s| s.out.as_ref().map(|o| o.counted_pairs))
        .fold(0, u64::saturating_add);
    if opts.lock_cuts && counted > 0 {
        warnings.push(GraphWarning::CountedLocks {
            path: trace.path.clone(),
            pairs: counted,
        });
    }
    let asm = assemble::assemble(&trace, sinks, &opts.skip);
    warnings.extend(asm.warnings.iter().cloned().map(GraphWarning::Module));
    let mut graph = asm.graph;
    // Signal sends and thread starts (which name the handles pthread_kill uses), for the signal
    // edges, which are matched last: a return that something else already caused is no
    // signal's.
    let sends: Vec<Bound> = asm
        .bounds
        .iter()
        .filter(|b| {
            b.op.op()
                .is_some_and(|o| o == Op::ThreadStart || event::sends(o))
        })
        .copied()
        .collect();
    let conns = eventloop::conns(&asm.bounds, &asm.obj_kinds, &asm.obj_channel, &graph);
    let reports = ready::reports(
        &asm.ready,
        asm.ctls,
        asm.closes,
        &asm.stream_by_key,
        &graph,
        NO_OBJ,
    );
    let (mut edges, ext) = notification_edges(
        asm.bounds,
        &asm.obj_kinds,
        &asm.obj_channel,
        &reports,
        &mut graph,
    );
    land_handoffs(&graph, &mut edges);
    edges.extend(signals::signals(&sends, &graph, &edges));
    drop_stolen_wakeups(&graph, &mut edges);
    queues::add_edges(&graph, &mut edges, asm.sections);
    eventloop::land_completions(&graph, &conns, &mut edges);
    let mut weak = handoff_weak(&graph, &edges, asm.weak);
    eventloop::weaken(&graph, &conns, &mut weak);
    eventloop::split_handoffs(&graph, &edges, &mut weak);
    program_edges(&graph, &weak, &mut edges);
    retype::new_work_types(&mut graph, &weak);
    naming::name_types(&mut graph, &asm.obj_kinds, &opts.skip);
    types::disambiguate(&mut graph.types, &opts.skip);
    let (locks, mut waits) = locks::contention(asm.releases, asm.acquires, asm.lock_aggs);
    waits.extend(latches::lock_waits(&latched.pairs, &asm.latch));
    graph.locks = locks;
    graph.lock_waits = waits;
    let before = graph.leaves.len();
    let ext = filter::apply(&mut graph, &mut edges, ext, &opts.include, &opts.exclude);
    if before > 0 && graph.leaves.is_empty() {
        return Err(GraphError::NothingKept {
            dir: dir.to_path_buf(),
            leaves: before,
        });
    }
    finish_edges(&mut graph, edges, ext, &asm.obj_kinds);
    Ok(Built {
        graph,
        warnings,
        events,
    })
}

/// An edge to or from an external node: (leaf, the external is the source, object).
type ExtEdge = (u32, bool, u32);

/// Matches every object's cuts, in parallel over objects.
fn notification_edges(
    mut bounds: Vec<Bound>,
    kinds: &[KindOf],
    channels: &[u64],
    reports: &ready::Reports,
    graph: &mut Graph,
) -> (Vec<Edge>, Vec<ExtEdge>) {
    let mut conns = GroupOut::default();
    streams::connections(&bounds, &mut conns);
    streams::handoffs(&bounds, channels, graph, &mut conns);
    // A byte stream's transfers carry an offset and, from agents since issue 25, no sequence
    // number: `streams::stream` orders them by offset and time.
    bounds.retain(|b| b.obj != NO_OBJ && b.flags & (HAS_SEQ | HAS_X) != 0);
    bounds.par_sort_unstable_by_key(|b| (b.obj, b.seq, b.leaf));
    let groups: Vec<&[Bound]> = bounds.chunk_by(|a, b| a.obj == b.obj).collect();
    let leaves = &graph.leaves;
    let outs: Vec<GroupOut> = groups
        .par_iter()
        .map(|g| {
            let o = g[0].obj;
            let mut out = GroupOut::default();
            let (kind, chan) = kinds.get(o as usize).map_or((None, None), |&(k, c)| {
                (k.known(), c.and_then(ChannelKind::known))
            });
            match (kind, chan) {
                (Some(ObjKind::Cond), _) => notify::cond(g, o, leaves, &mut out),
                (Some(ObjKind::Sem), _) => notify::sem(g, o, &mut out),
                (Some(ObjKind::Futex), _) => notify::futex(g, o, leaves, &mut out),
                (Some(ObjKind::Thread), _) => notify::join(g, o, &mut out),
                (Some(ObjKind::Spawn), _) => notify::spawn(g, o, &mut out),
                (Some(ObjKind::Stream), Some(ChanKind::Eventfd)) => {
                    streams::eventfd(g, o, leaves, reports, &mut out)
                }
                (Some(ObjKind::Stream), _) => streams::stream(g, o, leaves, reports, &mut out),
                _ => {}
            }
            out
        })
        .collect();
    let mut edges = Vec::new();
    let mut ext = Vec::new();
    for out in std::iter::once(conns).chain(outs) {
        edges.extend(out.edges);
        ext.extend(out.external);
        graph.unmatched.add(&out.unmatched);
    }
    (edges, ext)
}

/// A hand-off lands where the taking thread was told: when the accepting leaf also wrote to a
/// descriptor that the thread that first used the connection then read or was told of
/// (memcached writes the worker's notify eventfd after it queues the connection), the hand-off
/// goes to the leaf that notification started, not to the first use. The first request may come
/// much later (the client's delay), and counting that wait as the connection's queueing would
/// blame the worker for it. A condition variable's wakeup is left alone: a worker pool that
/// takes connections from a condvar queue (Apache, the threadpool sample) pops and serves in one
/// go, and its hand-off already marks where it went back for new work.
fn land_handoffs(graph: &Graph, edges: &mut [Edge]) {
    if !edges.iter().any(|e| e.kind == EdgeKind::Handoff) {
        return;
    }
    let mut told: AHashMap<NodeId, Vec<NodeId>> = AHashMap::new();
    for e in edges.iter() {
        let wakes = matches!(
            e.kind,
            EdgeKind::Stream | EdgeKind::Eventfd | EdgeKind::Ready
        );
        if wakes {
            told.entry(e.from).or_default().push(e.to);
        }
    }
    for e in edges.iter_mut().filter(|e| e.kind == EdgeKind::Handoff) {
        let Some(to) = graph.leaves.get(e.to.index()) else {
            continue;
        };
        // The latest notified leaf of the same thread at or before the first use.
        let landing = told.get(&e.from).and_then(|v| {
            v.iter()
                .filter(|n| {
                    n.0 <= e.to.0
                        && graph
                            .leaves
                            .get(n.index())
                            .is_some_and(|l| l.thread == to.thread)
                })
                .max()
                .copied()
        });
        if let Some(n) = landing {
            e.to = n;
        }
    }
}

/// A signal that went with a hand-off (the same leaf pushed a connection that another thread
/// took) but woke a third thread, which only waited again on the same condition, did no work:
/// the hand-off edge shows where the work went. Such cond edges are dropped.
fn drop_stolen_wakeups(graph: &Graph, edges: &mut Vec<Edge>) {
    let mut handed: AHashMap<NodeId, Vec<NodeId>> = AHashMap::new();
    for e in edges.iter().filter(|e| e.kind == EdgeKind::Handoff) {
        handed.entry(e.from).or_default().push(e.to);
    }
    if handed.is_empty() {
        return;
    }
    edges.retain(|e| {
        if e.kind != EdgeKind::Cond {
            return true;
        }
        let Some(takers) = handed.get(&e.from) else {
            return true;
        };
        !queues::waits_again(graph, e) || takers.contains(&e.to)
    });
}

/// Weak program order with the hand-offs': where a thread took a handed-off connection is where
/// it went back for new work, so the program edge into that leaf is weak, like one out of a
/// wait for work. The loop-head guess is dropped on a thread that takes hand-offs but never
/// right after a wait at its guessed head: the guess missed its loop. A threadpool worker that
/// found a connection queued at start never waited before it, so its first repeated wait was
/// the read of a request header, and every request would be cut from its connection. (An
/// Apache worker keeps its guess: it takes hand-offs right after its queue wait, and the same
/// wait also brings it work that is no new connection.)
fn handoff_weak(graph: &Graph, edges: &[Edge], order: WeakOrder) -> Vec<bool> {
    let WeakOrder { mut weak, head } = order;
    // Per thread that takes hand-offs: whether one came right after a wait at its guessed head.
    let mut takes: AHashMap<ThreadId, bool> = AHashMap::new();
    let mut into = Vec::new();
    for e in edges.iter().filter(|e| e.kind == EdgeKind::Queue) {
        // A take from a queue is where its thread went back for new work, like a hand-off.
        let to = e.to.index();
        if to > 0 && graph.leaves[to - 1].thread == graph.leaves[to].thread {
            into.push(to - 1);
        }
    }
    for e in edges.iter().filter(|e| e.kind == EdgeKind::Handoff) {
        let to = e.to.index();
        let thread = graph.leaves[to].thread;
        if to > 0 && graph.leaves[to - 1].thread == thread {
            *takes.entry(thread).or_insert(false) |= head.get(to - 1).copied().unwrap_or(false);
            into.push(to - 1);
        }
    }
    for (i, w) in weak.iter_mut().enumerate() {
        let missed = takes.get(&graph.leaves[i].thread) == Some(&false);
        if missed && head.get(i).copied().unwrap_or(false) {
            *w = false;
        }
    }
    for i in into {
        weak[i] = true;
    }
    weak
}

/// Program order: each thread's leaves in sequence.
fn program_edges(graph: &Graph, weak: &[bool], edges: &mut Vec<Edge>) {
    for t in &graph.threads {
        for i in t.first_leaf.0..(t.first_leaf.0 + t.leaves).saturating_sub(1) {
            let kind = if weak.get(i as usize).copied().unwrap_or(false) {
                EdgeKind::ProgramWeak
            } else {
                EdgeKind::Program
            };
            edges.push(Edge {
                from: NodeId(i),
                to: NodeId(i + 1),
                kind,
                obj: None,
            });
        }
    }
}

/// Numbers the external nodes after the leaves, adds their edges, sorts and dedups.
fn finish_edges(graph: &mut Graph, mut edges: Vec<Edge>, ext: Vec<ExtEdge>, kinds: &[KindOf]) {
    let base = graph.leaves.len() as u32;
    // An external stands for a channel; an object index with no object is no channel.
    let ext: Vec<ExtEdge> = ext
        .into_iter()
        .filter(|&(_, _, o)| (o as usize) < graph.objects.len())
        .collect();
    let mut index: AHashMap<(bool, u32), u32> = AHashMap::new();
    let mut keys: Vec<(u32, bool)> = ext.iter().map(|&(_, src, o)| (o, src)).collect();
    keys.sort_unstable();
    keys.dedup();
    for (o, src) in keys {
        index.insert((src, o), graph.externals.len() as u32);
        graph.externals.push(External {
            role: if src {
                ExternalRole::Source
            } else {
                ExternalRole::Sink
            },
            obj: ObjId::new(o),
        });
    }
    for (leaf, src, o) in ext {
        let node = base + index[&(src, o)];
        let (from, to) = if src { (node, leaf) } else { (leaf, node) };
        edges.push(Edge {
            from: NodeId(from),
            to: NodeId(to),
            kind: kind_of_external(kinds, o),
            obj: Some(ObjId::new(o)),
        });
    }
    // Two thirds of the edges are program order, made thread by thread already sorted: only
    // the rest is taken out and sorted, then merged back from the end, in the same buffer.
    let mut other = Vec::new();
    edges.retain(|e| {
        let program = matches!(e.kind, EdgeKind::Program | EdgeKind::ProgramWeak);
        if !program {
            other.push(*e);
        }
        program
    });
    if edges.windows(2).any(|w| w[0] > w[1]) {
        edges.par_sort_unstable();
    }
    other.par_sort_unstable();
    merge_into(&mut edges, &other);
    edges.dedup();
    graph.edges = edges;
}

/// External edges take the kind of their object: connections for endpoints, eventfd for
/// eventfds, bytes otherwise.
fn kind_of_external(kinds: &[KindOf], o: u32) -> EdgeKind {
    let Some(&(kind, chan)) = kinds.get(o as usize) else {
        return EdgeKind::Stream;
    };
    match (kind.known(), chan.and_then(ChannelKind::known)) {
        (Some(ObjKind::Endpoint), _) => EdgeKind::Connect,
        (_, Some(ChanKind::Eventfd)) => EdgeKind::Eventfd,
        _ => EdgeKind::Stream,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_from_the_back_gives_the_sorted_union() {
        let e = |from, to, kind| Edge {
            from: NodeId(from),
            to: NodeId(to),
            kind,
            obj: None,
        };
        let program: Vec<Edge> = (0..6).map(|i| e(i, i + 1, EdgeKind::Program)).collect();
        let other = vec![
            e(0, 9, EdgeKind::Cond),
            e(2, 3, EdgeKind::Program),
            e(4, 1, EdgeKind::Stream),
            e(7, 8, EdgeKind::Sem),
        ];
        for (a, b) in [
            (program.clone(), other.clone()),
            (Vec::new(), other.clone()),
            (program.clone(), Vec::new()),
        ] {
            let mut want: Vec<Edge> = a.iter().chain(&b).copied().collect();
            want.sort_unstable();
            let mut got = a;
            merge_into(&mut got, &b);
            assert_eq!(got, want);
        }
    }
}
