//! Weak program order: where a thread goes back for new work, so that one loop of a worker does
//! not chain unrelated requests together.
//!
//! The program-order edge from a leaf to the next is weak when the call between them is:
//! - `accept` or `accept4` (a new connection is new work), unless the thread came to it straight
//!   from a dispatch wait below: an event loop's accept handles the event its epoll wait
//!   returned, and both weak would leave the leaf between them (epoll return to accept) in no
//!   task, cut from the listener's hand-off of the connection it accepts;
//! - an epoll wait (an epoll instance is an event loop's dispatch point);
//! - a read at a *fetch site* that the thread reached without a dispatch wait before it: a site
//!   (operation and stack) where a read right after a dispatch wait ended. The wait only said
//!   the work was there; when it already was (PostgreSQL's next statement sent before the
//!   backend asked; memcached's next connection ready in the same wakeup), the thread goes
//!   straight to the same read, and that is new work too. Without this, a statement after a
//!   wait and one without started with different leaves, and were two task types;
//! - a reply followed by the next reply: a write that moved bytes on a channel the thread has
//!   read requests from, when the next cut of the thread is a write from the same call site on
//!   the same channel. No read of the channel came between (a read that moves bytes cuts), so
//!   the second write answers a request the thread had already read (a thread that only writes
//!   to a channel is a stream of writes, not of replies): a client pipelined several requests and one read returned
//!   them all. Without this, every request after the first of a read joined the one before it.
//!   What it assumes: a reply is written by one call. A reply written in several calls from one
//!   call site (a large body written piece by piece) is taken for several pipelined replies;
//!   replies written from different sites (a header, then a body) stay one. Likewise a
//!   hand-off to a worker (a write, signal, post or wake) in a run of the same call that began
//!   right after a read, when the next cut is the same call: requests read at once and passed
//!   on one by one (see `super::replies`);
//! - `poll` or `ppoll` over two or more descriptors (a dispatch loop; a single-descriptor poll
//!   is a timed wait inside one request, as APR's socket reads do), and any `select` or
//!   `pselect` (their count is the highest descriptor plus one, which says nothing);
//! - a wait at the thread's *loop head*: among its dequeue-like waits (condition, semaphore and
//!   futex waits, and reads on a channel), grouped by call site (operation and call stack, or
//!   operation and object when there are no stacks), the first site the thread reaches that it
//!   reaches at least twice. A worker's first repeated wait is where it takes work; a later one
//!   (joining sub-requests, waiting for a reply) is part of the work. This is a guess, and the
//!   graph stage drops it on threads whose new work is known from hand-off edges or from takes
//!   that waited, none of them at the guess (see `edges::handoff_weak`).
//!   A site reached once before the head (a wait again right away, after a wake-up another
//!   thread's take robbed, is the same visit), with the head's operation and object and the
//!   head's stack but for one return address, is the head too: the loop's first take, which a
//!   compiler that peels or rotates the loop calls from a copy of its own (`peeled_heads`); of
//!   the two, the site visited more is the loop's own.
//!   Such a copy also counts as its site's first visit when the head is chosen: otherwise a
//!   wait inside the first request (a worker waiting for a group commit) is reached before the
//!   loop's own take and taken for the head, and every request is cut at that wait.
//!   A read or semaphore site visited mostly in runs (each take straight after the one before,
//!   two or more a run on average) takes the pieces of one item, as a worker reading a block's
//!   input piece by piece does: it is the head only when no other site repeats. Otherwise a
//!   worker whose first take is peeled reaches the pieces' site twice before its loop's own
//!   take, and every request was cut at its pieces (generated pools with `chunks`).
//! - the call before a leaf that passed a condition or futex wait at the loop head without
//!   making it (see [`super::skipped`]).
//!
//! Weak edges are still edges: the hierarchy miner contracts them after everything else.

use std::hash::Hash;

use ahash::{AHashMap, AHashSet};
use scalpel_model::format::Op;
use scalpel_model::read::FileTrace;

use scalpel_model::graph::OpName;

use crate::local::LocalLeaf;

