//! Futex words and semaphores used as locks: their waits and wakes are lock traffic, not cuts.
//!
//! Rust's `std::sync::Mutex` (and any futex lock outside glibc, whose own lock calls the agent
//! sees as `pthread_mutex_*`) reaches the kernel only when contended: a locker waits on the word
//! expecting 2 ("locked, with waiters") and an unlocker that finds 2 wakes one waiter. Cut at,
//! those calls would split a leaf wherever a lock happened to be contended, so one kind of work
//! would come out as many leaf types. Like pthread mutexes, they are kept as lock waits inside
//! the leaf instead.
//!
//! Whether a word is a lock is known only once every thread is read: a word whose every wait
//! expected 2, the same test [`super::notify::futex`] uses to give such words no edges. A word
//! that was woken but never waited on counts too: a contended locker can take the lock without
//! waiting (it swaps in 2 just as the holder lets go), and its unlock then wakes nobody (a
//! replicated-store sender, once in 800 sends, made its send a leaf type of its own). Such a
//! wake can have no edge, so it is no cut either.
//!
//! A semaphore is a lock in the same sense when it passes the turn from one piece of work to
//! another that was already under way: its posts and successful waits sit inside tasks, the
//! thread carrying on with the same work on both sides (strong program edges; see
//! [`super::weak`]). PostgreSQL's per-backend semaphores are that: a backend waiting
//! for a lightweight lock sleeps on its own semaphore in the middle of a statement, and the
//! backend releasing the lock posts it in the middle of its own (a WAL flush, mostly), so each
//! post joined two unrelated statements, and each combination of joins made a task type (112 of
//! them covered 95% of the leaves). A semaphore that hands work over keeps its edges: its waiter
//! waits for new work (the producer/consumer of the `handoff` sample), or its poster goes back
//! for more right after posting (a pool's worker posting a client's completion, the `tasks`
//! sample's ping-pong).
//!
//! Files are cut as they are decoded, so the few files that touched a lock word are decoded
//! again with the words known. Traces without futex locks or semaphores pay nothing.

use std::sync::Arc;

use ahash::{AHashMap, AHashSet};
use rayon::prelude::*;
use scalpel_model::format::Op;
use std::path::Path;

use scalpel_model::read::{FileSink, FileTrace, ProcessSinks, ReadError, TraceDir};

/// How a file is read a second time (with what the first reading of every file found): the
/// whole file, or its part in a window of a trace read in windows.
pub(crate) type Reread<'a> =
    &'a (dyn Fn(&Path, &mut ThreadSink) -> Result<FileTrace, ReadError> + Sync);

use super::event::{lock_op, sem_op, ObjName, HAS_X, NO_OBJ};
use super::latches::Uncut;
use super::leaves::Bound;
use super::sink::ThreadSink;

/// The futex value of a lock that is held with waiters, which a contended locker waits for.
const LOCKED_WITH_WAITERS: u64 = 2;

/// Whether a futex wait expected the value of a lock held with waiters.
pub(super) fn waits_like_a_lock(b: &Bound) -> bool {
    b.flags & HAS_X != 0 && b.x == LOCKED_WITH_WAITERS
}

/// Whether a semaphore call sits inside a task: a successful wait starts leaf `b.leaf` and the
/// program edge into it is strong (the waiter was not waiting for new work); a post ends leaf
/// `b.leaf`, and the edges out of it and out of the next leaf are strong (the poster carries
/// on, rather than going back for work once it has posted, as a worker that posts a client's
/// completion does).
fn inside_a_task(b: &Bound, weak: &[bool]) -> bool {
    let strong = |i: Option<usize>| i.and_then(|i| weak.get(i)).is_some_and(|&w| !w);
    let l = b.leaf as usize;
    if b.op.is(Op::SemPost) {
        strong(Some(l)) && strong(Some(l + 1))
    } else {
        strong(l.checked_sub(1))
    }
}

/// Fewest successful waits on a semaphore taken as a lock: a semaphore posted and waited on once
/// (a child process telling its parent it is done, in the middle of both) says too little of how
/// it is used, and keeps its edge.
const LOCK_WAITS: u32 = 3;

/// A semaphore's posts and successful waits, and how many of each sat inside a task.
#[derive(Default)]
struct SemCalls {
    posts: u32,
    posts_inside: u32,
    waits: u32,
    waits_inside: u32,
}

