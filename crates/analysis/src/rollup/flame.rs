//! Off-CPU time as folded stacks (`scalpel flame`): every blocking call, weighted by the time
//! it blocked, under the stack that made it, with the process and thread as root frames (under the machine, for traces of several).
//!
//! The agent records a stack at every sync call, so the blocking stacks an off-CPU profiler gets
//! from the scheduler with root and a kernel probe are already in the graph: the call that ended
//! each leaf (`block_ns`, under the leaf type's end stack), the slow calls inside leaves (inner
//! waits, under their own stacks) and the short inner waits counted only in the leaf's totals
//! (under the leaf's end stack, as `[short lock waits]` and the like). So the stacks add up to the
//! rollup's blocked time, kind by kind. With `waker`, a wait that another thread ended is
//! followed by a `--` frame and the waker's stack, innermost first, then the waker's thread: the
//! "off-wake" graph of who woke this wait and from where.
//!
//! On-CPU samples and the wall-clock graph that joins both are in `super::samples`; drawing is
//! a view (`crate::views::flame`).

use std::collections::BTreeMap;

use ahash::AHashMap;
use scalpel_model::graph::{BoundaryInfo, Graph, OpName};
use scalpel_model::task::{Model, TaskTypeId};

use super::kinds::BlockKind;
use super::leaf::{end_kind, inner_times, GraphIndex};

/// What the flame graph holds. `Default`: every leaf, no wakers, one root per thread.
#[derive(Clone, Copy, Debug, Default)]
pub struct FlameOptions {
    /// Append the waker's stack to each wait another thread ended.
    pub waker: bool,
    /// Only the leaves of this task type's occurrences.
    pub task: Option<TaskTypeId>,
    /// Root frames are the process alone, not the process and then the thread: the threads of
    /// a process add up.
    pub per_process: bool,
}

/// Folded stacks: frames from the root down, joined by `;`, and the nanoseconds spent there.
/// Sorted by stack, so that output is the same from run to run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Folded {
    /// Stack → nanoseconds.
    pub stacks: BTreeMap<String, u64>,
}

impl Folded {
    /// All the time in it.
    pub fn total_ns(&self) -> u64 {
        self.stacks.values().sum()
    }

    /// Time under stacks whose last frame is a wait of `kind`.
    pub fn kind_ns(&self, kind: BlockKind) -> u64 {
        let tag = kind_tag(kind);
        self.stacks
            .iter()
            .filter(|(s, _)| {
                let blocked = s.split(";--;").next().unwrap_or("");
                blocked
                    .rsplit(';')
                    .next()
                    .is_some_and(|f| f.ends_with(&tag))
            })
            .map(|(_, &ns)| ns)
            .sum()
    }

    pub(super) fn add(&mut self, frames: &[String], ns: u64) {
        if ns > 0 {
            *self.stacks.entry(frames.join(";")).or_insert(0) += ns;
        }
    }
}

/// The `[kind]` suffix of a wait's frame.
pub fn kind_tag(kind: BlockKind) -> String {
    format!("[{}]", kind.name())
}

/// A frame as folded stacks may hold it: no `;` (the separator), no line breaks.
pub(super) fn frame(s: &str) -> String {
    s.replace(';', ":").replace(['\n', '\r'], " ")
}

/// The frames of a call site from the root down; its function alone if it has no stack.
pub(super) fn site_frames(site: &BoundaryInfo) -> Vec<String> {
    if site.frames.is_empty() {
        return vec![frame(site.function.as_deref().unwrap_or("[no stack]"))];
    }
    site.frames.iter().rev().map(|f| frame(f)).collect()
}

/// The blocking call's own frame: `cond_wait [cond]`.
fn wait_frame(op: Option<OpName>, kind: BlockKind) -> String {
    let op = op.map_or_else(|| "exit".to_owned(), |o| o.name());
    format!("{op} {}", kind_tag(kind))
}

/// Per leaf of `g`, whether it belongs to task type `t` of `model`: a leaf type's instances are
/// its leaves; a task's, the leaves of its occurrences.
pub fn task_leaves(g: &Graph, model: &Model, t: TaskTypeId) -> Vec<bool> {
    let mut keep = vec![false; g.leaves.len()];
    if let Some(lt) = model.types.get(t.index()).and_then(|t| t.leaf_type) {
        for (k, l) in keep.iter_mut().zip(&g.leaves) {
            *k = l.ty == lt;
        }
    }
    for o in model
        .types
        .get(t.index())
        .map_or(&[][..], |t| &t.occurrences)
    {
        for l in &o.leaves {
            if let Some(k) = keep.get_mut(l.index()) {
                *k = true;
            }
        }
    }
    keep
}

