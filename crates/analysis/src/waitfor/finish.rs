//! The finished wait-for graph: nodes without edges dropped, edges heaviest first with their
//! call sites resolved and merged, knots with their edges and shares, largest first.

use scalpel_model::graph::BoundaryInfo;

use super::cascade::{Acc, Built};
use super::knots::Found;
use super::waits::SiteKey;
use super::{Knot, WaitEdge, WaitEdgeId, WaitFor, WaitNodeId, WaitSite, SITES};
use crate::rollup::BlockKind;

impl Built<'_> {
    /// The call site `key` as the graph describes it.
    fn site(&self, key: SiteKey) -> BoundaryInfo {
        let found = match key {
            SiteKey::End(t) => self.g.types.get(t.index()).map(|t| &t.end),
            SiteKey::Inner(s) => self.g.sites.get(s.index()),
        };
        found.cloned().unwrap_or(BoundaryInfo {
            op: None,
            function: None,
            frames: Vec::new(),
            code_key: 0,
        })
    }

    /// The heaviest [`SITES`] call sites of an edge, those that read the same (one call under
    /// one stack, ending leaves of different types) merged.
    fn sites(&self, a: &Acc) -> Vec<WaitSite> {
        let mut merged: Vec<WaitSite> = Vec::new();
        let mut keys: Vec<_> = a.sites.keys().collect();
        keys.sort_unstable();
        for key in keys {
            let &(ns, count) = &a.sites[key];
            let (site, kind, call) = (self.site(key.0), key.1, key.2);
            match merged
                .iter_mut()
                .find(|m| m.kind == kind && m.call == call && m.site == site)
            {
                Some(m) => {
                    m.ns += ns;
                    m.count += count;
                }
                None => merged.push(WaitSite {
                    kind,
                    call,
                    site,
                    ns,
                    count,
                }),
            }
        }
        merged.sort_by(|x, y| y.ns.cmp(&x.ns).then(y.count.cmp(&x.count)));
        merged.truncate(SITES);
        merged
    }

    /// The finished graph: nodes without edges dropped, edges heaviest first, knots by share.
    pub(super) fn finish(self, found: Found, explained: Vec<f64>, task: Option<String>) -> WaitFor {
        // Keep nodes with edges, in their order.
        let mut used = vec![false; self.nodes.len()];
        for ((f, t), _) in &self.edges {
            used[*f as usize] = true;
            used[*t as usize] = true;
        }
        let mut new_id = vec![u32::MAX; self.nodes.len()];
        let mut nodes = Vec::new();
        for (i, n) in self.nodes.iter().enumerate() {
            if used[i] {
                new_id[i] = nodes.len() as u32;
                nodes.push(n.clone());
            }
        }
        // Edges heaviest first (ties by node ids, so output is stable).
        let mut order: Vec<usize> = (0..self.edges.len()).collect();
        order.sort_by_key(|&i| {
            let ((f, t), a) = &self.edges[i];
            (
                std::cmp::Reverse(a.weight()),
                new_id[*f as usize],
                new_id[*t as usize],
            )
        });
        let mut edge_id = vec![WaitEdgeId(0); self.edges.len()];
        let mut edges = Vec::with_capacity(order.len());
        for (k, &i) in order.iter().enumerate() {
            edge_id[i] = WaitEdgeId(k as u32);
            let ((f, t), a) = &self.edges[i];
            let mut kinds: Vec<(BlockKind, u64)> = a.kinds.iter().map(|(&k, &v)| (k, v)).collect();
            kinds.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(&y.0)));
            let sites = self.sites(a);
            edges.push(WaitEdge {
                from: WaitNodeId(new_id[*f as usize]),
                to: WaitNodeId(new_id[*t as usize]),
                direct_ns: a.direct,
                cascaded_ns: a.cascaded.round() as u64,
                idle_ns: a.idle,
                kinds,
                sites,
            });
        }
        let by_weight = |v: &mut Vec<WaitEdgeId>| v.sort_unstable();
        let mut knots: Vec<Knot> = found
            .knots
            .iter()
            .zip(&explained)
            .map(|(members, &ns)| {
                let inside_set = |n: u32| members.contains(&n);
                let mut inside = Vec::new();
                let mut into = Vec::new();
                for (i, ((f, t), _)) in self.edges.iter().enumerate() {
                    if inside_set(*t) && inside_set(*f) {
                        inside.push(edge_id[i]);
                    } else if inside_set(*t) {
                        into.push(edge_id[i]);
                    }
                }
                by_weight(&mut inside);
                by_weight(&mut into);
                let mut m: Vec<WaitNodeId> = members
                    .iter()
                    .map(|&n| WaitNodeId(new_id[n as usize]))
                    .collect();
                m.sort_unstable();
                let explained_ns = ns.round() as u64;
                Knot {
                    members: m,
                    explained_ns,
                    share: if self.total_wait_ns == 0 {
                        0.0
                    } else {
                        explained_ns as f64 / self.total_wait_ns as f64
                    },
                    inside,
                    into,
                }
            })
            .collect();
        knots.sort_by(|a, b| {
            b.explained_ns
                .cmp(&a.explained_ns)
                .then(a.members.cmp(&b.members))
        });
        let ids = |v: &[usize]| {
            let mut out: Vec<WaitEdgeId> = v.iter().map(|&i| edge_id[i]).collect();
            out.sort_unstable();
            out
        };
        WaitFor {
            nodes,
            edges,
            knots,
            left_out: ids(&found.left_out),
            trimmed: ids(&found.trimmed),
            total_wait_ns: self.total_wait_ns,
            span_ns: self.span_ns,
            cascade_steps: self.steps,
            cascade_cut: self.cut,
            task,
        }
    }
}
