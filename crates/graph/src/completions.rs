//! A pool's completions in an event loop: which leaf writes each job's reply, and where a
//! pipelined job begins.
//!
//! - **Completions find their connection.** A `ready` edge from a pool thread's completion goes
//!   to the leaf of the waiting thread that writes the reply: the first that ends after the
//!   completion's write began and ends on the connection the job came from (the connection of
//!   the waiting thread's leaf that handed the job over: a wake-up, a queue's take, the job's
//!   bytes in a pipe, into the completion's leaf or an earlier one of the job, which waited
//!   inside for a lock or a commit), rather than to the first
//!   leaf after the wait the edge was matched to. With a batch of completions each is handled
//!   where its reply is written; a write still under way when a wait gathered its events is
//!   reported by a later wait; and a completion that joined a batch already reported is handled
//!   under the earlier report, before the wait it was matched to.
//! - **A job with no connection of its own is answered in turn.** A request pipelined behind
//!   another arrived in the same read; the loop parses and hands it over after the reply before
//!   it was written, with no call on its connection, so the leaf that hands it over names no
//!   connection (the write before it ended another request's turn). Its completion goes to the
//!   first reply leaf, in the order the completions were written, that no other completion
//!   took and that did not read its request from the connection it writes to (a leaf that read
//!   its request and wrote the reply answered that request; one that accepted a new client and
//!   then answered another connection's finished job is free).
//! - **A reply ends its request.** In such a loop, the program edge from a leaf that ends at a
//!   reply into a leaf that hands over a job whose reply is written later is weak: the job is
//!   the next request, whichever connection it came from.
//! - **So does a hand-off answered on its own.** After a batch of replies the loop hands over
//!   the next request of each connection it answered, one hand-off after another with no call
//!   between them. The program edge between two hand-offs whose jobs are answered by two
//!   different replies is weak: two requests. Two jobs answered by one reply (a request fanned
//!   out to several workers) stay one.

use ahash::{AHashMap, AHashSet};
use scalpel_model::graph::{Edge, EdgeKind, Graph, NodeId};
use scalpel_model::lists::Lists;

use super::eventloop::{after_epoll, Conns};

/// How far past a wait a completion's connection is looked for, in leaves.
const LOOK_AHEAD: usize = 256;

/// How many of the loop's later waits a completion's connection is looked for past. The wait a
/// completion is first matched to is the first that returned after its write *began*; a write
/// still under way when that wait gathered its events is reported by the next one, and the
/// worker handles the job there (a 1.77M-event nginx recording: of 140,001 completions, 98,489
/// handled before the loop's next wait, 39,943 after it, 1,551 after a later one).
const LATER_WAITS: usize = 3;

/// Moves each `ready` edge to the leaf of the waiting thread that writes its job's reply (see
/// the module docs). The search starts before the wait the edge was matched to when leaves
/// after the write came first: a completion that joined a batch already reported (one eventfd
/// report for several writes) was handled under the earlier report, and its only wait of its
/// own is a later one. Returns, per leaf, the leaf that writes the reply of the job it handed
/// over, where that reply was found.
pub(super) fn land_completions(
    graph: &Graph,
    conns: &Conns,
    edges: &mut [Edge],
) -> Vec<Option<NodeId>> {
    let handed = handed_jobs(graph, edges);
    let ranges = thread_ranges(graph);
    let mut answered = vec![None; graph.leaves.len()];
    let mut taken: AHashSet<usize> = AHashSet::new();
    let mut in_turn: Vec<usize> = Vec::new();
    for (at, e) in edges.iter_mut().enumerate() {
        if e.kind != EdgeKind::Ready {
            continue;
        }
        let Some(by) = handed.get(&e.from) else {
            continue;
        };
        let Some(job) = by.iter().map(|h| conns.job_of(h.index())).find(|&c| c != 0) else {
            in_turn.push(at);
            continue;
        };
        if let Some(k) = reply_leaf(graph, &ranges, e, |k| conns.end(k) == job) {
            e.to = NodeId::new(k as u32);
            taken.insert(k);
            mark(&mut answered, by, e.to);
        }
    }
    // Jobs with no connection, in the order their completions were written.
    in_turn.sort_by_key(|&at| {
        let e = &edges[at];
        let thread = graph.leaves.get(e.to.index()).map(|l| l.thread);
        let written = graph.leaves.get(e.from.index()).map(|l| l.end_ns);
        (thread, written, at)
    });
    for at in in_turn {
        let e = &mut edges[at];
        // A leaf that read its request (or accepted its connection) and writes the reply on
        // that connection answered that request; one that writes on another connection (a
        // loop that accepted a client, then answered another's finished job) is free.
        let free = |k: usize| {
            let reply = conns.reply_of(k);
            reply != 0 && conns.opened(k) != reply
        };
        let found = reply_leaf(graph, &ranges, e, |k| free(k) && !taken.contains(&k));
        if let Some(k) = found {
            e.to = NodeId::new(k as u32);
            taken.insert(k);
            if let Some(by) = handed.get(&e.from) {
                mark(&mut answered, by, e.to);
            }
        }
    }
    answered
}

