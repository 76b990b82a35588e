//! A job carries its connection: which worker took which job from a pipe, where the times
//! leave it open.
//!
//! Several workers reading one pipe take its jobs in the order they copy them, but a worker
//! preempted between the kernel's copy and its call's return is recorded later than workers
//! that came after it, and no call time says so (`streamorder`'s docs: which of two woken
//! readers copies first is a race). The pairing by times then gives the late worker's job to
//! another worker, and that worker's job to the late one.
//!
//! A pool worker that answers its job itself writes the reply on the job's connection: the
//! connection the producer read the request from before it handed the job over. One that passes
//! the job on whole to a thread that answers it (a sender fed through a pipe, whose one read
//! took the worker's one write) names the connection that thread writes to next. So where a
//! pipe's pairs mostly agree on their connection (the channel carries jobs that are answered
//! where they came from), a run of consecutive pairs (in the order the jobs were written) that
//! disagree is paired again: each take of the run, in the order the takes returned, gets the
//! earliest job of the run from its connection that was written before it returned. The run
//! is paired again only when every take of it finds such a job; otherwise the times' pairing
//! stays.
//!
//! What is not decidable: two jobs of one connection (a pipelined client's requests) taken in
//! the other order; both pairings agree on the connection. A late worker whose misplaced jobs
//! all came from one connection is not seen either.

use ahash::AHashMap;
use scalpel_model::format::{ChanKind, ObjKind, Op};
use scalpel_model::graph::{ChannelKind, Edge, EdgeKind, Graph, NodeId};

use super::event::{is_epoll_wait, reads_bytes, KindOf};
use super::leaves::Bound;

/// How far along a thread a job's connection is looked for, in leaves.
const LOOK: usize = 64;

/// Fewest pairs whose connections are both known before a pipe is judged.
const LEAST_KNOWN: usize = 8;

/// How far apart, in pairs, two misses may be and still be one late worker's doing.
const GAP: usize = 16;

/// The share of known pairs that must agree for the pipe to carry answered jobs (the rest are
/// the misses this pass mends).
const AGREE: f64 = 0.75;

/// Per leaf: the connection a socket read opened it with, and the connection it ends writing
/// to (0: none).
pub(super) struct SocketEnds {
    read: Vec<u64>,
    wrote: Vec<u64>,
}

impl SocketEnds {
    /// Reads the socket transfers off the cuts: a read starts the leaf it returns into, a write
    /// ends the leaf it is called from.
    pub(super) fn new(bounds: &[Bound], kinds: &[KindOf], channels: &[u64], n: usize) -> Self {
        let transfer = |b: &Bound| {
            let (leaf, obj) = (b.leaf as usize, b.obj as usize);
            if leaf >= n || b.res <= 0 || !is_socket(kinds.get(obj)) {
                return None;
            }
            let read = b.op.op().and_then(reads_bytes)?;
            Some((leaf, read, channels.get(obj).copied().unwrap_or(0)))
        };
        // Arrays per leaf only where a leaf moved bytes on a socket: a trace without any would
        // hold them all zero (`read_at` and `wrote_at` read a missing entry as zero).
        let size = if bounds.iter().any(|b| transfer(b).is_some()) {
            n
        } else {
            0
        };
        let mut ends = SocketEnds {
            read: vec![0; size],
            wrote: vec![0; size],
        };
        for (leaf, read, chan) in bounds.iter().filter_map(transfer) {
            if read {
                ends.read[leaf] = chan;
            } else {
                ends.wrote[leaf] = chan;
            }
        }
        ends
    }

    /// The connection a socket read opened leaf `k` with (0: none).
    fn read_at(&self, k: usize) -> u64 {
        self.read.get(k).copied().unwrap_or(0)
    }

    /// The connection leaf `k` ends writing to (0: none).
    fn wrote_at(&self, k: usize) -> u64 {
        self.wrote.get(k).copied().unwrap_or(0)
    }
}

fn is_socket(kind: Option<&KindOf>) -> bool {
    kind.is_some_and(|&(k, c)| {
        k.is(ObjKind::Stream)
            && matches!(
                c.and_then(ChannelKind::known),
                Some(ChanKind::Tcp | ChanKind::Unix)
            )
    })
}

