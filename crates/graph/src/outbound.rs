//! Calls through a peer outside the trace. On a connection the program opened (`connect`)
//! whose other end no traced process accepted, the program is the client: what it writes is a
//! request and what it reads next is the answer. The peer's work is not in the trace, so no
//! byte edge joins the two halves (a proxy's request went out and its answer came back as two
//! unrelated pieces), and in an event loop the connect, the request's write and the answer's
//! read are three leaves with waits for other connections between them.
//!
//! So on such a connection: the connect's leaf leads to the leaf of the first write (the
//! request goes out on the connection it opened), and the last write before each read leads
//! to the leaf that read (the answer, through the peer). Both are `call` edges. Writes with no
//! read after them (a log shipped out) and reads with no write before them (a peer that spoke
//! first) get none. A connection accepted from an untraced client is the other way round (its
//! reads are requests) and is left alone, as is one whose peer was traced (its bytes have
//! stream edges) and one with no connect in the trace (inherited: who opened it is unknown).
//!
//! A client port is reused as soon as its connection closes, so one connection key can stand
//! for many connections in a trace: a key's connection ends where the program closed it (its
//! offsets run on; the close names the key). A blocking connect names its connection; a
//! non-blocking one returns before the connection exists (in progress) and names only the
//! address it dialled. So a connection's start takes the earliest connect not yet taken that
//! names it, else the earliest in progress that its thread made to that address before it, the
//! starts taken in time order (assumed: what a thread dialled first it uses first; a connect
//! that failed later leaves its place to the next).

use std::collections::VecDeque;

use ahash::{AHashMap, AHashSet};
use scalpel_model::format::Op;
use scalpel_model::graph::{EdgeKind, Graph};
use scalpel_model::object::Channel;
use scalpel_model::read::Endpoint;

use super::event::{reads_bytes, HAS_X, NO_OBJ};
use super::leaves::Bound;
use super::notify::GroupOut;

/// One transfer on a connection key.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Transfer {
    /// When it happened (a write ends its leaf, a read starts its own).
    at: u64,
    /// Whether it read.
    read: bool,
    /// Its leaf.
    leaf: u32,
    /// Its stream object (one direction of the connection).
    obj: u32,
    /// Which of the key's connections it belongs to (closes of the key before it).
    conn: u32,
}

/// A `connect`: when its leaf ended, and the leaf.
#[derive(Clone, Copy)]
struct Dial {
    at: u64,
    leaf: u32,
}

/// The trace's connects, each list in time order and taken from its front.
#[derive(Default)]
struct Dials<'g> {
    /// Those that named their connection, by its key.
    named: AHashMap<u64, VecDeque<Dial>>,
    /// Those in progress, by the address dialled and the dialling thread.
    pending: AHashMap<(&'g Endpoint, u32), VecDeque<Dial>>,
    /// Every address dialled.
    addrs: AHashSet<&'g Endpoint>,
}

/// Adds the `call` edges of every connection the trace opened to a peer outside it.
/// `closed`: (connection key, when the program closed it).
pub(super) fn calls(bounds: &[Bound], closed: &[(u64, u64)], graph: &Graph, out: &mut GroupOut) {
    let mut dials = dials(bounds, graph);
    if dials.addrs.is_empty() {
        return;
    }
    let per_key = transfers(bounds, closed, &dials.addrs, graph);
    // Every connection's start (its first write), in time order.
    let mut starts: Vec<(u64, u64, usize)> = Vec::new();
    for (&key, xfers) in &per_key {
        for (i, start) in first_writes(xfers).into_iter().enumerate() {
            if start {
                starts.push((xfers[i].at, key, i));
            }
        }
    }
    starts.sort_unstable();
    let mut opened: AHashMap<(u64, usize), Dial> = AHashMap::new();
    for (_, key, i) in starts {
        if let Some(d) = dialled(&mut dials, key, &per_key[&key][i], graph) {
            opened.insert((key, i), d);
        }
    }
    let mut keys: Vec<u64> = per_key.keys().copied().collect();
    keys.sort_unstable();
    for key in keys {
        link(key, &per_key[&key], &opened, out);
    }
}

/// Per transfer: whether it is the first write of its connection.
fn first_writes(xfers: &[Transfer]) -> Vec<bool> {
    let mut wrote = false;
    let mut prev_conn = None;
    xfers
        .iter()
        .map(|x| {
            if prev_conn != Some(x.conn) {
                wrote = false;
                prev_conn = Some(x.conn);
            }
            let first = !x.read && !wrote;
            wrote |= !x.read;
            first
        })
        .collect()
}

