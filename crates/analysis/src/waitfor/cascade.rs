//! Edge weights, with cascaded redistribution, and the share of waiting each knot explains.
//!
//! A direct wait of thread A on thread B over `[s, e]` weighs `e − s` on A → B. Then whatever B
//! itself waited on inside `[s, e]` gets that overlap too, on B → C, and so on down the chain
//! (clipped to each overlap, at most [`WaitForOptions::max_depth`] waits deep, never back to a
//! thread already on the chain): making C faster would have shortened A's wait as well. Only
//! the overlap moves, not the whole of A's wait (our reading of wPerf; see
//! `paper-notes/wperf.md`). Time a thread spent off the CPU outside any call (traces with
//! `--cpu-time`) is a wait on `[scheduler]`, spread evenly over its leaf's span.
//!
//! A device (disk, network) waits, while idle, on the threads that use it: its idle time (the
//! span minus the union of the waits on it) goes to each group in proportion to that group's
//! waiting on it. That edge closes the loop a bottleneck around a device forms (a syncer waits
//! on the disk, the disk waits for the syncer's next flush).
//!
//! The share a knot explains is measured on the same chains: each moment of a direct wait
//! counts for the first knot its chain reaches, so the shares never add up past 100%. Turning
//! the weighed graph into the finished one is in `finish`.

use ahash::AHashMap;
use scalpel_model::graph::{Graph, OpName, ThreadId};

use super::groups::Grouping;
use super::knots::Found;
use super::waits::{overlapping, Run, Seg, SiteKey, Target, Timeline};
use super::{Pseudo, WaitForOptions, WaitNode};
use crate::rollup::BlockKind;

/// An edge being weighed.
#[derive(Clone, Debug, Default)]
pub(super) struct Acc {
    pub direct: u64,
    pub cascaded: f64,
    pub idle: u64,
    pub kinds: AHashMap<BlockKind, u64>,
    pub sites: AHashMap<(SiteKey, BlockKind, Option<OpName>), (u64, u64)>,
}

impl Acc {
    pub(super) fn weight(&self) -> u64 {
        self.direct + self.cascaded.round() as u64 + self.idle
    }
}

/// The weighed graph, before knots.
pub(super) struct Built<'g> {
    pub g: &'g Graph,
    /// Thread groups, then [`Pseudo::ALL`].
    pub nodes: Vec<WaitNode>,
    /// Edges in (from, to) order.
    pub edges: Vec<((u32, u32), Acc)>,
    pub total_wait_ns: u64,
    pub span_ns: u64,
    /// Cascade steps taken, and whether the budget cut the cascade short.
    pub steps: u64,
    pub cut: bool,
}

/// The node of a pseudo-thread.
fn pseudo_node(groups: usize, p: Pseudo) -> u32 {
    (groups + p as usize) as u32
}

fn node_of(grouping: &Grouping, t: Target) -> u32 {
    match t {
        Target::Thread(t) => grouping.of[t as usize],
        Target::Pseudo(p) => pseudo_node(grouping.groups.len(), p),
    }
}

/// One step of a chain: thread `thread` over `[s, e]`, and the threads already on the chain.
#[derive(Clone, Copy)]
struct Step {
    thread: u32,
    s: u64,
    e: u64,
    depth: u8,
    path: [u32; 16],
}

impl Step {
    fn on_path(&self, t: u32) -> bool {
        self.path[..self.depth as usize].contains(&t)
    }

    fn then(&self, t: u32, s: u64, e: u64) -> Step {
        let mut next = *self;
        next.thread = t;
        next.s = s;
        next.e = e;
        if (next.depth as usize) < next.path.len() {
            next.path[next.depth as usize] = t;
            next.depth += 1;
        }
        next
    }
}

/// A direct wait of thread `root` on thread `first` over `[s, e]`.
#[derive(Clone, Copy)]
struct Direct {
    root: u32,
    first: u32,
    s: u64,
    e: u64,
}

impl Direct {
    /// Wait `w` of thread `root` on thread `first`.
    fn of(root: usize, first: u32, w: &Seg) -> Direct {
        Direct {
            root: root as u32,
            first,
            s: w.start,
            e: w.end,
        }
    }
}

