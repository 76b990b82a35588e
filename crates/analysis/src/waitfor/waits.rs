//! Every thread's waits as a timeline, each with what it waited on.
//!
//! Two sources: the call that ended each leaf (its `block_ns`), woken by the source of a
//! wake-up edge into the thread's next leaf, and the slow calls inside leaves (inner waits),
//! where a lock wait waited on the lock's holder, a sleep on the timer and file I/O on the disk.
//! When several edges end one wait, the waker is the cause that came last before the wait
//! ended (the one the thread was still waiting for); bytes from an untraced peer make the
//! network the waker. A readiness wait nobody woke (`epoll_wait` on a socket whose bytes came
//! from outside) takes the waker of the read right after it, when that read's bytes were there
//! already. What is left is `[unknown]`.
//!
//! Segments of one thread never overlap: inner waits lie inside their leaf's span and ending
//! waits between leaves; clock jitter that makes two touch is clipped.

use scalpel_model::format::Op;
use scalpel_model::graph::{EdgeKind, Graph, LeafId, LeafTypeId, NodeId, OpName, SiteId};

use super::Pseudo;
use crate::rollup::{BlockKind, LockHolders};

/// What a wait waited on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Target {
    /// A traced thread (index into `Graph::threads`).
    Thread(u32),
    /// A pseudo-thread.
    Pseudo(Pseudo),
}

/// Where the waiting call was made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) enum SiteKey {
    /// The end boundary of a leaf type (the call that ended a leaf).
    End(LeafTypeId),
    /// An inner wait's call site.
    Inner(SiteId),
}

/// One wait of one thread.
#[derive(Clone, Copy, Debug)]
pub(super) struct Seg {
    pub start: u64,
    pub end: u64,
    pub target: Target,
    pub kind: BlockKind,
    pub site: SiteKey,
    /// The call.
    pub op: Option<OpName>,
    /// Whether it counts as a direct wait (its leaf is in the task asked for, or no task was).
    pub direct: bool,
}

/// A leaf's span and the time it spent off the CPU outside any call.
#[derive(Clone, Copy, Debug)]
pub(super) struct Run {
    pub start: u64,
    pub end: u64,
    pub off: u64,
    pub ty: LeafTypeId,
    pub direct: bool,
}

/// One thread's waits and off-CPU runs, each sorted by time and without overlaps.
#[derive(Debug, Default)]
pub(super) struct Timeline {
    pub waits: Vec<Seg>,
    pub runs: Vec<Run>,
}

/// The items of `v` (sorted, non-overlapping spans) that overlap `[s, e)`.
pub(super) fn overlapping<T>(v: &[T], span: impl Fn(&T) -> (u64, u64), s: u64, e: u64) -> &[T] {
    let from = v.partition_point(|x| span(x).1 <= s);
    let to = v.partition_point(|x| span(x).0 < e);
    v.get(from..to.max(from)).unwrap_or(&[])
}

/// Whether an edge of this kind wakes a waiting thread (a hand-off or a queue take did not
/// wait; a create or fork starts a thread rather than waking one).
fn wakes(k: EdgeKind) -> bool {
    matches!(
        k,
        EdgeKind::Cond
            | EdgeKind::Sem
            | EdgeKind::Futex
            | EdgeKind::Stream
            | EdgeKind::Eventfd
            | EdgeKind::Ready
            | EdgeKind::Connect
            | EdgeKind::Signal
            | EdgeKind::Join
    )
}

/// Wake-up edges into each leaf, by target leaf.
struct Wakes {
    start: Vec<u32>,
    from: Vec<NodeId>,
}

impl Wakes {
    fn new(g: &Graph) -> Wakes {
        let n = g.leaves.len();
        let mut start = vec![0u32; n + 1];
        let into = |e: &scalpel_model::graph::Edge| {
            (wakes(e.kind) && g.is_leaf(e.to)).then_some(e.to.index())
        };
        for t in g.edges.iter().filter_map(into) {
            start[t + 1] += 1;
        }
        for i in 0..n {
            start[i + 1] += start[i];
        }
        let mut fill = start.clone();
        let mut from = vec![NodeId::new(0); start[n] as usize];
        for e in &g.edges {
            if let Some(t) = into(e) {
                from[fill[t] as usize] = e.from;
                fill[t] += 1;
            }
        }
        Wakes { start, from }
    }

