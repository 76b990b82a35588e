//! The direct children of every occurrence of a model, in one array: what a group, loop or
//! session type's fold reads to give each child type its part.

use scalpel_model::graph::Graph;
use scalpel_model::task::{Model, OccRef, TaskTypeId};

/// The direct children of every group, loop and session occurrence: child occurrences, and
/// leaves that are direct parts (as references whose type is the leaf type and whose index is
/// the leaf id), in one array. A map from each occurrence to a vector of its children took 45
/// MiB on a 1.77M-event nginx recording; this takes a quarter.
pub(super) struct Children {
    /// Per type: the global number of its first occurrence ([`Model::occurrence_bases`]).
    base: Vec<usize>,
    /// Per occurrence (by global number): where its children start in `kids`, and where the
    /// last one's end.
    start: Vec<u32>,
    kids: Vec<OccRef>,
}

impl Children {
    pub(super) fn of(g: &Graph, model: &Model) -> Children {
        let (base, n) = model.occurrence_bases();
        let global = |p: OccRef| -> Option<usize> {
            let ty = model.types.get(p.ty.index())?;
            ((p.index as usize) < ty.occurrences.len())
                .then(|| base[p.ty.index()] + p.index as usize)
        };
        // Every (parent, child) in the order the children are listed: occurrences by type and
        // index, then leaves by id.
        let pairs = || {
            let occs = model.types.iter().enumerate().flat_map(|(t, ty)| {
                ty.occurrences.iter().enumerate().filter_map(move |(i, o)| {
                    let child = OccRef {
                        ty: TaskTypeId::at(t),
                        index: i as u32,
                    };
                    o.parent.map(|p| (p, child))
                })
            });
            let leaves = model
                .leaf_parent
                .iter()
                .zip(&g.leaves)
                .enumerate()
                .filter_map(|(l, (p, leaf))| {
                    let child = OccRef {
                        ty: TaskTypeId::new(leaf.ty.get()),
                        index: l as u32,
                    };
                    p.map(|p| (p, child))
                });
            occs.chain(leaves)
        };
        let mut start = vec![0u32; n + 1];
        // Counted into: its pages mapped writable first (`populate`'s docs).
        scalpel_model::memory::populate(&mut start);
        for (p, _) in pairs() {
            if let Some(at) = global(p) {
                start[at + 1] += 1;
            }
        }
        for i in 0..n {
            start[i + 1] += start[i];
        }
        let mut fill = start.clone();
        let none = OccRef {
            ty: TaskTypeId::new(0),
            index: 0,
        };
        let mut kids = vec![none; start[n] as usize];
        for (p, child) in pairs() {
            if let Some(at) = global(p) {
                kids[fill[at] as usize] = child;
                fill[at] += 1;
            }
        }
        Children { base, start, kids }
    }

    /// The direct children of occurrence `of` (none for a leaf, whose index is a leaf id).
    pub(super) fn get(&self, of: OccRef) -> &[OccRef] {
        let t = of.ty.index();
        let Some(&base) = self.base.get(t) else {
            return &[];
        };
        let end = self
            .base
            .get(t + 1)
            .copied()
            .unwrap_or(self.start.len() - 1);
        if of.index as usize >= end - base {
            return &[];
        }
        let at = base + of.index as usize;
        &self.kids[self.start[at] as usize..self.start[at + 1] as usize]
    }
}
