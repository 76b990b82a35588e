//! Cutting one thread's events into leaf tasks, and keeping what the edge matchers need.
//!
//! Which calls cut (see [`class`]): the ones causality can enter or leave a thread through.
//! Condition waits and signals, semaphores, futex waits and wakes, epoll/poll/select, reads and
//! writes that moved bytes on a pipe, socket or eventfd (and reads that found its end), accept
//! and connect, thread create, start, exit and join, fork, exec. Mutex and rwlock operations
//! never cut: their order is the scheduler's, not a cause, so a cut there would only split one
//! piece of work in two. They, sleeps and file I/O are accounted inside the leaf (see
//! `scalpel_model::graph`).

use ahash::AHashMap;
use scalpel_model::format::{ChanKind, ObjKind, Op};
use scalpel_model::graph::ChannelKind;
use scalpel_model::graph::{LeafFile, LeafId, OpName};

use crate::local::{LocalLeaf, Ticks};
use scalpel_model::read::{FileTrace, Ready};

use super::event::{reads_bytes, sends, Ev, LocalObj, HAS_SEQ, HAS_X, NO_OBJ};
use super::perobj::PerObj;
use super::queues::{Counter, Section, Step, Tracker};
use super::ready::{Close, Ctl, ReadyWait};
use super::releases::ThreadReleases;
use super::weak::{weak_boundaries, LoopHead, WeakOrder};

mod window;
pub(super) use window::WindowEdge;

/// How an event takes part in the graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Class {
    /// Begins a thread's first leaf (thread start, fork child).
    Start,
    /// Ends the current leaf and starts the next: causality may leave (release) or enter
    /// (acquire) here.
    Cut,
    /// Ends the thread's current leaf with no next one (thread exit, exec).
    End,
    /// A mutex or rwlock acquisition (time counted as lock wait).
    LockAcquire,
    /// A mutex or rwlock release.
    LockRelease,
    /// Uncontended mutex pairs counted by the agent (`x` of them): acquisitions, nothing else.
    LockCount,
    /// A sleep.
    Sleep,
    /// A latch wait that a lock's release ended (see [`super::latches`]): time counted as
    /// lock wait. Its holder (the send) is known only across files: its lock wait row is
    /// added after assembly, and the lock table has no row for the latch.
    LatchWait,
    /// Anything else: time counted in the leaf; file I/O bytes counted too.
    Other,
}

/// Channel kinds whose transfers are communication between threads, and so cut leaves.
fn is_channel(c: Option<ChannelKind>) -> bool {
    matches!(
        c.and_then(ChannelKind::known),
        Some(ChanKind::Tcp | ChanKind::Udp | ChanKind::Unix | ChanKind::Pipe | ChanKind::Eventfd)
    )
}

/// The class of an event, given its object.
pub(super) fn class(op: Option<Op>, e: &Ev, o: Option<&LocalObj>) -> Class {
    use Op::*;
    let Some(op) = op else { return Class::Other };
    match op {
        ThreadStart | ForkChild => Class::Start,
        ThreadExit | Exec => Class::End,
        MutexLock | MutexTrylock | MutexTimedlock | MutexClocklock | CondRelock | RwRdlock
        | RwTryrdlock | RwTimedrdlock | RwClockrdlock | RwWrlock | RwTrywrlock | RwTimedwrlock
        | RwClockwrlock => Class::LockAcquire,
        MutexUnlock | CondUnlock | RwUnlock => Class::LockRelease,
        MutexCounted => Class::LockCount,
        Sleep => Class::Sleep,
        CondWait | CondTimedwait | CondClockwait | CondSignal | CondBroadcast | SemWait
        | SemTimedwait | SemClockwait | SemTrywait | SemPost | FutexWait | FutexWake
        | EpollWait | EpollPwait | EpollPwait2 | Poll | Ppoll | Select | Pselect | Accept
        | Accept4 | Connect | ThreadCreate | ThreadJoin | Fork => Class::Cut,
        // A send cuts (it may wake its target); `kill(pid, 0)` carries no target and does not.
        op if sends(op) && e.flags & HAS_X != 0 => Class::Cut,
        _ => match reads_bytes(op) {
            // A transfer cuts when it moved bytes on a channel at a known offset, and so does a
            // read that found the end of the stream (the agent gives it no offset: it moved
            // nothing): it waited for the peer to close, as a server's worker does at the end
            // of a connection. A failed or peeking call, and file or terminal I/O, stay inside
            // the leaf.
            Some(read) => {
                let moved = e.res > 0 && e.flags & HAS_X != 0;
                let at_end = read && e.res == 0;
                let on_channel =
                    o.is_some_and(|o| o.kind.is(ObjKind::Stream) && is_channel(o.chan));
                if (moved || at_end) && on_channel {
                    Class::Cut
                } else {
                    Class::Other
                }
            }
            None => Class::Other,
        },
    }
}

