//! Rollups per task type, computed: each type's stats folded from its instances one at a time.
//! Why: holding every instance of a type at once (each with its critical path and the time
//! charged behind each step) was the rollup's peak: 38 of the 63 MB of heap on nginx's trace,
//! for its 20,000-instance request type.

use ahash::AHashMap;
use scalpel_model::graph::{Graph, LeafId, LeafTypeId};
use scalpel_model::task::{Model, OccRef, TaskKind, TaskTypeId};

use super::children::Children;
use super::instance::Instance;
use super::kinds::{BlockKind, KindTimes};
use super::stats::{
    add, keep_largest, per_second, ratio, ChildStats, Contributor, Latency, TypeStats,
};

/// Latencies of the occurrences evaluated so far (children are evaluated before their parents).
pub(super) struct OccLatency {
    /// Per group or loop type, by occurrence index.
    pub(super) by_type: Vec<Vec<u64>>,
    /// Per leaf.
    pub(super) by_leaf: Vec<u64>,
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

/// Critical-path time by (leaf type, kind, the queued path leaf's type it was spent behind).
type ContribKey = (LeafTypeId, Option<BlockKind>, Option<LeafTypeId>);

/// A path leaf type's own critical-path time: running (slot 0), then blocked by kind (slot
/// `1 + kind`). Why apart from the time charged behind others: every step of every instance
/// adds to these, and one lookup per step, not one per kind, was a tenth of the rollups.
type OwnTimes = [u64; 1 + BlockKind::ALL.len()];

/// [`TypeStats`] of the instances added so far.
pub(super) struct TypeFold<'g> {
    g: &'g Graph,
    /// The trace's span, which rates are taken over.
    trace_span_ns: u64,
    /// Each instance's (start, latency).
    latencies: Vec<(u64, u64)>,
    first: Option<u64>,
    last: u64,
    total_ns: u64,
    critical_ns: u64,
    running_ns: u64,
    blocked: KindTimes,
    bytes_in: u64,
    bytes_out: u64,
    cpu_ns: Option<u64>,
    /// Per path leaf type, its own time (the keys `(type, kind, None)`).
    own: AHashMap<LeafTypeId, OwnTimes>,
    /// Time charged behind earlier leaves of the thread (the keys `(type, kind, Some(path))`).
    behind: AHashMap<ContribKey, u64>,
}

impl<'g> TypeFold<'g> {
    /// An empty fold whose rates are taken over `trace_span_ns`.
    pub(super) fn new(g: &'g Graph, trace_span_ns: u64) -> Self {
        TypeFold {
            g,
            trace_span_ns,
            latencies: Vec::new(),
            first: None,
            last: 0,
            total_ns: 0,
            critical_ns: 0,
            running_ns: 0,
            blocked: [0; BlockKind::ALL.len()],
            bytes_in: 0,
            bytes_out: 0,
            cpu_ns: None,
            own: AHashMap::new(),
            behind: AHashMap::new(),
        }
    }

    pub(super) fn add(&mut self, i: &Instance) {
        self.latencies.push((i.start_ns, i.latency()));
        // Sums over instances saturate (`add`).
        add(&mut self.total_ns, i.latency());
        self.first = Some(self.first.map_or(i.start_ns, |f| f.min(i.start_ns)));
        self.last = self.last.max(i.end_ns);
        self.bytes_in += i.bytes_in;
        self.bytes_out += i.bytes_out;
        if let Some(c) = i.cpu_ns {
            self.cpu_ns = Some(self.cpu_ns.unwrap_or(0) + c);
        }
        for s in &i.path {
            let lt = self.g.leaves[s.leaf as usize].ty;
            add(&mut self.critical_ns, s.total());
            add(&mut self.running_ns, s.running_ns);
            let mut charged = 0;
            for b in &s.behind {
                let by = self.g.leaves[b.leaf as usize].ty;
                add(self.behind.entry((by, b.kind, Some(lt))).or_default(), b.ns);
                charged += b.ns;
            }
            let own = self.own.entry(lt).or_default();
            add(&mut own[0], s.running_ns);
            for k in BlockKind::ALL {
                let ns = s.blocked[k.index()];
                add(&mut self.blocked[k.index()], ns);
                // Queued time its thread's earlier leaves explain is charged to them above.
                let mine = if k == BlockKind::Queued {
                    ns.saturating_sub(charged)
                } else {
                    ns
                };
                add(&mut own[1 + k.index()], mine);
            }
        }
    }

    /// Adds what `other`, a fold of the instances after this one's, holds.
    pub(super) fn merge(&mut self, other: TypeFold<'g>) {
        self.latencies.extend(other.latencies);
        add(&mut self.total_ns, other.total_ns);
        self.first = match (self.first, other.first) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.last = self.last.max(other.last);
        self.bytes_in += other.bytes_in;
        self.bytes_out += other.bytes_out;
        if let Some(c) = other.cpu_ns {
            self.cpu_ns = Some(self.cpu_ns.unwrap_or(0) + c);
        }
        add(&mut self.critical_ns, other.critical_ns);
        add(&mut self.running_ns, other.running_ns);
        for k in BlockKind::ALL {
            add(&mut self.blocked[k.index()], other.blocked[k.index()]);
        }
        for (lt, times) in other.own {
            let own = self.own.entry(lt).or_default();
            for (sum, ns) in own.iter_mut().zip(times) {
                add(sum, ns);
            }
        }
        for (key, ns) in other.behind {
            add(self.behind.entry(key).or_default(), ns);
        }
    }

