//! Every type's figures ([`type_stats`]), types in order of level so that children come before
//! their parents, each type's instances split into parts (see `batch`): a part's folds are the
//! type's figures, its top-level instances' apart, its children's parts and each instance's
//! latency, merged part after part.

use scalpel_model::graph::{Graph, LeafId, LeafTypeId};
use scalpel_model::task::{Model, TaskKind};

use super::batch::Evaluators;
use super::children::Children;
use super::fold::{ChildFold, OccLatency, TypeFold};
use super::instance::Instance;
use super::leaf::GraphIndex;
use super::stats::TypeStats;

/// The folds of one part of a type's instances (see [`Evaluators::fold`]).
pub(super) struct TypePart<'g, 'm> {
    /// Every instance.
    pub(super) all: TypeFold<'g>,
    /// The top-level instances alone, for a type that has any.
    pub(super) alone: Option<TypeFold<'g>>,
    /// Whether an instance was nested (else `alone` is `all`).
    pub(super) nested: bool,
    /// The parts its children play, for a group, loop or session type.
    pub(super) children: Option<ChildFold<'m>>,
    /// Each instance's latency, in order.
    pub(super) latencies: Vec<u64>,
}

impl<'g, 'm> TypePart<'g, 'm> {
    pub(super) fn new(
        g: &'g Graph,
        span_ns: u64,
        has_top: bool,
        children: Option<ChildFold<'m>>,
    ) -> Self {
        TypePart {
            all: TypeFold::new(g, span_ns),
            alone: has_top.then(|| TypeFold::new(g, span_ns)),
            nested: false,
            children,
            latencies: Vec::new(),
        }
    }

    pub(super) fn add(&mut self, inst: &Instance, at_top: bool) {
        self.all.add(inst);
        self.latencies.push(inst.latency());
        if let Some(a) = self.alone.as_mut() {
            if at_top {
                a.add(inst);
            } else {
                self.nested = true;
            }
        }
    }

    /// Adds the part after this one.
    pub(super) fn merge(&mut self, other: TypePart<'g, 'm>) {
        self.all.merge(other.all);
        if let (Some(a), Some(b)) = (self.alone.as_mut(), other.alone) {
            a.merge(b);
        }
        self.nested |= other.nested;
        if let (Some(a), Some(b)) = (self.children.as_mut(), other.children) {
            a.merge(b);
        }
        self.latencies.extend(other.latencies);
    }
}

/// The parts, merged in order.
pub(super) fn merge<'g, 'm>(parts: Vec<TypePart<'g, 'm>>) -> TypePart<'g, 'm> {
    let mut parts = parts.into_iter();
    let mut first = parts.next().expect("a fold has at least one part");
    for p in parts {
        first.merge(p);
    }
    first
}

/// Rolls up every type of `model`, whose leaf ids are `g`'s leaves.
/// Every type's stats, and the stats of each type's top-level instances alone (for the types
/// that have any, in model order): a task nested in another is already inside its parent's time,
/// so the top-level table counts it only where it stands alone. Each instance is evaluated,
/// folded into its type's stats and dropped ([`TypeFold`]).
pub(super) fn type_stats(
    g: &Graph,
    model: &Model,
    idx: &GraphIndex,
    trace_span_ns: u64,
) -> (Vec<TypeStats>, Vec<TypeStats>) {
    let mut eval = Evaluators::new(g, idx);
    let mut by_leaf_type: Vec<Vec<LeafId>> = vec![Vec::new(); g.types.len()];
    for (i, l) in g.leaves.iter().enumerate() {
        if let Some(v) = by_leaf_type.get_mut(l.ty.index()) {
            v.push(LeafId::at(i));
        }
    }
    // Latency of every occurrence, for children's shares: group and loop occurrences by type
    // and index, leaves (each the one occurrence of its leaf type) by leaf id in one table.
    let mut occ_latency = OccLatency {
        by_type: vec![Vec::new(); model.types.len()],
        by_leaf: vec![0; g.leaves.len()],
    };
    let kids = Children::of(g, model);
    let mut order: Vec<usize> = (0..model.types.len()).collect();
    order.sort_by_key(|&t| (model.types[t].level, t));
    let mut out: Vec<Option<TypeStats>> = vec![None; model.types.len()];
    let mut top: Vec<Option<TypeStats>> = vec![None; model.types.len()];
    for t in order {
        let ty = &model.types[t];
        let has_top = ty.top_level > 0;
        let fold_part = |p: &mut TypePart, _, inst: &Instance, at_top| p.add(inst, at_top);
        let (part, children) = match ty.kind {
            TaskKind::Leaf => {
                let lt = ty.leaf_type.unwrap_or(LeafTypeId::at(t));
                let leaves = by_leaf_type.get(lt.index()).map_or(&[][..], Vec::as_slice);
                let part = merge(eval.fold(
                    leaves,
                    std::slice::from_ref,
                    || TypePart::new(g, trace_span_ns, has_top, None),
                    |p, i, &l, inst| {
                        let at_top = model.leaf_parent.get(l.index()).is_none_or(Option::is_none);
                        fold_part(p, i, inst, at_top)
                    },
                ));
                for (&l, &lat) in leaves.iter().zip(&part.latencies) {
                    occ_latency.by_leaf[l.index()] = lat;
                }
                (part, Vec::new())
            }
            _ => {
                let occ = &occ_latency;
                let mut part = merge(eval.fold(
                    &ty.occurrences,
                    |o| &o.leaves,
                    || {
                        let kids = ChildFold::new(model, t as u32, &kids);
                        TypePart::new(g, trace_span_ns, has_top, Some(kids))
                    },
                    |p, i, o, inst| {
                        if let Some(c) = p.children.as_mut() {
                            c.add(i, inst, occ);
                        }
                        fold_part(p, i, inst, o.parent.is_none())
                    },
                ));
                let children = part
                    .children
                    .take()
                    .map_or_else(Vec::new, ChildFold::finish);
                occ_latency.by_type[t] = std::mem::take(&mut part.latencies);
                (part, children)
            }
        };
        let TypePart {
            all, alone, nested, ..
        } = part;
        let all = all.finish(t as u32, children);
        if let Some(alone) = alone {
            top[t] = Some(if nested {
                alone.finish(t as u32, Vec::new())
            } else {
                all.clone()
            });
        }
        out[t] = Some(all);
    }
    (
        out.into_iter().flatten().collect(),
        top.into_iter().flatten().collect(),
    )
}