fn is_pipe(kind: Option<&KindOf>) -> bool {
    kind.is_some_and(|&(k, c)| {
        k.is(ObjKind::Stream) && c.and_then(ChannelKind::known) == Some(ChanKind::Pipe)
    })
}

/// One job handed through a pipe: the edge, its put and take leaves, and their connections.
struct Pair {
    edge: usize,
    put: usize,
    take: usize,
    job: u64,
    reply: u64,
}

/// Pairs the jobs of pipes read by several workers again by their connections (module docs).
pub(super) fn mend(graph: &Graph, edges: &mut [Edge], kinds: &[KindOf], ends: &SocketEnds) {
    let one = OneToOne::new(graph.leaves.len(), edges);
    let mut pipes = pipe_pairs(graph, edges, kinds, &one);
    let mut keys: Vec<u32> = pipes.keys().copied().collect();
    keys.sort_unstable();
    // Made when a pipe first needs it, before any pipe's edges are changed.
    let mut passed: Option<AHashMap<usize, usize>> = None;
    for key in keys {
        let Some(mut pairs) = pipes.remove(&key) else {
            continue;
        };
        // A pipe one worker reads has nothing to mend: its connections are not looked up.
        if !several_takers(graph, &pairs) {
            continue;
        }
        let passed = passed.get_or_insert_with(|| passed_on(graph, edges, &one));
        for p in &mut pairs {
            p.job = job_of(graph, ends, p.put);
            p.reply = reply_of(graph, ends, passed, p.take);
        }
        if !answered_where_they_came_from(graph, &pairs) {
            continue;
        }
        pairs.sort_by_key(|p| (graph.leaves[p.put].end_ns, p.put));
        for cluster in disagreeing_clusters(&pairs) {
            pair_again(graph, edges, &pairs[cluster]);
        }
    }
}

/// Per leaf, whether one stream edge leaves it and whether one enters it.
struct OneToOne {
    outs: Vec<u8>,
    ins: Vec<u8>,
}

impl OneToOne {
    fn new(n: usize, edges: &[Edge]) -> Self {
        let (mut outs, mut ins) = (vec![0u8; n], vec![0u8; n]);
        for e in edges.iter().filter(|e| e.kind == EdgeKind::Stream) {
            if let Some(c) = outs.get_mut(e.from.index()) {
                *c = c.saturating_add(1);
            }
            if let Some(c) = ins.get_mut(e.to.index()) {
                *c = c.saturating_add(1);
            }
        }
        OneToOne { outs, ins }
    }

    /// Whether `put`'s only stream edge out goes to `take`'s only one in (both leaves).
    fn pair(&self, put: usize, take: usize) -> bool {
        self.outs.get(put) == Some(&1) && self.ins.get(take) == Some(&1)
    }
}

/// Leaves of the graph an edge joins, `None` for an external node.
fn leaves_of(graph: &Graph, e: &Edge) -> Option<(usize, usize)> {
    let n = graph.leaves.len();
    let (from, to) = (e.from.index(), e.to.index());
    (from < n && to < n).then_some((from, to))
}

/// Per pipe: its one-to-one pairs between two threads, their connections not yet looked up.
fn pipe_pairs(
    graph: &Graph,
    edges: &[Edge],
    kinds: &[KindOf],
    one: &OneToOne,
) -> AHashMap<u32, Vec<Pair>> {
    let mut pipes: AHashMap<u32, Vec<Pair>> = AHashMap::new();
    for (k, e) in edges.iter().enumerate() {
        let Some(obj) = e
            .obj
            .filter(|o| e.kind == EdgeKind::Stream && is_pipe(kinds.get(o.get() as usize)))
        else {
            continue;
        };
        let Some((put, take)) = leaves_of(graph, e) else {
            continue;
        };
        if !one.pair(put, take) || graph.leaves[put].thread == graph.leaves[take].thread {
            continue;
        }
        pipes.entry(obj.get()).or_default().push(Pair {
            edge: k,
            put,
            take,
            job: 0,
            reply: 0,
        });
    }
    pipes
}

/// Writes whose bytes one read of another thread took whole: a job passed on.
fn passed_on(graph: &Graph, edges: &[Edge], one: &OneToOne) -> AHashMap<usize, usize> {
    edges
        .iter()
        .filter(|e| e.kind == EdgeKind::Stream)
        .filter_map(|e| leaves_of(graph, e))
        .filter(|&(from, to)| {
            one.pair(from, to) && graph.leaves[from].thread != graph.leaves[to].thread
        })
        .collect()
}

