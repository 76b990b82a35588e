//! Knots: strongly connected components that no edge leaves, where chains of waits end.
//!
//! Threads in a knot wait only on each other, so nothing outside it can speed them up: if they
//! serve requests, one of the knot's edges is what limits throughput. Before the search, edges
//! to `[unknown]` and edges lighter than [`WaitForOptions::min_share`] of all waiting are left
//! out (wPerf does the same with 1%), a device's idle edges aside. A knot of several nodes then loses its lightest edge out
//! of a thread group while that edge weighs less than [`WaitForOptions::trim`] of the knot's
//! inner weight, and the knots are found again: a syncer that rarely waits for the handlers
//! that feed it is the bottleneck with its disk, not with them. Likewise a component with a
//! circle inside whose edges out weigh less than `trim` of its inner weight loses them: a
//! strict knot would otherwise be whatever bystander those light edges reach (Apache's
//! workers and listener wait on each other and the clients for seconds, and on a shutdown
//! thread for a few hundredths of that). A node counts as a knot only
//! when something waits on it (an isolated thread is not a bottleneck).

use petgraph::algo::kosaraju_scc;
use petgraph::graph::{DiGraph, NodeIndex};

use super::{Pseudo, WaitForOptions};

/// The knots found, as node lists, and the edges (indices into the weighed edges) left out.
/// Edges come in as (from, to, weight).
#[derive(Debug, Default)]
pub(super) struct Found {
    pub knots: Vec<Vec<u32>>,
    /// Left out before the search, or trimmed.
    pub left_out: Vec<usize>,
    /// Trimmed from knots.
    pub trimmed: Vec<usize>,
}

/// Finds the knots of `edges` (on `nodes` nodes, of which the first `groups` are thread groups
/// and the rest [`Pseudo::ALL`]).
pub(super) fn find(
    edges: &[(u32, u32, u64)],
    nodes: usize,
    groups: usize,
    total: u64,
    opts: &WaitForOptions,
) -> Found {
    let unknown = (groups + Pseudo::Unknown as usize) as u32;
    let is_device = |n: u32| {
        (n as usize)
            .checked_sub(groups)
            .and_then(|p| Pseudo::ALL.get(p))
            .is_some_and(|p| p.is_device())
    };
    let floor = (total as f64 * opts.min_share).ceil() as u64;
    let mut found = Found::default();
    // A device's idle edge stays whatever it weighs: it is light exactly when the device is
    // busy all the time, and dropped it would cut a saturated disk off the thread that keeps
    // it busy (the knot would be the disk alone, not the syncer and its disk).
    let mut kept: Vec<bool> = edges
        .iter()
        .map(|&(f, t, w)| t != unknown && (w >= floor.max(1) || (is_device(f) && w > 0)))
        .collect();
    found.left_out = (0..edges.len()).filter(|&i| !kept[i]).collect();
    // Each round removes at least one edge, so this ends within the edge count.
    loop {
        if let Some(leaks) = light_leaks(edges, &kept, nodes, opts, &is_device) {
            for i in leaks {
                kept[i] = false;
                found.trimmed.push(i);
                found.left_out.push(i);
            }
            continue;
        }
        let knots = knots_of(edges, &kept, nodes, &is_device);
        let mut trim: Option<usize> = None;
        for members in &knots {
            if members.len() < 2 {
                continue;
            }
            let inner: Vec<usize> = (0..edges.len())
                .filter(|&i| {
                    kept[i] && {
                        let (f, t, _) = edges[i];
                        members.contains(&f) && members.contains(&t)
                    }
                })
                .collect();
            let weight: u64 = inner.iter().map(|&i| edges[i].2).sum();
            let lightest = inner
                .iter()
                .copied()
                .filter(|&i| {
                    let (f, t, _) = edges[i];
                    f != t && !is_device(f)
                })
                .min_by_key(|&i| (edges[i].2, i));
            if let Some(i) = lightest {
                if (edges[i].2 as f64) < opts.trim * weight as f64 {
                    trim = Some(i);
                    break;
                }
            }
        }
        match trim {
            Some(i) => {
                kept[i] = false;
                found.trimmed.push(i);
                found.left_out.push(i);
            }
            None => {
                found.knots = knots;
                return found;
            }
        }
    }
}

