//! The graph's tables that describe rather than happen: machines, processes, threads,
//! objects, untraced peers and leaf types (one file each, not partitioned).

use arrow_array::RecordBatch;
use scalpel_model::graph::{ExternalRole, Graph};

use crate::batch::{ns, Batch};
use crate::error::TablesError;

fn id(i: usize) -> u32 {
    u32::try_from(i).unwrap_or(u32::MAX)
}

pub(crate) fn processes(g: &Graph) -> Result<RecordBatch, TablesError> {
    let p = &g.processes;
    Batch::new("processes")
        .u32(
            "id",
            "the process's id (threads.process)",
            (0..p.len()).map(id),
        )
        .u32("pid", "its pid", p.iter().map(|p| p.pid))
        .u32(
            "incarnation",
            "0, or how many times the pid exec'd before",
            p.iter().map(|p| p.incarnation),
        )
        .u32(
            "host",
            "its machine (hosts.id)",
            p.iter().map(|p| p.host.get()),
        )
        .text("exe", "its executable", p.iter().map(|p| p.exe.as_deref()))
        .text(
            "title",
            "the title it set",
            p.iter().map(|p| p.title.as_deref()),
        )
        .list(
            "cmdline",
            "its arguments",
            p.iter().map(|p| p.cmdline.iter()),
        )
        .i64_opt(
            "unix_offset_ns",
            "add to a time to get Unix time",
            p.iter().map(|p| p.unix_offset_ns),
        )
        .finish()
}

pub(crate) fn threads(g: &Graph) -> Result<RecordBatch, TablesError> {
    let t = &g.threads;
    Batch::new("threads")
        .u32(
            "id",
            "the thread's id (leaves.thread)",
            (0..t.len()).map(id),
        )
        .u32(
            "process",
            "its process (processes.id)",
            t.iter().map(|t| t.process.get()),
        )
        .u32("pid", "its process's pid", t.iter().map(|t| t.pid))
        .u32("tid", "its tid", t.iter().map(|t| t.tid))
        .name("name", "its name", t.iter().map(|t| Some(&t.name)))
        .u32_opt(
            "first_leaf",
            "its first leaf (leaves.id); none when it has no leaves",
            t.iter().map(|t| (t.leaves > 0).then(|| t.first_leaf.get())),
        )
        .u32(
            "leaves",
            "how many leaves it has",
            t.iter().map(|t| t.leaves),
        )
        .finish()
}

/// One row per machine; a graph of one machine has one, `local`, on its own clock.
pub(crate) fn hosts(g: &Graph, names: &[String]) -> Result<RecordBatch, TablesError> {
    let h = &g.hosts;
    let one = h.is_empty();
    let get = |i: usize| h.get(i);
    let n = names.len();
    Batch::new("hosts")
        .u32("id", "the machine's id (processes.host)", (0..n).map(id))
        .name(
            "host",
            "its name; the partition directories' host=",
            names.iter().map(Some),
        )
        .text(
            "trace",
            "its trace directories",
            (0..n).map(|i| get(i).map(|h| h.trace.as_str())),
        )
        .bool(
            "reference",
            "whether its clock is the one every time is on",
            (0..n).map(|i| one || get(i).is_some_and(|h| h.clock.reference)),
        )
        .i64(
            "offset_ns",
            "added to its own times (at start_ns) to get the reference's",
            (0..n).map(|i| get(i).map_or(0, |h| h.clock.offset_ns)),
        )
        .i64(
            "drift_ppb",
            "its clock's rate against the reference's, in parts per billion",
            (0..n).map(|i| get(i).map_or(0, |h| h.clock.drift_ppb)),
        )
        .i64_opt(
            "bound_ns",
            "half the width of the offsets its messages allow",
            (0..n).map(|i| {
                if one {
                    Some(0)
                } else {
                    get(i).and_then(|h| h.clock.bound_ns).map(ns)
                }
            }),
        )
        .i64(
            "pairs",
            "messages both ways that bound its clock",
            (0..n).map(|i| get(i).map_or(0, |h| ns(h.clock.pairs))),
        )
        .name(
            "grade",
            "accurate, approximate, wall-clock or fail",
            (0..n)
                .map(|i| Some(get(i).map_or("accurate".to_owned(), |h| h.clock.grade.to_string()))),
        )
        .list(
            "addresses",
            "its addresses seen in its connections",
            (0..n).map(|i| {
                get(i)
                    .map(|h| {
                        h.addresses
                            .iter()
                            .map(|a| a.to_string())
                            .collect::<Vec<_>>()
                    })
                    .unwrap_or_default()
            }),
        )
        .finish()
}