/// Whether two or more threads take the pipe's jobs.
fn several_takers(graph: &Graph, pairs: &[Pair]) -> bool {
    let first = pairs.first().map(|p| graph.leaves[p.take].thread);
    pairs
        .iter()
        .any(|p| Some(graph.leaves[p.take].thread) != first)
}

/// The connection the thread read the job's request from: the last socket read before the
/// put, not past a return from a dispatch wait or an accept (another event's work).
fn job_of(graph: &Graph, ends: &SocketEnds, put: usize) -> u64 {
    let thread = graph.leaves[put].thread;
    for k in (put.saturating_sub(LOOK)..=put).rev() {
        let l = &graph.leaves[k];
        if l.thread != thread {
            break;
        }
        if ends.read_at(k) != 0 {
            return ends.read_at(k);
        }
        let op = l.start_op.and_then(|o| o.op());
        if is_epoll_wait(op) || matches!(op, Some(Op::Accept | Op::Accept4 | Op::Poll | Op::Ppoll))
        {
            break;
        }
    }
    0
}

/// The connection the taker writes to next, before its next read of any kind, or that the
/// thread it passes the job on to (`passed`: a write to the one read that took it) writes to
/// next.
fn reply_of(graph: &Graph, ends: &SocketEnds, passed: &AHashMap<usize, usize>, take: usize) -> u64 {
    let thread = graph.leaves[take].thread;
    let last = (take + LOOK).min(graph.leaves.len());
    for k in take..last {
        let l = &graph.leaves[k];
        if l.thread != thread {
            break;
        }
        if ends.wrote_at(k) != 0 {
            return ends.wrote_at(k);
        }
        // The job passed on whole to a thread that answers it (a sender fed through a pipe).
        if let Some(&to) = passed.get(&k) {
            return written_next(graph, ends, to);
        }
        if l.end_op.and_then(|o| o.op()).and_then(reads_bytes) == Some(true) {
            break;
        }
    }
    0
}

/// The connection the thread of leaf `from` writes to next, from that leaf on, before its next
/// read.
fn written_next(graph: &Graph, ends: &SocketEnds, from: usize) -> u64 {
    let thread = graph.leaves[from].thread;
    let last = (from + LOOK).min(graph.leaves.len());
    for k in from..last {
        let l = &graph.leaves[k];
        if l.thread != thread {
            break;
        }
        if ends.wrote_at(k) != 0 {
            return ends.wrote_at(k);
        }
        if l.end_op.and_then(|o| o.op()).and_then(reads_bytes) == Some(true) {
            break;
        }
    }
    0
}

/// Whether two or more workers take the pipe's jobs and most pairs agree on their connection.
fn answered_where_they_came_from(graph: &Graph, pairs: &[Pair]) -> bool {
    let several = several_takers(graph, pairs);
    let known = pairs.iter().filter(|p| p.job != 0 && p.reply != 0).count();
    let agree = pairs
        .iter()
        .filter(|p| p.job != 0 && p.job == p.reply)
        .count();
    several && known >= LEAST_KNOWN && agree as f64 >= AGREE * known as f64
}

/// The stretches of pairs a late worker threw off: from a pair that disagrees on its
/// connection (both known) to the last one that follows it within [`GAP`] pairs of the one
/// before. A stretch with one such pair is left out.
fn disagreeing_clusters(pairs: &[Pair]) -> Vec<std::ops::Range<usize>> {
    let off = |p: &Pair| p.job != 0 && p.reply != 0 && p.job != p.reply;
    let mut clusters: Vec<(usize, usize, usize)> = Vec::new();
    for (i, _) in pairs.iter().enumerate().filter(|(_, p)| off(p)) {
        match clusters.last_mut() {
            Some((_, last, misses)) if i - *last <= GAP => {
                *last = i;
                *misses += 1;
            }
            _ => clusters.push((i, i, 1)),
        }
    }
    clusters
        .into_iter()
        .filter(|&(_, _, misses)| misses >= 2)
        .map(|(first, last, _)| first..last + 1)
        .collect()
}

