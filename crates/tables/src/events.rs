//! The graph's tables of what happened, partitioned by machine and time window: leaves,
//! edges, waits and samples.

use arrow_array::RecordBatch;
use scalpel_model::graph::{Graph, LeafId, NodeId, ThreadId};
use scalpel_model::task::Model;

use crate::batch::{ns, Batch};
use crate::error::TablesError;
use crate::partition::Part;

/// What every table of one graph needs: the graph, and where a row's time falls.
pub(crate) struct Ctx<'g> {
    pub(crate) g: &'g Graph,
    /// The first leaf's start: window 0 begins there.
    pub(crate) origin_ns: u64,
    pub(crate) window_ns: u64,
}

impl Ctx<'_> {
    /// The part of a row of thread `t` at `at_ns`.
    pub(crate) fn part(&self, t: ThreadId, at_ns: u64) -> Part {
        Part {
            host: self.g.host_of(t).get(),
            window: at_ns.saturating_sub(self.origin_ns) / self.window_ns.max(1),
        }
    }

    fn leaf_part(&self, l: LeafId) -> Part {
        match self.g.leaves.get(l.index()) {
            Some(leaf) => self.part(leaf.thread, leaf.start_ns),
            None => Part { host: 0, window: 0 },
        }
    }
}

/// The leaves, with their machine and window; `model` adds each leaf's parent occurrence.
pub(crate) fn leaves(
    c: &Ctx<'_>,
    model: Option<&Model>,
) -> Result<(RecordBatch, Vec<Part>), TablesError> {
    let g = c.g;
    let l = &g.leaves;
    let ids = || g.leaf_ids();
    let parent = |i: LeafId| model.and_then(|m| m.leaf_parent.get(i.index()).copied().flatten());
    // The object whose read started the leaf: the one that ended the thread's previous leaf.
    let start_obj = |i: LeafId| {
        let leaf = &l[i.index()];
        (i.index() > 0)
            .then(|| &l[i.index() - 1])
            .filter(|p| p.thread == leaf.thread)
            .and_then(|p| p.end_obj)
            .map(|o| o.get())
    };
    let batch = Batch::new("leaves")
        .u32(
            "id",
            "the leaf's id (the node id edges use)",
            ids().map(|i| i.get()),
        )
        .u32(
            "thread",
            "its thread (threads.id)",
            l.iter().map(|l| l.thread.get()),
        )
        .u32(
            "type",
            "its leaf type (leaf_types.id)",
            l.iter().map(|l| l.ty.get()),
        )
        .name(
            "type_name",
            "its leaf type's name",
            l.iter().map(|l| g.types.get(l.ty.index()).map(|t| &t.name)),
        )
        .name(
            "thread_name",
            "its thread's name",
            l.iter()
                .map(|l| g.threads.get(l.thread.index()).map(|t| &t.name)),
        )
        .i64(
            "start_ns",
            "when the call that starts it returned",
            l.iter().map(|l| ns(l.start_ns)),
        )
        .i64(
            "end_ns",
            "when the call that ends it was entered",
            l.iter().map(|l| ns(l.end_ns)),
        )
        .i64(
            "block_ns",
            "time inside the ending call",
            l.iter().map(|l| ns(l.block_ns)),
        )
        .name(
            "start_op",
            "the call that started it",
            l.iter().map(|l| l.start_op.map(|o| o.name())),
        )
        .name(
            "end_op",
            "the call that ended it",
            l.iter().map(|l| l.end_op.map(|o| o.name())),
        )
        .u32_opt(
            "start_obj",
            "the object the starting call was on (objects.id)",
            ids().map(start_obj),
        )
        .u32_opt(
            "end_obj",
            "the object the ending call was on (objects.id)",
            l.iter().map(|l| l.end_obj.map(|o| o.get())),
        )
        .i64(
            "bytes_in",
            "bytes read: by the starting call, and from files within it",
            l.iter().map(|l| ns(l.bytes_in)),
        )
        .i64(
            "bytes_out",
            "bytes written: by the ending call, and to files within it",
            l.iter().map(|l| ns(l.bytes_out)),
        )
        .i64(
            "file_bytes_in",
            "of bytes_in, those read from files and terminals",
            ids().map(|i| ns(g.leaf_file(i).0)),
        )
        .i64(
            "file_bytes_out",
            "of bytes_out, those written to files and terminals",
            ids().map(|i| ns(g.leaf_file(i).1)),
        )
        .i64(
            "lock_ns",
            "time waiting for mutexes and rwlocks within it",
            l.iter().map(|l| ns(l.lock_ns)),
        )
        .i64(
            "sleep_ns",
            "time sleeping within it",
            l.iter().map(|l| ns(l.sleep_ns)),
        )
        .i64(
            "other_ns",
            "time in other calls within it (file I/O, close …)",
            l.iter().map(|l| ns(l.other_ns)),
        )
        .i64_opt(
            "cpu_ns",
            "its CPU time (when the trace has CPU times)",
            ids().map(|i| g.leaf_cpu(i).map(ns)),
        )
        .u32_opt(
            "parent_type",
            "the task type of the occurrence it is a direct child of (task_types.id)",
            ids().map(|i| parent(i).map(|p| p.ty.get())),
        )
        .u32_opt(
            "parent_occurrence",
            "that occurrence (instances.occurrence)",
            ids().map(|i| parent(i).map(|p| p.index)),
        )
        .finish()?;
    Ok((batch, ids().map(|i| c.leaf_part(i)).collect()))
}