pub(crate) fn objects(g: &Graph) -> Result<RecordBatch, TablesError> {
    use scalpel_model::graph::Channel;
    let o = &g.objects;
    let ends = |c: &Option<Channel>, first: bool| match c {
        Some(Channel::Stream {
            sender, receiver, ..
        }) => Some(if first { sender } else { receiver }.to_string()),
        Some(Channel::Listening { address, .. }) => first.then(|| address.to_string()),
        None => None,
    };
    Batch::new("objects")
        .u32(
            "id",
            "the object's id (leaves.end_obj, edges.obj, waits.obj)",
            (0..o.len()).map(id),
        )
        .name(
            "kind",
            "mutex, cond, stream, listen …",
            o.iter().map(|o| Some(o.kind.to_string())),
        )
        .u64(
            "key",
            "the key the agent gave it (an address, or the key both ends agree on)",
            o.iter().map(|o| o.key),
        )
        .bool(
            "shared",
            "a process-shared pthread object or futex",
            o.iter().map(|o| o.shared),
        )
        .name(
            "channel",
            "tcp, unix, pipe … for a byte channel",
            o.iter().map(|o| o.channel_kind().map(|k| k.to_string())),
        )
        .u64_opt(
            "connection",
            "a stream's key, which both directions of a connection share",
            o.iter().map(|o| match &o.channel {
                Some(Channel::Stream { key, .. }) => Some(*key),
                _ => None,
            }),
        )
        .text(
            "sender",
            "a stream's writing end, or a listening endpoint's address",
            o.iter().map(|o| ends(&o.channel, true)),
        )
        .text(
            "receiver",
            "a stream's reading end",
            o.iter().map(|o| ends(&o.channel, false)),
        )
        .text(
            "description",
            "what it is, for people",
            o.iter().map(|o| Some(&o.desc)),
        )
        .finish()
}

pub(crate) fn externals(g: &Graph) -> Result<RecordBatch, TablesError> {
    let x = &g.externals;
    let base = g.leaves.len();
    Batch::new("externals")
        .u32(
            "node",
            "its node id in edges (past the last leaf)",
            (0..x.len()).map(|i| id(base + i)),
        )
        .name(
            "role",
            "source (bytes from outside) or sink (bytes nobody traced took)",
            x.iter().map(|x| {
                Some(match x.role {
                    ExternalRole::Source => "source",
                    ExternalRole::Sink => "sink",
                })
            }),
        )
        .u32(
            "obj",
            "the channel (objects.id)",
            x.iter().map(|x| x.obj.get()),
        )
        .finish()
}

pub(crate) fn leaf_types(g: &Graph) -> Result<RecordBatch, TablesError> {
    let t = &g.types;
    let f = |b: &scalpel_model::graph::BoundaryInfo| b.function.clone();
    Batch::new("leaf_types")
        .u32(
            "id",
            "the leaf type's id (leaves.type)",
            (0..t.len()).map(id),
        )
        .name("name", "its name", t.iter().map(|t| Some(&t.name)))
        .name(
            "start_op",
            "the call that starts it",
            t.iter().map(|t| t.start.op.map(|o| o.name())),
        )
        .name(
            "start_function",
            "the function that made it",
            t.iter().map(|t| f(&t.start)),
        )
        .name(
            "end_op",
            "the call that ends it",
            t.iter().map(|t| t.end.op.map(|o| o.name())),
        )
        .name(
            "end_function",
            "the function that made it",
            t.iter().map(|t| f(&t.end)),
        )
        .list(
            "end_stack",
            "the ending call's stack, innermost first",
            t.iter().map(|t| t.end.frames.iter()),
        )
        .i64("count", "its leaves", t.iter().map(|t| ns(t.count)))
        .finish()
}