/// The class of an event, given its object, whether that object is a futex word or semaphore
/// used as a lock, and whether the event is a latch wake-up (see [`super::latches`]).
fn class_with(op: Option<Op>, e: &Ev, o: Option<&LocalObj>, lock_word: bool, latch: bool) -> Class {
    match op {
        Some(op) if latch && sends(op) => Class::Other,
        Some(_) if latch => Class::LatchWait,
        Some(Op::FutexWait) if lock_word => Class::LockAcquire,
        Some(Op::FutexWake | Op::SemPost) if lock_word => Class::LockRelease,
        Some(Op::SemWait | Op::SemTimedwait | Op::SemClockwait | Op::SemTrywait) if lock_word => {
            Class::LockAcquire
        }
        _ => class(op, e, o),
    }
}

/// Whether an event of class `cls` ends the open leaf (and starts the next, unless it ends the
/// thread).
fn ends_leaf(cls: Class, op: Option<Op>, e: &Ev, lock_cuts: bool) -> bool {
    match cls {
        Class::Start | Class::Cut | Class::End => true,
        Class::LockAcquire | Class::LockRelease => lock_cuts && cuts_at_lock(op, e),
        _ => false,
    }
}

/// Whether a lock call cuts the leaf under `--cut-at-locks`: an explicit mutex or rwlock call
/// that took or released the lock. A condition wait's own release and re-acquisition do not
/// (the wait cuts already), nor do futex words used as locks (they enter the kernel only when
/// contended, so cutting there would split one kind of work by contention).
fn cuts_at_lock(op: Option<Op>, e: &Ev) -> bool {
    use Op::*;
    match op {
        Some(
            MutexLock | MutexTrylock | MutexTimedlock | MutexClocklock | RwRdlock | RwTryrdlock
            | RwTimedrdlock | RwClockrdlock | RwWrlock | RwTrywrlock | RwTimedwrlock
            | RwClockwrlock,
        ) => e.res == 0,
        Some(MutexUnlock | RwUnlock) => true,
        _ => false,
    }
}

/// A cut kept for edge matching.
#[derive(Clone, Copy, Debug)]
pub(super) struct Bound {
    /// Sequence number (valid when `flags & HAS_SEQ`).
    pub seq: u64,
    /// Stream offset or auxiliary value (see [`Ev::x`]).
    pub x: u64,
    /// Object (file-local, then global after assembly), or [`NO_OBJ`].
    pub obj: u32,
    /// The call's result.
    pub res: i32,
    /// For a release-side call, the leaf it ends; for an acquire-side call, the leaf it starts
    /// (thread-local index, then global after assembly).
    pub leaf: u32,
    /// Operation (its code, known or not).
    pub op: OpName,
    /// `HAS_SEQ` | `HAS_X`.
    pub flags: u8,
}