/// How many of its own leaves back a completion's job is looked for (a job that waited inside,
/// for a lock or a group commit, ends in a later leaf than the one that took it).
const LOOK_BACK: usize = 64;

/// Per completion (the source of a `ready` edge): the leaves of the waiting thread that handed
/// it its job. The job is the last one its thread took from that thread: any edge from there
/// into the completion's leaf, or into one of the leaves before it on its thread since its
/// previous completion, but program order (a wake-up, a queue's take, the job's bytes in a
/// pipe).
fn handed_jobs(graph: &Graph, edges: &[Edge]) -> AHashMap<NodeId, Vec<NodeId>> {
    let waiting: AHashMap<NodeId, NodeId> = edges
        .iter()
        .filter(|e| e.kind == EdgeKind::Ready)
        .map(|e| (e.from, e.to))
        .collect();
    if waiting.is_empty() {
        return AHashMap::new();
    }
    let thread = |n: NodeId| graph.leaves.get(n.index()).map(|l| l.thread);
    // Per leaf: the other threads' leaves with an edge into it.
    let crossing = edges
        .iter()
        .filter(|e| !matches!(e.kind, EdgeKind::Program | EdgeKind::ProgramWeak))
        .filter(move |e| e.kind != EdgeKind::Ready && thread(e.from) != thread(e.to))
        .map(|e| (e.to.index(), e.from));
    let keys = crossing.clone().map(|(to, _)| to + 1).max().unwrap_or(0);
    let into = Lists::new(keys, crossing);
    let mut handed: AHashMap<NodeId, Vec<NodeId>> = AHashMap::new();
    for (&done, &wait) in &waiting {
        let mut k = done.index();
        for step in 0..LOOK_BACK {
            let here = NodeId::new(k as u32);
            if step > 0 && (waiting.contains_key(&here) || thread(here) != thread(done)) {
                break;
            }
            let by: Vec<NodeId> = into
                .of(here.index())
                .iter()
                .copied()
                .filter(|&f| thread(f) == thread(wait))
                .collect();
            if !by.is_empty() {
                handed.insert(done, by);
                break;
            }
            if k == 0 {
                break;
            }
            k -= 1;
        }
    }
    handed
}

/// Records `reply` as the reply of the jobs the leaves `by` handed over.
fn mark(answered: &mut [Option<NodeId>], by: &[NodeId], reply: NodeId) {
    for h in by {
        if let Some(a) = answered.get_mut(h.index()) {
            *a = Some(reply);
        }
    }
}

/// The first leaf of `e`'s waiting thread that `fits`, from the first that ends after the
/// completion's write began, within [`LOOK_AHEAD`] leaves and [`LATER_WAITS`] later waits.
fn reply_leaf(
    graph: &Graph,
    ranges: &[(usize, usize)],
    e: &Edge,
    fits: impl Fn(usize) -> bool,
) -> Option<usize> {
    let write = graph.leaves.get(e.from.index())?;
    let wait = graph.leaves.get(e.to.index())?;
    let &(lo, hi) = ranges.get(wait.thread.index())?;
    // The write began where its leaf ended.
    let first = lo + graph.leaves[lo..hi].partition_point(|l| l.end_ns < write.end_ns);
    let mut waits = 0;
    (first..hi.min(first + LOOK_AHEAD))
        .take_while(|&k| {
            waits += usize::from(k > e.to.index() && after_epoll(graph, k));
            waits <= LATER_WAITS
        })
        .find(|&k| fits(k))
}