/// The strongly connected components of the kept edges: each node's component, and the
/// components' members.
fn components(
    edges: &[(u32, u32, u64)],
    kept: &[bool],
    nodes: usize,
) -> (Vec<usize>, Vec<Vec<NodeIndex>>) {
    let mut graph: DiGraph<(), ()> = DiGraph::with_capacity(nodes, edges.len());
    for _ in 0..nodes {
        graph.add_node(());
    }
    for (i, &(f, t, _)) in edges.iter().enumerate() {
        if kept[i] {
            graph.add_edge(NodeIndex::new(f as usize), NodeIndex::new(t as usize), ());
        }
    }
    let mut comp = vec![usize::MAX; nodes];
    let sccs = kosaraju_scc(&graph);
    for (c, members) in sccs.iter().enumerate() {
        for m in members {
            comp[m.index()] = c;
        }
    }
    (comp, sccs)
}

/// The edges leaving the first component that waits mostly on itself: one with a circle inside
/// (its inner edges weigh something) whose edges out of it (a device's idle edges aside) weigh
/// less than [`WaitForOptions::trim`] of its inner weight. Apache's workers, listener and
/// clients wait on each other for seconds, and on the child's shutdown thread for a few
/// hundredths of that: the shutdown is not where their waiting ends.
fn light_leaks(
    edges: &[(u32, u32, u64)],
    kept: &[bool],
    nodes: usize,
    opts: &WaitForOptions,
    is_device: &impl Fn(u32) -> bool,
) -> Option<Vec<usize>> {
    let (comp, sccs) = components(edges, kept, nodes);
    let mut inner = vec![0u64; sccs.len()];
    let mut out = vec![0u64; sccs.len()];
    for (i, &(f, t, w)) in edges.iter().enumerate() {
        if !kept[i] || is_device(f) {
            continue;
        }
        let (cf, ct) = (comp[f as usize], comp[t as usize]);
        if cf == ct {
            inner[cf] += w;
        } else {
            out[cf] += w;
        }
    }
    let c =
        (0..sccs.len()).find(|&c| out[c] > 0 && (out[c] as f64) < opts.trim * inner[c] as f64)?;
    Some(
        (0..edges.len())
            .filter(|&i| {
                let (f, t, _) = edges[i];
                kept[i] && !is_device(f) && comp[f as usize] == c && comp[t as usize] != c
            })
            .collect(),
    )
}

/// The strongly connected components of the kept edges that no kept edge leaves and some kept
/// edge enters (or loops in), each sorted, in order of their first node. A device's idle edges
/// close circles but neither make a component leak nor make one a knot: a device waits on all
/// its users at once, and one that fed it a little from outside is not where anyone's waiting
/// ends.
fn knots_of(
    edges: &[(u32, u32, u64)],
    kept: &[bool],
    nodes: usize,
    is_device: &impl Fn(u32) -> bool,
) -> Vec<Vec<u32>> {
    let (comp, sccs) = components(edges, kept, nodes);
    let mut leaves = vec![false; sccs.len()];
    let mut entered = vec![false; sccs.len()];
    for (i, &(f, t, _)) in edges.iter().enumerate() {
        if !kept[i] {
            continue;
        }
        let (cf, ct) = (comp[f as usize], comp[t as usize]);
        if is_device(f) {
            continue;
        }
        if cf != ct {
            leaves[cf] = true;
        }
        entered[ct] = true;
    }
    let mut knots: Vec<Vec<u32>> = sccs
        .iter()
        .enumerate()
        .filter(|&(c, _)| !leaves[c] && entered[c])
        .map(|(_, m)| {
            let mut v: Vec<u32> = m.iter().map(|n| n.index() as u32).collect();
            v.sort_unstable();
            v
        })
        .collect();
    knots.sort();
    knots
}
