//! One task instance: its latency, and the critical path through its leaves with the time on
//! it split by kind.
//!
//! A leaf's own time inside an instance runs from its start to its *completion*: its end, plus
//! the call that ended it when that call belongs to the instance (the thread's next leaf is in
//! the instance too, or the call sent something rather than waited). The instance runs from
//! its earliest start to its latest completion.
//!
//! The critical path is the chain of leaves that determined when the instance finished: start at
//! the leaf that completed last and step back, each time, to the predecessor (an edge inside the
//! instance) that completed last, which is the one the leaf waited for. A path leaf's share is
//! the time from its predecessor's completion to its own, split over its running time and its
//! inner waits in proportion, plus [`BlockKind::Queued`] when it started later than its
//! predecessor completed (its thread was busy elsewhere or not yet scheduled). Queued time is
//! further charged to what the thread was busy with ([`super::behind`]).
//!
//! A leaf with no predecessor inside the instance steps back to the instance's previous leaf on
//! its own thread, when there is one: a session's requests on one connection are joined only
//! through the thread's waits for the next request, which belong to no request and so to no
//! session either. The gap between them is the thread's own time outside the instance: what it
//! did for other work is queued (and charged as above), and its waits for new work are
//! [`BlockKind::Idle`], the client's turn. Without this step the path of a PostgreSQL session
//! was its last statement alone (under 1 ms of a 4 s session).

use scalpel_model::format::Op;
use scalpel_model::graph::{Graph, LeafId};

use super::behind::{charge, Behind};
use super::kinds::{BlockKind, KindTimes};
use super::leaf::{end_kind, inner_times, GraphIndex};
use super::stats::scale;

/// One leaf on a critical path and the time it accounts for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathStep {
    /// The leaf.
    pub leaf: u32,
    /// Running time attributed to it.
    pub running_ns: u64,
    /// Blocked time attributed to it, by kind.
    pub blocked: KindTimes,
    /// Its [`BlockKind::Queued`] time, charged to the leaves its thread ran meanwhile (as much
    /// of it as they cover).
    pub behind: Vec<Behind>,
}

impl PathStep {
    /// Its whole share.
    pub fn total(&self) -> u64 {
        self.running_ns + self.blocked.iter().sum::<u64>()
    }
}

/// What one instance came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Instance {
    /// Earliest start of its leaves.
    pub start_ns: u64,
    /// Latest completion.
    pub end_ns: u64,
    /// The critical path, earliest first.
    pub path: Vec<PathStep>,
    /// Bytes its leaves read.
    pub bytes_in: u64,
    /// Bytes its leaves wrote.
    pub bytes_out: u64,
    /// CPU time its leaves used, when the trace has CPU times.
    pub cpu_ns: Option<u64>,
}

impl Instance {
    /// End-to-end latency.
    pub fn latency(&self) -> u64 {
        self.end_ns - self.start_ns
    }
}

/// Evaluates instances of one graph, reusing its membership marks.
pub(super) struct Evaluator<'a> {
    g: &'a Graph,
    idx: &'a GraphIndex,
    mark: Vec<u32>,
    stamp: u32,
}

/// Whether the call ending a leaf waits for something rather than hands something over.
fn waits(kind: BlockKind) -> bool {
    !matches!(kind, BlockKind::Write | BlockKind::Io)
}

impl<'a> Evaluator<'a> {
    /// An evaluator for `g`.
    pub(super) fn new(g: &'a Graph, idx: &'a GraphIndex) -> Self {
        Evaluator {
            g,
            idx,
            mark: vec![0; g.leaves.len()],
            stamp: 0,
        }
    }

    /// Whether the call ending `leaf` belongs to the instance being evaluated.
    fn counts_block(&self, leaf: u32) -> bool {
        let kind = end_kind(self.g, self.idx, leaf);
        if kind == BlockKind::Idle {
            return false;
        }
        let l = &self.g.leaves[leaf as usize];
        let next_inside =
            self.g.leaves.get(leaf as usize + 1).is_some_and(|n| {
                n.thread == l.thread && self.mark[leaf as usize + 1] == self.stamp
            });
        let signals = matches!(
            l.end_op.and_then(|o| o.op()),
            Some(Op::CondSignal | Op::CondBroadcast | Op::SemPost | Op::FutexWake)
        );
        next_inside || signals || !waits(kind)
    }

    fn completion(&self, leaf: u32) -> u64 {
        let l = &self.g.leaves[leaf as usize];
        if self.counts_block(leaf) {
            l.end_ns + l.block_ns
        } else {
            l.end_ns
        }
    }