/// Walks the chains under direct wait `d`: `visit` is called with (waiting thread, its wait's
/// target, overlap start, end, fraction of the overlap that counts) and says whether to go on
/// down that wait. Returns the steps taken (stopping once past `budget`).
fn walk(
    timelines: &[Timeline],
    opts: &WaitForOptions,
    d: Direct,
    budget: u64,
    mut visit: impl FnMut(u32, Target, u64, u64, f64) -> bool,
) -> u64 {
    let Direct { root, first, s, e } = d;
    let depth = opts.max_depth.min(16) as u8;
    let mut path = [0u32; 16];
    path[0] = root;
    let mut stack = vec![Step {
        thread: root,
        s,
        e,
        depth: 1,
        path,
    }
    .then(first, s, e)];
    let mut steps = 0;
    while let Some(st) = stack.pop() {
        let Some(tl) = timelines.get(st.thread as usize) else {
            continue;
        };
        for w in overlapping(&tl.waits, |w: &Seg| (w.start, w.end), st.s, st.e) {
            steps += 1;
            let (os, oe) = (w.start.max(st.s), w.end.min(st.e));
            // A wait back on a thread of the chain overlaps that thread's own wait on this
            // one: a circle in time, nothing to pass on.
            let back = matches!(w.target, Target::Thread(c) if st.on_path(c));
            if !back && visit(st.thread, w.target, os, oe, 1.0) {
                if let Target::Thread(c) = w.target {
                    if st.depth < depth {
                        stack.push(st.then(c, os, oe));
                    }
                }
            }
        }
        for r in overlapping(&tl.runs, |r: &Run| (r.start, r.end), st.s, st.e) {
            steps += 1;
            let (os, oe) = (r.start.max(st.s), r.end.min(st.e));
            let frac = r.off as f64 / (r.end - r.start).max(1) as f64;
            visit(st.thread, Target::Pseudo(Pseudo::Scheduler), os, oe, frac);
        }
        if steps > budget {
            break;
        }
    }
    steps
}

