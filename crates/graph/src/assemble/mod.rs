//! Putting the threads' pieces together: global object, thread and leaf numbering, times in
//! nanoseconds on the trace's clock, and leaf types.

mod build;

use ahash::AHashMap;
use rayon::prelude::*;
use scalpel_model::graph::{Graph, INNER_MIN_NS};
use scalpel_model::read::{Clock, ProcessSinks, TraceDir};

use crate::event::KindOf;
use crate::leaves::{Bound, LatchCall, LockAcquire, LockAgg, ThreadOut};
use crate::local::{LocalLeaf, Nanos};
use crate::queues::Section;
use crate::ready::{Close, Ctl, ReadyWait};
use crate::releases::LockReleases;
use crate::sink::ThreadSink;
use crate::weak::WeakOrder;
use scalpel_symbols::{ModuleWarning, SkipList};

/// A thread whose leaves array held at least this many leaves (about 8 MiB) gives its freed
/// arrays back as soon as they are copied; smaller ones are left to the allocator, so that a
/// trace of many small threads does not walk the heap once per thread.
const RELEASE_LEAVES: usize = 1 << 16;

/// The graph's nodes and what the matchers need, all with global indices.
pub(super) struct Assembled {
    /// Processes, threads, objects, types and leaves filled in; no edges yet.
    pub graph: Graph,
    /// Every cut kept for matching.
    pub bounds: Vec<Bound>,
    /// Every lock release.
    /// Per thread and lock: the lock (global), the thread's first leaf, its releases.
    pub releases: Vec<(u32, u32, LockReleases)>,
    /// Every kept lock acquisition, with durations in nanoseconds.
    pub acquires: Vec<LockAcquire>,
    /// Per-thread acquisition totals per lock (global objects, nanoseconds).
    pub lock_aggs: Vec<(u32, LockAgg)>,
    /// Per leaf: whether program order out of it is weak, and whether only by the loop-head
    /// guess.
    pub weak: WeakOrder,
    /// Per object: its kind code and channel kind.
    pub obj_kinds: Vec<KindOf>,
    /// Per object: its name, the same in every window of a trace read in windows.
    pub obj_names: Vec<crate::event::ObjName>,
    /// Per object: the channel key of a stream direction (0 for other objects).
    pub obj_channel: Vec<u64>,
    /// Symbolization warnings.
    pub warnings: Vec<ModuleWarning>,
    /// Readiness waits (global leaves).
    pub ready: Vec<ReadyWait>,
    /// `epoll_ctl` registrations (global objects, nanoseconds).
    pub ctls: Vec<Ctl>,
    /// Descriptors closed (process, descriptor, nanoseconds).
    pub closes: Vec<Close>,
    /// Mutex sections that may put into or take from a queue (global objects and leaves).
    pub sections: Vec<Section>,
    /// Per condition signal, the mutexes held (global objects; see `queues::Tracker`).
    pub signal_holds: Vec<(u32, u32)>,
    /// The latch wake-ups' calls by (process index, file index, event index), with global
    /// leaves and objects and durations in nanoseconds.
    pub latch: AHashMap<(usize, usize, u32), LatchCall>,
    /// Stream key → global object, for the stream keys poll and select report.
    pub stream_by_key: AHashMap<u64, u32>,
}

/// One thread file's results, its leaves timed.
struct Timed {
    process: usize,
    file: usize,
    out: ThreadOut,
    leaves: Vec<LocalLeaf<Nanos>>,
}

/// Assembles the per-thread results of [`super::sink::ThreadSink`] in directory order.
pub(super) fn assemble(
    dir: &TraceDir,
    mut sinks: Vec<ProcessSinks<ThreadSink>>,
    skip: &SkipList,
) -> Assembled {
    let timed = timed(dir, &mut sinks);
    let mut a = build::Assembly::new(dir, &timed, skip);
    for t in timed {
        a.add_thread(dir, t);
    }
    a.finish()
}

/// Every thread's results with their times in nanoseconds, each by its file's (trace-wide)
/// clock, in parallel.
fn timed(dir: &TraceDir, sinks: &mut [ProcessSinks<ThreadSink>]) -> Vec<Timed> {
    let mut outs: Vec<(usize, usize, ThreadOut)> = Vec::new();
    for (pi, ps) in sinks.iter_mut().enumerate() {
        for (fi, s) in ps.threads.iter_mut().enumerate() {
            if let Some(out) = s.out.take() {
                outs.push((pi, fi, out));
            }
        }
    }
    outs.into_par_iter()
        .map(|(process, file, mut out)| {
            let clock = &dir.processes[process].threads[file].clock;
            // In the leaves' own buffer: the two leaf forms have one layout.
            let leaves = std::mem::take(&mut out.leaves)
                .into_iter()
                .map(|l| l.timed(clock))
                .collect();
            time_cuts(&mut out, clock, process);
            Timed {
                process,
                file,
                out,
                leaves,
            }
        })
        .collect()
}

/// The times of a thread's cuts, waits and lock statistics in nanoseconds.
fn time_cuts(out: &mut ThreadOut, clock: &Clock, process: usize) {
    for w in &mut out.inner {
        w.at = clock.ns(w.at);
        w.dur = clock.dur_ns(w.dur);
    }
    out.inner.retain(|w| w.dur >= INNER_MIN_NS);
    for k in &mut out.acquires {
        k.dur = clock.dur_ns(k.dur);
    }
    for c in &mut out.latch {
        c.dur = clock.dur_ns(c.dur);
    }
    for c in &mut out.ctls {
        c.at = clock.ns(c.at);
        c.process = process as u32;
    }
    for c in &mut out.closes {
        c.0 = process as u32;
        c.2 = clock.ns(c.2);
    }
    for (_, a) in &mut out.lock_aggs {
        a.wait = clock.dur_ns(a.wait);
        a.max = clock.dur_ns(a.max);
    }
}
