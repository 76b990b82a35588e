//! The two tables whose rows are stored as differences from the row before: leaves (times and
//! event indices grow along a thread, so their differences fit a byte or two) and occurrences
//! (each lists its leaf ids ascending). Differences wrap, so any value round-trips, sorted or not;
//! signed differences are zigzag-coded by postcard, so a step back costs as little as one forward.

use std::fmt;

use serde::de::{SeqAccess, Visitor};
use serde::ser::SerializeSeq;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::graph::{
    CpuSample, Edge, EdgeKind, InnerWait, Leaf, LeafId, LeafTypeId, NodeId, ObjId, OpName, SiteId,
    ThreadId,
};
use crate::task::{OccRef, Occurrence, TaskType};

/// At most this many rows are reserved ahead of decoding them, whatever length a file claims.
const RESERVE_AT_MOST: usize = 4096;

/// The bits of a wrapping difference, as the signed number postcard zigzag-codes.
fn signed(d: u64) -> i64 {
    i64::from_ne_bytes(d.to_ne_bytes())
}

fn unsigned(d: i64) -> u64 {
    u64::from_ne_bytes(d.to_ne_bytes())
}

fn signed32(d: u32) -> i32 {
    i32::from_ne_bytes(d.to_ne_bytes())
}

fn unsigned32(d: i32) -> u32 {
    u32::from_ne_bytes(d.to_ne_bytes())
}

/// One leaf as stored: start time and first event relative to the leaf before, end time and
/// last event relative to its own start.
#[derive(Serialize, Deserialize)]
struct LeafRow {
    thread: u32,
    ty: u32,
    start: i64,
    len: i64,
    block_ns: u64,
    start_op: Option<u8>,
    end_op: Option<u8>,
    end_obj: Option<ObjId>,
    bytes_in: u64,
    bytes_out: u64,
    lock_ns: u64,
    sleep_ns: u64,
    other_ns: u64,
    start_event: i32,
    events: i32,
}

/// The leaves table, for writing.
pub(super) struct LeafRows<'a>(pub(super) &'a [Leaf]);

impl Serialize for LeafRows<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        let (mut start, mut event) = (0u64, 0u32);
        for l in self.0 {
            seq.serialize_element(&LeafRow {
                thread: l.thread.get(),
                ty: l.ty.get(),
                start: signed(l.start_ns.wrapping_sub(start)),
                len: signed(l.end_ns.wrapping_sub(l.start_ns)),
                block_ns: l.block_ns,
                start_op: l.start_op.map(OpName::code),
                end_op: l.end_op.map(OpName::code),
                end_obj: l.end_obj,
                bytes_in: l.bytes_in,
                bytes_out: l.bytes_out,
                lock_ns: l.lock_ns,
                sleep_ns: l.sleep_ns,
                other_ns: l.other_ns,
                start_event: signed32(l.start_event.wrapping_sub(event)),
                events: signed32(l.end_event.wrapping_sub(l.start_event)),
            })?;
            start = l.start_ns;
            event = l.end_event;
        }
        seq.end()
    }
}

/// The leaves table, read back.
pub(super) struct Leaves(pub(super) Vec<Leaf>);

impl<'de> Deserialize<'de> for Leaves {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let step = |(start, event): &mut (u64, u32), r: LeafRow| {
            let start_ns = start.wrapping_add(unsigned(r.start));
            let start_event = event.wrapping_add(unsigned32(r.start_event));
            let end_event = start_event.wrapping_add(unsigned32(r.events));
            (*start, *event) = (start_ns, end_event);
            Leaf {
                thread: ThreadId::new(r.thread),
                ty: LeafTypeId::new(r.ty),
                start_ns,
                end_ns: start_ns.wrapping_add(unsigned(r.len)),
                block_ns: r.block_ns,
                start_op: r.start_op.map(OpName::from_code),
                end_op: r.end_op.map(OpName::from_code),
                end_obj: r.end_obj,
                bytes_in: r.bytes_in,
                bytes_out: r.bytes_out,
                lock_ns: r.lock_ns,
                sleep_ns: r.sleep_ns,
                other_ns: r.other_ns,
                start_event,
                end_event,
            }
        };
        decode_seq(d, "a sequence of leaves", step).map(Leaves)
    }
}

