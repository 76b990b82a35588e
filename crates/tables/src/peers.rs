//! The transfers with peers outside the trace on connections between routable addresses,
//! partitioned like the leaves: the halves of messages between machines that one machine's
//! tables hold. Two machines' tables, written apart, give their messages as a join of this
//! table with itself (the guide's "messages between machines").

use arrow_array::RecordBatch;
use scalpel_model::graph::{Channel, PeerOp, PeerTransfer};

use crate::batch::{ns, Batch};
use crate::error::TablesError;
use crate::events::Ctx;
use crate::partition::Part;

/// When a transfer happened: a call that ends its leaf (a write, a connect) at the leaf's end,
/// a call that begins it (a read, an accept) at its start.
fn at_ns(c: &Ctx<'_>, p: &PeerTransfer) -> u64 {
    c.g.leaves.get(p.leaf.index()).map_or(0, |l| match p.op {
        PeerOp::Write | PeerOp::Connect => l.end_ns,
        PeerOp::Read | PeerOp::Accept => l.start_ns,
    })
}

/// The stream direction's key, which both machines give it (none for a connect or an accept).
fn stream_key(c: &Ctx<'_>, p: &PeerTransfer) -> Option<u64> {
    let o = c.g.objects.get(p.obj?.index())?;
    let bytes = matches!(p.op, PeerOp::Write | PeerOp::Read);
    (bytes && matches!(o.channel, Some(Channel::Stream { .. }))).then_some(o.key)
}

pub(crate) fn peer_transfers(c: &Ctx<'_>) -> Result<(RecordBatch, Vec<Part>), TablesError> {
    let p = &c.g.peer_transfers;
    let thread = |p: &PeerTransfer| c.g.leaves.get(p.leaf.index()).map(|l| l.thread);
    let batch = Batch::new("peer_transfers")
        .u32(
            "leaf",
            "the leaf the call ended (write, connect) or began (read, accept) (leaves.id)",
            p.iter().map(|p| p.leaf.get()),
        )
        .u32_opt(
            "thread",
            "its thread (threads.id)",
            p.iter().map(|p| thread(p).map(|t| t.get())),
        )
        .name(
            "op",
            "connect, accept, write (bytes no traced read took) or read (bytes no traced write \
             produced)",
            p.iter().map(|p| Some(op_name(p.op))),
        )
        .u64(
            "connection",
            "the key both ends and both directions of the connection share (objects.connection)",
            p.iter().map(|p| p.connection),
        )
        .u64_opt(
            "stream",
            "the direction's key, the same on both machines (objects.key; writes and reads)",
            p.iter().map(|p| stream_key(c, p)),
        )
        .i64(
            "byte_offset",
            "the first byte's offset in its direction, counted from the connection's first byte",
            p.iter().map(|p| ns(p.offset)),
        )
        .i64("bytes", "bytes moved", p.iter().map(|p| ns(p.len)))
        .i64(
            "at_ns",
            "when: a write's or connect's leaf end, a read's or accept's leaf start",
            p.iter().map(|p| ns(at_ns(c, p))),
        )
        .u32_opt(
            "obj",
            "the stream direction, or the endpoint of a connect or an accept, when the trace \
             names one (objects.id)",
            p.iter().map(|p| p.obj.map(|o| o.get())),
        )
        .finish()?;
    let parts = p
        .iter()
        .map(|x| match thread(x) {
            Some(t) => c.part(t, at_ns(c, x)),
            None => Part { host: 0, window: 0 },
        })
        .collect();
    Ok((batch, parts))
}

fn op_name(op: PeerOp) -> &'static str {
    match op {
        PeerOp::Connect => "connect",
        PeerOp::Accept => "accept",
        PeerOp::Write => "write",
        PeerOp::Read => "read",
    }
}