    /// The stats of type `t`, with its children's parts.
    pub(super) fn finish(mut self, t: u32, children: Vec<ChildStats>) -> TypeStats {
        let count = self.latencies.len() as u64;
        self.latencies.sort_unstable();
        let by_start_ns: Vec<u64> = self.latencies.iter().map(|&(_, l)| l).collect();
        let latency = Latency::of(&mut by_start_ns.clone());
        let span_ns = self.last.saturating_sub(self.first.unwrap_or(0));
        let per_s = |x: f64| per_second(x, self.trace_span_ns);
        let own = self.own.into_iter().flat_map(|(lt, times)| {
            let kinds = std::iter::once(None).chain(BlockKind::ALL.map(Some));
            kinds.zip(times).map(move |(k, ns)| ((lt, k, None), ns))
        });
        let mut contributors: Vec<Contributor> = own
            .chain(self.behind)
            .filter(|&(_, ns)| ns > 0)
            .map(|((leaf_type, kind, while_queued), ns)| Contributor {
                leaf_type,
                kind,
                while_queued,
                ns,
            })
            .collect();
        keep_largest(&mut contributors);
        TypeStats {
            ty: TaskTypeId::new(t),
            count,
            latency,
            total_ns: self.total_ns,
            critical_ns: self.critical_ns,
            span_ns,
            per_second: per_s(count as f64),
            bytes_in: self.bytes_in,
            bytes_out: self.bytes_out,
            bandwidth: per_s((self.bytes_in + self.bytes_out) as f64),
            cpu_ns: self.cpu_ns,
            running_ns: self.running_ns,
            blocked: self.blocked,
            contributors,
            children,
            by_start_ns,
        }
    }
}

/// The parts a group or loop type's children play in its occurrences added so far.
pub(super) struct ChildFold<'m> {
    model: &'m Model,
    kids: &'m Children,
    t: u32,
    /// Per child type: occurrences and their latencies added up.
    lat: AHashMap<TaskTypeId, (u64, u64)>,
    /// Per child type: the parent's critical-path time inside it.
    crit: AHashMap<TaskTypeId, u64>,
    total: u64,
    total_crit: u64,
    /// Which direct child holds each leaf of the occurrence being added; kept between
    /// occurrences so that its table is not allocated (and seeded) for each of them.
    owner: AHashMap<LeafId, OccRef>,
}

impl<'m> ChildFold<'m> {
    /// For type `t`; `kids` are the direct children of every occurrence.
    pub(super) fn new(model: &'m Model, t: u32, kids: &'m Children) -> Self {
        ChildFold {
            model,
            kids,
            t,
            lat: AHashMap::new(),
            crit: AHashMap::new(),
            total: 0,
            total_crit: 0,
            owner: AHashMap::new(),
        }
    }

    /// Adds occurrence `index` of the type, evaluated as `inst`.
    pub(super) fn add(&mut self, index: usize, inst: &Instance, occ_latency: &OccLatency) {
        let model = self.model;
        let of = OccRef {
            ty: TaskTypeId::new(self.t),
            index: index as u32,
        };
        add(&mut self.total, inst.latency());
        let mut seen: Vec<OccRef> = self.kids.get(of).to_vec();
        seen.sort_unstable_by_key(|r| (r.ty, r.index));
        seen.dedup();
        // Which direct child holds each leaf: one pass over the children's leaves, not a walk
        // up the hierarchy per leaf (a deep model made that quadratic in its depth).
        let owner = &mut self.owner;
        owner.clear();
        for &r in &seen {
            let ty = &model.types[r.ty.index()];
            if ty.kind == TaskKind::Leaf {
                owner.insert(LeafId::new(r.index), r);
            } else if let Some(occ) = ty.occurrences.get(r.index as usize) {
                for &l in &occ.leaves {
                    owner.insert(l, r);
                }
            }
        }
        for r in seen {
            let e = self.lat.entry(r.ty).or_default();
            e.0 += 1;
            add(&mut e.1, occ_latency.get(model, r));
        }
        for s in &inst.path {
            if let Some(&r) = owner.get(&LeafId::new(s.leaf)) {
                add(self.crit.entry(r.ty).or_default(), s.total());
                add(&mut self.total_crit, s.total());
            }
        }
    }

    /// Adds what `other`, a fold of the occurrences after this one's, holds.
    pub(super) fn merge(&mut self, other: ChildFold<'m>) {
        add(&mut self.total, other.total);
        add(&mut self.total_crit, other.total_crit);
        for (ty, (n, ns)) in other.lat {
            let e = self.lat.entry(ty).or_default();
            e.0 += n;
            add(&mut e.1, ns);
        }
        for (ty, ns) in other.crit {
            add(self.crit.entry(ty).or_default(), ns);
        }
    }

    /// Each child type's part, in the model's order.
    pub(super) fn finish(self) -> Vec<ChildStats> {
        self.model.types[self.t as usize]
            .children
            .iter()
            .map(|c| {
                let (count, sum) = self.lat.get(&c.ty).copied().unwrap_or_default();
                ChildStats {
                    ty: c.ty,
                    count,
                    latency_share: ratio(sum, self.total),
                    critical_share: ratio(
                        self.crit.get(&c.ty).copied().unwrap_or(0),
                        self.total_crit,
                    ),
                }
            })
            .collect()
    }
}