/// A call of a latch wake-up kept inside its leaf (see [`super::latches`]): which event it was,
/// so that the wait can name the send that ended it as its lock's holder.
#[derive(Clone, Copy, Debug)]
pub(super) struct LatchCall {
    /// The event's index in its file.
    pub event: u32,
    /// The leaf it is inside (thread-local, then global).
    pub leaf: u32,
    /// Its object (file-local, then global), or [`NO_OBJ`].
    pub obj: u32,
    /// Time inside the call, ticks until assembly.
    pub dur: u64,
}

/// A mutex or rwlock acquisition that may have waited long enough to count as contended.
#[derive(Clone, Copy, Debug)]
pub(super) struct LockAcquire {
    /// Sequence number.
    pub seq: u64,
    /// Time inside the call, ticks until assembly.
    pub dur: u64,
    /// Object (file-local, then global).
    pub obj: u32,
    /// The leaf it happened in.
    pub leaf: u32,
}

/// A call inside a leaf that took long enough to keep (see `scalpel_model::graph::InnerWait`).
#[derive(Clone, Copy, Debug)]
pub(super) struct InnerEv {
    /// The leaf (thread-local, then global).
    pub leaf: u32,
    /// Operation (its code, known or not).
    pub op: OpName,
    /// Object (file-local, then global), or [`NO_OBJ`].
    pub obj: u32,
    /// Entry time, ticks until assembly.
    pub at: u64,
    /// Time inside, ticks until assembly.
    pub dur: u64,
    /// Stack id in the thread's file.
    pub stack: u32,
}

/// Per lock and thread: acquisitions, total and longest wait (ticks until assembly).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct LockAgg {
    /// Acquisitions.
    pub count: u64,
    /// Total time in the acquiring calls.
    pub wait: u64,
    /// The longest of them.
    pub max: u64,
}

/// Acquisitions shorter than this many ticks are counted but not kept: even at 3 ticks per
/// nanosecond (a 3 GHz TSC) it is well under [`super::locks::CONTENDED_NS`].
const KEEP_TICKS: u64 = 1_000;

/// A leaf type as seen in one thread: its boundary operations and the file-local stack ids.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) struct LocalType {
    /// The operation that starts it.
    pub start_op: Option<OpName>,
    /// The file's stack id at its start (0: none).
    pub start_stack: u32,
    /// The operation that ends it.
    pub end_op: Option<OpName>,
    /// The file's stack id at its end (0: none).
    pub end_stack: u32,
}

/// One thread's leaves and the data the matchers need, with file-local object, stack and type
/// indices and times in ticks until assembly.
#[derive(Default)]
pub(super) struct ThreadOut {
    /// Leaves; `ty` is an index into `types`, `end_obj` a file-local object.
    pub leaves: Vec<LocalLeaf>,
    /// Where the program-order edge out of leaf `i` (to `i + 1`) is weak.
    pub weak: WeakOrder,
    /// Cuts with an object or a spawn/exit meaning.
    pub bounds: Vec<Bound>,
    /// Uncontended mutex pairs the agent counted instead of recording (`record --locks count`).
    pub counted_pairs: u64,
    /// Lock releases (with a sequence number), per lock.
    pub releases: ThreadReleases,
    /// Lock acquisitions that may have been contended.
    pub acquires: Vec<LockAcquire>,
    /// Per lock: what this thread's acquisitions add up to.
    pub lock_aggs: Vec<(u32, LockAgg)>,
    /// Inner calls that took time.
    pub inner: Vec<InnerEv>,
    /// The latch wake-ups' calls, in file order.
    pub latch: Vec<LatchCall>,
    /// Per leaf, its CPU time in ns; empty when no event of the thread carried CPU time, else
    /// as long as `leaves` (`None` for leaves without it at both ends).
    pub cpu: Vec<Option<u64>>,
    /// The leaves that moved file or terminal bytes, in leaf order (`leaf` local).
    pub files: Vec<LeafFile>,
    /// Readiness waits that reported descriptors, with their lists.
    pub ready: Vec<ReadyWait>,
    /// `epoll_ctl` registrations.
    pub ctls: Vec<Ctl>,
    /// Descriptors closed: (0, fd, ticks); the process is set at assembly.
    pub closes: Vec<Close>,
    /// Mutex sections that may put into or take from a queue (see [`super::queues`]).
    pub sections: Vec<Section>,
    /// Per condition signal, the mutexes held (see `queues::Tracker`).
    pub signal_holds: Vec<(u32, u32)>,
    /// Leaf types in order of first use.
    pub types: Vec<LocalType>,
    /// The file's objects.
    pub objs: Vec<LocalObj>,
    /// The call that started the thread's last leaf, when a window of the trace ended it (the
    /// next window's first leaf began there too; see [`window`]).
    pub cut_start: Option<WindowEdge>,
}

