//! Signals: `kill`, `tgkill`, `pthread_kill`, `sigqueue` and `raise` to the target's next return
//! from a blocking call. A signal ends a wait with EINTR, makes a `signalfd` readable for the
//! epoll wait that watches it, or runs a handler whose self-pipe write ends one: each time the
//! target's next blocking call returns. PostgreSQL wakes a backend sleeping on its latch (a row
//! lock wait in `ProcSleep`) with `kill(pid, SIGURG)`; without this edge the wait had no cause.
//!
//! The rule: from the leaf the send ended to the first leaf of a target thread that a blocking
//! call started after the send, when that call was entered no later than [`ENTERED_WITHIN_NS`]
//! after it (a latch's owner announces that it may sleep just before it does, so the signal can
//! come first), and that no other edge already explains (a wait that a condition signal or a
//! write ended returned for that reason). A process-directed signal (`kill`, `sigqueue`) goes to
//! whichever of the process's threads returns first that way; `kill(pid, 0)` is no signal, and
//! process groups are not followed. Which thread a process-directed signal really interrupted is
//! a guess when several were waiting with nothing else to wake them.

use ahash::{AHashMap, AHashSet};
use scalpel_model::format::Op;
use scalpel_model::graph::{Edge, EdgeKind, Graph, NodeId, ThreadId};

use super::event::{dispatches, sends, HAS_X};
use super::leaves::Bound;
use super::weak::dequeue_like;

/// How long after a send the waking call may have been entered.
pub(super) const ENTERED_WITHIN_NS: u64 = 10_000_000;

/// Whether a leaf started by `op` began at the return of a call a signal can end: a
/// dequeue-like wait (see `weak`), a readiness wait, an accept or a join.
pub(super) fn blocking(op: Op) -> bool {
    dequeue_like(op) || dispatches(op) || op == Op::ThreadJoin
}

/// The signal edges of the whole trace, given the edges matched so far.
pub(super) fn signals(bounds: &[Bound], graph: &Graph, edges: &[Edge]) -> Vec<Edge> {
    let mut out = Vec::new();
    let caused: AHashSet<u32> = edges
        .iter()
        .filter(|e| !e.kind.in_thread())
        .map(|e| e.to.get())
        .collect();
    let leaves = &graph.leaves;
    let thread_of = |leaf: u32| leaves.get(leaf as usize).map(|l| l.thread);
    // Threads by pid and by tid, each on its machine (a signal never leaves one); pthread
    // handles by (process, handle).
    let host = |t: ThreadId| {
        let p = graph.threads[t.index()].process;
        graph.processes.get(p.index()).map(|p| p.host)
    };
    let mut by_pid: AHashMap<_, Vec<ThreadId>> = AHashMap::new();
    let mut by_tid: AHashMap<_, Vec<ThreadId>> = AHashMap::new();
    for (i, t) in graph.threads.iter().enumerate() {
        let id = ThreadId::at(i);
        by_pid.entry((host(id), t.pid)).or_default().push(id);
        by_tid.entry((host(id), t.tid)).or_default().push(id);
    }
    let mut by_handle: AHashMap<(u32, u64), ThreadId> = AHashMap::new();
    for b in bounds
        .iter()
        .filter(|b| b.op.is(Op::ThreadStart) && b.flags & HAS_X != 0)
    {
        if let Some(t) = thread_of(b.leaf) {
            by_handle.insert((graph.threads[t.index()].process.get(), b.x), t);
        }
    }
    for b in bounds.iter().filter(|b| b.flags & HAS_X != 0) {
        let Some(op) = b.op.op().filter(|&o| sends(o)) else {
            continue;
        };
        let (Some(sender), Some(sent)) = (thread_of(b.leaf), leaves.get(b.leaf as usize)) else {
            continue;
        };
        let t = sent.end_ns;
        let target = u32::try_from(b.x).ok();
        let targets: Vec<ThreadId> = match op {
            // A pid of 0 or above i32::MAX is a process group: not followed.
            Op::Kill | Op::Sigqueue => target
                .filter(|&p| p != 0 && p <= i32::MAX as u32)
                .and_then(|p| by_pid.get(&(host(sender), p)).cloned())
                .unwrap_or_default(),
            Op::Tgkill => target
                .and_then(|p| by_tid.get(&(host(sender), p)).cloned())
                .unwrap_or_default(),
            Op::PthreadKill => {
                let process = graph.threads[sender.index()].process.get();
                by_handle
                    .get(&(process, b.x))
                    .copied()
                    .into_iter()
                    .collect()
            }
            _ => vec![sender],
        };
        let woken = targets
            .iter()
            .filter_map(|&th| first_wake(graph, th, t, &caused))
            .min_by_key(|&l| (leaves[l as usize].start_ns, l));
        if let Some(to) = woken.filter(|&to| to != b.leaf) {
            // A signal goes through no object the graph names.
            out.push(Edge {
                from: NodeId::new(b.leaf),
                to: NodeId::new(to),
                kind: EdgeKind::Signal,
                obj: None,
            });
        }
    }
    out
}

/// The first leaf of thread `th` started after `t` by a blocking call entered by
/// `t + ENTERED_WITHIN_NS`, that no edge in `caused` already explains.
fn first_wake(graph: &Graph, th: ThreadId, t: u64, caused: &AHashSet<u32>) -> Option<u32> {
    let info = graph.threads.get(th.index())?;
    let first = info.first_leaf.get() as usize;
    let mine = graph.leaves.get(first..first + info.leaves as usize)?;
    let i = mine.partition_point(|l| l.start_ns < t);
    let (k, l) = mine.iter().enumerate().skip(i).find(|(k, l)| {
        l.start_op.and_then(|o| o.op()).is_some_and(blocking)
            && *k > 0
            && !caused.contains(&((first + k) as u32))
    })?;
    let entered = mine[k - 1].end_ns;
    (entered <= t.saturating_add(ENTERED_WITHIN_NS) && l.start_ns >= t)
        .then_some((first + k) as u32)
}