/// The leaves `opts` selects: all of them, or those of its task.
pub(super) fn selected(g: &Graph, model: &Model, opts: &FlameOptions) -> Vec<bool> {
    match opts.task {
        None => vec![true; g.leaves.len()],
        Some(t) => task_leaves(g, model, t),
    }
}

/// Per thread, its root frames: its machine's name when the traces were of several, its
/// process's name (the title, or the command's file name), then the thread's name unless
/// `per_process`.
pub(super) fn thread_roots(g: &Graph, per_process: bool) -> Vec<Vec<String>> {
    g.threads
        .iter()
        .map(|t| {
            let p = g.processes.get(t.process.index());
            let name = p
                .and_then(|p| p.title.clone().or_else(|| p.cmdline.first().cloned()))
                .map(|c| c.rsplit('/').next().unwrap_or("").to_owned())
                .filter(|c| !c.is_empty())
                .unwrap_or_else(|| "process".to_owned());
            let host = p.and_then(|p| g.hosts.get(p.host.index()));
            let mut r: Vec<String> = host.map(|h| frame(&h.host)).into_iter().collect();
            r.push(frame(&name));
            if !per_process {
                r.push(frame(&t.name));
            }
            r
        })
        .collect()
}

/// The off-CPU folded stacks of `g` (see the module docs).
pub fn off_cpu(g: &Graph, model: &Model, opts: &FlameOptions) -> Folded {
    let idx = GraphIndex::new(g);
    let n = g.leaves.len();
    let keep = selected(g, model, opts);
    let roots = thread_roots(g, opts.per_process);
    let names: Vec<String> = g.threads.iter().map(|t| frame(&t.name)).collect();
    let root = |leaf: usize| -> Vec<String> {
        roots
            .get(g.leaves[leaf].thread.index())
            .cloned()
            .unwrap_or_default()
    };
    let end_site = |leaf: usize| -> Option<&BoundaryInfo> {
        g.types.get(g.leaves[leaf].ty.index()).map(|t| &t.end)
    };
    let mut out = Folded::default();
    // Slow calls inside leaves, each under its own stack; what they add up to per leaf and kind.
    let mut itemized: AHashMap<(usize, BlockKind), u64> = AHashMap::new();
    for w in &g.inner_waits {
        let leaf = w.leaf.index();
        if !keep.get(leaf).copied().unwrap_or(false) {
            continue;
        }
        let kind = BlockKind::inside(w.op.op());
        let mut s = root(leaf);
        if let Some(site) = g.sites.get(w.site.index()) {
            s.extend(site_frames(site));
        }
        s.push(wait_frame(Some(w.op), kind));
        out.add(&s, w.ns);
        *itemized.entry((leaf, kind)).or_insert(0) += w.ns;
    }
    for leaf in (0..n).filter(|&l| keep[l]) {
        let l = &g.leaves[leaf];
        let mut base = root(leaf);
        if let Some(site) = end_site(leaf) {
            base.extend(site_frames(site));
        }
        // The call that ended the leaf.
        if l.block_ns > 0 {
            let kind = end_kind(g, &idx, leaf as u32);
            let mut s = base.clone();
            s.push(wait_frame(l.end_op, kind));
            if opts.waker {
                if let Some(w) = idx.waker(g, leaf as u32).map(|w| w as usize) {
                    s.push("--".to_owned());
                    if let Some(site) = end_site(w) {
                        s.extend(site_frames(site).into_iter().rev());
                    }
                    if let Some(name) = names.get(g.leaves[w].thread.index()) {
                        s.push(name.clone());
                    }
                }
            }
            out.add(&s, l.block_ns);
        }
        // Waits too short to be itemized, and time off the CPU outside any call.
        for (kind, ns) in inner_times(g, leaf as u32) {
            let rest = ns.saturating_sub(itemized.get(&(leaf, kind)).copied().unwrap_or(0));
            if rest > 0 {
                let mut s = base.clone();
                s.push(match kind {
                    BlockKind::OffCpu => format!("[runnable or faulting] {}", kind_tag(kind)),
                    k => format!("[short {} waits] {}", k.name(), kind_tag(k)),
                });
                out.add(&s, rest);
            }
        }
    }
    out
}
