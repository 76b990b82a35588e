//! Futex words used as locks: their waits and wakes are lock traffic, not cuts.
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
//! Files are cut as they are decoded, so the few files that touched a lock word are decoded
//! again with the words known. Traces without futex locks (C programs) pay nothing.

use std::sync::Arc;

use ahash::{AHashMap, AHashSet};
use rayon::prelude::*;
use scalpel_model::format::Op;
use scalpel_model::read::{read_file_streaming, FileSink, ProcessSinks, TraceDir};

use super::event::{ObjName, HAS_X, NO_OBJ};
use super::leaves::Bound;
use super::sink::ThreadSink;

/// The futex value of a lock that is held with waiters, which a contended locker waits for.
const LOCKED_WITH_WAITERS: u64 = 2;

/// Whether a futex wait expected the value of a lock held with waiters.
pub(super) fn waits_like_a_lock(b: &Bound) -> bool {
    b.flags & HAS_X != 0 && b.x == LOCKED_WITH_WAITERS
}

/// The name of every futex word all of whose waits (if any) expected 2.
pub(super) fn lock_words(sinks: &[ProcessSinks<ThreadSink>]) -> AHashSet<ObjName> {
    // Per word: whether every wait so far expected 2.
    let mut words: AHashMap<ObjName, bool> = AHashMap::new();
    for (pi, out) in sinks.iter().enumerate().flat_map(|(pi, p)| {
        p.threads
            .iter()
            .filter_map(move |s| s.out.as_ref().map(|o| (pi, o)))
    }) {
        for b in &out.bounds {
            let wait = b.op == Op::FutexWait as u8;
            if !(wait || b.op == Op::FutexWake as u8) || b.obj == NO_OBJ {
                continue;
            }
            let Some(o) = out.objs.get(b.obj as usize) else {
                continue;
            };
            let lock = words.entry(o.name(pi)).or_insert(true);
            if wait {
                *lock &= waits_like_a_lock(b);
            }
        }
    }
    words
        .into_iter()
        .filter_map(|(k, lock)| lock.then_some(k))
        .collect()
}

/// Cuts again, with `words` known, every thread file that waited on or woke one of them. A file
/// that cannot be read again, or reads differently (it grew), keeps its first cut.
pub(super) fn recut(
    trace: &TraceDir,
    sinks: &mut [ProcessSinks<ThreadSink>],
    words: AHashSet<ObjName>,
    lock_cuts: bool,
) {
    if words.is_empty() {
        return;
    }
    let touches = |pi: usize, s: &ThreadSink| {
        s.out.as_ref().is_some_and(|out| {
            out.bounds.iter().any(|b| {
                (b.op == Op::FutexWait as u8 || b.op == Op::FutexWake as u8)
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
            if touches(pi, s) {
                jobs.push((pi, fi, s.events));
            }
        }
    }
    let words = Arc::new(words);
    let redone: Vec<(usize, usize, ThreadSink)> = jobs
        .into_par_iter()
        .filter_map(|(pi, fi, events)| {
            let file = trace.processes.get(pi)?.threads.get(fi)?;
            let mut sink = ThreadSink::with_lock_words(Arc::clone(&words), pi, lock_cuts);
            read_file_streaming(&file.path, &mut sink).ok()?;
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
