//! What a leaf was blocked on, by the call that blocked it.

use scalpel_model::format::Op;
use serde::Serialize;

/// A reason for not running. Each leaf's wall time is running time plus time in these.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BlockKind {
    /// Waiting for a mutex or rwlock (the holder is known when it was traced).
    Lock,
    /// Waiting on a condition variable (the waker is the leaf that signalled).
    Cond,
    /// Waiting on a semaphore.
    Sem,
    /// Waiting on a futex (runtimes' own locks and condition variables).
    Futex,
    /// Reading, or waiting to read, a channel (socket, pipe, eventfd), or accepting.
    Read,
    /// Writing a channel.
    Write,
    /// In poll, select or epoll.
    Poll,
    /// Sleeping or waiting on a timer.
    Sleep,
    /// Waiting for a thread to exit.
    Join,
    /// File I/O, fsync and other calls that take time.
    Io,
    /// Outside every recorded call, yet not on a CPU: runnable but preempted, in page faults,
    /// or in calls the agent does not record. Known only for traces recorded with CPU times.
    OffCpu,
    /// Between a cause's completion and the start of the leaf it enabled: the thread was busy
    /// with other work, or not yet scheduled.
    Queued,
    /// Waiting for new work: the call after which the thread started something unrelated.
    /// Counted per leaf, and on a task's path only between two of its leaves on one thread
    /// that nothing inside the task joins (a session's requests, see `instance`).
    Idle,
}

impl BlockKind {
    /// Every kind, in output order.
    pub const ALL: [BlockKind; 13] = [
        BlockKind::Lock,
        BlockKind::Cond,
        BlockKind::Sem,
        BlockKind::Futex,
        BlockKind::Read,
        BlockKind::Write,
        BlockKind::Poll,
        BlockKind::Sleep,
        BlockKind::Join,
        BlockKind::Io,
        BlockKind::OffCpu,
        BlockKind::Queued,
        BlockKind::Idle,
    ];

    /// Its name in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            BlockKind::Lock => "lock",
            BlockKind::Cond => "cond",
            BlockKind::Sem => "sem",
            BlockKind::Futex => "futex",
            BlockKind::Read => "read",
            BlockKind::Write => "write",
            BlockKind::Poll => "poll",
            BlockKind::Sleep => "sleep",
            BlockKind::Join => "join",
            BlockKind::Io => "io",
            BlockKind::OffCpu => "off_cpu",
            BlockKind::Queued => "queued",
            BlockKind::Idle => "idle",
        }
    }

    /// The kind of time spent inside `op`.
    pub fn of(op: Option<Op>) -> BlockKind {
        use Op::*;
        let Some(op) = op else { return BlockKind::Io };
        match op {
            MutexLock | MutexTrylock | MutexTimedlock | MutexClocklock | CondRelock | RwRdlock
            | RwTryrdlock | RwTimedrdlock | RwClockrdlock | RwWrlock | RwTrywrlock
            | RwTimedwrlock | RwClockwrlock => BlockKind::Lock,
            // Signalling costs time too (a futex wake, preemption): counted with its object.
            CondWait | CondTimedwait | CondClockwait | CondSignal | CondBroadcast => {
                BlockKind::Cond
            }
            SemWait | SemTimedwait | SemClockwait | SemTrywait | SemPost => BlockKind::Sem,
            FutexWait | FutexWake => BlockKind::Futex,
            EpollWait | EpollPwait | EpollPwait2 | Poll | Ppoll | Select | Pselect => {
                BlockKind::Poll
            }
            Read | Readv | Pread | Recv | Recvfrom | Recvmsg | Accept | Accept4 => BlockKind::Read,
            Write | Writev | Pwrite | Send | Sendto | Sendmsg | Sendfile => BlockKind::Write,
            Sleep => BlockKind::Sleep,
            ThreadJoin => BlockKind::Join,
            _ => BlockKind::Io,
        }
    }

    /// The kind of time inside `op` when the call did not cut its leaf (an inner wait). A wait
    /// that cuts wherever it can hand work over (a semaphore, futex or epoll wait) is inside a
    /// leaf only as a lock's traffic (a futex word, a semaphore or a latch used as a lock: see
    /// the graph stage's `futexlocks` and `latches`), which the leaf counts as lock time: its
    /// inner wait is lock time too.
    pub fn inside(op: Option<Op>) -> BlockKind {
        use Op::*;
        match op {
            Some(
                SemWait | SemTimedwait | SemClockwait | SemTrywait | FutexWait | EpollWait
                | EpollPwait | EpollPwait2,
            ) => BlockKind::Lock,
            _ => BlockKind::of(op),
        }
    }

    /// Index in [`BlockKind::ALL`] (the declaration order, which `ALL` follows).
    pub fn index(self) -> usize {
        self as usize
    }
}

/// Time per kind, indexed by [`BlockKind::index`].
pub type KindTimes = [u64; BlockKind::ALL.len()];

/// The kinds with time, largest first (ties in kind order), as (kind, ns).
pub(super) fn nonzero(t: &KindTimes) -> Vec<(BlockKind, u64)> {
    let mut v: Vec<(BlockKind, u64)> = BlockKind::ALL
        .iter()
        .map(|&k| (k, t[k.index()]))
        .filter(|&(_, ns)| ns > 0)
        .collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    v
}