    fn to(&self, leaf: usize) -> &[NodeId] {
        &self.from[self.start[leaf] as usize..self.start[leaf + 1] as usize]
    }
}

/// What woke the thread of `leaf` out of a wait that ended at `wait_end`, from the wake-up
/// edges into `next` (a later leaf of the same thread). `strict`: only causes that were there
/// before the wait ended count (for a look-ahead past the wait).
fn waker(
    g: &Graph,
    wakes: &Wakes,
    leaf: usize,
    next: usize,
    wait_end: u64,
    strict: bool,
) -> Option<Target> {
    let thread = g.leaves[leaf].thread;
    let mut before: Option<(u64, u32)> = None;
    let mut after: Option<(u64, u32)> = None;
    let mut external = false;
    for &f in wakes.to(next) {
        let Some(w) = g.leaf_of(f) else {
            external = true;
            continue;
        };
        let w = &g.leaves[w.index()];
        if w.thread == thread {
            continue;
        }
        let key = (w.end_ns, w.thread.get());
        if w.end_ns <= wait_end {
            before = before.max(Some(key));
        } else if !strict {
            after = Some(after.map_or(key, |a| a.min(key)));
        }
    }
    match before.or(after) {
        Some((_, t)) => Some(Target::Thread(t)),
        None if external => Some(Target::Pseudo(Pseudo::Network)),
        None => None,
    }
}

/// What time inside a call was spent waiting for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Waits {
    /// For another thread (or a peer): the waker says which.
    Waker,
    /// For a pseudo-thread, whatever the edges say.
    On(Pseudo),
    /// For nothing: the call signals, creates or describes (an unlock, a `cond_signal`, a
    /// `pthread_create`); its time is the thread's own work in the kernel.
    Nothing,
}

/// What a call spent its time waiting for; `inner`: it did not cut its leaf (so a read or a
/// write was on a file or a terminal).
fn waits(op: Option<Op>, inner: bool) -> Waits {
    use Op::*;
    let Some(op) = op else { return Waits::Nothing };
    match op {
        Sleep => Waits::On(Pseudo::Timer),
        Fsync | Fdatasync | SyncFileRange | Msync | Syncfs | Sync | Dlopen => {
            Waits::On(Pseudo::Disk)
        }
        Read | Readv | Pread | Recv | Recvfrom | Recvmsg | Write | Writev | Pwrite | Send
        | Sendto | Sendmsg | Sendfile
            if inner =>
        {
            Waits::On(Pseudo::Disk)
        }
        MutexLock | MutexTrylock | MutexTimedlock | MutexClocklock | CondRelock | RwRdlock
        | RwTryrdlock | RwTimedrdlock | RwClockrdlock | RwWrlock | RwTrywrlock | RwTimedwrlock
        | RwClockwrlock | CondWait | CondTimedwait | CondClockwait | SemWait | SemTimedwait
        | SemClockwait | SemTrywait | FutexWait | EpollWait | EpollPwait | EpollPwait2 | Poll
        | Ppoll | Select | Pselect | Read | Readv | Pread | Recv | Recvfrom | Recvmsg | Accept
        | Accept4 | Connect | ThreadJoin => Waits::Waker,
        // A write that blocked waited for its reader to make room, which no edge shows (edges
        // run from writes to reads).
        Write | Writev | Pwrite | Send | Sendto | Sendmsg | Sendfile => Waits::On(Pseudo::Unknown),
        _ => Waits::Nothing,
    }
}

