//! An event loop that offloads work to a thread pool and learns of completions through an
//! eventfd (nginx's `aio threads`): how many eventfd writes reach a leaf of another thread (a
//! `ready` or `eventfd` edge) rather than the eventfd's external sink, and how many offloads one
//! task type holds. An offload is the pool leaf that ends at the eventfd write, the leaf that
//! handed it the job (a `cond` edge into it when the pool thread waited, a `queue` edge when it
//! found the job queued) and the leaf its completion woke; the type that holds it is that of the
//! smallest occurrence holding all of its leaves.

use std::collections::{BTreeMap, BTreeSet};

use scalpel_model::format::ChanKind;
use scalpel_model::graph::{EdgeKind, Graph, LeafId};
use scalpel_model::task::{Model, TaskKind, TaskTypeId};

/// The figures.
#[derive(Debug, Default)]
pub struct OffloadFigures {
    /// Eventfd writes, and those that reach a leaf of another thread.
    pub writes: usize,
    pub reached: usize,
    /// Offloads, and those whose hand-off to the pool is in the graph.
    pub offloads: usize,
    pub with_handoff: usize,
    /// Offloads per holding type (`None`: no occurrence holds all of its leaves).
    pub holders: BTreeMap<Option<TaskTypeId>, usize>,
}

impl OffloadFigures {
    /// The type holding the most offloads, and how many.
    pub fn most(&self) -> Option<(TaskTypeId, usize)> {
        self.holders
            .iter()
            .filter_map(|(t, n)| Some(((*t)?, *n)))
            .max_by_key(|&(t, n)| (n, std::cmp::Reverse(t.index())))
    }
}

/// Computes the figures.
pub fn offload_figures(graph: &Graph, model: &Model) -> OffloadFigures {
    let is_eventfd = |l: LeafId| {
        graph.leaves[l.index()]
            .end_obj
            .and_then(|o| graph.objects.get(o.index()))
            .and_then(|o| o.channel_kind())
            .is_some_and(|k| k.is(ChanKind::Eventfd))
    };
    let writes: Vec<LeafId> = graph
        .leaf_ids()
        .filter(|&l| {
            graph.leaves[l.index()].end_op.map(|o| o.name()).as_deref() == Some("write")
                && is_eventfd(l)
        })
        .collect();
    let mut out_of: BTreeMap<LeafId, Vec<(EdgeKind, LeafId)>> = BTreeMap::new();
    let mut into: BTreeMap<LeafId, Vec<(EdgeKind, LeafId)>> = BTreeMap::new();
    for e in &graph.edges {
        if let (Some(a), Some(b)) = (graph.leaf_of(e.from), graph.leaf_of(e.to)) {
            out_of.entry(a).or_default().push((e.kind, b));
            into.entry(b).or_default().push((e.kind, a));
        }
    }
    let mut f = OffloadFigures {
        writes: writes.len(),
        ..OffloadFigures::default()
    };
    let mut offloads = Vec::new();
    for &w in &writes {
        let woken = out_of.get(&w).and_then(|v| {
            v.iter()
                .find(|(k, _)| matches!(k, EdgeKind::Ready | EdgeKind::Eventfd))
                .map(|x| x.1)
        });
        let Some(woken) = woken else { continue };
        f.reached += 1;
        let handed = into.get(&w).and_then(|v| {
            v.iter()
                .find(|(k, _)| matches!(k, EdgeKind::Cond | EdgeKind::Queue))
                .map(|x| x.1)
        });
        f.with_handoff += usize::from(handed.is_some());
        offloads.push((w, woken, handed));
    }
    f.offloads = offloads.len();
    // Per leaf: the group and loop occurrences holding it, as (size, type, index).
    let mut occ_of: BTreeMap<LeafId, Vec<(usize, usize, usize)>> = BTreeMap::new();
    let wanted: BTreeSet<LeafId> = offloads.iter().map(|o| o.0).collect();
    for (ti, t) in model.types.iter().enumerate() {
        if t.kind == TaskKind::Leaf {
            continue;
        }
        for (oi, o) in t.occurrences.iter().enumerate() {
            let ls = o.leaves.as_slice();
            for l in ls.iter().filter(|l| wanted.contains(l)) {
                occ_of.entry(*l).or_default().push((ls.len(), ti, oi));
            }
        }
    }
    // Per occurrence asked about: its leaves as a set (a session holds thousands).
    let mut sets: BTreeMap<(usize, usize), BTreeSet<LeafId>> = BTreeMap::new();
    for (w, woken, handed) in offloads {
        let need = [Some(w), Some(woken), handed];
        let mut best: Option<(usize, usize, usize)> = None;
        for &(size, ti, oi) in occ_of.get(&w).map_or(&[][..], |v| v.as_slice()) {
            let set = sets.entry((ti, oi)).or_insert_with(|| {
                model.types[ti].occurrences[oi]
                    .leaves
                    .as_slice()
                    .iter()
                    .copied()
                    .collect()
            });
            if need.iter().flatten().all(|l| set.contains(l)) {
                let here = (size, ti, oi);
                best = Some(best.map_or(here, |b| b.min(here)));
            }
        }
        *f.holders
            .entry(best.map(|b| TaskTypeId::new(b.1 as u32)))
            .or_default() += 1;
    }
    f
}
