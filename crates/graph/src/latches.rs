//! Latch wake-ups: a signal that lets a thread go on with the request it is in the middle of,
//! sent from the middle of another request, is a lock's hand-over, not a cut.
//!
//! PostgreSQL's heavyweight locks (a row or a transaction id that an `UPDATE` waits for) hand
//! over this way. The waiting backend sleeps on its latch (`ProcSleep` → `WaitLatch`): an
//! `epoll_wait` on an epoll instance of its own, between reading its statement and answering
//! it. The backend that lets the lock go sets that latch (`ProcLockWakeup` → `SetLatch` →
//! `kill(pid, SIGURG)`) in the middle of its commit. Cut at, both calls split their statement,
//! and the `signal` edge joined two unrelated statements, so the waiting update and the
//! releasing commit came out as types of their own (about 16% of the statements of a pgbench
//! run). The wait is lock time inside its leaf instead, and the send an ordinary call, with no
//! edge, as for any lock: lock order is not causal. The send's leaf is kept as the lock's
//! holder of the wait (a row of the graph's lock waits), as a mutex's last release is.
//!
//! The rule, over the first cut of every file (before any edge is known):
//! - A *latch* is an epoll instance waited on at least [`LATCH_WAITS`] times, at least three in
//!   four of them in the middle of a request: the thread's last byte transfer on a channel
//!   before the wait read a request from a connection, and its first after the wait answers on
//!   the same connection, with no other readiness wait or accept in between. An event loop's
//!   instance is waited on between a reply and the next request, or between connections.
//! - A signal sent from inside a task (in the middle of a request, as above, or with strong
//!   program edges out of the sender's leaf and out of the next, as for a semaphore used as a
//!   lock) whose target's first return from a blocking call is a wait on a latch in the middle
//!   of a request is a latch wake-up; that wait and every signal that lands on it then cut
//!   nothing. (A commit that releases a lock answers its client right after: the program edge
//!   after its reply is weak, so the middle of a request is the test that finds it.) A latch wait that a signal from anywhere
//!   else ends keeps its cut and its edge (`super::signals` matches it as before).
//!
//! Limits: which thread a process-directed signal wakes is the same guess as in
//! `super::signals`; an event loop that serves one connection at a time and is woken by a
//! signal in the middle of a request would lose that edge.

use ahash::{AHashMap, AHashSet};
use scalpel_model::format::{ObjKind, Op};
use scalpel_model::graph::{LeafId, LockWait, ObjId};
use scalpel_model::read::{Clock, ProcessSinks, TraceDir};

use super::event::{dispatches, is_epoll_wait, reads_bytes, ObjName, HAS_X, NO_OBJ};
use super::leaves::{Bound, LatchCall, ThreadOut};
use super::locks::CONTENDED_NS;
use super::signals::{blocking, ENTERED_WITHIN_NS};
use super::sink::ThreadSink;

/// Fewest waits on an epoll instance taken as a latch.
const LATCH_WAITS: u32 = 3;

/// Per file (process index, file index): the events, in file order, that cut nothing.
pub(super) type Uncut = AHashMap<(usize, usize), Vec<u32>>;

/// An event of a file: (process index, file index, event index).
pub(super) type FileEvent = (usize, usize, u32);

/// The latch wake-ups of a trace.
#[derive(Default)]
pub(super) struct Latches {
    /// The events that cut nothing, per file.
    pub uncut: Uncut,
    /// Each latch wait, with the send that ended it (the last one sent before it returned):
    /// the lock's holder.
    pub pairs: Vec<(FileEvent, FileEvent)>,
}

/// One thread file's first cut, with what finds its signals' targets.
struct Thread<'a> {
    file: (usize, usize),
    pid: u32,
    tid: u32,
    out: &'a ThreadOut,
    clock: &'a Clock,
    /// Leaves started by a blocking call: (start ns, leaf), in leaf order.
    wakes: Vec<(u64, u32)>,
    /// Per leaf started by an epoll wait in the middle of a request: its instance.
    mid: AHashMap<u32, ObjName>,
    /// The leaves ended by a signal sent in the middle of a request.
    mid_sends: AHashSet<u32>,
}

/// A signal sent: when, its thread (index into the threads), its event, and whether it was
/// sent from inside a task.
type Sent = (u64, usize, u32, bool);