fn open(ticks: u64, start_op: Option<OpName>, event: u32) -> LocalLeaf {
    LocalLeaf::open(Ticks(ticks), start_op, event)
}

/// Cuts one thread's events, fed in file order, into leaves.
pub(super) struct Cutter {
    out: ThreadOut,
    /// The open leaf and its starting call's stack.
    cur: Option<(LocalLeaf, u32)>,
    type_index: AHashMap<LocalType, u32>,
    /// Per closed leaf: its ending call's stack and auxiliary value (for [`weak_boundaries`]).
    sites: Vec<(u32, u64)>,
    lock_aggs: PerObj<LockAgg>,
    /// Index of the next event.
    n: u32,
    last_end: u64,
    /// Mutex and rwlock calls cut leaves too (`--cut-at-locks`).
    lock_cuts: bool,
    /// The thread's CPU time when the open leaf started.
    cpu_open: Option<u64>,
    /// The thread's CPU time after the last event that carried one.
    cpu_last: Option<u64>,
    /// File and terminal bytes (in, out) moved within the open leaf.
    open_file: (u64, u64),
    /// The thread's mutex sections, for queue hand-offs.
    queues: Tracker,
    /// Events (indices in file order, sorted) that are latch wake-ups: no cut.
    latch: Vec<u32>,
    /// The next of `latch` to come.
    latch_next: usize,
    /// The last event was a latch wait: the READY record after it lists nothing a leaf
    /// started with.
    latch_ready: bool,
    /// The thread's loop head, found in an earlier window of the trace (see
    /// [`weak_boundaries`]).
    known_head: Option<LoopHead>,
    /// The calls around this window's cut leaves (see [`window`]).
    edges: window::Edges,
}

impl Cutter {
    /// A cutter for a new thread; `lock_cuts`: mutex and rwlock calls cut leaves too.
    pub(super) fn new(lock_cuts: bool) -> Self {
        Cutter {
            lock_cuts,
            out: ThreadOut::default(),
            cur: None,
            type_index: AHashMap::new(),
            sites: Vec::new(),
            lock_aggs: PerObj::default(),
            n: 0,
            last_end: 0,
            cpu_open: None,
            cpu_last: None,
            open_file: (0, 0),
            queues: Tracker::default(),
            latch: Vec::new(),
            latch_next: 0,
            latch_ready: false,
            known_head: None,
            edges: window::Edges::default(),
        }
    }

    /// The thread's loop head as an earlier window of the trace found it.
    pub(super) fn known_head(&mut self, head: Option<LoopHead>) {
        self.known_head = head;
    }

    /// The events (indices in file order, sorted) that are latch wake-ups and cut nothing.
    pub(super) fn latch_wakeups(&mut self, events: Vec<u32>) {
        self.latch = events;
        self.latch_next = 0;
    }