/// Weighs every edge (see the module docs).
pub(super) fn weigh<'g>(
    g: &'g Graph,
    grouping: &Grouping,
    timelines: &[Timeline],
    opts: &WaitForOptions,
) -> Built<'g> {
    let groups = grouping.groups.len();
    let mut nodes: Vec<WaitNode> = grouping
        .groups
        .iter()
        .map(|gr| WaitNode {
            name: gr.name.clone(),
            pseudo: None,
            threads: gr.threads.iter().map(|&t| ThreadId::new(t)).collect(),
            waited_ns: 0,
        })
        .collect();
    nodes.extend(Pseudo::ALL.iter().map(|&p| WaitNode {
        name: p.name().to_owned(),
        pseudo: Some(p),
        threads: Vec::new(),
        waited_ns: 0,
    }));
    let mut acc: AHashMap<(u32, u32), Acc> = AHashMap::new();
    let mut total = 0u64;
    let mut steps = 0u64;
    let mut cut = false;
    let mut busy: AHashMap<Pseudo, Vec<(u64, u64)>> = AHashMap::new();
    let mut usage: AHashMap<(Pseudo, u32), u64> = AHashMap::new();
    let (mut first, mut last) = (u64::MAX, 0u64);
    for l in &g.leaves {
        first = first.min(l.start_ns);
        last = last.max(l.end_ns + l.block_ns);
    }
    for (t, tl) in timelines.iter().enumerate() {
        let from = grouping.of[t];
        for w in tl.waits.iter().filter(|w| w.direct) {
            let len = w.end - w.start;
            let to = node_of(grouping, w.target);
            let a = acc.entry((from, to)).or_default();
            a.direct += len;
            *a.kinds.entry(w.kind).or_insert(0) += len;
            let site = a.sites.entry((w.site, w.kind, w.op)).or_insert((0, 0));
            site.0 += len;
            site.1 += 1;
            nodes[from as usize].waited_ns += len;
            total += len;
            match w.target {
                Target::Pseudo(p) if p.is_device() => {
                    busy.entry(p).or_default().push((w.start, w.end));
                    *usage.entry((p, from)).or_insert(0) += len;
                }
                Target::Thread(b) if !cut => {
                    let left = opts.max_steps.saturating_sub(steps);
                    steps += walk(
                        timelines,
                        opts,
                        Direct::of(t, b, w),
                        left,
                        |x, target, s, e, f| {
                            let key = (grouping.of[x as usize], node_of(grouping, target));
                            acc.entry(key).or_default().cascaded += (e - s) as f64 * f;
                            true
                        },
                    );
                    cut = steps > opts.max_steps;
                }
                _ => {}
            }
        }
        for r in tl.runs.iter().filter(|r| r.direct) {
            let a = acc
                .entry((from, pseudo_node(groups, Pseudo::Scheduler)))
                .or_default();
            a.direct += r.off;
            *a.kinds.entry(BlockKind::OffCpu).or_insert(0) += r.off;
            let site = a
                .sites
                .entry((SiteKey::End(r.ty), BlockKind::OffCpu, None))
                .or_insert((0, 0));
            site.0 += r.off;
            site.1 += 1;
            nodes[from as usize].waited_ns += r.off;
            total += r.off;
        }
    }
    let span = last.saturating_sub(first.min(last));
    // Devices wait, while idle, on the groups that use them.
    for (p, mut spans) in busy {
        spans.sort_unstable();
        let (mut covered, mut end) = (0u64, 0u64);
        for (s, e) in spans {
            let s = s.max(end);
            if e > s {
                covered += e - s;
                end = e;
            }
        }
        let idle = span.saturating_sub(covered);
        let used: u64 = usage
            .iter()
            .filter(|(k, _)| k.0 == p)
            .map(|(_, &v)| v)
            .sum();
        for (&(q, group), &u) in &usage {
            if q == p && used > 0 {
                let share = (idle as u128 * u as u128 / used as u128) as u64;
                if share > 0 {
                    acc.entry((pseudo_node(groups, p), group)).or_default().idle += share;
                }
            }
        }
    }
    let mut edges: Vec<((u32, u32), Acc)> =
        acc.into_iter().filter(|(_, a)| a.weight() > 0).collect();
    edges.sort_unstable_by_key(|e| e.0);
    Built {
        g,
        nodes,
        edges,
        total_wait_ns: total,
        span_ns: span,
        steps,
        cut,
    }
}

/// For each knot of `found` (on the thread groups of `grouping`, then [`Pseudo::ALL`]), the
/// direct waiting time whose chain reaches it first.
pub(super) fn explain(
    grouping: &Grouping,
    timelines: &[Timeline],
    found: &Found,
    opts: &WaitForOptions,
) -> Vec<f64> {
    let mut knot_of = vec![usize::MAX; grouping.groups.len() + Pseudo::ALL.len()];
    for (k, members) in found.knots.iter().enumerate() {
        for &m in members {
            knot_of[m as usize] = k;
        }
    }
    let mut explained = vec![0f64; found.knots.len()];
    let scheduler = knot_of[pseudo_node(grouping.groups.len(), Pseudo::Scheduler) as usize];
    let mut steps = 0u64;
    for (t, tl) in timelines.iter().enumerate() {
        for w in tl.waits.iter().filter(|w| w.direct) {
            let k = knot_of[node_of(grouping, w.target) as usize];
            if k != usize::MAX {
                explained[k] += (w.end - w.start) as f64;
                continue;
            }
            let Target::Thread(b) = w.target else {
                continue;
            };
            if steps > opts.max_steps {
                continue;
            }
            let left = opts.max_steps.saturating_sub(steps);
            steps += walk(
                timelines,
                opts,
                Direct::of(t, b, w),
                left,
                |_, target, s, e, f| {
                    let k = knot_of[node_of(grouping, target) as usize];
                    if k != usize::MAX {
                        explained[k] += (e - s) as f64 * f;
                        return false;
                    }
                    true
                },
            );
        }
        if scheduler != usize::MAX {
            explained[scheduler] += tl
                .runs
                .iter()
                .filter(|r| r.direct)
                .map(|r| r.off as f64)
                .sum::<f64>();
        }
    }
    explained
}