use super::event::LocalObj;
use super::peeled::one_frame_apart;
use super::replies;
use super::skipped::{passed_heads, skippable};

use super::event::reads_bytes;

/// Whether the call reads bytes (a fetch site's operation).
fn reads_bytes_op(op: scalpel_model::graph::OpName) -> bool {
    op.op().and_then(reads_bytes) == Some(true)
}

/// A call site: operation, and the stack's frames (or the object, without a stack).
type Site<'a> = (OpName, Option<&'a [u64]>, u32);

/// A site's visits: how many, the first, and how many came from elsewhere (not a wait again at
/// the same site right after it returned: a wake-up that found nothing waits again in the same
/// call).
#[derive(Clone, Copy)]
struct Visits {
    count: u32,
    first: usize,
    arrivals: u32,
}

/// Whether every return of the call takes something: a read (of bytes) or a semaphore wait.
/// A condition or futex wait may return with nothing to take.
fn takes_each_call(op: OpName) -> bool {
    reads_bytes_op(op)
        || matches!(
            op.op(),
            Some(Op::SemWait | Op::SemTimedwait | Op::SemClockwait)
        )
}

/// A wait that takes work: condition, semaphore and futex waits, and reads.
pub(super) fn dequeue_like(op: Op) -> bool {
    use Op::*;
    matches!(
        op,
        CondWait
            | CondTimedwait
            | CondClockwait
            | SemWait
            | SemTimedwait
            | SemClockwait
            | FutexWait
    ) || reads_bytes(op) == Some(true)
}

/// Where a thread's program order is weak, and why.
#[derive(Default)]
pub(super) struct WeakOrder {
    /// `weak[i]`: whether the program-order edge from leaf `i` to leaf `i + 1` is weak.
    pub weak: Vec<bool>,
    /// `head[i]`: whether that edge is weak only because leaf `i` ends at the loop-head guess,
    /// or leaf `i + 1` passed it without waiting.
    pub head: Vec<bool>,
    /// `passed[i]`: whether that edge is weak only because leaf `i + 1` passed the loop head
    /// without waiting (see [`super::skipped`]).
    pub passed: Vec<bool>,
    /// The loop-head guess, when it has a call stack (what a later window of the trace keeps).
    pub head_site: Option<LoopHead>,
}

impl WeakOrder {
    /// Takes back the weak edges of leaves that passed the loop head without waiting on the
    /// threads whose waits at the head all end leaves the build merges with the next (`merged`,
    /// by leaf; `thread`, each leaf's thread): a head whose waits are no cut (a condition used as
    /// a lock) is no place where the thread went back for work, and neither is its crossing.
    pub(super) fn keep_passed_where_head_cuts<T: Hash + Eq>(
        &mut self,
        merged: &[bool],
        thread: impl Fn(usize) -> T,
    ) {
        let cuts: AHashSet<T> = (0..self.head.len())
            .filter(|&i| {
                self.head[i] && !self.passed[i] && !merged.get(i).copied().unwrap_or(false)
            })
            .map(&thread)
            .collect();
        for i in 0..self.passed.len() {
            if self.passed[i] && !cuts.contains(&thread(i)) {
                self.passed[i] = false;
                self.head[i] = false;
                self.weak[i] = false;
            }
        }
    }
}

/// A thread's loop head by its operation and call stack, kept from the part of a trace where
/// the thread began for the parts after it (see [`weak_boundaries`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LoopHead {
    op: OpName,
    frames: Vec<u64>,
}