    /// Closes the open leaf; `e` is the call that ends it, if one does.
    fn close(&mut self, at: u32, e: Option<&Ev>) -> u32 {
        let was_open = self.cur.is_some();
        let (mut leaf, start_stack) = self.cur.take().unwrap_or_else(|| {
            // A cut with no open leaf (right after an exit, or first in a window): an empty
            // leaf at the cut.
            let t = e.map_or(self.last_end, |e| e.ticks);
            self.edges.open_first(t, at)
        });
        leaf.end_event = at;
        let (end_op, end_stack) = match e {
            Some(e) => {
                leaf.end = Ticks(e.ticks);
                leaf.block = Ticks(e.dur);
                leaf.end_op = Some(e.op);
                leaf.end_obj = (e.obj != NO_OBJ).then_some(e.obj);
                self.sites.push((e.stack, e.x));
                (Some(e.op), e.stack)
            }
            None => {
                leaf.end = Ticks(self.last_end).max(leaf.start);
                let end = self.edges.cut_end();
                self.sites.push(end.map_or((0, 0), |c| (c.stack, c.x)));
                (end.and_then(|c| c.op), end.map_or(0, |c| c.stack))
            }
        };
        let key = LocalType {
            start_op: leaf.start_op.or(self.edges.take_first_op()),
            start_stack,
            end_op,
            end_stack,
        };
        let next = self.out.types.len() as u32;
        leaf.ty = *self.type_index.entry(key).or_insert_with(|| {
            self.out.types.push(key);
            next
        });
        // The leaf ran from its start to the return of the call that ended it.
        let cpu_end = match e {
            Some(e) => e.cpu,
            None => self.cpu_last,
        };
        if !was_open {
            self.cpu_open = self.cpu_last.or(cpu_end);
        }
        let cpu = match (self.cpu_open, cpu_end) {
            (Some(a), Some(b)) => Some(b.saturating_sub(a)),
            _ => None,
        };
        if cpu.is_some() || !self.out.cpu.is_empty() {
            self.out.cpu.resize(self.out.leaves.len(), None);
            self.out.cpu.push(cpu);
        }
        let index = self.out.leaves.len() as u32;
        let (bytes_in, bytes_out) = std::mem::take(&mut self.open_file);
        if bytes_in > 0 || bytes_out > 0 {
            self.out.files.push(LeafFile {
                leaf: LeafId::new(index),
                bytes_in,
                bytes_out,
            });
        }
        self.out.leaves.push(leaf);
        index
    }

    fn bound(&mut self, e: &Ev, leaf: u32) {
        self.out.bounds.push(Bound {
            seq: e.seq,
            x: e.x,
            obj: e.obj,
            res: e.res,
            leaf,
            op: e.op,
            flags: e.flags & (HAS_SEQ | HAS_X),
        });
    }

