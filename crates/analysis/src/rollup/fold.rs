//! Rollups per task type, computed: each type's stats folded from its instances one at a time.
//! Why: holding every instance of a type at once (each with its critical path and the time
//! charged behind each step) was the rollup's peak: 38 of the 63 MB of heap on nginx's trace,
//! for its 20,000-instance request type.

use ahash::AHashMap;
use scalpel_model::graph::{Graph, LeafId, LeafTypeId};
use scalpel_model::task::{Model, OccRef, TaskKind, TaskTypeId};

use super::batch::Evaluators;
use super::instance::Instance;
use super::kinds::{BlockKind, KindTimes};
use super::leaf::GraphIndex;
use super::stats::{ratio, ChildStats, Contributor, Latency, TypeStats, CONTRIBUTORS};

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
    contrib: AHashMap<ContribKey, u64>,
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
            contrib: AHashMap::new(),
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
            add(
                self.contrib.entry((lt, None, None)).or_default(),
                s.running_ns,
            );
            let mut charged = 0;
            for b in &s.behind {
                let by = self.g.leaves[b.leaf as usize].ty;
                add(
                    self.contrib.entry((by, b.kind, Some(lt))).or_default(),
                    b.ns,
                );
                charged += b.ns;
            }
            for k in BlockKind::ALL {
                let ns = s.blocked[k.index()];
                add(&mut self.blocked[k.index()], ns);
                // Queued time its thread's earlier leaves explain is charged to them above.
                let own = if k == BlockKind::Queued {
                    ns.saturating_sub(charged)
                } else {
                    ns
                };
                if own > 0 {
                    add(self.contrib.entry((lt, Some(k), None)).or_default(), own);
                }
            }
        }
    }

    /// Adds what `other`, a fold of the instances after this one's, holds.
    fn merge(&mut self, other: TypeFold<'g>) {
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
        for (key, ns) in other.contrib {
            add(self.contrib.entry(key).or_default(), ns);
        }
    }

    /// The stats of type `t`, with its children's parts.
    pub(super) fn finish(mut self, t: u32, children: Vec<ChildStats>) -> TypeStats {
        let count = self.latencies.len() as u64;
        self.latencies.sort_unstable();
        let by_start_ns: Vec<u64> = self.latencies.iter().map(|&(_, l)| l).collect();
        let latency = Latency::of(&mut by_start_ns.clone());
        let span_ns = self.last.saturating_sub(self.first.unwrap_or(0));
        // Over the trace's span, not the type's own: fifteen thread exits in the last
        // milliseconds of a three-second trace are five per second, not thousands.
        let trace_span_ns = self.trace_span_ns;
        let per_s = |x: f64| {
            if trace_span_ns == 0 {
                0.0
            } else {
                x * 1e9 / trace_span_ns as f64
            }
        };
        let mut contributors: Vec<Contributor> = self
            .contrib
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
        let mut owner: AHashMap<LeafId, OccRef> = AHashMap::new();
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
    fn merge(&mut self, other: ChildFold<'m>) {
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
    fn get(&self, of: OccRef) -> &[OccRef] {
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

/// The folds of one part of a type's instances (see [`Evaluators::fold`]).
struct TypePart<'g, 'm> {
    /// Every instance.
    all: TypeFold<'g>,
    /// The top-level instances alone, for a type that has any.
    alone: Option<TypeFold<'g>>,
    /// Whether an instance was nested (else `alone` is `all`).
    nested: bool,
    /// The parts its children play, for a group, loop or session type.
    children: Option<ChildFold<'m>>,
    /// Each instance's latency, in order.
    latencies: Vec<u64>,
}

impl<'g, 'm> TypePart<'g, 'm> {
    fn new(g: &'g Graph, span_ns: u64, has_top: bool, children: Option<ChildFold<'m>>) -> Self {
        TypePart {
            all: TypeFold::new(g, span_ns),
            alone: has_top.then(|| TypeFold::new(g, span_ns)),
            nested: false,
            children,
            latencies: Vec::new(),
        }
    }

    fn add(&mut self, inst: &Instance, at_top: bool) {
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
    fn merge(&mut self, other: TypePart<'g, 'm>) {
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
fn merge<'g, 'm>(parts: Vec<TypePart<'g, 'm>>) -> TypePart<'g, 'm> {
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

/// `*sum += ns`, saturating: sums over instances must not overflow, and a file whose clock base
/// was damaged keeps its events (with a warning) at times a century off, a few of which pass u64.
fn add(sum: &mut u64, ns: u64) {
    *sum = sum.saturating_add(ns);
}
