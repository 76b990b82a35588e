//! One task type's [`TypeStats`] added up over windows, with the window's type ids turned into
//! the sum's slots as they come, and the sum's type ids as it ends.

use ahash::AHashMap;
use scalpel_model::graph::LeafTypeId;
use scalpel_model::task::TaskTypeId;

use super::super::dist::Dist;
use super::super::kinds::{BlockKind, KindTimes};
use super::super::stats::{add, keep_largest, per_second, ChildStats, Contributor, TypeStats};
use super::super::thinned::Thinned;
use super::Slot;

/// One task type's [`TypeStats`], added up.
#[derive(Debug, Default)]
pub(super) struct Acc {
    dist: Dist,
    /// The latencies in order of start, for `diff`.
    by_start: Thinned,
    count: u64,
    total_ns: u64,
    critical_ns: u64,
    span_ns: u64,
    bytes_in: u64,
    bytes_out: u64,
    cpu_ns: Option<u64>,
    running_ns: u64,
    blocked: KindTimes,
    contrib: AHashMap<(Slot, Option<BlockKind>, Option<Slot>), u64>,
    /// Each child's count, latency and critical-path time inside this type's instances.
    children: Vec<(Slot, u64, f64, f64)>,
}

impl Acc {
    /// Adds one window's stats of the type; `at` gives the sum's slot of a window's type.
    pub(super) fn add(&mut self, s: &TypeStats, at: &impl Fn(usize) -> Option<Slot>) {
        // Times saturate as one rollup's do (`add`); counts and bytes cannot reach u64's end.
        self.dist.add(&s.by_start_ns);
        self.by_start.add(&s.by_start_ns);
        self.count += s.count;
        add(&mut self.total_ns, s.total_ns);
        add(&mut self.critical_ns, s.critical_ns);
        add(&mut self.span_ns, s.span_ns);
        self.bytes_in += s.bytes_in;
        self.bytes_out += s.bytes_out;
        if let Some(c) = s.cpu_ns {
            self.cpu_ns = Some(self.cpu_ns.unwrap_or(0).saturating_add(c));
        }
        add(&mut self.running_ns, s.running_ns);
        for (sum, &x) in self.blocked.iter_mut().zip(&s.blocked) {
            add(sum, x);
        }
        for c in &s.contributors {
            let Some(leaf) = at(c.leaf_type.index()) else {
                continue;
            };
            let queued = c.while_queued.and_then(|q| at(q.index()));
            add(
                self.contrib.entry((leaf, c.kind, queued)).or_default(),
                c.ns,
            );
        }
        for c in &s.children {
            let Some(child) = at(c.ty.index()) else {
                continue;
            };
            let lat = c.latency_share * s.total_ns as f64;
            let crit = c.critical_share * s.critical_ns as f64;
            match self.children.iter_mut().find(|e| e.0 == child) {
                Some(e) => {
                    e.1 += c.count;
                    e.2 += lat;
                    e.3 += crit;
                }
                None => self.children.push((child, c.count, lat, crit)),
            }
        }
    }

    /// The stats summed, as type `ty` (`id`: each slot's type), rates over `trace_span_ns`.
    pub(super) fn stats(&self, ty: TaskTypeId, id: &[u32], trace_span_ns: u64) -> TypeStats {
        let per_s = |x: f64| per_second(x, trace_span_ns);
        let over = |x: f64, of: u64| if of == 0 { 0.0 } else { x / of as f64 };
        let mut contributors: Vec<Contributor> = self
            .contrib
            .iter()
            .map(|(&(leaf, kind, queued), &ns)| Contributor {
                leaf_type: LeafTypeId::new(id[leaf]),
                kind,
                while_queued: queued.map(|q| LeafTypeId::new(id[q])),
                ns,
            })
            .collect();
        keep_largest(&mut contributors);
        TypeStats {
            ty,
            count: self.count,
            latency: self.dist.latency(),
            total_ns: self.total_ns,
            critical_ns: self.critical_ns,
            span_ns: self.span_ns,
            per_second: per_s(self.count as f64),
            bytes_in: self.bytes_in,
            bytes_out: self.bytes_out,
            bandwidth: per_s((self.bytes_in + self.bytes_out) as f64),
            cpu_ns: self.cpu_ns,
            running_ns: self.running_ns,
            blocked: self.blocked,
            contributors,
            children: self
                .children
                .iter()
                .map(|&(c, count, lat, crit)| ChildStats {
                    ty: TaskTypeId::new(id[c]),
                    count,
                    latency_share: over(lat, self.total_ns),
                    critical_share: over(crit, self.critical_ns),
                })
                .collect(),
            by_start_ns: self.by_start.values().to_vec(),
        }
    }
}
