//! Event loops: one thread that serves many connections, a step of each per wakeup.
//!
//! An epoll loop (nginx's worker, memcached's libevent threads) handles every connection an
//! epoll wait reported, one after another, and writes the replies of a batch of completions back
//! to back. Program order then joins steps of *different* connections (`cond_signal → recv` of
//! the next connection, `writev → writev`), and a task built on it mixes requests. The rules
//! here (and those on a pool's completions in `completions`) hold only in threads that wait in
//! epoll and only where the leaves say which connection they worked on (the channel of a byte
//! transfer or accept at either end):
//!
//! - **Per-connection order.** The program edge from a leaf to the next is weak when the next
//!   leaf ends on a different connection than the one the leaf worked on (its end's, else its
//!   start's): the loop went on to other work.
//! - **Each hand-off ends its event's work.** A loop that hands work to other threads (Apache's
//!   listener pushes each accepted connection, and each connection whose lingering close is
//!   ready, onto the workers' queue) pushes as many items in one wakeup as the wait reported.
//!   Program order chained them (`push → push → push → epoll_wait`), and a task built on it
//!   took as many shapes as there were batch sizes and orders (an Apache recording: 16 types
//!   for 95% of the leaves, run to run 11 to 16). So the program edge out of a leaf that hands
//!   an item to another thread (a `cond`, `queue` or `handoff` edge out of it: a connection
//!   handed over with no wakeup and no queue edge of its own) is weak when the next leaf
//!   ends at another hand-off, an accept or a dispatch wait: what follows is the next event's
//!   work, or the return to the wait. An accept reached that way is reached as straight from
//!   the wait as one right after it, so its own edge keeps its strength (see `weak`). A next
//!   leaf that ends anywhere else (the item's reply written by the same thread) keeps the
//!   edge: that may still be the same item's work. A wait that will not stay a cut (room in a
//!   bounded queue, a condition used as a lock; `merge` joins the leaves on both sides of it)
//!   is looked through: the next leaf is the one the merge will end at, so a loop that waits
//!   for room between two pushes hands on two items, as one that did not wait does. The same
//!   holds for a hand-off no such edge names (a pipe write, a semaphore's post, a futex or
//!   eventfd wake that another thread takes): when the leaf the merge will end at ends at the
//!   same call on the same object, the loop waited for room between two hand-offs of one batch
//!   (a pipelined client's requests read at once). `weak` already splits such a run where no
//!   call comes between its hand-offs; the wait for room is known only here.

use ahash::AHashSet;
use scalpel_model::format::{ObjKind, Op};
use scalpel_model::graph::{Edge, EdgeKind, Graph, ThreadId};

use super::event::{is_epoll_wait, reads_bytes, KindOf, HAS_X};
use super::leaves::Bound;

/// Per leaf, the channel its starting and ending calls moved bytes on (0: none).
pub(super) struct Conns {
    start: Vec<u64>,
    end: Vec<u64>,
    /// Per leaf: [`STARTS_AFTER_WRITE`] and [`ENDS_AT_WRITE`].
    wrote: Vec<u8>,
}

/// The leaf's start connection is that of the write that ended the leaf before it.
pub(super) const STARTS_AFTER_WRITE: u8 = 1;
/// The leaf's end connection is that of the write it ends at.
pub(super) const ENDS_AT_WRITE: u8 = 2;

impl Conns {
    /// The connection leaf `i` worked on: its end's, else its start's (0: none known).
    fn of(&self, i: usize) -> u64 {
        match self.end.get(i).copied().unwrap_or(0) {
            0 => self.start.get(i).copied().unwrap_or(0),
            c => c,
        }
    }

    /// The connection leaf `i` works for when it hands a job over: its end's, else the one a
    /// read or accept opened it with. A leaf that begins right after a reply was written does
    /// not work for that connection: the reply ended its turn (a pipelined request parsed next
    /// may be another connection's, or the same one's next request).
    pub(super) fn job_of(&self, i: usize) -> u64 {
        match self.end.get(i).copied().unwrap_or(0) {
            0 if self.flags(i) & STARTS_AFTER_WRITE != 0 => 0,
            0 => self.start.get(i).copied().unwrap_or(0),
            c => c,
        }
    }

    /// The connection leaf `i` ends writing to (0: it ends at no write on a connection).
    pub(super) fn reply_of(&self, i: usize) -> u64 {
        if self.flags(i) & ENDS_AT_WRITE != 0 {
            self.end.get(i).copied().unwrap_or(0)
        } else {
            0
        }
    }

    /// The connection a read or accept opened leaf `i` with (0: none).
    pub(super) fn opened(&self, i: usize) -> u64 {
        if self.flags(i) & STARTS_AFTER_WRITE != 0 {
            0
        } else {
            self.start.get(i).copied().unwrap_or(0)
        }
    }

