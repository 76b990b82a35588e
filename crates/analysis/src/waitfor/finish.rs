//! The finished wait-for graph: nodes without edges dropped, edges heaviest first with their
//! call sites resolved and merged, knots with their edges and shares, largest first.

use scalpel_model::graph::BoundaryInfo;

use super::cascade::{Acc, Built};
use super::knots::Found;
use super::waits::SiteKey;
use super::{Knot, WaitEdge, WaitEdgeId, WaitFor, WaitNode, WaitNodeId, WaitSite, SITES};
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

    /// Every call site of an edge, resolved, those that read the same (one call under one
    /// stack, ending leaves of different types) merged, in no particular order.
    fn all_sites(&self, a: &Acc) -> Vec<WaitSite> {
        let mut merged: Vec<WaitSite> = Vec::new();
        let mut keys: Vec<_> = a.sites.keys().collect();
        keys.sort_unstable();
        for key in keys {
            let &(ns, count) = &a.sites[key];
            merge_site(
                &mut merged,
                WaitSite {
                    kind: key.1,
                    call: key.2,
                    site: self.site(key.0),
                    ns,
                    count,
                },
            );
        }
        merged
    }

    /// The edges with their call sites resolved (see [`Sums`]).
    pub(super) fn sums(&self) -> Vec<((u32, u32), Sums)> {
        self.edges
            .iter()
            .map(|(k, a)| {
                let mut kinds: Vec<(BlockKind, u64)> =
                    a.kinds.iter().map(|(&k, &v)| (k, v)).collect();
                kinds.sort_unstable();
                let sums = Sums {
                    direct: a.direct,
                    cascaded: a.cascaded,
                    idle: a.idle,
                    kinds,
                    sites: self.all_sites(a),
                };
                (*k, sums)
            })
            .collect()
    }

    /// The finished graph: nodes without edges dropped, edges heaviest first, knots by share.
    pub(super) fn finish(self, found: Found, explained: Vec<f64>, task: Option<String>) -> WaitFor {
        let edges = self.sums();
        let totals = Totals {
            total_wait_ns: self.total_wait_ns,
            span_ns: self.span_ns,
            steps: self.steps,
            cut: self.cut,
        };
        assemble(self.nodes, edges, (found, explained), totals, task)
    }
}

/// An edge's weights with its call sites resolved: what windows of a trace add up.
#[derive(Clone, Debug, Default)]
pub(super) struct Sums {
    pub direct: u64,
    pub cascaded: f64,
    pub idle: u64,
    /// By kind, in kind order.
    pub kinds: Vec<(BlockKind, u64)>,
    pub sites: Vec<WaitSite>,
}

impl Sums {
    pub(super) fn weight(&self) -> u64 {
        self.direct + self.cascaded.round() as u64 + self.idle
    }

    /// Adds `other`'s weights, kinds and sites.
    pub(super) fn add(&mut self, other: Sums) {
        self.direct += other.direct;
        self.cascaded += other.cascaded;
        self.idle += other.idle;
        for (k, v) in other.kinds {
            match self.kinds.binary_search_by_key(&k, |x| x.0) {
                Ok(i) => self.kinds[i].1 += v,
                Err(i) => self.kinds.insert(i, (k, v)),
            }
        }
        for site in other.sites {
            merge_site(&mut self.sites, site);
        }
    }
}

/// Adds `site` to `merged`, into the one that reads the same when there is one.
fn merge_site(merged: &mut Vec<WaitSite>, site: WaitSite) {
    match merged
        .iter_mut()
        .find(|m| m.kind == site.kind && m.call == site.call && m.site == site.site)
    {
        Some(m) => {
            m.ns += site.ns;
            m.count += site.count;
        }
        None => merged.push(site),
    }
}

/// What the whole graph adds up to besides its edges.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Totals {
    pub total_wait_ns: u64,
    pub span_ns: u64,
    pub steps: u64,
    pub cut: bool,
}

/// The finished graph of `nodes` and `edges` (in (from, to) order), with the knots `found`
/// and the waiting each explains: nodes without edges dropped, edges heaviest first with
/// their heaviest [`SITES`] call sites, knots by share.
pub(super) fn assemble(
    nodes_in: Vec<WaitNode>,
    edges_in: Vec<((u32, u32), Sums)>,
    (found, explained): (Found, Vec<f64>),
    totals: Totals,
    task: Option<String>,
) -> WaitFor {
    {
        // Keep nodes with edges, in their order.
        let mut used = vec![false; nodes_in.len()];
        for ((f, t), _) in &edges_in {
            used[*f as usize] = true;
            used[*t as usize] = true;
        }
        let mut new_id = vec![u32::MAX; nodes_in.len()];
        let mut nodes = Vec::new();
        for (i, n) in nodes_in.iter().enumerate() {
            if used[i] {
                new_id[i] = nodes.len() as u32;
                nodes.push(n.clone());
            }
        }
        // Edges heaviest first (ties by node ids, so output is stable).
        let mut order: Vec<usize> = (0..edges_in.len()).collect();
        order.sort_by_key(|&i| {
            let ((f, t), a) = &edges_in[i];
            (
                std::cmp::Reverse(a.weight()),
                new_id[*f as usize],
                new_id[*t as usize],
            )
        });
        let mut edge_id = vec![WaitEdgeId(0); edges_in.len()];
        let mut edges = Vec::with_capacity(order.len());
        for (k, &i) in order.iter().enumerate() {
            edge_id[i] = WaitEdgeId(k as u32);
            let ((f, t), a) = &edges_in[i];
            let mut kinds = a.kinds.clone();
            kinds.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(&y.0)));
            let mut sites = a.sites.clone();
            sites.sort_by(|x, y| y.ns.cmp(&x.ns).then(y.count.cmp(&x.count)));
            sites.truncate(SITES);
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
                for (i, ((f, t), _)) in edges_in.iter().enumerate() {
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
                    share: if totals.total_wait_ns == 0 {
                        0.0
                    } else {
                        explained_ns as f64 / totals.total_wait_ns as f64
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
            total_wait_ns: totals.total_wait_ns,
            span_ns: totals.span_ns,
            cascade_steps: totals.steps,
            cascade_cut: totals.cut,
            task,
        }
    }
}
