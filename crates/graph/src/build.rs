//! `build_graph`: the stage's phases, in order. Each phase takes what the one before it
//! returned, by value where it consumes it, so the order below is the only one that compiles:
//!
//! 1. [`read`](crate::read::read): every file decoded and cut into leaves on the thread that decoded it; futex
//!    words used as locks and latch wake-ups found across threads, and the threads recut.
//! 2. [`account`](crate::read::account): what the recording lost, as warnings (strict mode refuses them).
//! 3. `assemble`: the per-thread pieces numbered trace-wide into a graph without edges.
//! 4. [`causal_edges`]: notifications matched per object, then the passes over all of them
//!    (hand-offs landed, signals, stolen wake-ups dropped, queues, event-loop completions).
//! 5. [`program_order`]: where a thread's program order is weak, and its program edges.
//! 6. [`name_types`]: new-work types split, leaf types named and disambiguated.
//! 7. Locks: mutex order as contention data, never as edges.
//! 8. Filters, then the edges' final form.

use std::path::{Path, PathBuf};

use crate::carry::{PassCarry, ReadCarry, WindowCarry};
use crate::read::{account, read, Read};
use ahash::{AHashMap, AHashSet};
use scalpel_model::format::Op;
use scalpel_model::graph::{Edge, EdgeKind, Graph, HostInfo, LockWait};
use scalpel_model::object::Channel;
use scalpel_model::read::Windows;

use crate::assemble::Assembled;
use crate::edges::*;
use crate::event::{KindOf, NO_OBJ};
use crate::latches::FileEvent;
use crate::leaves::{Bound, LatchCall, LockAcquire, LockAgg};
use crate::options::{Built, GraphError, GraphOptions, GraphWarning};
use crate::releases::LockReleases;
use crate::{
    assemble, calls, completions, condlocks, event, eventloop, filter, hosts, jobconns, latches,
    locks, merge, naming, queues, ready, replycalls, retype, room, service, signals, types,
};

/// Builds the causal graph of the trace in `dir`.
pub fn build_graph(dir: &Path, opts: &GraphOptions) -> Result<Built, GraphError> {
    build_graph_of(&[dir.to_path_buf()], opts)
}

/// Builds one causal graph of the traces in `dirs`, recorded on one machine or several: objects
/// are shared only by a TCP connection both machines saw begin, and every time is put on the
/// first directory's machine's clock, aligned from the messages on those connections. One
/// directory gives exactly what [`build_graph`] gives.
pub fn build_graph_of(dirs: &[PathBuf], opts: &GraphOptions) -> Result<Built, GraphError> {
    let (read, warnings, events, hosts) = read_all(dirs, opts)?;
    build_from(read, warnings, events, hosts, opts, None)
}

/// Builds the causal graph of window `k` of a trace read in windows (see [`Windows`]): the
/// graph [`build_graph`] gives of that window's events alone, each with the time, stack and
/// object it has in the whole trace. Windows are built in order, with one `carry` for all: what
/// a thread's first window found that a later one cannot (see [`WindowCarry`]).
pub fn build_graph_window(
    windows: &mut Windows,
    k: usize,
    opts: &GraphOptions,
    carry: &mut WindowCarry,
) -> Result<Built, GraphError> {
    let (reading, passes) = carry.split();
    let read = read_graph_window(windows, k, opts, reading)?;
    build_read_window(read, opts, passes)
}

/// Window `k` decoded and cut into leaves (phases 1 and 2 of [`build_graph_window`]), for
/// [`build_read_window`]. Reading a window takes only what reading the windows before it left
/// (`carry`), not their graphs, so window k + 1 can be read while window k is built.
pub fn read_graph_window(
    windows: &mut Windows,
    k: usize,
    opts: &GraphOptions,
    carry: &mut ReadCarry,
) -> Result<WindowRead, GraphError> {
    let mut read = crate::read::read_window(windows, k, opts, carry)?;
    let dir = read.trace.path.clone();
    let (warnings, events) = account(&dir, opts, &mut read)?;
    Ok(WindowRead {
        read,
        warnings,
        events,
    })
}

