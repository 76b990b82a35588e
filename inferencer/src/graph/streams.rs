//! Byte-stream edges: a read of bytes [a, b) of one direction of a channel depends on every
//! write that put bytes of [a, b) there, across threads and processes. Both ends agree on the
//! channel key and count offsets from the first byte ever sent, so no payload is needed.
//!
//! Bytes that no traced write produced come from an `external` source node of the channel (an
//! untraced client, bytes written before recording started); bytes that no traced read took go
//! to its `external` sink. An eventfd has no byte positions: a read collects every write made
//! since the previous read (by sequence number). Connections pair `connect` with `accept` by the
//! connection's key; an accept of an untraced client comes from the listening endpoint's
//! external source.

use ahash::AHashMap;
use scalpel_model::format::Op;
use scalpel_model::graph::EdgeKind;

use super::leaves::{reads_bytes, Bound};
use super::notify::GroupOut;
use super::sink::{HAS_SEQ, HAS_X};

/// One transfer: offset, length, leaf.
type Xfer = (u64, u64, u32);

/// A byte channel direction. `group` holds its cuts in sequence order.
pub fn stream(group: &[Bound], obj: u32, out: &mut GroupOut) {
    let mut writes: Vec<Xfer> = Vec::new();
    let mut reads: Vec<Xfer> = Vec::new();
    for b in group.iter().filter(|b| b.flags & HAS_X != 0 && b.res > 0) {
        match Op::from_u8(b.op).and_then(reads_bytes) {
            Some(true) => reads.push((b.x, b.res as u64, b.leaf)),
            Some(false) => writes.push((b.x, b.res as u64, b.leaf)),
            None => {}
        }
    }
    writes.sort_unstable();
    reads.sort_unstable();
    let mut taken = vec![false; writes.len()];
    for &(a, len, leaf) in &reads {
        let end = a.saturating_add(len);
        let mut i = writes.partition_point(|w| w.0.saturating_add(w.1) <= a);
        let mut pos = a;
        let mut gap = 0;
        while let Some(&(off, wlen, from)) = writes.get(i).filter(|w| w.0 < end) {
            gap += off.saturating_sub(pos);
            out.edge(from, leaf, EdgeKind::Stream, obj);
            taken[i] = true;
            pos = pos.max(off.saturating_add(wlen));
            i += 1;
        }
        gap += end.saturating_sub(pos);
        if gap > 0 {
            out.external.push((leaf, true, obj));
            out.unmatched.external_bytes_in += gap;
        }
    }
    for (w, taken) in writes.iter().zip(taken) {
        if !taken {
            out.external.push((w.2, false, obj));
            out.unmatched.external_bytes_out += w.1;
        }
    }
}

/// An eventfd: each read collects the writes since the previous read.
pub fn eventfd(group: &[Bound], obj: u32, out: &mut GroupOut) {
    let mut pending: Vec<u32> = Vec::new();
    for b in group.iter().filter(|b| b.flags & HAS_SEQ != 0 && b.res > 0) {
        match Op::from_u8(b.op).and_then(reads_bytes) {
            Some(false) => pending.push(b.leaf),
            Some(true) => {
                if pending.is_empty() {
                    out.external.push((b.leaf, true, obj));
                }
                for from in pending.drain(..) {
                    out.edge(from, b.leaf, EdgeKind::Eventfd, obj);
                }
            }
            None => {}
        }
    }
    for from in pending {
        out.external.push((from, false, obj));
    }
}

/// Connections: `connect` → `accept` by connection key, over the whole trace (a client names
/// the address it dialled, the server the one it listens on, which may differ).
pub fn connections(bounds: &[Bound], out: &mut GroupOut) {
    let is = |b: &Bound, ops: &[Op]| Op::from_u8(b.op).is_some_and(|o| ops.contains(&o));
    let mut connects: AHashMap<u64, (u32, u32)> = AHashMap::new();
    for b in bounds.iter().filter(|b| is(b, &[Op::Connect])) {
        if b.flags & HAS_X != 0 && b.x != 0 {
            connects.entry(b.x).or_insert((b.leaf, b.obj));
        }
    }
    let mut accepted: AHashMap<u64, ()> = AHashMap::new();
    for b in bounds
        .iter()
        .filter(|b| is(b, &[Op::Accept, Op::Accept4]) && b.res >= 0)
    {
        let found = (b.flags & HAS_X != 0 && b.x != 0)
            .then(|| connects.get(&b.x))
            .flatten();
        match found {
            Some(&(from, _)) => {
                accepted.insert(b.x, ());
                out.edge(from, b.leaf, EdgeKind::Connect, b.obj);
            }
            None => out.external.push((b.leaf, true, b.obj)),
        }
    }
    for b in bounds.iter().filter(|b| is(b, &[Op::Connect])) {
        let matched = b.flags & HAS_X != 0 && accepted.contains_key(&b.x);
        // A connect to a server outside the trace (or one that failed) leaves the trace.
        if !matched && b.res >= 0 && b.obj != super::sink::NO_OBJ {
            out.external.push((b.leaf, false, b.obj));
        }
    }
}
