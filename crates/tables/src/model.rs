//! The model's tables: task types, their children, and every instance of every type with its
//! latency and where its critical path went, as `top` computes them.

use arrow_array::RecordBatch;
use scalpel_analysis::rollup::{each_instance, BlockKind, InstanceOf};
use scalpel_model::graph::{LeafTypeId, ThreadId};
use scalpel_model::task::{Model, TaskKind};

use crate::batch::{ns, Batch};
use crate::error::TablesError;
use crate::events::Ctx;
use crate::partition::Part;

fn kind_name(k: TaskKind) -> &'static str {
    match k {
        TaskKind::Leaf => "leaf",
        TaskKind::Group => "group",
        TaskKind::Loop => "loop",
        TaskKind::Session => "session",
    }
}

pub(crate) fn task_types(m: &Model) -> Result<RecordBatch, TablesError> {
    let t = &m.types;
    Batch::new("task_types")
        .u32(
            "id",
            "the task type's id (instances.type)",
            (0..t.len()).map(|i| i as u32),
        )
        .name(
            "name",
            "its name, as top shows it",
            t.iter().map(|t| Some(&t.name)),
        )
        .name(
            "kind",
            "leaf, group, loop or session",
            t.iter().map(|t| Some(kind_name(t.kind))),
        )
        .u32(
            "level",
            "0 for leaf types; a parent is above its children",
            t.iter().map(|t| t.level),
        )
        .u32_opt(
            "leaf_type",
            "for a leaf type, its leaf_types.id",
            t.iter().map(|t| t.leaf_type.map(|l| l.get())),
        )
        .i64("count", "its instances", t.iter().map(|t| ns(t.count)))
        .i64(
            "top_level",
            "of those, how many are in no other task",
            t.iter().map(|t| ns(t.top_level)),
        )
        .finish()
}

pub(crate) fn task_children(m: &Model) -> Result<RecordBatch, TablesError> {
    let rows: Vec<(u32, u32, u64)> = m
        .types
        .iter()
        .enumerate()
        .flat_map(|(t, ty)| {
            ty.children
                .iter()
                .map(move |c| (t as u32, c.ty.get(), c.count))
        })
        .collect();
    Batch::new("task_children")
        .u32(
            "parent",
            "the task type (task_types.id)",
            rows.iter().map(|r| r.0),
        )
        .u32(
            "child",
            "a type each of its instances holds (task_types.id)",
            rows.iter().map(|r| r.1),
        )
        .i64(
            "count",
            "how many per instance",
            rows.iter().map(|r| ns(r.2)),
        )
        .finish()
}

/// One instance's row, before it becomes columns.
struct Row {
    ty: u32,
    occurrence: u32,
    parent: Option<(u32, u32)>,
    first_leaf: Option<u32>,
    thread: Option<ThreadId>,
    leaves: u32,
    start_ns: u64,
    end_ns: u64,
    path_ns: u64,
    running_ns: u64,
    blocked: [u64; BlockKind::ALL.len()],
    leader: Option<(LeafTypeId, u64)>,
    bytes_in: u64,
    bytes_out: u64,
    cpu_ns: Option<u64>,
}

fn row(c: &Ctx<'_>, i: &InstanceOf<'_>) -> Row {
    let inst = i.instance;
    let mut blocked = [0; BlockKind::ALL.len()];
    for s in &inst.path {
        for (a, b) in blocked.iter_mut().zip(s.blocked) {
            *a += b;
        }
    }
    // The critical path's leader: the leaf type whose steps hold the most of it.
    let mut by_type: Vec<(LeafTypeId, u64)> = Vec::new();
    for s in &inst.path {
        let Some(lt) = c.g.leaves.get(s.leaf as usize).map(|l| l.ty) else {
            continue;
        };
        match by_type.iter_mut().find(|(t, _)| *t == lt) {
            Some((_, ns)) => *ns += s.total(),
            None => by_type.push((lt, s.total())),
        }
    }
    let leader = by_type
        .into_iter()
        .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)));
    Row {
        ty: i.ty.get(),
        occurrence: i.occurrence,
        parent: i.parent.map(|p| (p.ty.get(), p.index)),
        first_leaf: i.first_leaf.map(|l| l.get()),
        thread: i
            .first_leaf
            .and_then(|l| c.g.leaves.get(l.index()))
            .map(|l| l.thread),
        leaves: i.leaves,
        start_ns: inst.start_ns,
        end_ns: inst.end_ns,
        path_ns: inst.path.iter().map(|s| s.total()).sum(),
        running_ns: inst.path.iter().map(|s| s.running_ns).sum(),
        blocked,
        leader,
        bytes_in: inst.bytes_in,
        bytes_out: inst.bytes_out,
        cpu_ns: inst.cpu_ns,
    }
}