    /// The connection leaf `i` ends on (0: none known).
    pub(super) fn end(&self, i: usize) -> u64 {
        self.end.get(i).copied().unwrap_or(0)
    }

    fn flags(&self, i: usize) -> u8 {
        self.wrote.get(i).copied().unwrap_or(0)
    }
}

#[cfg(test)]
impl Conns {
    /// Per leaf: (start connection, end connection, [`STARTS_AFTER_WRITE`] | [`ENDS_AT_WRITE`]).
    pub(super) fn from_rows(rows: &[(u64, u64, u8)]) -> Conns {
        Conns {
            start: rows.iter().map(|r| r.0).collect(),
            end: rows.iter().map(|r| r.1).collect(),
            wrote: rows.iter().map(|r| r.2).collect(),
        }
    }
}

/// Reads each leaf's connections off the cuts: a read or accept starts the leaf it opens (and
/// ends the one before), a write on a channel its thread also reads ends its leaf (and starts
/// the next).
pub(super) fn conns(bounds: &[Bound], kinds: &[KindOf], channels: &[u64], graph: &Graph) -> Conns {
    let n = graph.leaves.len();
    let same_thread = |a: usize, b: usize| {
        graph.leaves.get(a).map(|l| l.thread) == graph.leaves.get(b).map(|l| l.thread)
    };
    // A transfer: (leaf, channel, whether a read or accept opened the leaf).
    let cut = |b: &Bound| -> Option<(usize, u64, bool)> {
        let leaf = b.leaf as usize;
        if leaf >= n || b.res < 0 {
            return None;
        }
        let op = b.op.op()?;
        let is_stream = kinds
            .get(b.obj as usize)
            .is_some_and(|&(k, _)| k.is(ObjKind::Stream));
        let (chan, opens) = match op {
            Op::Accept | Op::Accept4 if b.flags & HAS_X != 0 => (b.x, true),
            _ => match reads_bytes(op) {
                Some(read) if is_stream => {
                    (channels.get(b.obj as usize).copied().unwrap_or(0), read)
                }
                _ => return None,
            },
        };
        (chan != 0).then_some((leaf, chan, opens))
    };
    // Arrays per leaf only where a leaf has a connection: a trace of pipes and queues alone
    // would hold them all zero (the accessors read a missing entry as zero).
    let size = if bounds.iter().any(|b| cut(b).is_some()) {
        n
    } else {
        0
    };
    let mut c = Conns {
        start: vec![0; size],
        end: vec![0; size],
        wrote: vec![0; size],
    };
    // A write answers only on a channel its thread also reads (a connection): a write to a pipe
    // that other threads read hands work over, it is no reply and names no connection. Two
    // passes over the cuts rather than a list of every transfer: the set holds one entry per
    // thread and channel.
    let thread = |leaf: usize| graph.leaves[leaf].thread;
    let read: AHashSet<(ThreadId, u64)> = bounds
        .iter()
        .filter_map(cut)
        .filter(|&(_, _, opens)| opens)
        .map(|(leaf, chan, _)| (thread(leaf), chan))
        .collect();
    for (leaf, chan, opens) in bounds.iter().filter_map(cut) {
        if opens {
            c.start[leaf] = chan;
            c.wrote[leaf] &= !STARTS_AFTER_WRITE;
            if leaf > 0 && same_thread(leaf - 1, leaf) {
                c.end[leaf - 1] = chan;
                c.wrote[leaf - 1] &= !ENDS_AT_WRITE;
            }
        } else if read.contains(&(thread(leaf), chan)) {
            c.end[leaf] = chan;
            c.wrote[leaf] |= ENDS_AT_WRITE;
            if leaf + 1 < n && same_thread(leaf, leaf + 1) {
                c.start[leaf + 1] = chan;
                c.wrote[leaf + 1] |= STARTS_AFTER_WRITE;
            }
        }
    }
    c
}

/// Whether a leaf began at the return of an epoll wait.
pub(super) fn after_epoll(graph: &Graph, i: usize) -> bool {
    is_epoll_wait(graph.leaves[i].start_op.and_then(|o| o.op()))
}

/// Marks weak the program edges of epoll threads that go on to another connection, except from
/// a connection the thread opened for a call (`calls`: their keys) to one it did not: the
/// call's answer goes on with the request that made the call (a proxy relays it).
pub(super) fn weaken(
    graph: &Graph,
    epoll_thread: &[bool],
    conns: &Conns,
    calls: &AHashSet<u64>,
    weak: &mut [bool],
) {
    for i in 0..graph.leaves.len().saturating_sub(1) {
        let (a, b) = (&graph.leaves[i], &graph.leaves[i + 1]);
        if a.thread != b.thread || !epoll_thread[a.thread.index()] {
            continue;
        }
        let (from, to) = (conns.of(i), conns.end(i + 1));
        let relayed = calls.contains(&from) && !calls.contains(&to);
        if from != 0 && to != 0 && from != to && !relayed {
            if let Some(w) = weak.get_mut(i) {
                *w = true;
            }
        }
    }
}

