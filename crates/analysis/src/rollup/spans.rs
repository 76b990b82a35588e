//! Task instances as spans in time, with their critical paths: what a timeline draws for each
//! occurrence of a task type (`scalpel timeline`).

use scalpel_model::graph::{Graph, LeafId};
use scalpel_model::task::{Model, TaskKind, TaskTypeId};

use super::instance::Evaluator;
use super::kinds::{BlockKind, KindTimes};
use super::leaf::GraphIndex;

/// One occurrence of a task type (not of a leaf type) over time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskSpan {
    /// Its type.
    pub ty: TaskTypeId,
    /// Its index among the type's occurrences.
    pub occurrence: u32,
    /// Its first leaf's start.
    pub start_ns: u64,
    /// Its last leaf's completion.
    pub end_ns: u64,
    /// Its first leaf (whose thread and process it is drawn under).
    pub first_leaf: LeafId,
    /// Its leaves.
    pub leaves: u32,
    /// The critical path's leaves, earliest first.
    pub critical: Vec<LeafId>,
    /// Running time on the critical path.
    pub running_ns: u64,
    /// Blocked time on the critical path, by kind ([`BlockKind::index`]).
    pub blocked: KindTimes,
    /// Bytes its leaves read.
    pub bytes_in: u64,
    /// Bytes its leaves wrote.
    pub bytes_out: u64,
}

/// Every occurrence of every group and loop type of `model`, in type order.
pub fn task_spans(g: &Graph, model: &Model) -> Vec<TaskSpan> {
    let idx = GraphIndex::new(g);
    let mut eval = Evaluator::new(g, &idx);
    let mut out = Vec::new();
    for (t, ty) in model.types.iter().enumerate() {
        if ty.kind == TaskKind::Leaf {
            continue;
        }
        for (i, o) in ty.occurrences.iter().enumerate() {
            let (Some(&first), true) = (
                o.leaves.first(),
                o.leaves.iter().all(|l| l.index() < g.leaves.len()),
            ) else {
                continue;
            };
            let inst = eval.eval(&o.leaves);
            out.push(TaskSpan {
                ty: TaskTypeId::at(t),
                occurrence: i as u32,
                start_ns: inst.start_ns,
                end_ns: inst.end_ns,
                first_leaf: first,
                leaves: o.leaves.len() as u32,
                critical: inst.path.iter().map(|p| LeafId::new(p.leaf)).collect(),
                running_ns: inst.path.iter().map(|p| p.running_ns).sum(),
                blocked: inst
                    .path
                    .iter()
                    .fold([0; BlockKind::ALL.len()], |mut acc, p| {
                        for (a, b) in acc.iter_mut().zip(p.blocked) {
                            *a += b;
                        }
                        acc
                    }),
                bytes_in: inst.bytes_in,
                bytes_out: inst.bytes_out,
            });
        }
    }
    out
}