/// Every instance of every task type (a leaf type's are its leaves), in the rollup's order.
pub(crate) fn instances(c: &Ctx<'_>, m: &Model) -> Result<(RecordBatch, Vec<Part>), TablesError> {
    let mut rows = Vec::new();
    each_instance(c.g, m, |i| rows.push(row(c, i)));
    let g = c.g;
    let ty = |r: &Row| &m.types[r.ty as usize];
    let mut b = Batch::new("instances")
        .u32(
            "type",
            "its task type (task_types.id)",
            rows.iter().map(|r| r.ty),
        )
        .name(
            "name",
            "its task type's name",
            rows.iter().map(|r| Some(&ty(r).name)),
        )
        .name(
            "kind",
            "leaf, group, loop or session",
            rows.iter().map(|r| Some(kind_name(ty(r).kind))),
        )
        .u32(
            "occurrence",
            "its index among its type's; for a leaf type, the leaf's id",
            rows.iter().map(|r| r.occurrence),
        )
        .bool(
            "top_level",
            "in no other task: the instances top's table counts",
            rows.iter().map(|r| r.parent.is_none()),
        )
        .u32_opt(
            "parent_type",
            "the type of the occurrence it is a child of",
            rows.iter().map(|r| r.parent.map(|p| p.0)),
        )
        .u32_opt(
            "parent_occurrence",
            "that occurrence",
            rows.iter().map(|r| r.parent.map(|p| p.1)),
        )
        .u32_opt(
            "first_leaf",
            "its earliest leaf (leaves.id)",
            rows.iter().map(|r| r.first_leaf),
        )
        .u32_opt(
            "thread",
            "its earliest leaf's thread (threads.id)",
            rows.iter().map(|r| r.thread.map(|t| t.get())),
        )
        .u32(
            "leaves",
            "how many leaves it has",
            rows.iter().map(|r| r.leaves),
        )
        .i64(
            "start_ns",
            "its earliest leaf's start",
            rows.iter().map(|r| ns(r.start_ns)),
        )
        .i64(
            "end_ns",
            "its last leaf's completion",
            rows.iter().map(|r| ns(r.end_ns)),
        )
        .i64(
            "latency_ns",
            "end_ns - start_ns",
            rows.iter().map(|r| ns(r.end_ns - r.start_ns)),
        )
        .i64(
            "path_ns",
            "time on its critical path",
            rows.iter().map(|r| ns(r.path_ns)),
        )
        .i64(
            "path_running_ns",
            "of it, running",
            rows.iter().map(|r| ns(r.running_ns)),
        );
    for k in BlockKind::ALL {
        let name = format!("path_{}_ns", k.name().replace('-', "_"));
        b = b.i64(
            &name,
            "of it, blocked this way",
            rows.iter().map(|r| ns(r.blocked[k.index()])),
        );
    }
    let leader_name = |r: &Row| {
        r.leader
            .and_then(|(t, _)| g.types.get(t.index()))
            .map(|t| &t.name)
    };
    let batch = b
        .u32_opt(
            "leader",
            "the leaf type that holds the most of its critical path (leaf_types.id)",
            rows.iter().map(|r| r.leader.map(|l| l.0.get())),
        )
        .name(
            "leader_name",
            "that leaf type's name",
            rows.iter().map(leader_name),
        )
        .i64(
            "leader_ns",
            "its time on the critical path",
            rows.iter().map(|r| ns(r.leader.map_or(0, |l| l.1))),
        )
        .i64(
            "bytes_in",
            "bytes its leaves read",
            rows.iter().map(|r| ns(r.bytes_in)),
        )
        .i64(
            "bytes_out",
            "bytes its leaves wrote",
            rows.iter().map(|r| ns(r.bytes_out)),
        )
        .i64_opt(
            "cpu_ns",
            "CPU time its leaves used (when the trace has CPU times)",
            rows.iter().map(|r| r.cpu_ns.map(ns)),
        )
        .finish()?;
    let parts = rows
        .iter()
        .map(|r| c.part(r.thread.unwrap_or(ThreadId::new(0)), r.start_ns))
        .collect();
    Ok((batch, parts))
}