    /// Takes the next event of the thread; `o` is its object. `lock_word`: the object is a
    /// futex word or a semaphore used as a lock (see [`super::futexlocks`]), so its waits and
    /// wakes (posts) are lock acquisitions and releases, not cuts.
    pub(super) fn feed(&mut self, e: &Ev, o: Option<&LocalObj>, lock_word: bool) {
        let at = self.n;
        self.n = self.n.saturating_add(1);
        let op = e.op.op();
        let latch = self.latch.get(self.latch_next) == Some(&at);
        if latch {
            self.latch_next += 1;
            self.out.latch.push(LatchCall {
                event: at,
                leaf: self.out.leaves.len() as u32,
                obj: e.obj,
                dur: e.dur,
            });
        }
        let cls = class_with(op, e, o, lock_word, latch);
        self.latch_ready = cls == Class::LatchWait;
        let ret = e.ticks.saturating_add(e.dur);
        if self.cur.is_none()
            && !matches!(
                cls,
                Class::Start | Class::Cut | Class::End | Class::LockCount
            )
        {
            // Opened at this call's entry: the CPU time before it, when known.
            self.cur = Some(self.edges.open_first(e.ticks, at));
            self.cpu_open = self.cpu_last.or(e.cpu);
        }
        match cls {
            Class::Start => {
                if self.cur.is_some() {
                    self.close(at, Some(e));
                }
                self.cur = Some((open(ret, Some(e.op), at), e.stack));
                self.cpu_open = e.cpu;
                let next = self.out.leaves.len() as u32;
                self.bound(e, next);
            }
            Class::Cut | Class::End => {
                let closed = self.close(at, Some(e));
                let reads = op.and_then(reads_bytes);
                if reads == Some(false) {
                    self.out.leaves[closed as usize].bytes_out += e.res.max(0) as u64;
                }
                if cls == Class::Cut {
                    let mut next = open(ret, Some(e.op), at);
                    if reads == Some(true) {
                        next.bytes_in += e.res.max(0) as u64;
                    }
                    self.cur = Some((next, e.stack));
                    self.cpu_open = e.cpu;
                }
                let leaf = if is_release(op) || cls == Class::End {
                    closed
                } else {
                    closed + 1
                };
                self.bound(e, leaf);
            }
            Class::LockAcquire | Class::LockRelease if self.lock_cuts && cuts_at_lock(op, e) => {
                // The leaf ends at the call, like any cut, but draws no edge: lock order is
                // not causal. An acquisition's stats go to the critical section it opens, a
                // release's to the one it closes.
                let acquire = cls == Class::LockAcquire;
                if !acquire {
                    self.lock_stats(e, false);
                }
                self.close(at, Some(e));
                self.cur = Some((open(ret, Some(e.op), at), e.stack));
                self.cpu_open = e.cpu;
                if acquire {
                    self.lock_stats(e, true);
                }
            }
            Class::LockAcquire | Class::LockRelease => {
                self.lock(e, cls == Class::LockAcquire);
                if cls == Class::LockAcquire {
                    self.inner(e);
                }
            }
            Class::Sleep => {
                if let Some((leaf, _)) = self.cur.as_mut() {
                    leaf.sleep.0 += e.dur;
                }
                self.inner(e);
            }
            Class::LockCount => {
                if e.obj != NO_OBJ && e.flags & HAS_X != 0 {
                    // Saturating: a damaged count must not wrap the lock table's sums.
                    let a = self.lock_aggs.entry(e.obj);
                    a.count = a.count.saturating_add(e.x);
                    self.out.counted_pairs = self.out.counted_pairs.saturating_add(e.x);
                }
            }
            Class::LatchWait => {
                if let Some((leaf, _)) = self.cur.as_mut() {
                    leaf.lock.0 += e.dur;
                }
                self.inner(e);
            }
            Class::Other => {
                if let Some((leaf, _)) = self.cur.as_mut() {
                    leaf.other.0 += e.dur;
                    if e.res > 0 && o.is_some_and(|o| o.kind.is(ObjKind::Stream)) {
                        // A transfer that did not cut is on a file or terminal, or failed to
                        // move bytes at a known offset: counted as file bytes.
                        let n = e.res as u64;
                        match op.and_then(reads_bytes) {
                            Some(true) => {
                                leaf.bytes_in += n;
                                self.open_file.0 += n;
                            }
                            Some(false) => {
                                leaf.bytes_out += n;
                                self.open_file.1 += n;
                            }
                            None => {}
                        }
                    }
                }
                self.inner(e);
            }
        }
        if let Some(op) = op.filter(|_| !lock_word) {
            self.queues.feed(&Step {
                op,
                obj: e.obj,
                seq: (e.flags & HAS_SEQ != 0).then_some(e.seq),
                res: e.res,
                stack: e.stack,
                open_leaf: self.out.leaves.len() as u32,
                counter: Counter::of(op, o.and_then(|o| o.chan), e.res),
            });
        }
        self.last_end = self.last_end.max(ret);
        if e.cpu.is_some() {
            self.cpu_last = e.cpu;
        }
    }

    /// What the readiness wait just fed reported, on epoll instance `epoll` (0: poll, select).
    pub(super) fn ready(&mut self, r: &Ready, epoll: u64) {
        // The wait cut the thread: the open leaf is the one it started.
        if self.cur.is_some() && !r.values.is_empty() && !self.latch_ready {
            self.out.ready.push(ReadyWait {
                leaf: self.out.leaves.len() as u32,
                epoll,
                form: r.form,
                values: r.values.clone().into_boxed_slice(),
            });
        }
    }