/// Rows `R` decoded one at a time into `T`s, each through `step` with the state the row before
/// left (rows stored as differences), without holding the rows themselves.
fn decode_seq<'de, D, R, T, S, F>(d: D, what: &'static str, step: F) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    R: Deserialize<'de>,
    S: Default,
    F: FnMut(&mut S, R) -> T,
{
    struct V<R, S, F>(&'static str, F, std::marker::PhantomData<(R, S)>);
    impl<'de, R: Deserialize<'de>, T, S: Default, F: FnMut(&mut S, R) -> T> Visitor<'de>
        for V<R, S, F>
    {
        type Value = Vec<T>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(self.0)
        }
        fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<Vec<T>, A::Error> {
            let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(RESERVE_AT_MOST));
            let mut state = S::default();
            while let Some(r) = seq.next_element::<R>()? {
                out.push((self.1)(&mut state, r));
            }
            // Grown by doubling from a cautious start: the slack would stay allocated for as
            // long as the table lives.
            out.shrink_to_fit();
            Ok(out)
        }
    }
    d.deserialize_seq(V(what, step, std::marker::PhantomData))
}

/// An occurrence's leaf ids: the first, then each one's difference from the one before.
struct LeafIds<'a>(&'a [LeafId]);

impl Serialize for LeafIds<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        let mut prev = 0u32;
        for l in self.0 {
            seq.serialize_element(&signed32(l.get().wrapping_sub(prev)))?;
            prev = l.get();
        }
        seq.end()
    }
}

struct OwnedLeafIds(Vec<LeafId>);

impl<'de> Deserialize<'de> for OwnedLeafIds {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let step = |prev: &mut u32, diff: i32| {
            *prev = prev.wrapping_add(unsigned32(diff));
            LeafId::new(*prev)
        };
        decode_seq(d, "a sequence of leaf id differences", step).map(OwnedLeafIds)
    }
}

/// One occurrence as written.
#[derive(Serialize)]
struct OccRow<'a> {
    leaves: LeafIds<'a>,
    parent: Option<OccRef>,
    iterations: Option<u32>,
    variant: Option<u32>,
}

/// One occurrence as read.
#[derive(Deserialize)]
struct OwnedOccRow {
    leaves: OwnedLeafIds,
    parent: Option<OccRef>,
    iterations: Option<u32>,
    variant: Option<u32>,
}

/// One type's occurrences, for writing.
struct TypeOccurrences<'a>(&'a [Occurrence]);

impl Serialize for TypeOccurrences<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|o| OccRow {
            leaves: LeafIds(&o.leaves),
            parent: o.parent,
            iterations: o.iterations,
            variant: o.variant,
        }))
    }
}

/// Every type's occurrences, in type order, for writing.
pub(super) struct OccurrenceRows<'a>(pub(super) &'a [TaskType]);

impl Serialize for OccurrenceRows<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|t| TypeOccurrences(&t.occurrences)))
    }
}

/// One type's occurrences, read back.
struct OwnedTypeOccurrences(Vec<Occurrence>);

impl<'de> Deserialize<'de> for OwnedTypeOccurrences {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // Vec's own Deserialize already caps what it reserves ahead.
        let rows = Vec::<OwnedOccRow>::deserialize(d)?;
        Ok(OwnedTypeOccurrences(
            rows.into_iter()
                .map(|r| Occurrence {
                    leaves: r.leaves.0.into(),
                    parent: r.parent,
                    iterations: r.iterations,
                    variant: r.variant,
                })
                .collect(),
        ))
    }
}