/// Every thread's timeline. `keep`: the leaves whose waits are direct (all when `None`).
pub(super) fn timelines(g: &Graph, keep: Option<&[bool]>) -> Vec<Timeline> {
    let wakes = Wakes::new(g);
    let direct = |leaf: usize| keep.is_none_or(|k| k.get(leaf).copied().unwrap_or(false));
    // A lock wait waited on the holder whose release let it in (on another thread).
    let holders = LockHolders::new(g);
    let holder =
        |leaf: usize, obj: Option<scalpel_model::graph::ObjId>, ns: u64| -> Option<Target> {
            let h = holders.of(LeafId::at(leaf), obj, ns)?;
            let ht = g.leaves.get(h.index())?.thread;
            (ht != g.leaves.get(leaf)?.thread).then_some(Target::Thread(ht.get()))
        };
    let mut out: Vec<Timeline> = (0..g.threads.len()).map(|_| Timeline::default()).collect();
    for w in &g.inner_waits {
        let leaf = w.leaf.index();
        let Some(l) = g.leaves.get(leaf) else {
            continue;
        };
        let kind = BlockKind::inside(w.op.op());
        let target = match waits(w.op.op(), true) {
            Waits::Nothing => continue,
            Waits::On(p) => Target::Pseudo(p),
            Waits::Waker => holder(leaf, w.obj, w.ns).unwrap_or(Target::Pseudo(Pseudo::Unknown)),
        };
        if let Some(t) = out.get_mut(l.thread.index()) {
            t.waits.push(Seg {
                start: w.at_ns,
                end: w.at_ns + w.ns,
                target,
                kind,
                site: SiteKey::Inner(w.site),
                op: Some(w.op),
                direct: direct(leaf),
            });
        }
    }
    for (i, l) in g.leaves.iter().enumerate() {
        let Some(t) = out.get_mut(l.thread.index()) else {
            continue;
        };
        let span = l.end_ns.saturating_sub(l.start_ns);
        let calls = l.lock_ns + l.sleep_ns + l.other_ns;
        if let Some(cpu) = g.leaf_cpu(scalpel_model::graph::LeafId::at(i)) {
            let off = span.saturating_sub(calls).saturating_sub(cpu);
            if off > 0 {
                t.runs.push(Run {
                    start: l.start_ns,
                    end: l.end_ns,
                    off,
                    ty: l.ty,
                    direct: direct(i),
                });
            }
        }
        if l.block_ns == 0 {
            continue;
        }
        let op = l.end_op.and_then(|o| o.op());
        let kind = BlockKind::of(op);
        let end = l.end_ns + l.block_ns;
        let same = |j: usize| g.leaves.get(j).is_some_and(|n| n.thread == l.thread);
        let target = match waits(op, false) {
            Waits::Nothing => continue,
            Waits::On(p) => Target::Pseudo(p),
            Waits::Waker => {
                let mut target = same(i + 1)
                    .then(|| waker(g, &wakes, i, i + 1, end, false))
                    .flatten();
                if target.is_none() && kind == BlockKind::Poll && same(i + 2) {
                    target = waker(g, &wakes, i, i + 2, end, true);
                }
                if target.is_none() && kind == BlockKind::Lock {
                    // Cut at locks: the acquisition ended this leaf; its waiter is the next
                    // leaf (or this one, as the graph stage counts it).
                    target = holder(i + 1, l.end_obj, l.block_ns)
                        .or_else(|| holder(i, l.end_obj, l.block_ns));
                }
                target.unwrap_or(Target::Pseudo(Pseudo::Unknown))
            }
        };
        t.waits.push(Seg {
            start: l.end_ns,
            end,
            target,
            kind,
            site: SiteKey::End(l.ty),
            op: l.end_op,
            direct: direct(i),
        });
    }
    for t in &mut out {
        t.waits.sort_by_key(|s| (s.start, s.end));
        let mut last = 0;
        t.waits.retain_mut(|s| {
            s.start = s.start.max(last);
            last = last.max(s.end);
            s.end > s.start
        });
        t.runs.sort_by_key(|r| r.start);
    }
    out
}