    /// An `epoll_ctl` registration.
    pub(super) fn ctl(&mut self, c: Ctl) {
        self.out.ctls.push(c);
    }

    /// A descriptor closed at `ticks` (an epoll registration ends with its descriptor), with the
    /// key of the connection it was, or 0 (a client port is reused: a key's connection ends here).
    pub(super) fn closed(&mut self, fd: u32, ticks: u64, key: u64) {
        self.out.closes.push((0, fd, ticks, key));
    }

    /// Keeps a call inside the open leaf that took long enough to be worth explaining.
    fn inner(&mut self, e: &Ev) {
        if self.cur.is_some() && e.dur >= KEEP_TICKS {
            self.out.inner.push(InnerEv {
                leaf: self.out.leaves.len() as u32,
                op: e.op,
                obj: e.obj,
                at: e.ticks,
                dur: e.dur,
                stack: e.stack,
            });
        }
    }

    fn lock(&mut self, e: &Ev, acquire: bool) {
        if let Some((leaf, _)) = self.cur.as_mut() {
            if acquire {
                leaf.lock.0 += e.dur;
            } else {
                leaf.other.0 += e.dur;
            }
        }
        self.lock_stats(e, acquire);
    }

    /// Counts a lock call toward its lock's totals and keeps it for contention analysis.
    fn lock_stats(&mut self, e: &Ev, acquire: bool) {
        // A trylock that failed took nothing.
        if e.obj == NO_OBJ || (acquire && e.res != 0) {
            return;
        }
        if acquire {
            let a = self.lock_aggs.entry(e.obj);
            a.count += 1;
            a.wait += e.dur;
            a.max = a.max.max(e.dur);
        }
        if e.flags & HAS_SEQ == 0 {
            return;
        }
        let leaf = self.out.leaves.len() as u32;
        if !acquire {
            self.out.releases.push(e.obj, e.seq, leaf);
        } else if e.dur >= KEEP_TICKS {
            self.out.acquires.push(LockAcquire {
                seq: e.seq,
                dur: e.dur,
                obj: e.obj,
                leaf,
            });
        }
    }

    /// Ends the thread: closes its last leaf and decides weak program order.
    pub(super) fn finish(mut self, objs: Vec<LocalObj>, file: &FileTrace) -> ThreadOut {
        let open = self.cur.as_ref().map(|(l, stack)| (l.start_op, *stack));
        if self.cur.is_some() {
            let at = self.n.saturating_sub(1);
            self.close(at, None);
        }
        let known = self.known_head.take();
        self.out.weak = weak_boundaries(&self.out.leaves, &self.sites, file, &objs, known.as_ref());
        let mut aggs: Vec<(u32, LockAgg)> = self.lock_aggs.into_values().collect();
        aggs.sort_unstable_by_key(|a| a.0);
        self.out.lock_aggs = aggs;
        let frames = |id: u32| file.stacks.get(&u64::from(id)).map(Vec::as_slice);
        self.out.sections = self.queues.finish(&frames);
        self.out.signal_holds = self.queues.take_signal_holds();
        self.out.objs = objs;
        self.out.cut_start = self.edges.cut_start(open);
        self.out
    }
}

/// Whether the matchers treat `op` as the causing side (its edge leaves the leaf it ends).
pub(super) fn is_release(op: Option<Op>) -> bool {
    use Op::*;
    matches!(
        op,
        Some(
            CondSignal
                | CondBroadcast
                | SemPost
                | FutexWake
                | Write
                | Writev
                | Pwrite
                | Send
                | Sendto
                | Sendmsg
                | Sendfile
                | Connect
                | ThreadCreate
                | Fork
                | ThreadExit
                | Exec
        )
    ) || op.is_some_and(sends)
}