    /// Evaluates the instance made of `leaves` (ascending).
    pub(super) fn eval(&mut self, leaves: &[LeafId]) -> Instance {
        if leaves.is_empty() {
            return Instance {
                start_ns: 0,
                end_ns: 0,
                path: Vec::new(),
                bytes_in: 0,
                bytes_out: 0,
                cpu_ns: None,
            };
        }
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            self.mark.fill(0);
            self.stamp = 1;
        }
        for &l in leaves {
            self.mark[l.index()] = self.stamp;
        }
        let g = self.g;
        let mut start = u64::MAX;
        let mut last = (0u64, leaves[0].get());
        let (mut bytes_in, mut bytes_out) = (0, 0);
        let mut cpu_ns: Option<u64> = None;
        for l in leaves.iter().map(|l| l.get()) {
            let leaf = &g.leaves[l as usize];
            start = start.min(leaf.start_ns);
            last = last.max((self.completion(l), l));
            bytes_in += leaf.bytes_in;
            bytes_out += leaf.bytes_out;
            if let Some(c) = g.leaf_cpu(LeafId::new(l)) {
                cpu_ns = Some(cpu_ns.unwrap_or(0) + c);
            }
        }
        // Walk back from the leaf that completed last. Each link says whether it is a step back
        // along the leaf's own thread over a gap (no edge inside the instance).
        let mut chain = vec![(last.1, false)];
        let mut cur = last;
        while chain.len() < leaves.len() {
            let pred = self
                .idx
                .preds(cur.1)
                .filter(|&(f, _)| f != cur.1 && self.mark[f as usize] == self.stamp)
                .map(|(f, _)| (self.completion(f), f))
                .filter(|&(c, _)| c <= cur.0)
                .max();
            let (p, gap) = match pred {
                Some(p) => (p, false),
                None => match self.earlier_on_thread(leaves, cur) {
                    Some(p) => (p, true),
                    None => break,
                },
            };
            chain.last_mut().expect("the chain starts with a leaf").1 = gap;
            chain.push((p.1, false));
            cur = p;
        }
        chain.reverse();
        let mut path = Vec::with_capacity(chain.len());
        let mut enabled = None;
        for &(l, gap) in &chain {
            let done = self.completion(l);
            path.push(self.step(l, enabled, done, gap));
            enabled = Some(done);
        }
        Instance {
            start_ns: start.min(g.leaves[chain[0].0 as usize].start_ns),
            end_ns: last.0.max(start),
            path,
            bytes_in,
            bytes_out,
            cpu_ns,
        }
    }

    /// The instance's previous leaf on the thread of `cur` (a leaf and its completion), when it
    /// completed by `cur`'s completion. `leaves` is ascending, and a thread's leaves are
    /// numbered consecutively, so it is the one before `cur` when on the same thread.
    fn earlier_on_thread(&self, leaves: &[LeafId], cur: (u64, u32)) -> Option<(u64, u32)> {
        let i = leaves.binary_search(&LeafId::new(cur.1)).ok()?;
        let p = leaves.get(i.checked_sub(1)?)?.get();
        let thread = |l: u32| self.g.leaves[l as usize].thread;
        let c = self.completion(p);
        (thread(p) == thread(cur.1) && c <= cur.0).then_some((c, p))
    }

    /// The share of leaf `l` on a path: from `enabled` (its predecessor's completion; its own
    /// start for the first leaf) to `done`. `gap`: the predecessor is the instance's previous
    /// leaf on the same thread, reached over a gap with no edge (see the module's notes).
    fn step(&self, l: u32, enabled: Option<u64>, done: u64, gap: bool) -> PathStep {
        let leaf = &self.g.leaves[l as usize];
        let own = done.saturating_sub(leaf.start_ns);
        let share = done.saturating_sub(enabled.unwrap_or(leaf.start_ns));
        let kept = share.min(own);
        let scale = |ns: u64| scale(ns, kept, own);
        let mut blocked = [0u64; BlockKind::ALL.len()];
        let inner = inner_times(self.g, l);
        let block = if done > leaf.end_ns { leaf.block_ns } else { 0 };
        let mut waited = 0;
        for (k, ns) in inner {
            let ns = ns.min(own.saturating_sub(waited));
            blocked[k.index()] += scale(ns);
            waited += ns;
        }
        let end = end_kind(self.g, self.idx, l);
        blocked[end.index()] += scale(block.min(own.saturating_sub(waited)));
        let queued = share - kept;
        blocked[BlockKind::Queued.index()] += queued;
        let mut behind = Vec::new();
        if queued > 0 {
            let from = done - share;
            let unseen = charge(self.g, self.idx, l, from, from + queued, &mut behind);
            if gap {
                // Over a gap on its own thread, what no other work of the thread explains is
                // the thread waiting for new work (and waking up from it).
                let charged: u64 = behind.iter().map(|b| b.ns).sum();
                let idle = queued.saturating_sub(charged + unseen);
                blocked[BlockKind::Queued.index()] -= idle;
                blocked[BlockKind::Idle.index()] += idle;
            }
        }
        let accounted: u64 = blocked.iter().sum();
        PathStep {
            leaf: l,
            running_ns: share.saturating_sub(accounted),
            blocked,
            behind,
        }
    }
}