/// The thread's weak program order. `sites[i]` holds the stack id and auxiliary value of the
/// call that ended leaf `i`. `known`: the loop head found where the thread began, when these
/// leaves are a later part of its life (a window of a trace read in windows). The head is the
/// first repeated wait from the thread's start; a part that begins inside the loop would take
/// the first wait it repeats (a read inside the work, when no new connection came in that part)
/// and cut every request there.
pub(super) fn weak_boundaries(
    leaves: &[LocalLeaf],
    sites: &[(u32, u64)],
    file: &FileTrace,
    objs: &[LocalObj],
    known: Option<&LoopHead>,
) -> WeakOrder {
    let site_of = |i: usize, op: OpName| -> Site<'_> {
        let stack = sites.get(i).map_or(0, |s| s.0);
        let frames = (stack != 0)
            .then(|| file.stacks.get(&u64::from(stack)).map(|v| v.as_slice()))
            .flatten();
        let obj = leaves[i].end_obj.unwrap_or(u32::MAX);
        (op, frames, if frames.is_some() { 0 } else { obj })
    };
    // Visits per dequeue-like site, and the order sites were first reached.
    let mut visits: AHashMap<Site<'_>, Visits> = AHashMap::new();
    let mut last: Option<Site<'_>> = None;
    for (i, l) in leaves.iter().enumerate() {
        let Some(op) = l.end_op else {
            last = None;
            continue;
        };
        if !op.op().is_some_and(dequeue_like) {
            last = None;
            continue;
        }
        let site = site_of(i, op);
        let v = visits.entry(site).or_insert(Visits {
            count: 0,
            first: i,
            arrivals: 0,
        });
        v.count += 1;
        v.arrivals += u32::from(last != Some(site));
        last = Some(site);
    }
    // A repeated site's first visit is its peeled twin's when it has one: the loop's first
    // take, which a compiler gave a call of its own, comes before any wait inside the work.
    // Of a site and its twin, both repeated (the twin only by a wait again), the loop's own
    // site is the one visited more.
    // A read or semaphore site visited mostly in runs takes the pieces of one item (module
    // docs); a condition or futex wait again at its site is a wake-up that found nothing.
    let repeated = |v: &Visits| v.count >= 2;
    let inner = |site: &Site<'_>, v: &Visits| takes_each_call(site.0) && v.count >= 2 * v.arrivals;
    let outer_exists = visits
        .iter()
        .any(|(site, v)| repeated(v) && !inner(site, v));
    let head = match known {
        Some(k) => Some((k.op, Some(k.frames.as_slice()), 0)),
        None => visits
            .iter()
            .filter(|(site, v)| repeated(v) && !(outer_exists && inner(site, v)))
            .min_by_key(|(site, v)| {
                let twin_first = twin_first(&visits, site, v.first, leaves);
                (twin_first, std::cmp::Reverse(v.count), v.first)
            })
            .map(|(site, _)| *site),
    };
    let peeled = head.map_or_else(Vec::new, |h| peeled_heads(&visits, h, leaves));
    let dispatch_at = |i: usize| {
        let x = sites.get(i).map_or(0, |s| s.1);
        match leaves[i].end_op.and_then(|o| o.op()) {
            Some(Op::EpollWait | Op::EpollPwait | Op::EpollPwait2) => true,
            Some(Op::Poll | Op::Ppoll) => x >= 2,
            Some(Op::Select | Op::Pselect) => true,
            _ => false,
        }
    };
    // Fetch sites: where a read right after a dispatch wait ended.
    let mut fetch: ahash::AHashSet<Site<'_>> = ahash::AHashSet::new();
    for (i, l) in leaves.iter().enumerate().skip(1) {
        if let Some(op) = l.end_op {
            if dispatch_at(i - 1) && reads_bytes_op(op) {
                fetch.insert(site_of(i, op));
            }
        }
    }
    let replies = replies::pipelined(leaves, objs, |i, j| {
        let (Some(a), Some(b)) = (leaves[i].end_op, leaves[j].end_op) else {
            return false;
        };
        site_of(i, a) == site_of(j, b)
    });
    let next_reply = |i: usize| replies[i];
    let mut order = WeakOrder {
        head_site: head.and_then(|(op, frames, _)| {
            frames.map(|f| LoopHead {
                op,
                frames: f.to_vec(),
            })
        }),
        ..WeakOrder::default()
    };
    // Whether the previous leaf ended at a dispatch wait (epoll, poll of several, select).
    let mut after_dispatch = false;
    for (i, l) in leaves.iter().enumerate() {
        let op = l.end_op.and_then(|o| o.op());
        let dispatch = dispatch_at(i);
        // The edge into leaf `i + 1` is weak when leaf `i + 1` ends at a fetch site reached
        // without a dispatch wait (leaf `i` did not end at one).
        let next_fetch = !dispatch
            && leaves.get(i + 1).is_some_and(|n| {
                n.end_op
                    .is_some_and(|o| reads_bytes_op(o) && fetch.contains(&site_of(i + 1, o)))
            });
        let (weak, at_head) = match op {
            None => (false, false),
            Some(Op::Accept | Op::Accept4) => (!after_dispatch, false),
            _ if dispatch => (true, false),
            _ if next_fetch => (true, false),
            _ if next_reply(i) => (true, false),
            Some(op) if dequeue_like(op) => {
                let site = site_of(i, op.into());
                let h = head == Some(site) || peeled.contains(&site);
                (h, h)
            }
            Some(_) => (false, false),
        };
        after_dispatch = dispatch;
        order.weak.push(weak);
        order.head.push(at_head);
    }
    order.passed = vec![false; leaves.len()];
    if head.is_some_and(|h| h.0.op().is_some_and(skippable)) {
        let ends_at_head = |i: usize| {
            leaves[i].end_op.is_some_and(|op| {
                let site = site_of(i, op);
                head == Some(site) || peeled.contains(&site)
            })
        };
        let site = |i: usize| leaves[i].end_op.map(|op| site_of(i, op));
        for j in passed_heads(leaves.len(), ends_at_head, site) {
            if !order.weak[j - 1] {
                order.weak[j - 1] = true;
                order.head[j - 1] = true;
                order.passed[j - 1] = true;
            }
        }
    }
    order
}

