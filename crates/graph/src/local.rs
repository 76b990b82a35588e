//! A leaf as one thread's cut leaves it, before assembly: its times in the thread file's clock
//! ticks ([`Ticks`]), its type and object numbered within the file. Assembly converts each
//! once: times to nanoseconds with the file's clock ([`LocalLeaf::timed`], per thread in
//! parallel, in the leaves' own buffer), then ids to the trace's ([`LocalLeaf::assemble`]).

use scalpel_model::graph::{Leaf, LeafTypeId, ObjId, OpName, ThreadId};
use scalpel_model::read::Clock;

/// A time or a duration in a thread file's clock ticks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Ticks(pub u64);

/// A time or a duration in nanoseconds (`CLOCK_MONOTONIC` for a time).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Nanos(pub u64);

/// One leaf of one thread file. `T` is [`Ticks`] as cut, [`Nanos`] once timed; the two have
/// one layout, so timing a thread's leaves reuses their buffer.
#[derive(Clone, Debug)]
pub(crate) struct LocalLeaf<T = Ticks> {
    /// The leaf type, an index into the thread's `ThreadOut::types`.
    pub ty: u32,
    /// From the return of the call that started it.
    pub start: T,
    /// To the entry of the call that ended it.
    pub end: T,
    /// That call's duration.
    pub block: T,
    /// Time inside the leaf waiting for locks (contended acquisitions, latch waits).
    pub lock: T,
    /// Time inside the leaf asleep.
    pub sleep: T,
    /// Time inside the leaf in other recorded calls.
    pub other: T,
    pub start_op: Option<OpName>,
    pub end_op: Option<OpName>,
    /// The ending call's object, an index into the thread's `ThreadOut::objs`.
    pub end_obj: Option<u32>,
    /// Bytes received and sent at its boundaries and in file or terminal transfers.
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// Event indices of its starting and ending calls in the file.
    pub start_event: u32,
    pub end_event: u32,
}

impl LocalLeaf<Ticks> {
    /// A leaf opened at `at`, by `start_op` (none for a thread's first leaf), at event `event`.
    pub(crate) fn open(at: Ticks, start_op: Option<OpName>, event: u32) -> Self {
        LocalLeaf {
            ty: 0,
            start: at,
            end: at,
            block: Ticks(0),
            lock: Ticks(0),
            sleep: Ticks(0),
            other: Ticks(0),
            start_op,
            end_op: None,
            end_obj: None,
            bytes_in: 0,
            bytes_out: 0,
            start_event: event,
            end_event: event,
        }
    }

    /// The leaf with its times in nanoseconds, by the file's `clock`.
    pub(crate) fn timed(self, clock: &Clock) -> LocalLeaf<Nanos> {
        let dur = |t: Ticks| Nanos(clock.dur_ns(t.0));
        LocalLeaf {
            start: Nanos(clock.ns(self.start.0)),
            end: Nanos(clock.ns(self.end.0)),
            block: dur(self.block),
            lock: dur(self.lock),
            sleep: dur(self.sleep),
            other: dur(self.other),
            ty: self.ty,
            start_op: self.start_op,
            end_op: self.end_op,
            end_obj: self.end_obj,
            bytes_in: self.bytes_in,
            bytes_out: self.bytes_out,
            start_event: self.start_event,
            end_event: self.end_event,
        }
    }
}

impl LocalLeaf<Nanos> {
    /// The graph's leaf: on `thread`, of type `ty`, ending on object `end_obj` (the trace's
    /// numbering of this leaf's local type and object).
    pub(crate) fn assemble(self, thread: ThreadId, ty: LeafTypeId, end_obj: Option<ObjId>) -> Leaf {
        Leaf {
            start_op: self.start_op,
            end_op: self.end_op,
            end_obj,
            block_ns: self.block.0,
            bytes_in: self.bytes_in,
            bytes_out: self.bytes_out,
            lock_ns: self.lock.0,
            sleep_ns: self.sleep.0,
            other_ns: self.other.0,
            start_event: self.start_event,
            end_event: self.end_event,
            ..Leaf::new(thread, ty, self.start.0, self.end.0)
        }
    }
}