/// Marks weak the program edges of epoll threads out of a hand-off to another thread (`cond`,
/// `queue` or `handoff` edge) into a leaf that ends at the next hand-off, an accept or an epoll
/// wait (see the module docs). `merged[i]`: leaf `i` ends at a wait whose cut the merge will
/// undo, so the next leaf ends where the leaf after it does.
pub(super) fn split_handoffs(
    graph: &Graph,
    epoll_thread: &[bool],
    edges: &[Edge],
    merged: &[bool],
    weak: &mut [bool],
) {
    let n = graph.leaves.len();
    let mut posts = vec![false; n];
    let mut passes = vec![false; n];
    for e in edges {
        let mark = match e.kind {
            EdgeKind::Cond | EdgeKind::Queue | EdgeKind::Handoff => &mut posts,
            EdgeKind::Stream | EdgeKind::Sem | EdgeKind::Futex | EdgeKind::Eventfd => &mut passes,
            _ => continue,
        };
        let (Some(a), Some(b)) = (
            graph.leaves.get(e.from.index()),
            graph.leaves.get(e.to.index()),
        ) else {
            continue;
        };
        if a.thread != b.thread {
            mark[e.from.index()] = true;
        }
    }
    let same_call = |i: usize, j: usize| {
        let (a, b) = (&graph.leaves[i], &graph.leaves[j]);
        a.end_op == b.end_op && a.end_obj == b.end_obj
    };
    let ends = |i: usize| graph.leaves[i].end_op.and_then(|o| o.op());
    for i in 0..n.saturating_sub(1) {
        let (a, b) = (&graph.leaves[i], &graph.leaves[i + 1]);
        if !(posts[i] || passes[i]) || a.thread != b.thread || !epoll_thread[a.thread.index()] {
            continue;
        }
        // The leaf the next one will be once the merge has joined it to those after it.
        let mut next = i + 1;
        while merged.get(next).copied().unwrap_or(false)
            && next + 1 < n
            && graph.leaves[next + 1].thread == b.thread
        {
            next += 1;
        }
        // The same hand-off again past a merged wait: a run of hand-offs that a wait for room
        // interrupted (`weak`'s pipelined runs see only runs with no call between).
        if passes[i] && next > i + 1 && same_call(i, next) {
            weak[i] = true;
            continue;
        }
        let accept = matches!(ends(next), Some(Op::Accept | Op::Accept4));
        let next_work = posts[next] || accept || is_epoll_wait(ends(next));
        if !posts[i] || !next_work {
            continue;
        }
        weak[i] = true;
        // The accept was reached straight from a finished event, as from the wait: the edge
        // out of it, into the leaf that hands the connection on, stays strong.
        if accept && next + 1 < n && graph.leaves[next + 1].thread == b.thread {
            weak[next] = false;
        }
    }
}

/// Per thread: whether it waits in epoll (a leaf of it begins at an epoll wait's return).
pub(super) fn epoll_threads(graph: &Graph) -> Vec<bool> {
    let mut epoll_thread = vec![false; graph.threads.len()];
    for (i, l) in graph.leaves.iter().enumerate() {
        if after_epoll(graph, i) {
            epoll_thread[l.thread.index()] = true;
        }
    }
    epoll_thread
}

#[cfg(test)]
mod tests {
    use scalpel_model::format::Op;
    use scalpel_model::graph::{EdgeKind, Leaf};

    use super::{epoll_threads, split_handoffs};
    use scalpel_model::testgraph::GraphBuilder;