/// The latch wake-ups of the trace: for each file, the sends and waits that cut nothing.
pub(super) fn latch_wakeups(trace: &TraceDir, sinks: &[ProcessSinks<ThreadSink>]) -> Latches {
    let mut threads = Vec::new();
    for (pi, p) in sinks.iter().enumerate() {
        let Some(proc_trace) = trace.processes.get(pi) else {
            continue;
        };
        for (fi, s) in p.threads.iter().enumerate() {
            let (Some(out), Some(file)) = (s.out.as_ref(), proc_trace.threads.get(fi)) else {
                continue;
            };
            threads.push(Thread {
                file: (pi, fi),
                pid: proc_trace.pid,
                tid: file.header.tid,
                out,
                clock: &file.clock,
                wakes: Vec::new(),
                mid: AHashMap::new(),
                mid_sends: AHashSet::new(),
            });
        }
    }
    if !threads.iter().any(|t| t.out.bounds.iter().any(signal_send)) {
        return Latches::default();
    }
    // Per epoll instance: waits, and waits in the middle of a request.
    let mut waits: AHashMap<ObjName, (u32, u32)> = AHashMap::new();
    for t in &mut threads {
        let mid = mid_request(t.out);
        t.mid_sends = mid
            .iter()
            .filter(|&&j| signal_send(&t.out.bounds[j]))
            .map(|&j| t.out.bounds[j].leaf)
            .collect();
        for (j, b) in t
            .out
            .bounds
            .iter()
            .enumerate()
            .filter(|(_, b)| epoll_wait(b))
        {
            let Some(o) = t.out.objs.get(b.obj as usize) else {
                continue;
            };
            let name = o.name(t.file.0);
            let w = waits.entry(name).or_default();
            w.0 += 1;
            if mid.contains(&j) {
                w.1 += 1;
                t.mid.insert(b.leaf, name);
            }
        }
        t.wakes = t
            .out
            .leaves
            .iter()
            .enumerate()
            .filter(|(_, l)| l.start_op.and_then(|o| o.op()).is_some_and(blocking))
            .map(|(i, l)| (t.clock.ns(l.start.0), i as u32))
            .collect();
    }
    let latch = |n: &ObjName| {
        waits.get(n).is_some_and(|&(all, mid)| {
            all >= LATCH_WAITS && u64::from(mid) * 4 >= u64::from(all) * 3
        })
    };
    let mut by_pid: AHashMap<u32, Vec<usize>> = AHashMap::new();
    let mut by_tid: AHashMap<u32, Vec<usize>> = AHashMap::new();
    for (i, t) in threads.iter().enumerate() {
        by_pid.entry(t.pid).or_default().push(i);
        by_tid.entry(t.tid).or_default().push(i);
    }
    // Per latch wait (thread, leaf): the signals that end it.
    let mut landed: AHashMap<(usize, u32), Vec<Sent>> = AHashMap::new();
    for (si, t) in threads.iter().enumerate() {
        for b in t.out.bounds.iter().filter(|b| signal_send(b)) {
            let Some(sent) = t.out.leaves.get(b.leaf as usize) else {
                continue;
            };
            let at = t.clock.ns(sent.end.0);
            let target = u32::try_from(b.x).ok();
            let targets = match b.op.op() {
                // A pid of 0 or above i32::MAX is a process group: not followed.
                Some(Op::Kill | Op::Sigqueue) => target
                    .filter(|&p| p != 0 && p <= i32::MAX as u32)
                    .and_then(|p| by_pid.get(&p)),
                _ => target.and_then(|p| by_tid.get(&p)),
            };
            let woken = targets
                .into_iter()
                .flatten()
                .filter_map(|&ti| first_wake(&threads[ti], at).map(|(ns, leaf)| (ns, ti, leaf)))
                .min();
            let Some((_, ti, leaf)) = woken else {
                continue;
            };
            if (ti, leaf) == (si, b.leaf) || !threads[ti].mid.get(&leaf).is_some_and(latch) {
                continue;
            }
            let inside = t.mid_sends.contains(&b.leaf) || inside_a_task(t.out, b.leaf as usize);
            landed
                .entry((ti, leaf))
                .or_default()
                .push((at, si, sent.end_event, inside));
        }
    }
    let mut out = Latches::default();
    for ((ti, leaf), sends) in landed {
        let waiter = &threads[ti];
        let (Some(l), Some(last)) = (waiter.out.leaves.get(leaf as usize), sends.iter().max())
        else {
            continue;
        };
        if !sends.iter().all(|s| s.3) {
            continue;
        }
        let (pi, fi) = waiter.file;
        out.uncut
            .entry(waiter.file)
            .or_default()
            .push(l.start_event);
        let (spi, sfi) = threads[last.1].file;
        out.pairs
            .push(((pi, fi, l.start_event), (spi, sfi, last.2)));
        for &(_, si, event, _) in &sends {
            out.uncut.entry(threads[si].file).or_default().push(event);
        }
    }
    for events in out.uncut.values_mut() {
        events.sort_unstable();
        events.dedup();
    }
    out.pairs.sort_unstable();
    out
}

/// The lock waits of the latch wake-ups (see [`Latches::pairs`]) once the trace is assembled:
/// the waiting leaf, the latch (its epoll instance), the leaf whose send ended the wait, and
/// the time inside it; waits shorter than a contended lock's are left out, as for locks.
pub(super) fn lock_waits(
    pairs: &[(FileEvent, FileEvent)],
    calls: &AHashMap<FileEvent, LatchCall>,
) -> Vec<LockWait> {
    pairs
        .iter()
        .filter_map(|(w, s)| {
            let (wait, send) = (calls.get(w)?, calls.get(s)?);
            (wait.obj != NO_OBJ && wait.dur >= CONTENDED_NS).then(|| LockWait {
                obj: ObjId::new(wait.obj),
                waiter: LeafId::new(wait.leaf),
                holder: Some(LeafId::new(send.leaf)),
                wait_ns: wait.dur,
            })
        })
        .collect()
}