/// Every type's occurrences, read back.
pub(super) struct Occurrences(pub(super) Vec<Vec<Occurrence>>);

impl<'de> Deserialize<'de> for Occurrences {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let types = Vec::<OwnedTypeOccurrences>::deserialize(d)?;
        Ok(Occurrences(types.into_iter().map(|t| t.0).collect()))
    }
}

/// A table whose rows are stored through a row type of their own: fields that JSON leaves out
/// when empty must always be written in postcard, which has no field names to go by.
pub(super) struct Rows<'a, T, R>(pub(super) &'a [T], pub(super) fn(&T, Option<&T>) -> R);

impl<T, R: Serialize> Serialize for Rows<'_, T, R> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut prev = None;
        s.collect_seq(self.0.iter().map(|x| {
            let row = (self.1)(x, prev);
            prev = Some(x);
            row
        }))
    }
}

/// An edge as stored: its source relative to the edge before's (edges are sorted), its target
/// relative to its source.
#[derive(Serialize, Deserialize)]
pub(super) struct EdgeRow {
    from: i32,
    to: i32,
    kind: EdgeKind,
    obj: Option<ObjId>,
}

impl EdgeRow {
    pub(super) fn of(e: &Edge, prev: Option<&Edge>) -> EdgeRow {
        EdgeRow {
            from: signed32(e.from.get().wrapping_sub(prev.map_or(0, |p| p.from.get()))),
            to: signed32(e.to.get().wrapping_sub(e.from.get())),
            kind: e.kind,
            obj: e.obj,
        }
    }

    /// The edges of `rows`, in order.
    pub(super) fn edges(rows: Vec<EdgeRow>) -> Vec<Edge> {
        let mut from = 0u32;
        let mut edges = rows
            .into_iter()
            .map(|r| {
                from = from.wrapping_add(unsigned32(r.from));
                Edge {
                    from: NodeId::new(from),
                    to: NodeId::new(from.wrapping_add(unsigned32(r.to))),
                    kind: r.kind,
                    obj: r.obj,
                }
            })
            .collect::<Vec<Edge>>();
        // Decoded by doubling, and collected in place: the slack would stay with the graph.
        edges.shrink_to_fit();
        edges
    }
}

/// An inner wait as stored (every field written).
#[derive(Serialize, Deserialize)]
pub(super) struct InnerWaitRow {
    leaf: LeafId,
    op: u8,
    obj: Option<ObjId>,
    at_ns: u64,
    ns: u64,
    site: SiteId,
}

impl InnerWaitRow {
    pub(super) fn of(w: &InnerWait, _: Option<&InnerWait>) -> InnerWaitRow {
        InnerWaitRow {
            leaf: w.leaf,
            op: w.op.code(),
            obj: w.obj,
            at_ns: w.at_ns,
            ns: w.ns,
            site: w.site,
        }
    }

    pub(super) fn wait(self) -> InnerWait {
        InnerWait {
            leaf: self.leaf,
            op: OpName::from_code(self.op),
            obj: self.obj,
            at_ns: self.at_ns,
            ns: self.ns,
            site: self.site,
        }
    }
}

/// A CPU sample as stored (every field written).
#[derive(Serialize, Deserialize)]
pub(super) struct SampleRow {
    thread: ThreadId,
    at_ns: u64,
    weight_ns: u64,
    site: SiteId,
    in_agent: bool,
}

impl SampleRow {
    pub(super) fn of(s: &CpuSample, _: Option<&CpuSample>) -> SampleRow {
        SampleRow {
            thread: s.thread,
            at_ns: s.at_ns,
            weight_ns: s.weight_ns,
            site: s.site,
            in_agent: s.in_agent,
        }
    }

    pub(super) fn sample(self) -> CpuSample {
        CpuSample {
            thread: self.thread,
            at_ns: self.at_ns,
            weight_ns: self.weight_ns,
            site: self.site,
            in_agent: self.in_agent,
        }
    }
}