/// The loop head's first visit where the compiler gave it a call of its own: a site visited
/// once, before the head's first visit, with the head's operation on the head's object, whose
/// stack is the head's but for one return address. A compiler that peels a loop's first
/// iteration, or rotates the loop, copies the call: the first take of work returns to another
/// place in the same function (rustc 1.99's `read_exact` in a worker's loop does). Without this
/// the worker's first item was not new work, and its task differed from every later one's.
fn peeled_heads<'a>(
    visits: &AHashMap<Site<'a>, Visits>,
    head: Site<'a>,
    leaves: &[LocalLeaf],
) -> Vec<Site<'a>> {
    let Some(head_first) = visits.get(&head).map(|v| v.first) else {
        return Vec::new();
    };
    let mut peeled = twins(visits, &head, head_first, leaves);
    // By first visit: the map's order is not the trace's.
    peeled.sort_unstable_by_key(|(first, _)| *first);
    peeled.into_iter().map(|(_, site)| site).collect()
}

/// The first visit of `site` (first visited at `first`), or of its peeled twin when that came
/// earlier (see [`twins`]).
fn twin_first(
    visits: &AHashMap<Site<'_>, Visits>,
    site: &Site<'_>,
    first: usize,
    leaves: &[LocalLeaf],
) -> usize {
    twins(visits, site, first, leaves)
        .into_iter()
        .map(|(at, _)| at)
        .fold(first, usize::min)
}

/// The peeled twins of `site` (first visited at `first`), with their visits: sites reached once
/// (and perhaps waited at again right away: a wake-up another thread's take robbed), before
/// `first`, with `site`'s operation on its object, whose stack is `site`'s but for one return
/// address.
fn twins<'a>(
    visits: &AHashMap<Site<'a>, Visits>,
    site: &Site<'a>,
    first: usize,
    leaves: &[LocalLeaf],
) -> Vec<(usize, Site<'a>)> {
    let Some(frames) = site.1 else {
        return Vec::new();
    };
    let obj = leaves[first].end_obj;
    visits
        .iter()
        .filter(|(twin, v)| {
            v.arrivals == 1
                && v.first < first
                && twin.0 == site.0
                && obj.is_some()
                && leaves[v.first].end_obj == obj
                && twin.1.is_some_and(|f| one_frame_apart(f, frames))
        })
        .map(|(twin, v)| (v.first, *twin))
        .collect()
}