pub(crate) fn edges(c: &Ctx<'_>) -> Result<(RecordBatch, Vec<Part>), TablesError> {
    let g = c.g;
    let e = &g.edges;
    let leaf = |n: NodeId| g.leaf_of(n).map(|l| l.get());
    let batch = Batch::new("edges")
        .u32(
            "from_node",
            "the cause: a leaf (leaves.id) or an untraced peer (externals.node)",
            e.iter().map(|e| e.from.get()),
        )
        .u32(
            "to_node",
            "what it enabled, the same way",
            e.iter().map(|e| e.to.get()),
        )
        .name(
            "kind",
            "program, cond, sem, stream, connect …",
            e.iter().map(|e| Some(e.kind.name())),
        )
        .u32_opt(
            "obj",
            "the object it passed through (objects.id)",
            e.iter().map(|e| e.obj.map(|o| o.get())),
        )
        .u32_opt(
            "from_leaf",
            "from, when it is a leaf",
            e.iter().map(|e| leaf(e.from)),
        )
        .u32_opt(
            "to_leaf",
            "to, when it is a leaf",
            e.iter().map(|e| leaf(e.to)),
        )
        .finish()?;
    // A row goes with the leaf it enabled, or with its cause when that is an untraced peer.
    let parts = e
        .iter()
        .map(|e| match (g.leaf_of(e.to), g.leaf_of(e.from)) {
            (Some(l), _) | (None, Some(l)) => c.leaf_part(l),
            (None, None) => Part { host: 0, window: 0 },
        })
        .collect();
    Ok((batch, parts))
}

/// Contended lock acquisitions and the calls inside leaves that took time, one table.
pub(crate) fn waits(c: &Ctx<'_>) -> Result<(RecordBatch, Vec<Part>), TablesError> {
    let g = c.g;
    let (locks, inner) = (&g.lock_waits, &g.inner_waits);
    let n = locks.len() + inner.len();
    let lock_row = |i: usize| locks.get(i);
    let inner_row = |i: usize| i.checked_sub(locks.len()).and_then(|j| inner.get(j));
    let leaf_of = |i: usize| match lock_row(i) {
        Some(w) => w.waiter,
        None => inner_row(i).map_or(LeafId::new(0), |w| w.leaf),
    };
    let at = |i: usize| match inner_row(i) {
        Some(w) => w.at_ns,
        None => g.leaves.get(leaf_of(i).index()).map_or(0, |l| l.start_ns),
    };
    let site = |i: usize| inner_row(i).and_then(|w| g.sites.get(w.site.index()));
    let batch = Batch::new("waits")
        .u32(
            "leaf",
            "the leaf it was in (leaves.id)",
            (0..n).map(|i| leaf_of(i).get()),
        )
        .name(
            "what",
            "lock (a contended acquisition) or call (a call inside the leaf that took time)",
            (0..n).map(|i| Some(if i < locks.len() { "lock" } else { "call" })),
        )
        .name(
            "op",
            "the call",
            (0..n).map(|i| inner_row(i).map(|w| w.op.name())),
        )
        .u32_opt(
            "obj",
            "the object (objects.id)",
            (0..n).map(|i| match lock_row(i) {
                Some(w) => Some(w.obj.get()),
                None => inner_row(i).and_then(|w| w.obj).map(|o| o.get()),
            }),
        )
        .i64_opt(
            "at_ns",
            "when the call was entered (calls only)",
            (0..n).map(|i| inner_row(i).map(|w| ns(w.at_ns))),
        )
        .i64(
            "wait_ns",
            "how long it waited",
            (0..n).map(|i| {
                ns(match lock_row(i) {
                    Some(w) => w.wait_ns,
                    None => inner_row(i).map_or(0, |w| w.ns),
                })
            }),
        )
        .u32_opt(
            "holder",
            "the leaf that held the lock, when traced (leaves.id)",
            (0..n).map(|i| lock_row(i).and_then(|w| w.holder).map(|l| l.get())),
        )
        .name(
            "function",
            "the function that made the call",
            (0..n).map(|i| site(i).and_then(|s| s.function.clone())),
        )
        .finish()?;
    let parts = (0..n)
        .map(|i| {
            let t = g
                .leaves
                .get(leaf_of(i).index())
                .map_or(ThreadId::new(0), |l| l.thread);
            c.part(t, at(i))
        })
        .collect();
    Ok((batch, parts))
}

pub(crate) fn samples(c: &Ctx<'_>) -> Result<(RecordBatch, Vec<Part>), TablesError> {
    let g = c.g;
    let s = &g.samples;
    let site = |i: usize| g.sites.get(s[i].site.index());
    let batch = Batch::new("samples")
        .u32(
            "thread",
            "the thread sampled (threads.id)",
            s.iter().map(|s| s.thread.get()),
        )
        .i64("at_ns", "when", s.iter().map(|s| ns(s.at_ns)))
        .i64(
            "weight_ns",
            "the CPU time it stands for",
            s.iter().map(|s| ns(s.weight_ns)),
        )
        .bool(
            "in_agent",
            "whether the thread was in the agent",
            s.iter().map(|s| s.in_agent),
        )
        .u32_opt(
            "leaf",
            "the leaf that was running (leaves.id)",
            s.iter()
                .map(|s| g.leaf_at(s.thread, s.at_ns).map(|l| l.get())),
        )
        .name(
            "function",
            "the innermost function",
            (0..s.len()).map(|i| site(i).and_then(|x| x.function.clone())),
        )
        .list(
            "stack",
            "the stack, innermost first",
            (0..s.len()).map(|i| site(i).map(|x| x.frames.clone()).unwrap_or_default()),
        )
        .finish()?;
    Ok((batch, s.iter().map(|s| c.part(s.thread, s.at_ns)).collect()))
}
