//! Rollups per task type: latency percentiles, throughput, bytes and bandwidth, where the time on
//! the critical path went (by kind and by leaf), and each child's share of the parent.

use ahash::AHashMap;
use scalpel_model::graph::{Graph, LeafId, LeafTypeId};
use scalpel_model::task::{Model, OccRef, TaskKind, TaskTypeId};
use serde::Serialize;

use super::instance::{Evaluator, Instance};
use super::kinds::{BlockKind, KindTimes};
use super::leaf::GraphIndex;

/// Latency percentiles (nearest rank) of a type's instances.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Latency {
    /// Mean.
    pub mean_ns: u64,
    /// Median.
    pub p50_ns: u64,
    /// 90th percentile.
    pub p90_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// Longest.
    pub max_ns: u64,
}

impl Latency {
    /// The percentiles of `v` (sorted here).
    pub fn of(v: &mut [u64]) -> Latency {
        if v.is_empty() {
            return Latency::default();
        }
        v.sort_unstable();
        let rank = |p: u64| v[((v.len() as u64 * p).div_ceil(100) as usize).clamp(1, v.len()) - 1];
        Latency {
            mean_ns: (v.iter().map(|&x| u128::from(x)).sum::<u128>() / v.len() as u128) as u64,
            p50_ns: rank(50),
            p90_ns: rank(90),
            p99_ns: rank(99),
            max_ns: v[v.len() - 1],
        }
    }
}

/// Time on critical paths spent in one leaf type, of one kind (`None`: running).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Contributor {
    /// The leaf type (also the model's task type of the same number).
    pub leaf_type: LeafTypeId,
    /// What the time was: a blocking kind, or `None` for running.
    pub kind: Option<BlockKind>,
    /// Set when the time was spent in earlier leaves of `leaf_type` on a thread while a path
    /// leaf of this type sat queued for that thread (see [`super::Behind`]); `None` when the
    /// path leaf spent it itself.
    pub while_queued: Option<LeafTypeId>,
    /// Total over the type's instances.
    pub ns: u64,
}

/// A child type's part in its parent.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ChildStats {
    /// The child type.
    pub ty: TaskTypeId,
    /// Its occurrences inside the parent's.
    pub count: u64,
    /// Its instances' latencies added up, over the parent's (above 1 when children overlap).
    pub latency_share: f64,
    /// Its part of the parent's critical paths.
    pub critical_share: f64,
}

/// Everything rolled up for one task type.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TypeStats {
    /// The model type.
    pub ty: TaskTypeId,
    /// Instances.
    pub count: u64,
    /// Instance latencies.
    pub latency: Latency,
    /// Latencies added up.
    pub total_ns: u64,
    /// Critical path lengths added up.
    pub critical_ns: u64,
    /// From the first instance's start to the last one's end.
    pub span_ns: u64,
    /// Instances per second of `span_ns`.
    pub per_second: f64,
    /// Bytes read by its leaves.
    pub bytes_in: u64,
    /// Bytes written.
    pub bytes_out: u64,
    /// Bytes in and out per second of `span_ns`.
    pub bandwidth: f64,
    /// CPU time its instances used, added up (traces recorded with CPU times).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_ns: Option<u64>,
    /// Running time on the critical paths.
    pub running_ns: u64,
    /// Blocked time on the critical paths, by kind.
    #[serde(serialize_with = "super::ser_kinds")]
    pub blocked: KindTimes,
    /// Where critical-path time went, largest first.
    pub contributors: Vec<Contributor>,
    /// Its child types, in the model's order.
    pub children: Vec<ChildStats>,
}

/// How many contributors each type keeps.
pub const CONTRIBUTORS: usize = 12;

/// The direct children of every occurrence: child occurrences, and leaves that are direct
/// parts (as references whose type is the leaf type and whose index is the leaf id).
fn children_of(g: &Graph, model: &Model) -> AHashMap<OccRef, Vec<OccRef>> {
    let mut kids: AHashMap<OccRef, Vec<OccRef>> = AHashMap::new();
    for (t, ty) in model.types.iter().enumerate() {
        for (i, o) in ty.occurrences.iter().enumerate() {
            if let Some(p) = o.parent {
                kids.entry(p).or_default().push(OccRef {
                    ty: TaskTypeId(t as u32),
                    index: i as u32,
                });
            }
        }
    }
    for (l, p) in model.leaf_parent.iter().enumerate() {
        if let (Some(p), Some(leaf)) = (p, g.leaves.get(l)) {
            kids.entry(*p).or_default().push(OccRef {
                ty: TaskTypeId(leaf.ty.0),
                index: l as u32,
            });
        }
    }
    kids
}

