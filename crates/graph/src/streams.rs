//! Byte-stream edges: a read of bytes [a, b) of one direction of a channel depends on every
//! write that put bytes of [a, b) there, across threads and processes. Both ends agree on the
//! channel key and count offsets from the first byte ever sent, so no payload is needed.
//!
//! Bytes that no traced write produced come from an `external` source node of the channel (an
//! untraced client, bytes written before recording started); bytes that no traced read took go
//! to its `external` sink. An eventfd has no byte positions: a read takes the writes before it
//! (by sequence number) that no read took, all of them or the oldest (see [`super::eventfd`]).
//! Connections pair `connect` with `accept` by the connection's key; an accept of an untraced
//! client comes from the listening endpoint's external source. A connection that one thread
//! accepts and another thread uses first was handed over through memory: a `handoff` edge joins
//! the two.
//!
//! A write that no read took goes to the first wait that reported its stream ready after the
//! write began, when one did (a `ready` edge, see [`super::ready`]), and to the sink only if none
//! did.

use ahash::AHashMap;
use scalpel_model::format::{ChanKind, Op};
use scalpel_model::graph::{EdgeKind, Graph, Leaf, PeerOp};

use super::event::reads_bytes;
use super::event::{HAS_SEQ, HAS_X, NO_OBJ};
use super::eventfd;
use super::leaves::Bound;
use super::notify::GroupOut;
use super::ready::Reports;
use super::streamorder::{self, Xfer};

/// A byte channel direction of kind `chan`. `group` holds its cuts in sequence order.
/// A pipe wakes its readers one at a time, oldest first; every other channel wakes them all
/// (see [`streamorder::Wake`]). A Unix socket queues a write's bytes as the call ends; every
/// other channel as it begins (see [`streamorder::Enqueue`]).
pub(super) fn stream(
    group: &[Bound],
    obj: u32,
    chan: Option<ChanKind>,
    leaves: &[Leaf],
    reports: &Reports,
    out: &mut GroupOut,
) {
    let mut writes: Vec<Xfer> = Vec::new();
    let mut reads: Vec<Xfer> = Vec::new();
    for b in group.iter().filter(|b| b.flags & HAS_X != 0 && b.res > 0) {
        match b.op.op().and_then(reads_bytes) {
            Some(true) => reads.push((b.x, b.res as u64, b.leaf)),
            Some(false) => writes.push((b.x, b.res as u64, b.leaf)),
            None => {}
        }
    }
    let enqueue = if chan == Some(ChanKind::Unix) {
        streamorder::Enqueue::End
    } else {
        streamorder::Enqueue::Start
    };
    streamorder::order_writes(&mut writes, &reads, leaves, enqueue);
    let wake = if chan == Some(ChanKind::Pipe) {
        streamorder::Wake::Oldest
    } else {
        streamorder::Wake::All
    };
    streamorder::order_reads(&mut reads, &writes, leaves, wake);
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
            out.peer(leaf, obj, PeerOp::Read, (0, a, len));
            out.external.push((leaf, true, obj));
            out.unmatched.external_bytes_in += gap;
        }
    }
    for (w, taken) in writes.iter().zip(taken) {
        // Gone to the peer, whether or not a wait here reported the stream afterwards.
        if !taken {
            out.peer(w.2, obj, PeerOp::Write, (0, w.0, w.1));
        }
        if !taken && !reported(w.2, obj, leaves, reports, out) {
            out.external.push((w.2, false, obj));
            out.unmatched.external_bytes_out += w.1;
        }
    }
}

/// Links a write nobody read to the first wait that reported its stream after it began; false
/// when no wait did. A thread's own later wait needs no edge (program order holds it already).
fn reported(write: u32, obj: u32, leaves: &[Leaf], reports: &Reports, out: &mut GroupOut) -> bool {
    let Some(w) = leaves.get(write as usize) else {
        return false;
    };
    // The write's leaf ends where the write began.
    let Some(wait) = reports.first_after(obj, w.end_ns) else {
        return false;
    };
    if leaves
        .get(wait as usize)
        .is_some_and(|l| l.thread != w.thread)
    {
        out.edge(write, wait, EdgeKind::Ready, obj);
    }
    true
}

/// An eventfd: each read takes the writes before it that no read took, all of them or the
/// oldest one by the mode its calls show (see [`super::eventfd`]).
pub(super) fn eventfd(
    group: &[Bound],
    obj: u32,
    leaves: &[Leaf],
    reports: &Reports,
    out: &mut GroupOut,
) {
    let transfers: Vec<eventfd::Transfer> = group
        .iter()
        .filter(|b| b.flags & HAS_SEQ != 0 && b.res > 0)
        .filter_map(|b| {
            let read = b.op.op().and_then(reads_bytes)?;
            Some(eventfd::Transfer { leaf: b.leaf, read })
        })
        .collect();
    let paired = eventfd::pair(&transfers, eventfd::mode(&transfers));
    for (from, to) in paired.edges {
        out.edge(from, to, EdgeKind::Eventfd, obj);
    }
    for read in paired.from_outside {
        out.external.push((read, true, obj));
    }
    for from in paired.untaken {
        if !reported(from, obj, leaves, reports, out) {
            out.external.push((from, false, obj));
        }
    }
}