/// The transfers of every connection key that no traced process accepted and that has an
/// address some `connect` dialled at one end, each key's in time order.
fn transfers(
    bounds: &[Bound],
    closed: &[(u64, u64)],
    dialled: &AHashSet<&Endpoint>,
    graph: &Graph,
) -> AHashMap<u64, Vec<Transfer>> {
    let accepted: AHashSet<u64> = bounds
        .iter()
        .filter(|b| b.flags & HAS_X != 0 && b.res >= 0)
        .filter(|b| matches!(b.op.op(), Some(Op::Accept | Op::Accept4)))
        .map(|b| b.x)
        .collect();
    let mut per_key: AHashMap<u64, Vec<Transfer>> = AHashMap::new();
    for b in bounds
        .iter()
        .filter(|b| b.res > 0 && b.obj != NO_OBJ && b.flags & HAS_X != 0)
    {
        let Some(read) = b.op.op().and_then(reads_bytes) else {
            continue;
        };
        let Some((key, _)) = stream(graph, b.obj)
            .filter(|(k, _)| !accepted.contains(k))
            .filter(|_| {
                ends(graph, b.obj).is_some_and(|(s, r)| dialled.contains(s) || dialled.contains(r))
            })
        else {
            continue;
        };
        let Some(l) = graph.leaves.get(b.leaf as usize) else {
            continue;
        };
        per_key.entry(key).or_default().push(Transfer {
            at: if read { l.start_ns } else { l.end_ns },
            read,
            leaf: b.leaf,
            obj: b.obj,
            conn: 0,
        });
    }
    let mut closes: AHashMap<u64, Vec<u64>> = AHashMap::new();
    for &(key, at) in closed.iter().filter(|c| per_key.contains_key(&c.0)) {
        closes.entry(key).or_default().push(at);
    }
    for (key, v) in per_key.iter_mut() {
        v.sort_unstable();
        if let Some(c) = closes.get_mut(key) {
            c.sort_unstable();
            for x in v.iter_mut() {
                x.conn = c.partition_point(|&t| t < x.at) as u32;
            }
        }
    }
    per_key
}

/// The connection key and the receiving end of stream object `obj`.
fn stream(graph: &Graph, obj: u32) -> Option<(u64, &Endpoint)> {
    match graph.objects.get(obj as usize)?.channel.as_ref()? {
        Channel::Stream { key, receiver, .. } => Some((*key, receiver)),
        Channel::Listening { .. } => None,
    }
}

/// The sending and receiving ends of stream object `obj`.
fn ends(graph: &Graph, obj: u32) -> Option<(&Endpoint, &Endpoint)> {
    match graph.objects.get(obj as usize)?.channel.as_ref()? {
        Channel::Stream {
            sender, receiver, ..
        } => Some((sender, receiver)),
        Channel::Listening { .. } => None,
    }
}

/// Every `connect`, by the address it dialled and its thread, in time order.
fn dials<'g>(bounds: &[Bound], graph: &'g Graph) -> Dials<'g> {
    let mut out = Dials::default();
    for b in bounds.iter().filter(|b| b.op.op() == Some(Op::Connect)) {
        let addr = match graph
            .objects
            .get(b.obj as usize)
            .and_then(|o| o.channel.as_ref())
        {
            Some(Channel::Listening { address, .. }) => address,
            _ => continue,
        };
        let Some(l) = graph.leaves.get(b.leaf as usize) else {
            continue;
        };
        let dial = Dial {
            at: l.end_ns,
            leaf: b.leaf,
        };
        out.addrs.insert(addr);
        let list = match b.flags & HAS_X != 0 && b.x != 0 {
            true => out.named.entry(b.x).or_default(),
            false => out.pending.entry((addr, l.thread.get())).or_default(),
        };
        list.push_back(dial);
    }
    for v in out.named.values_mut().chain(out.pending.values_mut()) {
        v.make_contiguous().sort_unstable_by_key(|d| (d.at, d.leaf));
    }
    out
}

/// The connect that opened the connection whose first write is `first`: the earliest not yet
/// taken, made before the write, that names this connection; else the earliest in progress
/// that the writer's thread made to the address it writes to. It is used up. (Starts come in
/// time order, so each list is taken from its front.)
fn dialled<'g>(
    dials: &mut Dials<'g>,
    key: u64,
    first: &Transfer,
    graph: &'g Graph,
) -> Option<Dial> {
    let before = |q: &mut VecDeque<Dial>| match q.front() {
        Some(d) if d.at <= first.at => q.pop_front(),
        _ => None,
    };
    if let Some(d) = dials.named.get_mut(&key).and_then(before) {
        return Some(d);
    }
    let (_, peer) = stream(graph, first.obj)?;
    let thread = graph.leaves.get(first.leaf as usize)?.thread.get();
    dials.pending.get_mut(&(peer, thread)).and_then(before)
}

/// The `call` edges of one connection key, its transfers in time order; `opened`: the connect
/// of each connection's start, by (key, index of the start).
fn link(key: u64, xfers: &[Transfer], opened: &AHashMap<(u64, usize), Dial>, out: &mut GroupOut) {
    // Only connections the trace opened: from a start with a connect until the next start.
    let mut open = false;
    let mut last_write: Option<(u32, u32)> = None;
    let starts = first_writes(xfers);
    for (i, x) in xfers.iter().enumerate() {
        if i > 0 && xfers[i - 1].conn != x.conn {
            open = false;
            last_write = None;
        }
        if starts[i] {
            let dial = opened.get(&(key, i));
            open = dial.is_some();
            last_write = None;
            if let Some(d) = dial.filter(|d| d.leaf != x.leaf) {
                out.edge(d.leaf, x.leaf, EdgeKind::Call, x.obj);
            }
        }
        if !open {
            continue;
        }
        if !x.read {
            last_write = Some((x.leaf, x.obj));
        } else if let Some((from, obj)) = last_write.take() {
            if from != x.leaf {
                out.edge(from, x.leaf, EdgeKind::Call, obj);
            }
        }
    }
}
