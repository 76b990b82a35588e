//! Every instance of every task type, evaluated one at a time in the rollup's own order, for
//! views that list instances one row each (the `instances` table) and must agree with `top`:
//! the same instances, the same critical paths, the same top-level test.

use scalpel_model::graph::{Graph, LeafId, LeafTypeId};
use scalpel_model::task::{Model, OccRef, TaskKind, TaskTypeId};

use super::instance::{Evaluator, Instance};
use super::leaf::GraphIndex;

/// One instance of a task type, as the rollup evaluated it.
#[derive(Debug)]
pub struct InstanceOf<'a> {
    /// Its type.
    pub ty: TaskTypeId,
    /// Its index among the type's occurrences; for a leaf type, the leaf's id.
    pub occurrence: u32,
    /// The occurrence it is a child of (`None`: a top-level instance, which `top` lists).
    pub parent: Option<OccRef>,
    /// Its earliest leaf, the lowest id among those that start first (none for an occurrence
    /// with no leaves, which the rollup counts too).
    pub first_leaf: Option<LeafId>,
    /// How many leaves it has.
    pub leaves: u32,
    /// Its times, critical path and bytes.
    pub instance: &'a Instance,
}

/// Calls `f` with every instance of every type of `model` (mined from `g`): leaf types' leaves
/// first by leaf id within their type, then each group, loop and session type's occurrences,
/// types in model order.
pub fn each_instance(g: &Graph, model: &Model, mut f: impl FnMut(&InstanceOf<'_>)) {
    let idx = GraphIndex::new(g);
    let mut eval = Evaluator::new(g, &idx);
    let mut by_leaf_type: Vec<Vec<LeafId>> = vec![Vec::new(); g.types.len()];
    for (l, leaf) in g.leaf_ids().zip(&g.leaves) {
        if let Some(v) = by_leaf_type.get_mut(leaf.ty.index()) {
            v.push(l);
        }
    }
    for (t, ty) in model.types.iter().enumerate() {
        let id = TaskTypeId::at(t);
        if ty.kind == TaskKind::Leaf {
            let lt = ty.leaf_type.unwrap_or(LeafTypeId::at(t));
            for &l in by_leaf_type.get(lt.index()).map_or(&[][..], Vec::as_slice) {
                let instance = eval.eval(&[l]);
                f(&InstanceOf {
                    ty: id,
                    occurrence: l.get(),
                    parent: model.leaf_parent.get(l.index()).copied().flatten(),
                    first_leaf: Some(l),
                    leaves: 1,
                    instance: &instance,
                });
            }
            continue;
        }
        for (i, o) in ty.occurrences.iter().enumerate() {
            let instance = eval.eval(&o.leaves);
            f(&InstanceOf {
                ty: id,
                occurrence: i as u32,
                parent: o.parent,
                first_leaf: o
                    .leaves
                    .iter()
                    .copied()
                    .filter_map(|l| g.leaves.get(l.index()).map(|x| (x.start_ns, l)))
                    .min()
                    .map(|(_, l)| l),
                leaves: o.leaves.len() as u32,
                instance: &instance,
            });
        }
    }
}