/// Rolls up every type of `model`, whose leaf ids are `g`'s leaves.
/// Every type's stats, and the stats of each type's top-level instances alone (for the types
/// that have any, in model order): a task nested in another is already inside its parent's time,
/// so the top-level table counts it only where it stands alone.
pub(super) fn type_stats(
    g: &Graph,
    model: &Model,
    idx: &GraphIndex,
) -> (Vec<TypeStats>, Vec<TypeStats>) {
    let mut eval = Evaluator::new(g, idx);
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
    let kids = children_of(g, model);
    let mut order: Vec<usize> = (0..model.types.len()).collect();
    order.sort_by_key(|&t| (model.types[t].level, t));
    let mut out: Vec<Option<TypeStats>> = vec![None; model.types.len()];
    let mut top: Vec<Option<TypeStats>> = vec![None; model.types.len()];
    for t in order {
        let ty = &model.types[t];
        let leaf_type =
            (ty.kind == TaskKind::Leaf).then(|| ty.leaf_type.unwrap_or(LeafTypeId::at(t)));
        let instances: Vec<Instance> = match leaf_type {
            Some(lt) => by_leaf_type
                .get(lt.index())
                .map(|v| v.iter().map(|&l| eval.eval(&[l])).collect())
                .unwrap_or_default(),
            None => ty
                .occurrences
                .iter()
                .map(|o| eval.eval(&o.leaves))
                .collect(),
        };
        match leaf_type.and_then(|lt| by_leaf_type.get(lt.index())) {
            Some(v) => {
                for (&l, i) in v.iter().zip(&instances) {
                    occ_latency.by_leaf[l.index()] = i.latency();
                }
            }
            None => occ_latency.by_type[t] = instances.iter().map(Instance::latency).collect(),
        }
        let children = if leaf_type.is_some() {
            Vec::new()
        } else {
            child_stats(model, t as u32, &instances, &occ_latency, &kids)
        };
        let all = summarize(g, t as u32, &instances, children);
        if ty.top_level > 0 {
            let at_top: Vec<bool> = match leaf_type.and_then(|lt| by_leaf_type.get(lt.index())) {
                Some(v) => v
                    .iter()
                    .map(|l| model.leaf_parent.get(l.index()).is_none_or(Option::is_none))
                    .collect(),
                None => ty.occurrences.iter().map(|o| o.parent.is_none()).collect(),
            };
            top[t] = Some(if at_top.iter().all(|&x| x) {
                all.clone()
            } else {
                let alone: Vec<Instance> = instances
                    .iter()
                    .zip(&at_top)
                    .filter(|(_, &x)| x)
                    .map(|(i, _)| i.clone())
                    .collect();
                summarize(g, t as u32, &alone, Vec::new())
            });
        }
        out[t] = Some(all);
    }
    (
        out.into_iter().flatten().collect(),
        top.into_iter().flatten().collect(),
    )
}

/// Latencies of the occurrences evaluated so far.
struct OccLatency {
    /// Per group or loop type, by occurrence index.
    by_type: Vec<Vec<u64>>,
    /// Per leaf.
    by_leaf: Vec<u64>,
}

impl OccLatency {
    fn get(&self, model: &Model, r: OccRef) -> u64 {
        let table = if model.types[r.ty.index()].kind == TaskKind::Leaf {
            &self.by_leaf
        } else {
            &self.by_type[r.ty.index()]
        };
        table.get(r.index as usize).copied().unwrap_or(0)
    }
}

/// `a / b`, or 0 when `b` is.
pub(super) fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

