//! Decoded records: events with absolute times and sequence numbers, object definitions, clock
//! calibration points and thread names.

use std::borrow::Cow;
use std::fmt;

use super::identity::{obj_kind_name, Identity};
use crate::format::Op;

/// The object an event is about, resolved through the file's OBJECT records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectRef {
    /// Object kind, see [`crate::format::ObjKind`] (its code).
    pub kind: u8,
    /// Object key (an address, or a hash both ends of a channel agree on).
    pub key: u64,
    /// The per-file index the event used.
    pub index: u64,
}

impl fmt::Display for ObjectRef {
    /// `kind:0xkey`, e.g. `mutex:0x7ffd1000`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{:#x}", obj_kind_name(self.kind), self.key)
    }
}

/// One OBJECT record: a per-file index bound to an object.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ObjectDef {
    /// The per-file index (never 0).
    pub index: u64,
    /// Object kind, see [`crate::format::ObjKind`] (its code).
    pub kind: u8,
    /// Object key.
    pub key: u64,
    /// What the object is connected to, for streams and endpoints.
    pub identity: Identity,
}

/// One event, with the per-file context (object table, clock, sequence deltas) applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// The operation, `None` for a code this reader does not know (see `op_code`).
    pub op: Option<Op>,
    /// The raw operation code.
    pub op_code: u8,
    /// Absolute clock reading in ticks.
    pub ticks: u64,
    /// CLOCK_MONOTONIC nanoseconds.
    pub ts_ns: u64,
    /// Ticks spent in the real call.
    pub dur_ticks: u64,
    /// Nanoseconds spent in the real call.
    pub dur_ns: u64,
    /// The object, when the event names one that the file defined.
    pub obj: Option<ObjectRef>,
    /// Absolute per-object sequence number.
    pub seq: Option<u64>,
    /// The call's result (negative errno on failure).
    pub result: Option<i64>,
    /// File descriptor.
    pub fd: Option<u64>,
    /// Stream byte offset of the first byte of the call.
    pub offset: Option<u64>,
    /// First auxiliary value (meaning per operation).
    pub aux: Option<u64>,
    /// Second auxiliary value.
    pub aux2: Option<u64>,
    /// Stack id.
    pub stack: Option<u64>,
    /// The thread's CPU time when the call returned (CLOCK_THREAD_CPUTIME_ID, ns), when the
    /// trace was recorded with CPU times.
    pub cpu_ns: Option<u64>,
    /// Absolute file offset of the event's record.
    pub file_offset: u64,
    /// What a readiness wait reported (its READY record), when the event is one and kept it.
    /// Filled in [`super::FileTrace::events`]; a [`super::FileSink`] gets it through
    /// [`super::FileSink::ready`] after the event instead.
    pub ready: Option<Box<Ready>>,
}

/// The form of a READY record's values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadyForm {
    /// epoll user data; the `epoll_ctl` events say which descriptor each stands for.
    EpollData,
    /// Incoming stream keys (poll, select).
    StreamKeys,
    /// A form this reader does not know (its code).
    Other(u8),
}

impl ReadyForm {
    /// The form a code names.
    pub fn from_code(code: u8) -> ReadyForm {
        match code {
            crate::format::ready::EPOLL_DATA => ReadyForm::EpollData,
            crate::format::ready::STREAM_KEYS => ReadyForm::StreamKeys,
            c => ReadyForm::Other(c),
        }
    }
}

/// What a readiness wait reported ready for input (a READY record).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ready {
    /// What the values are.
    pub form: ReadyForm,
    /// How many descriptors the call reported ready for input (the values list the first ones).
    pub reported: u64,
    /// The listed values, at most [`crate::format::ready::MAX_LISTED`].
    pub values: Vec<u64>,
}

impl Event {
    /// The operation's name, or `op#NN` for an unknown code.
    pub fn op_name(&self) -> Cow<'static, str> {
        match self.op {
            Some(op) => Cow::Borrowed(op.name()),
            None => Cow::Owned(format!("op#{}", self.op_code)),
        }
    }
}

/// A clock calibration point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Calibration {
    /// Clock ticks.
    pub ticks: u64,
    /// CLOCK_MONOTONIC nanoseconds at the same instant.
    pub mono_ns: u64,
    /// The width in ticks of the bracket the clock was read in (the point is off by up to
    /// half of it); `None` in traces of agents that did not write it.
    pub width: Option<u64>,
    /// Absolute file offset of the record (0 when not read from a file).
    pub offset: u64,
}

/// A TITLE record: the process title at a point in time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Title {
    /// Clock ticks when it was read.
    pub ticks: u64,
    /// The title's arguments (lossy UTF-8), as `/proc/self/cmdline` separated them.
    pub args: Vec<String>,
}

/// A SAMPLE record: where a thread was when its CPU-time timer fired.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    /// Clock ticks when it was taken.
    pub ticks: u64,
    /// The timer's period, ns of thread CPU time.
    pub period_ns: u64,
    /// Expiries the kernel merged into this one (CPU timers are checked at scheduler ticks).
    pub overruns: u64,
    /// Its stack (an id of this file's STACK records; 0: none). The first frame is the
    /// interrupted instruction plus one.
    pub stack: u64,
    /// The thread was inside the agent's own code.
    pub in_agent: bool,
}

impl Sample {
    /// The thread CPU time it stands for, ns.
    pub fn weight_ns(&self) -> u64 {
        self.period_ns
            .saturating_mul(self.overruns.saturating_add(1))
    }
}

/// A THREAD_NAME record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadName {
    /// Clock ticks when the name was seen.
    pub ticks: u64,
    /// The same instant in CLOCK_MONOTONIC nanoseconds.
    pub ts_ns: u64,
    /// The name (lossy UTF-8).
    pub name: String,
}