/// Whether `b` is a signal sent to a process or thread (`pthread_kill`'s handle and `raise`
/// are not followed here).
fn signal_send(b: &Bound) -> bool {
    b.flags & HAS_X != 0 && matches!(b.op.op(), Some(Op::Kill | Op::Sigqueue | Op::Tgkill))
}

/// Whether `b` is an epoll wait (its object is the instance).
fn epoll_wait(b: &Bound) -> bool {
    b.obj != NO_OBJ && is_epoll_wait(b.op.op())
}

/// The first leaf of `t` started by a blocking call after `at`, entered by
/// `at + ENTERED_WITHIN_NS`: its start and index.
fn first_wake(t: &Thread, at: u64) -> Option<(u64, u32)> {
    let i = t.wakes.partition_point(|&(ns, _)| ns < at);
    let &(ns, leaf) = t.wakes.get(i)?;
    let entered = t.out.leaves.get((leaf as usize).checked_sub(1)?)?.end.0;
    (t.clock.ns(entered) <= at.saturating_add(ENTERED_WITHIN_NS)).then_some((ns, leaf))
}

/// Whether the send that ended leaf `l` sat inside a task: the program edges out of it and out
/// of the next leaf are strong (the sender carried on with the same work).
fn inside_a_task(out: &ThreadOut, l: usize) -> bool {
    let strong = |i: usize| out.weak.weak.get(i).is_some_and(|&w| !w);
    strong(l) && strong(l + 1)
}

/// The epoll waits and signal sends (their indices in `out.bounds`) in the middle of a request:
/// the last byte transfer on a channel before the call read from a connection, the first after
/// it wrote to the same one, and no readiness wait on another object (or accept) came between
/// either and the call. Two passes over the cuts, one each way.
fn mid_request(out: &ThreadOut) -> AHashSet<usize> {
    let bounds = &out.bounds;
    let transfer = |b: &Bound| -> Option<(u64, bool)> {
        let read = reads_bytes(b.op.op()?)?;
        let o = out.objs.get(b.obj as usize)?;
        (b.res > 0 && o.kind.is(ObjKind::Stream) && o.channel != 0).then_some((o.channel, read))
    };
    // Per call (index into bounds): the transfer before it, when nothing dispatched since.
    let mut before: AHashMap<usize, (u64, bool)> = AHashMap::new();
    let mut last = Recent::default();
    for (j, b) in bounds.iter().enumerate() {
        if epoll_wait(b) || signal_send(b) {
            if let Some(t) = last.transfer_since_other(b.obj) {
                before.insert(j, t);
            }
        }
        last.see(j, b, transfer(b));
    }
    let mut found = AHashSet::new();
    let mut next = Recent::default();
    for (j, b) in bounds.iter().enumerate().rev() {
        if let Some(&(chan, true)) = before.get(&j) {
            if next.transfer_since_other(b.obj) == Some((chan, false)) {
                found.insert(j);
            }
        }
        // Steps count from the walk's start, so that a later step is nearer the wait.
        next.see(bounds.len() - j, b, transfer(b));
    }
    found
}

/// The latest transfer and dispatches seen in a walk over one thread's cuts.
#[derive(Default)]
struct Recent {
    /// The latest byte transfer: (step of the walk, channel, read).
    transfer: Option<(usize, u64, bool)>,
    /// The latest dispatch (readiness wait or accept): (step of the walk, object).
    dispatch: Option<(usize, u32)>,
    /// The latest dispatch on another object than `dispatch`'s.
    other: Option<(usize, u32)>,
}

impl Recent {
    fn see(&mut self, j: usize, b: &Bound, transfer: Option<(u64, bool)>) {
        if let Some((chan, read)) = transfer {
            self.transfer = Some((j, chan, read));
        }
        if dispatch(b) {
            if self.dispatch.is_some_and(|(_, o)| o != b.obj) {
                self.other = self.dispatch;
            }
            self.dispatch = Some((j, b.obj));
        }
    }

    /// The latest transfer, when no dispatch on an object other than `obj` came after it.
    fn transfer_since_other(&self, obj: u32) -> Option<(u64, bool)> {
        let (at, chan, read) = self.transfer?;
        let other = match self.dispatch {
            Some((_, o)) if o == obj => self.other,
            d => d,
        };
        match other {
            Some((d, _)) if d > at => None,
            _ => Some((chan, read)),
        }
    }
}

/// Whether `b` dispatches: a readiness wait or an accept.
fn dispatch(b: &Bound) -> bool {
    b.op.op().is_some_and(dispatches)
}