/// Gives each take of the cluster, in the order the takes returned, the earliest job of the
/// cluster from its connection written before it returned; rewrites the edges only when every
/// take finds one.
fn pair_again(graph: &Graph, edges: &mut [Edge], run: &[Pair]) {
    let mut takes: Vec<&Pair> = run.iter().collect();
    takes.sort_by_key(|p| (graph.leaves[p.take].start_ns, p.take));
    let mut used = vec![false; run.len()];
    let mut chosen = Vec::with_capacity(run.len());
    for t in takes {
        let returned = graph.leaves[t.take].start_ns;
        let found = run.iter().enumerate().position(|(j, p)| {
            !used[j] && p.job == t.reply && graph.leaves[p.put].end_ns <= returned
        });
        let Some(j) = found else {
            return;
        };
        used[j] = true;
        chosen.push((run[j].edge, t.take));
    }
    for (edge, take) in chosen {
        edges[edge].to = NodeId::new(take as u32);
    }
}

#[cfg(test)]
mod tests {
    use scalpel_model::format::{ChanKind, ObjKind};
    use scalpel_model::graph::{ChannelKind, EdgeKind, ObjId, ObjectKind};
    use scalpel_model::testgraph::GraphBuilder;

    use super::{mend, SocketEnds};

    /// A loop hands twelve jobs to two workers through a pipe. The first nine are taken in
    /// the order they were written and answered on their connections. The tenth's worker was
    /// preempted after its copy and returns last; the times pair the tenth job with the
    /// eleventh's worker, the eleventh with the twelfth's, the twelfth with the late one. The
    /// connections pair them back.
    #[test]
    fn a_late_worker_gets_its_job_back() {
        let mut b = GraphBuilder::new();
        let ty = b.leaf_type("step", None);
        let lp = b.thread("loop");
        let workers = [b.thread("w1"), b.thread("w2")];
        let mut puts = Vec::new();
        for k in 0..12u64 {
            puts.push(b.leaf(lp, ty, 1_000 * k, 1_000 * k + 100));
        }
        // (returned at, replies on, the put the times gave it)
        let mut takes: Vec<(u64, u64, usize)> = (0..9u64)
            .map(|k| (1_000 * k + 300, 100 + k, k as usize))
            .collect();
        takes.extend([(10_300, 110, 9), (11_300, 111, 10), (13_000, 109, 11)]);
        let mut ats = Vec::new();
        for (i, &(at, _, put)) in takes.iter().enumerate() {
            let t = b.leaf(workers[i % 2], ty, at, at + 50);
            b.edge(puts[put], t, EdgeKind::Stream);
            ats.push(t);
        }
        // Ids once every leaf is in.
        let taken: Vec<(usize, u64)> = ats
            .iter()
            .zip(&takes)
            .map(|(&t, &(_, reply, _))| (b.id(t) as usize, reply))
            .collect();
        let put_ids: Vec<usize> = puts.iter().map(|&p| b.id(p) as usize).collect();
        let mut g = b.build();
        for e in &mut g.edges {
            e.obj = Some(ObjId::new(0));
        }
        let n = g.leaves.len();
        let mut ends = SocketEnds {
            read: vec![0; n],
            wrote: vec![0; n],
        };
        for (k, &p) in put_ids.iter().enumerate() {
            ends.read[p] = 100 + k as u64;
        }
        for &(t, reply) in &taken {
            ends.wrote[t] = reply;
        }
        let kinds = [(
            ObjectKind::from(ObjKind::Stream),
            Some(ChannelKind::from(ChanKind::Pipe)),
        )];
        let mut edges = g.edges.clone();
        mend(&g, &mut edges, &kinds, &ends);
        let to_of = |put: usize| {
            edges
                .iter()
                .find(|e| e.from.index() == put_ids[put])
                .map(|e| e.to.index())
        };
        assert_eq!(to_of(9), Some(taken[11].0));
        assert_eq!(to_of(10), Some(taken[9].0));
        assert_eq!(to_of(11), Some(taken[10].0));
        for (k, &(t, _)) in taken.iter().enumerate().take(9) {
            assert_eq!(to_of(k), Some(t));
        }
        // A pipe whose takers all answer elsewhere is left as the times paired it.
        for w in &mut ends.wrote {
            if *w != 0 {
                *w = 7;
            }
        }
        let mut edges = g.edges.clone();
        mend(&g, &mut edges, &kinds, &ends);
        assert_eq!(edges, g.edges);
    }
}