/// Connections: `connect` → `accept` by connection key, over the whole trace (a client names
/// the address it dialled, the server the one it listens on, which may differ).
pub(super) fn connections(bounds: &[Bound], out: &mut GroupOut) {
    let is = |b: &Bound, ops: &[Op]| b.op.op().is_some_and(|o| ops.contains(&o));
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
            // (An accept whose object no record defines is dropped with the other externals
            // that name no object, in `finish_edges`.)
            None => {
                if b.flags & HAS_X != 0 && b.x != 0 {
                    out.peer(b.leaf, b.obj, PeerOp::Accept, (b.x, 0, 0));
                }
                out.external.push((b.leaf, true, b.obj))
            }
        }
    }
    for b in bounds.iter().filter(|b| is(b, &[Op::Connect])) {
        let matched = b.flags & HAS_X != 0 && accepted.contains_key(&b.x);
        // A connect to a server outside the trace (or one that failed) leaves the trace.
        if !matched && b.res >= 0 && b.flags & HAS_X != 0 && b.x != 0 {
            out.peer(b.leaf, b.obj, PeerOp::Connect, (b.x, 0, 0));
        }
        if !matched && b.res >= 0 && b.obj != NO_OBJ {
            out.external.push((b.leaf, false, b.obj));
        }
    }
}

/// Hand-offs: for each accepted connection whose first read or write (in time, after the
/// accept, in the acceptor's process: the peer's calls use the same channel) is made by a
/// thread other than the acceptor, an edge from the leaf the `accept` started to the leaf that
/// ends at that first use (the one in which the other thread took the descriptor). This is how a
/// listener hands sockets to a worker pool; the queue between them is often taken without any
/// wait (a worker that finds it non-empty), so no notification edge shows the hand-off.
///
/// A connection key (both endpoints) comes back when the client reuses its port, and another
/// process of the server may accept it (Apache's event MPM runs two): each use belongs to the
/// latest accept of its key in its own process before it (Apache under `ab -n 5000`: 401
/// connections had no hand-off while only a key's first accept was kept).
pub(super) fn handoffs(bounds: &[Bound], channels: &[u64], graph: &Graph, out: &mut GroupOut) {
    let is_accept = |b: &Bound| matches!(b.op.op(), Some(Op::Accept | Op::Accept4));
    // Connection key → its accepts: (when the accept returned, the leaf it started, its thread).
    let mut accepted: AHashMap<u64, Vec<(u64, u32, u32)>> = AHashMap::new();
    for b in bounds.iter().filter(|b| is_accept(b) && b.res >= 0) {
        if b.flags & HAS_X != 0 && b.x != 0 {
            if let Some(l) = graph.leaves.get(b.leaf as usize) {
                accepted
                    .entry(b.x)
                    .or_default()
                    .push((l.start_ns, b.leaf, l.thread.get()));
            }
        }
    }
    if accepted.is_empty() {
        return;
    }
    for v in accepted.values_mut() {
        v.sort_unstable();
    }
    let process = |leaf: u32| -> Option<u32> {
        let t = graph.leaves.get(leaf as usize)?.thread;
        Some(graph.threads.get(t.index())?.process.get())
    };
    // (Connection key, accept) → earliest use: (end time, leaf ending at the call, object).
    let mut first: AHashMap<(u64, usize), (u64, u32, u32)> = AHashMap::new();
    for b in bounds.iter().filter(|b| b.res > 0) {
        let Some(reads) = b.op.op().and_then(reads_bytes) else {
            continue;
        };
        let key = channels.get(b.obj as usize).copied().unwrap_or(0);
        let Some(accepts) = accepted.get(&key).filter(|_| key != 0) else {
            continue;
        };
        // A read starts the leaf after the call; the leaf that reached the call is before it.
        let ending = if reads {
            b.leaf.checked_sub(1)
        } else {
            Some(b.leaf)
        };
        let Some(leaf) = ending.filter(|&l| {
            let same_thread = graph.leaves.get(l as usize).map(|x| x.thread)
                == graph.leaves.get(b.leaf as usize).map(|x| x.thread);
            same_thread
        }) else {
            continue;
        };
        let at = graph.leaves[leaf as usize].end_ns;
        // The latest accept of the key in the use's process at or before the use.
        let here = process(b.leaf);
        let before = accepts.partition_point(|a| a.0 <= at);
        let Some(which) = (0..before).rev().find(|&i| process(accepts[i].1) == here) else {
            continue;
        };
        let e = first.entry((key, which)).or_insert((at, leaf, b.obj));
        if (at, leaf) < (e.0, e.1) {
            *e = (at, leaf, b.obj);
        }
    }
    let mut pairs: Vec<(u32, u32, u32)> = first
        .into_iter()
        .filter_map(|((key, which), (_, leaf, obj))| {
            let (_, from, thread) = accepted[&key][which];
            (graph.leaves[leaf as usize].thread.get() != thread).then_some((from, leaf, obj))
        })
        .collect();
    pairs.sort_unstable();
    for (from, to, obj) in pairs {
        out.edge(from, to, EdgeKind::Handoff, obj);
    }
}
