//! The graph stage's event: as much of one decoded event as cutting and matching need
//! ([`Ev`]), the file-local objects events refer to ([`LocalObj`]), which operations move
//! bytes ([`reads_bytes`]) and which send signals ([`sends`]).

use scalpel_model::format::{ObjKind, Op};
use scalpel_model::graph::{ChannelKind, ObjectKind, OpName};

/// No object.
pub(super) const NO_OBJ: u32 = u32::MAX;

/// One event, as much of it as the graph needs.
#[derive(Clone, Copy, Debug)]
pub(super) struct Ev {
    /// Clock ticks at the call's entry.
    pub ticks: u64,
    /// Ticks inside the call.
    pub dur: u64,
    /// Per-object sequence number (valid when `HAS_SEQ`).
    pub seq: u64,
    /// Stream offset for byte transfers; else the auxiliary value the graph uses (futex wait
    /// value, poll descriptor count, connection key of accept and connect).
    pub x: u64,
    /// File-local object index, or [`NO_OBJ`].
    pub obj: u32,
    /// The call's result, saturated to 32 bits.
    pub res: i32,
    /// The file's stack id (0 = none).
    pub stack: u32,
    /// Operation (its code, known or not).
    pub op: OpName,
    /// `HAS_SEQ` | `HAS_X`.
    pub flags: u8,
    /// The thread's CPU time when the call returned, ns (recorded with CPU times only).
    pub cpu: Option<u64>,
}

/// `Ev::seq` is set.
pub(super) const HAS_SEQ: u8 = 1;
/// `Ev::x` is set.
pub(super) const HAS_X: u8 = 2;

/// What a file-local object is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct LocalObj {
    /// Object kind.
    pub kind: ObjectKind,
    /// Object key.
    pub key: u64,
    /// Channel kind for streams and endpoints.
    pub chan: Option<ChannelKind>,
    /// For a stream direction: the key both directions of its channel share (a TCP
    /// connection's is also the key its `accept` and `connect` carry); else 0.
    pub channel: u64,
    /// A pthread object or futex word its process declared process-shared.
    pub shared: bool,
}

/// What the matchers ask of a trace-wide object: its kind, and its channel kind for a stream
/// or an endpoint (kept beside the graph's objects, which are much larger, for lookups per call).
pub(super) type KindOf = (ObjectKind, Option<ChannelKind>);

/// An object's name across a trace: kind, key, and for an object that belongs to one process
/// (see [`ObjKind::process_scoped`]) that process's index plus one, else 0. Forked siblings have
/// their private mutexes, conds and futex words at the same addresses; without the process in
/// the name, a signal in one Apache child "woke" a waiter in another.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) struct ObjName {
    /// The object's kind.
    kind: ObjectKind,
    /// Its key.
    key: u64,
    /// Its process's index plus one, or 0 for an object every process shares.
    scope: u32,
}

impl LocalObj {
    /// This object's name, as seen by a thread of process `process` (its index in the trace).
    pub(super) fn name(&self, process: usize) -> ObjName {
        let scoped = self.kind.known().is_some_and(ObjKind::process_scoped);
        let scope = if scoped && !self.shared {
            u32::try_from(process).map_or(u32::MAX, |p| p.saturating_add(1))
        } else {
            0
        };
        ObjName {
            kind: self.kind,
            key: self.key,
            scope,
        }
    }
}

/// Whether `op` is a semaphore's post or a wait on one.
pub(super) fn sem_op(op: OpName) -> bool {
    matches!(
        op.op(),
        Some(Op::SemPost | Op::SemWait | Op::SemTimedwait | Op::SemClockwait | Op::SemTrywait)
    )
}

/// Whether `op` can be lock traffic on an object used as a lock (see [`super::futexlocks`]).
pub(super) fn lock_op(op: OpName) -> bool {
    op.is(Op::FutexWait) || op.is(Op::FutexWake) || sem_op(op)
}

/// Whether `op` sends a signal.
pub(super) fn sends(op: Op) -> bool {
    matches!(
        op,
        Op::Kill | Op::Tgkill | Op::PthreadKill | Op::Sigqueue | Op::Raise
    )
}

/// Whether `op` is an epoll wait.
pub(super) fn is_epoll_wait(op: Option<Op>) -> bool {
    matches!(op, Some(Op::EpollWait | Op::EpollPwait | Op::EpollPwait2))
}

/// Whether `op` waits for descriptors to be ready (epoll, poll, select) or accepts one: where
/// a thread dispatches to the work it was told of.
pub(super) fn dispatches(op: Op) -> bool {
    use Op::*;
    is_epoll_wait(Some(op)) || matches!(op, Poll | Ppoll | Select | Pselect | Accept | Accept4)
}

/// Whether `op` reads (true) or writes (false) bytes; `None` for other operations.
pub(super) fn reads_bytes(op: Op) -> Option<bool> {
    match op {
        Op::Read | Op::Readv | Op::Pread | Op::Recv | Op::Recvfrom | Op::Recvmsg => Some(true),
        Op::Write
        | Op::Writev
        | Op::Pwrite
        | Op::Send
        | Op::Sendto
        | Op::Sendmsg
        | Op::Sendfile => Some(false),
        _ => None,
    }
}