impl SemCalls {
    /// Waited on at least [`LOCK_WAITS`] times, and at least three in four of its posts and of
    /// its waits inside a task. Not every one: the weak edges are a guess at where a thread goes
    /// back for work, and one PostgreSQL recording had 6% of its semaphore posts and 0.1% of its
    /// waits next to one (the `handoff` sample's waits, the `tasks` sample's ping-pong replies
    /// and a pool's completions sit at one every time).
    fn like_a_lock(&self) -> bool {
        let most = |part: u32, all: u32| u64::from(part) * 4 >= u64::from(all) * 3;
        self.waits >= LOCK_WAITS
            && most(self.waits_inside, self.waits)
            && most(self.posts_inside, self.posts)
    }
}

/// The name of every futex word all of whose waits (if any) expected 2, and of every semaphore
/// used as a lock ([`SemCalls::like_a_lock`]).
pub(super) fn lock_words(sinks: &[ProcessSinks<ThreadSink>]) -> AHashSet<ObjName> {
    // Per word: whether every wait so far expected 2.
    let mut words: AHashMap<ObjName, bool> = AHashMap::new();
    let mut sems: AHashMap<ObjName, SemCalls> = AHashMap::new();
    for (pi, out) in sinks.iter().enumerate().flat_map(|(pi, p)| {
        p.threads
            .iter()
            .filter_map(move |s| s.out.as_ref().map(|o| (pi, o)))
    }) {
        for b in &out.bounds {
            if b.obj == NO_OBJ || !lock_op(b.op) {
                continue;
            }
            let Some(o) = out.objs.get(b.obj as usize) else {
                continue;
            };
            if sem_op(b.op) {
                let post = b.op.is(Op::SemPost);
                if !post && b.res != 0 {
                    continue;
                }
                let s = sems.entry(o.name(pi)).or_default();
                let inside = u32::from(inside_a_task(b, &out.weak.weak));
                if post {
                    s.posts += 1;
                    s.posts_inside += inside;
                } else {
                    s.waits += 1;
                    s.waits_inside += inside;
                }
                continue;
            }
            let lock = words.entry(o.name(pi)).or_insert(true);
            if b.op.is(Op::FutexWait) {
                *lock &= waits_like_a_lock(b);
            }
        }
    }
    let sems = sems
        .into_iter()
        .filter_map(|(k, c)| c.like_a_lock().then_some(k));
    words
        .into_iter()
        .filter_map(|(k, lock)| lock.then_some(k))
        .chain(sems)
        .collect()
}

/// Cuts again, with `words` and the latch wake-ups known (see [`super::latches`]), every
/// thread file that waited on or woke one of the words or made a latch wake-up. A file that
/// cannot be read again, or reads differently (it grew), keeps its first cut.
pub(super) fn recut(
    reread: Reread<'_>,
    trace: &TraceDir,
    sinks: &mut [ProcessSinks<ThreadSink>],
    words: AHashSet<ObjName>,
    mut uncut: Uncut,
    lock_cuts: bool,
) {
    if words.is_empty() && uncut.is_empty() {
        return;
    }
    let touches = |pi: usize, s: &ThreadSink| {
        s.out.as_ref().is_some_and(|out| {
            out.bounds.iter().any(|b| {
                lock_op(b.op)
                    && out
                        .objs
                        .get(b.obj as usize)
                        .is_some_and(|o| words.contains(&o.name(pi)))
            })
        })
    };
    let mut jobs = Vec::new();
    for (pi, p) in sinks.iter().enumerate() {
        for (fi, s) in p.threads.iter().enumerate() {
            let latch = uncut.remove(&(pi, fi)).unwrap_or_default();
            if !latch.is_empty() || touches(pi, s) {
                jobs.push((pi, fi, s.events, latch));
            }
        }
    }
    let words = Arc::new(words);
    let redone: Vec<(usize, usize, ThreadSink)> = jobs
        .into_par_iter()
        .filter_map(|(pi, fi, events, latch)| {
            let file = trace.processes.get(pi)?.threads.get(fi)?;
            let mut sink = ThreadSink::with_lock_words(Arc::clone(&words), pi, lock_cuts, latch);
            reread(&file.path, &mut sink).ok()?;
            (sink.events == events).then(|| {
                sink.finish(file);
                (pi, fi, sink)
            })
        })
        .collect();
    for (pi, fi, sink) in redone {
        sinks[pi].threads[fi] = sink;
    }
}