    /// An epoll loop's wakeup: it accepts A and pushes it, pushes B, accepts C and pushes it,
    /// returns to the wait; a later wakeup pushes D and writes a reply itself. Each push is the
    /// end of its event's work (weak out of it), the accept after a push keeps its strong edge
    /// into the push of its connection, and a push followed by the thread's own write stays
    /// strong.
    #[test]
    fn each_handoff_of_a_wakeup_ends_its_event() {
        use Op::*;
        let mut b = GraphBuilder::new();
        let ty = b.leaf_type("step", None);
        let (listener, worker) = (b.thread("listener"), b.thread("worker"));
        let steps = [
            (EpollWait, Accept4),
            (Accept4, CondSignal),
            (CondSignal, CondSignal),
            (CondSignal, Accept4),
            (Accept4, CondSignal),
            (CondSignal, EpollWait),
            (EpollWait, CondSignal),
            (CondSignal, Write),
        ];
        for (i, (from, to)) in steps.into_iter().enumerate() {
            let t = 1_000 * i as u64;
            let mut l = Leaf::new(listener, ty, t, t + 10);
            l.start_op = Some(from.into());
            l.end_op = Some(to.into());
            b.push(listener, l);
        }
        for (k, push) in [1u32, 2, 4, 6].into_iter().enumerate() {
            let t = 1_000 * u64::from(push) + 500;
            let w = b.leaf(worker, ty, t, t + 10);
            // C's connection is handed over with no wakeup: a hand-off edge alone.
            let kind = if push == 4 {
                EdgeKind::Handoff
            } else {
                EdgeKind::Cond
            };
            b.edge((listener, push), w, kind);
            assert_eq!(w.1, k as u32);
        }
        let g = b.build();
        // The accept rule made the edge out of the accept after a push weak.
        let mut weak = vec![false; g.leaves.len()];
        weak[3] = true;
        split_handoffs(&g, &epoll_threads(&g), &g.edges, &[], &mut weak);
        assert_eq!(
            &weak[..steps.len() - 1],
            &[false, true, true, false, true, false, false]
        );
    }

    /// A wakeup's pushes into a bounded queue, the second after a wait for room: the leaf that
    /// ends at the wait will be merged with the push after it, so the push before the wait
    /// ends its event as much as one followed by the push itself. Without the merge to come,
    /// the wait is a step of the same item (the edge stays strong).
    #[test]
    fn a_wait_for_room_between_two_pushes_is_looked_through() {
        use Op::*;
        let mut b = GraphBuilder::new();
        let ty = b.leaf_type("step", None);
        let (producer, consumer) = (b.thread("producer"), b.thread("consumer"));
        let steps = [
            (EpollWait, Read),
            (Read, CondSignal),
            (CondSignal, CondWait),
            (CondWait, CondSignal),
            (CondSignal, EpollWait),
        ];
        for (i, (from, to)) in steps.into_iter().enumerate() {
            let t = 1_000 * i as u64;
            let mut l = Leaf::new(producer, ty, t, t + 10);
            l.start_op = Some(from.into());
            l.end_op = Some(to.into());
            b.push(producer, l);
        }
        for push in [1u32, 3] {
            let t = 1_000 * u64::from(push) + 500;
            let w = b.leaf(consumer, ty, t, t + 10);
            b.edge((producer, push), w, EdgeKind::Queue);
        }
        let g = b.build();
        let split = |merged: &[bool]| {
            let mut weak = vec![false; g.leaves.len()];
            split_handoffs(&g, &epoll_threads(&g), &g.edges, merged, &mut weak);
            weak[..steps.len() - 1].to_vec()
        };
        assert_eq!(split(&[]), [false, false, false, true]);
        let merged = [false, false, true, false, false, false, false];
        assert_eq!(split(&merged), [false, true, false, true]);
    }

    /// Two requests read at once, passed to workers through a pipe (object 0), the second
    /// after a wait for an idle worker on a wake-up pipe (object 1): the first write ends its
    /// request when the wait will be merged and the write after it is the same call. A write
    /// to another object after the wait, or no merge to come, keeps the edge.
    #[test]
    fn the_same_pipe_write_past_a_wait_for_room_is_the_next_request() {
        use scalpel_model::graph::ObjId;
        use Op::*;
        let split = |second: u32, merged: &[bool]| {
            let mut b = GraphBuilder::new();
            let ty = b.leaf_type("step", None);
            let (lp, worker) = (b.thread("loop"), b.thread("worker"));
            let steps = [
                (EpollWait, Read, 2),
                (Read, Write, 0),
                (Write, Read, 1),
                (Read, Write, second),
                (Write, EpollWait, 3),
            ];
            for (i, (from, to, obj)) in steps.into_iter().enumerate() {
                let t = 1_000 * i as u64;
                let mut l = Leaf::new(lp, ty, t, t + 10);
                l.start_op = Some(from.into());
                l.end_op = Some(to.into());
                l.end_obj = Some(ObjId::new(obj));
                b.push(lp, l);
            }
            for push in [1u32, 3] {
                let t = 1_000 * u64::from(push) + 500;
                let w = b.leaf(worker, ty, t, t + 10);
                b.edge((lp, push), w, EdgeKind::Stream);
            }
            let g = b.build();
            let mut weak = vec![false; g.leaves.len()];
            split_handoffs(&g, &epoll_threads(&g), &g.edges, merged, &mut weak);
            weak[..steps.len() - 1].to_vec()
        };
        let merged = [false, false, true, false, false, false, false];
        assert_eq!(split(0, &merged), [false, true, false, false]);
        assert_eq!(split(4, &merged), [false; 4]);
        assert_eq!(split(0, &[]), [false; 4]);
    }
}