/// The rest of [`build_graph_window`] on a window [`read_graph_window`] read, after the windows
/// before it were built with the same `carry`.
pub fn build_read_window(
    read: WindowRead,
    opts: &GraphOptions,
    carry: &mut PassCarry,
) -> Result<Built, GraphError> {
    let WindowRead {
        read,
        warnings,
        events,
    } = read;
    build_from(read, warnings, events, Vec::new(), opts, Some(carry))
}

/// A window of a trace decoded and cut into leaves, not yet built into a graph (see
/// [`read_graph_window`]).
pub struct WindowRead {
    read: Read,
    warnings: Vec<GraphWarning>,
    events: u64,
}

/// Phases 3 to 8 on what phases 1 and 2 read.
fn build_from(
    read: Read,
    mut warnings: Vec<GraphWarning>,
    events: u64,
    hosts: Vec<HostInfo>,
    opts: &GraphOptions,
    mut carry: Option<&mut PassCarry>,
) -> Result<Built, GraphError> {
    let dir = read.trace.path.clone();
    let dir = dir.as_path();
    let Read {
        trace,
        sinks,
        latched,
    } = read;
    let asm = assemble::assemble(&trace, sinks, &opts.skip);
    warnings.extend(asm.warnings.iter().cloned().map(GraphWarning::Module));
    let mut caused = causal_edges(asm, carry.as_deref_mut());
    let mut weak = program_order(&mut caused, carry);
    let served = service::shared_work(&caused.graph, &mut caused.edges, &weak);
    let called = calls::helper_calls(&caused.graph, &mut caused.edges, &weak);
    let Caused {
        mut graph,
        mut edges,
        mut ext,
        rest: asm,
    } = caused;
    let (locks, mut waits) = locks::contention(asm.releases, asm.acquires, asm.lock_aggs);
    waits.extend(latches::lock_waits(&latched, &asm.latch));
    // Waits that were cuts: back-pressure, calls to a service, calls to a helper, and
    // conditions used as locks. They become waits inside their leaves (`merge`), before the
    // leaves are typed and named.
    let mut calling = served.waits;
    calling.extend(called.waits);
    let calls = service::uncut(&graph, &edges, &calling, &served.callers, &called.callers);
    let mut turned = asm.capacity_waits;
    // A worker's notice that it is free is undone as room is, unless the producer went back
    // for new work at that wait (its program edge out is weak): then the leaves around it
    // hold two items' work, and stay apart (`room`'s `idle`).
    let (idle_turned, idle_kept): (Vec<LockWait>, Vec<LockWait>) = asm
        .idle_waits
        .into_iter()
        .partition(|w| !weak.get(w.waiter.index()).copied().unwrap_or(true));
    turned.extend(idle_turned);
    turned.extend(calling);
    turned.extend(asm.cond_locks.waits);
    let mut signals = served.callers;
    signals.extend(asm.cond_locks.signals);
    let uncut = service::uncut(&graph, &edges, &turned, &signals, &called.callers);
    replycalls::weaken(
        &graph,
        &mut edges,
        &mut weak,
        &uncut.iter().copied().collect(),
        &calls.into_iter().collect(),
    );
    waits.extend(turned);
    waits.extend(idle_kept);
    graph.locks = locks;
    graph.lock_waits = waits;
    merge::merge_cuts(&mut graph, &mut edges, &mut ext, &mut weak, &uncut);
    name_types(&mut graph, &weak, &asm.obj_kinds, opts);
    // Before the filters, which may choose machines by name.
    graph.hosts = hosts;
    let filters = [opts.include.as_slice(), opts.exclude.as_slice()].concat();
    if let Some(name) = filter::unknown_host(&graph, &filters) {
        return Err(GraphError::UnknownHost {
            name: name.to_string(),
            known: graph.hosts.iter().map(|h| h.host.clone()).collect(),
        });
    }
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

/// Phases 1 and 2 for each directory, and the directories put together when there are several;
/// with the warnings, the events read and the machines (none for one directory).
fn read_all(
    dirs: &[PathBuf],
    opts: &GraphOptions,
) -> Result<(Read, Vec<GraphWarning>, u64, Vec<HostInfo>), GraphError> {
    given_once(dirs)?;
    let mut reads = Vec::with_capacity(dirs.len());
    let mut warnings = Vec::new();
    let mut events = 0u64;
    for dir in dirs {
        let mut r = read(dir, opts)?;
        let (w, e) = account(dir, opts, &mut r)?;
        warnings.extend(w);
        events += e;
        reads.push(r);
    }
    if reads.len() == 1 {
        let r = reads.pop().expect("one read");
        return Ok((r, warnings, events, Vec::new()));
    }
    let merged = hosts::merge(reads);
    warnings.extend(merged.warnings);
    Ok((merged.read, warnings, events, merged.hosts))
}

/// Refuses a directory given twice (under two names or one).
fn given_once(dirs: &[PathBuf]) -> Result<(), GraphError> {
    let mut seen: Vec<(PathBuf, &PathBuf)> = Vec::new();
    for d in dirs {
        let real = std::fs::canonicalize(d).unwrap_or_else(|_| d.clone());
        if let Some((_, first)) = seen.iter().find(|(r, _)| *r == real) {
            return Err(GraphError::GivenTwice {
                dir: real,
                first: (*first).clone(),
                second: d.clone(),
            });
        }
        seen.push((real, d));
    }
    Ok(())
}

/// Phase 4's result: the graph with its causal edges, the edges to external nodes, and what
/// later phases still need of the assembly.
struct Caused {
    graph: Graph,
    edges: Vec<Edge>,
    ext: Vec<ExtEdge>,
    rest: Rest,
}

/// What phases after 4 still need of the assembly.
struct Rest {
    obj_kinds: Vec<KindOf>,
    releases: Vec<(u32, u32, LockReleases)>,
    acquires: Vec<LockAcquire>,
    lock_aggs: Vec<(u32, LockAgg)>,
    latch: AHashMap<FileEvent, LatchCall>,
    conns: eventloop::Conns,
    /// Per leaf: the leaf that writes the reply of the job it handed over (`completions`).
    answered: Vec<Option<scalpel_model::graph::NodeId>>,
    weak: crate::weak::WeakOrder,
    /// Waits for room in a bounded queue (`queues::add_edges`): lock waits, not edges.
    capacity_waits: Vec<LockWait>,
    /// A worker's notice that it is free (`room`'s `idle`): lock waits, merged like
    /// `capacity_waits` unless the producer's program edge at the wait is weak.
    idle_waits: Vec<LockWait>,
    /// Conditions used as locks (`condlocks`): their waits and the cuts that are none.
    cond_locks: condlocks::CondLocks,
    /// Every take from a queue (`queues::takes`), for where takes that waited woke.
    takes: Vec<queues::Take>,
}

/// Phase 4: notification edges matched per object, then the passes that need all of them.
/// Signal edges are matched after every other notification: a return that something else
/// already caused is no signal's.
fn causal_edges(asm: Assembled, mut carry: Option<&mut PassCarry>) -> Caused {
    let mut graph = asm.graph;
    // Signal sends and thread starts (which name the handles pthread_kill uses).
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
    // Where connections ended, by key (a client port comes back for the next connection).
    let closed: Vec<(u64, u64)> = asm
        .closes
        .iter()
        .filter(|c| c.3 != 0)
        .map(|c| (c.3, c.2))
        .collect();
    // In a window, what `epoll_ctl` registered in the windows before and still stands.
    let ctls = match carry.as_deref_mut() {
        Some(c) => c.registrations(asm.ctls, &asm.closes, &asm.obj_names),
        None => asm.ctls,
    };
    let reports = ready::reports(
        &asm.ready,
        ctls,
        asm.closes,
        &asm.stream_by_key,
        &graph,
        NO_OBJ,
    );
    let mut bounds = asm.bounds;
    if let Some(c) = carry {
        c.drop_paired_before(&mut bounds, &asm.obj_kinds, &asm.obj_names);
    }
    let socket_ends = jobconns::SocketEnds::new(
        &bounds,
        &asm.obj_kinds,
        &asm.obj_channel,
        graph.leaves.len(),
    );
    let (mut edges, ext) = notification_edges(
        bounds,
        &asm.obj_kinds,
        &asm.obj_channel,
        &reports,
        &closed,
        &mut graph,
    );
    land_handoffs(&graph, &mut edges);
    jobconns::mend(&graph, &mut edges, &asm.obj_kinds, &socket_ends);
    edges.extend(signals::signals(&sends, &graph, &edges));
    drop_stolen_wakeups(&graph, &mut edges);
    let mutexes = queues::cond_mutexes(&asm.sections, &asm.signal_holds);
    let (mut capacity_waits, takes) = queues::add_edges(&graph, &mut edges, asm.sections);
    let answered = completions::land_completions(&graph, &conns, &mut edges);
    // After the completions found the leaves that handled them: a notice is room only where
    // it did not land on its item's result.
    let room = room::room_waits(&graph, &mut edges, &takes);
    capacity_waits.extend(room.room);
    // Before program order: a lock's hand-overs are no takes of new work.
    let cond_locks = condlocks::cond_locks(&graph, &mut edges, &mutexes);
    Caused {
        graph,
        edges,
        ext,
        rest: Rest {
            obj_kinds: asm.obj_kinds,
            releases: asm.releases,
            acquires: asm.acquires,
            lock_aggs: asm.lock_aggs,
            latch: asm.latch,
            conns,
            answered,
            weak: asm.weak,
            capacity_waits,
            idle_waits: room.idle,
            cond_locks,
            takes,
        },
    }
}

/// Phase 5: where each thread's program order is weak (per leaf, returned), and its program
/// edges. `carry`: what the windows before found, in a trace read in windows.
fn program_order(c: &mut Caused, carry: Option<&mut PassCarry>) -> Vec<bool> {
    let mut order = std::mem::take(&mut c.rest.weak);

    // Leaves that end at a wait the merge will undo (room in a bounded queue, a condition
    // used as a lock): the take rule and the split look through them.
    let turned: Vec<LockWait> = c
        .rest
        .capacity_waits
        .iter()
        .chain(&c.rest.cond_locks.waits)
        .copied()
        .collect();
    let mut merged = vec![false; c.graph.leaves.len()];
    for w in service::uncut(&c.graph, &c.edges, &turned, &[], &[]) {
        merged[w as usize] = true;
    }
    order.keep_passed_where_head_cuts(&merged, |i| c.graph.leaves[i].thread);
    let woken = queues::woken_takes(&c.graph, &c.edges, &c.rest.takes);
    let verdicts = carry.map(PassCarry::head_verdicts);
    let mut weak = handoff_weak(&c.graph, &c.edges, order, (&woken, &merged), verdicts);
    let epoll_thread = eventloop::epoll_threads(&c.graph);
    eventloop::weaken(
        &c.graph,
        &epoll_thread,
        &c.rest.conns,
        &call_keys(&c.graph, &c.edges),
        &mut weak,
    );
    let (conns, answered) = (&c.rest.conns, &c.rest.answered);
    completions::split_replies(&c.graph, &epoll_thread, conns, answered, &mut weak);
    eventloop::split_handoffs(&c.graph, &epoll_thread, &c.edges, &merged, &mut weak);
    program_edges(&c.graph, &weak, &mut c.edges);
    weak
}

/// The connection keys of calls through peers outside the trace (`call` edges).
fn call_keys(graph: &Graph, edges: &[Edge]) -> AHashSet<u64> {
    edges
        .iter()
        .filter(|e| e.kind == EdgeKind::Call)
        .filter_map(|e| graph.objects.get(e.obj?.index())?.channel.as_ref())
        .filter_map(|c| match c {
            Channel::Stream { key, .. } => Some(*key),
            Channel::Listening { .. } => None,
        })
        .collect()
}

/// Phase 6: leaf types split where a thread goes back for new work, then named from their
/// stacks and objects, and told apart where two names are the same.
fn name_types(graph: &mut Graph, weak: &[bool], obj_kinds: &[KindOf], opts: &GraphOptions) {
    retype::new_work_types(graph, weak);
    naming::name_types(graph, obj_kinds, &opts.skip);
    types::disambiguate(&mut graph.types, &opts.skip);
}