fn child_stats(
    model: &Model,
    t: u32,
    instances: &[Instance],
    occ_latency: &OccLatency,
    kids: &AHashMap<OccRef, Vec<OccRef>>,
) -> Vec<ChildStats> {
    let ty = &model.types[t as usize];
    let mut lat: AHashMap<TaskTypeId, (u64, u64)> = AHashMap::new();
    let mut crit: AHashMap<TaskTypeId, u64> = AHashMap::new();
    let (mut total, mut total_crit) = (0u64, 0u64);
    for (i, inst) in instances.iter().enumerate().take(ty.occurrences.len()) {
        let of = OccRef {
            ty: TaskTypeId(t),
            index: i as u32,
        };
        total += inst.latency();
        let mut seen: Vec<OccRef> = kids.get(&of).cloned().unwrap_or_default();
        seen.sort_unstable_by_key(|r| (r.ty, r.index));
        seen.dedup();
        // Which direct child holds each leaf: one pass over the children's leaves, not a walk
        // up the hierarchy per leaf (a deep model made that quadratic in its depth).
        let mut owner: AHashMap<LeafId, OccRef> = AHashMap::new();
        for &r in &seen {
            let ty = &model.types[r.ty.index()];
            if ty.kind == TaskKind::Leaf {
                owner.insert(LeafId(r.index), r);
            } else if let Some(occ) = ty.occurrences.get(r.index as usize) {
                for &l in &occ.leaves {
                    owner.insert(l, r);
                }
            }
        }
        for r in seen {
            let e = lat.entry(r.ty).or_default();
            e.0 += 1;
            e.1 += occ_latency.get(model, r);
        }
        for s in &inst.path {
            if let Some(&r) = owner.get(&LeafId(s.leaf)) {
                *crit.entry(r.ty).or_default() += s.total();
                total_crit += s.total();
            }
        }
    }
    ty.children
        .iter()
        .map(|c| {
            let (count, sum) = lat.get(&c.ty).copied().unwrap_or_default();
            ChildStats {
                ty: c.ty,
                count,
                latency_share: ratio(sum, total),
                critical_share: ratio(crit.get(&c.ty).copied().unwrap_or(0), total_crit),
            }
        })
        .collect()
}

fn summarize(g: &Graph, t: u32, instances: &[Instance], children: Vec<ChildStats>) -> TypeStats {
    let mut lat: Vec<u64> = instances.iter().map(Instance::latency).collect();
    let total_ns = lat.iter().sum();
    let latency = Latency::of(&mut lat);
    let first = instances.iter().map(|i| i.start_ns).min().unwrap_or(0);
    let last = instances.iter().map(|i| i.end_ns).max().unwrap_or(0);
    let span_ns = last.saturating_sub(first);
    let per_s = |x: f64| {
        if span_ns == 0 {
            0.0
        } else {
            x * 1e9 / span_ns as f64
        }
    };
    let mut blocked = [0u64; BlockKind::ALL.len()];
    let mut running_ns = 0;
    let mut contrib: AHashMap<(LeafTypeId, Option<BlockKind>, Option<LeafTypeId>), u64> =
        AHashMap::new();
    for s in instances.iter().flat_map(|i| &i.path) {
        let lt = g.leaves[s.leaf as usize].ty;
        running_ns += s.running_ns;
        *contrib.entry((lt, None, None)).or_default() += s.running_ns;
        let mut charged = 0;
        for b in &s.behind {
            let by = g.leaves[b.leaf as usize].ty;
            *contrib.entry((by, b.kind, Some(lt))).or_default() += b.ns;
            charged += b.ns;
        }
        for k in BlockKind::ALL {
            let ns = s.blocked[k.index()];
            blocked[k.index()] += ns;
            // Queued time its thread's earlier leaves explain is charged to them above.
            let own = if k == BlockKind::Queued {
                ns.saturating_sub(charged)
            } else {
                ns
            };
            if own > 0 {
                *contrib.entry((lt, Some(k), None)).or_default() += own;
            }
        }
    }
    let mut contributors: Vec<Contributor> = contrib
        .into_iter()
        .filter(|&(_, ns)| ns > 0)
        .map(|((leaf_type, kind, while_queued), ns)| Contributor {
            leaf_type,
            kind,
            while_queued,
            ns,
        })
        .collect();
    contributors.sort_by(|a, b| {
        b.ns.cmp(&a.ns)
            .then(a.leaf_type.cmp(&b.leaf_type))
            .then(a.kind.cmp(&b.kind))
            .then(a.while_queued.cmp(&b.while_queued))
    });
    contributors.truncate(CONTRIBUTORS);
    let bytes_in: u64 = instances.iter().map(|i| i.bytes_in).sum();
    let bytes_out: u64 = instances.iter().map(|i| i.bytes_out).sum();
    TypeStats {
        ty: TaskTypeId(t),
        count: instances.len() as u64,
        latency,
        total_ns,
        critical_ns: instances
            .iter()
            .flat_map(|i| &i.path)
            .map(|s| s.total())
            .sum(),
        span_ns,
        per_second: per_s(instances.len() as f64),
        bytes_in,
        bytes_out,
        bandwidth: per_s((bytes_in + bytes_out) as f64),
        cpu_ns: instances
            .iter()
            .filter_map(|i| i.cpu_ns)
            .reduce(|a, b| a + b),
        running_ns,
        blocked,
        contributors,
        children,
    }
}