/// Marks weak, in threads that wait in epoll, the program edge into a leaf that hands over a
/// job whose reply was found (`answered`, from [`land_completions`]) from a leaf that ends at a
/// reply, or that hands over a job another reply answers: see the module docs.
pub(super) fn split_replies(
    graph: &Graph,
    epoll_thread: &[bool],
    conns: &Conns,
    answered: &[Option<NodeId>],
    weak: &mut [bool],
) {
    for i in 0..graph.leaves.len().saturating_sub(1) {
        let (a, b) = (&graph.leaves[i], &graph.leaves[i + 1]);
        if a.thread != b.thread || !epoll_thread[a.thread.index()] {
            continue;
        }
        let here = answered.get(i).copied().flatten();
        let Some(next) = answered.get(i + 1).copied().flatten() else {
            continue;
        };
        let apart = here.is_some_and(|h| h != next);
        if conns.reply_of(i) != 0 || apart {
            if let Some(w) = weak.get_mut(i) {
                *w = true;
            }
        }
    }
}

/// Each thread's leaves as an index range (a thread's leaves are contiguous and in time order).
fn thread_ranges(graph: &Graph) -> Vec<(usize, usize)> {
    let mut r = vec![(0, 0); graph.threads.len()];
    let mut i = 0;
    for run in graph.leaves.chunk_by(|a, b| a.thread == b.thread) {
        if let Some(slot) = r.get_mut(run[0].thread.index()) {
            *slot = (i, i + run.len());
        }
        i += run.len();
    }
    r
}

#[cfg(test)]
mod tests {
    use scalpel_model::format::Op;
    use scalpel_model::graph::{Edge, EdgeKind, Leaf, LeafTypeId, NodeId, ThreadId};
    use scalpel_model::testgraph::GraphBuilder;

    use super::super::eventloop::{Conns, ENDS_AT_WRITE, STARTS_AFTER_WRITE};
    use super::{land_completions, split_replies};
    use crate::eventloop::epoll_threads;

    /// Pushes one leaf of thread `t` per step (its start and end operations), a microsecond
    /// apart.
    fn push_steps(b: &mut GraphBuilder, t: ThreadId, ty: LeafTypeId, steps: &[(Op, Op)]) {
        for (i, &(from, to)) in steps.iter().enumerate() {
            let at = 1_000 * i as u64;
            let mut l = Leaf::new(t, ty, at, at + 10);
            l.start_op = Some(from.into());
            l.end_op = Some(to.into());
            b.push(t, l);
        }
    }

    /// The `ready` edges, as (from, to), sorted.
    fn ready_edges(edges: &[Edge]) -> Vec<(u32, u32)> {
        let mut ready: Vec<(u32, u32)> = edges
            .iter()
            .filter(|e| e.kind == EdgeKind::Ready)
            .map(|e| (e.from.get(), e.to.get()))
            .collect();
        ready.sort_unstable();
        ready
    }

    /// An epoll loop hands B's request to a pool thread and writes its reply when the pool
    /// reports it; then, with no call on A, it hands over a request of A's that was pipelined
    /// (leaf 4, right after B's reply); then it reads B's next request and hands it over. Both
    /// jobs are reported at one wait, and the loop writes A's reply, then B's. B's jobs land on
    /// the replies written to B; A's job, whose hand-off names no connection, on the next reply
    /// in turn: not on leaf 5, which ends at B's read and which the write before the hand-off
    /// would have made its connection's. The edge from B's first reply into A's hand-off is
    /// weak.
    #[test]
    fn a_pipelined_job_is_answered_in_turn_and_its_hand_off_is_new_work() {
        use Op::*;
        let mut b = GraphBuilder::new();
        let ty = b.leaf_type("step", None);
        let (lp, pool) = (b.thread("loop"), b.thread("pool"));
        let steps = [
            (EpollWait, Read),
            (Read, CondSignal),
            (CondSignal, EpollWait),
            (EpollWait, Writev),
            (Writev, CondSignal),
            (CondSignal, Read),
            (Read, CondSignal),
            (CondSignal, EpollWait),
            (EpollWait, Writev),
            (Writev, Writev),
        ];
        push_steps(&mut b, lp, ty, &steps);
        let jobs = [(1, 1_500, 3), (4, 4_500, 8), (6, 6_500, 8)];
        for (by, t, reported) in jobs {
            let done = b.leaf(pool, ty, t, t + 100);
            b.edge((lp, by), done, EdgeKind::Cond);
            b.edge(done, (lp, reported), EdgeKind::Ready);
        }
        let g = b.build();
        const A: u64 = 7;
        const B: u64 = 9;
        let mut rows = vec![(0, 0, 0); g.leaves.len()];
        rows[0] = (0, B, 0);
        rows[1] = (B, 0, 0);
        rows[3] = (0, B, ENDS_AT_WRITE);
        rows[4] = (B, 0, STARTS_AFTER_WRITE);
        rows[5] = (0, B, 0);
        rows[6] = (B, 0, 0);
        rows[8] = (0, A, ENDS_AT_WRITE);
        rows[9] = (A, B, STARTS_AFTER_WRITE | ENDS_AT_WRITE);
        let conns = Conns::from_rows(&rows);
        let mut edges = g.edges.clone();
        let answered = land_completions(&g, &conns, &mut edges);
        let ready = ready_edges(&edges);
        assert_eq!(ready, [(10, 3), (11, 8), (12, 9)]);
        let reply: Vec<Option<u32>> = answered[..10].iter().map(|a| a.map(|n| n.get())).collect();
        let none = None;
        assert_eq!(
            reply,
            [
                none,
                Some(3),
                none,
                none,
                Some(8),
                none,
                Some(9),
                none,
                none,
                none
            ]
        );
        let mut weak = vec![false; g.leaves.len()];
        split_replies(&g, &epoll_threads(&g), &conns, &answered, &mut weak);
        let weak_at: Vec<usize> = (0..10).filter(|&i| weak[i]).collect();
        assert_eq!(weak_at, [3]);
    }

    /// A loop answers B, hands over B's pipelined request (no call on B, so in turn), accepts a
    /// new client A and, in that leaf, writes the reply to B's job, which finished meanwhile;
    /// its completion is reported only at a later wait, before another reply to B. The leaf that
    /// accepted A and wrote to B answered B's job: it read no request from B.
    #[test]
    fn a_reply_written_after_an_accept_answers_a_job_in_turn() {
        use Op::*;
        let mut b = GraphBuilder::new();
        let ty = b.leaf_type("step", None);
        let (lp, pool) = (b.thread("loop"), b.thread("pool"));
        let steps = [
            (EpollWait, Writev),
            (Writev, CondSignal),
            (CondSignal, EpollWait),
            (EpollWait, Accept),
            (Accept, Writev),
            (Writev, EpollWait),
            (EpollWait, Writev),
        ];
        push_steps(&mut b, lp, ty, &steps);
        let done = b.leaf(pool, ty, 1_500, 1_600);
        b.edge((lp, 1), done, EdgeKind::Cond);
        b.edge(done, (lp, 6), EdgeKind::Ready);
        let g = b.build();
        const A: u64 = 7;
        const B: u64 = 9;
        let mut rows = vec![(0, 0, 0); g.leaves.len()];
        rows[0] = (0, B, ENDS_AT_WRITE);
        rows[1] = (B, 0, STARTS_AFTER_WRITE);
        rows[4] = (A, B, ENDS_AT_WRITE);
        rows[5] = (B, 0, STARTS_AFTER_WRITE);
        rows[6] = (0, B, ENDS_AT_WRITE);
        let conns = Conns::from_rows(&rows);
        let mut edges = g.edges.clone();
        land_completions(&g, &conns, &mut edges);
        let ready = ready_edges(&edges);
        assert_eq!(ready, [(7, 4)]);
    }

    /// After one wait's replies the loop hands over the next request of three connections, one
    /// hand-off after another. The first two jobs are answered by replies of their own: two
    /// requests, so the edge between them is weak, as is the one from the reply before them.
    /// The last two jobs are answered by one reply (a request fanned out to two workers): the
    /// edge between them stays.
    #[test]
    fn hand_offs_answered_apart_are_two_requests_and_a_fan_out_is_one() {
        use Op::*;
        let mut b = GraphBuilder::new();
        let ty = b.leaf_type("step", None);
        let lp = b.thread("loop");
        let steps = [
            (EpollWait, Writev),
            (Writev, Write),
            (Write, Write),
            (Write, Write),
            (Write, EpollWait),
        ];
        push_steps(&mut b, lp, ty, &steps);
        let g = b.build();
        let mut rows = vec![(0, 0, 0); g.leaves.len()];
        rows[0] = (0, 7, ENDS_AT_WRITE);
        let conns = Conns::from_rows(&rows);
        let at = |k: u32| Some(NodeId::new(k));
        let answered = [None, at(20), at(21), at(21), None];
        let mut weak = vec![false; g.leaves.len()];
        split_replies(&g, &epoll_threads(&g), &conns, &answered, &mut weak);
        let weak_at: Vec<usize> = (0..5).filter(|&i| weak[i]).collect();
        assert_eq!(weak_at, [0, 1]);
    }
}
