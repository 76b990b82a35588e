//! Phases 1 and 2 of the graph stage on one trace directory: every file decoded and cut into
//! leaves on the thread that decoded it, futex words used as locks and latch wake-ups found
//! across threads and the threads recut ([`read`]); then what the recording lost, as warnings
//! ([`account`]).

use std::path::Path;

use scalpel_model::read::{read_dir_with, read_file_streaming, ProcessSinks, TraceDir, Windows};

use crate::carry::ReadCarry;
use crate::futexlocks::Reread;
use crate::latches::FileEvent;
use crate::options::{GraphError, GraphOptions, GraphWarning};
use crate::sink::ThreadSink;
use crate::{futexlocks, latches};

/// Phase 1's result: the trace, each thread cut into leaves, and each latch wait with the send
/// that ended it.
pub(crate) struct Read {
    pub trace: TraceDir,
    pub sinks: Vec<ProcessSinks<ThreadSink>>,
    pub latched: Vec<(FileEvent, FileEvent)>,
}

/// Phase 1: decodes and cuts every file, then recuts threads at the futex words that turned
/// out to be locks.
pub(crate) fn read(dir: &Path, opts: &GraphOptions) -> Result<Read, GraphError> {
    let (trace, sinks) = read_dir_with(dir, |_| ThreadSink::new(opts.lock_cuts))?;
    Ok(cut_again(trace, sinks, opts, &|p, s| {
        read_file_streaming(p, s)
    }))
}

/// Phase 1 on window `k` of a trace read in windows: [`read`] of that window's events alone.
pub(crate) fn read_window(
    windows: &mut Windows,
    k: usize,
    opts: &GraphOptions,
    carry: &mut ReadCarry,
) -> Result<Read, GraphError> {
    let (trace, sinks) = windows.read_with(k, |p| {
        let mut s = ThreadSink::new(opts.lock_cuts);
        s.known_head(carry.head(p));
        s.known_start(carry.start(p));
        s
    })?;
    let windows = &*windows;
    let read = cut_again(trace, sinks, opts, &|p, s| {
        s.known_head(carry.head(p));
        s.known_start(carry.start(p));
        windows.read_file_with(p, s)
    });
    carry.keep(&read.trace, &read.sinks);
    Ok(read)
}

/// The part of phase 1 that needs every file cut once: futex words used as locks and latch
/// wake-ups, and the files that touched them cut again.
fn cut_again(
    trace: TraceDir,
    mut sinks: Vec<ProcessSinks<ThreadSink>>,
    opts: &GraphOptions,
    reread: Reread<'_>,
) -> Read {
    // Reading grew every thread's arrays by doubling; the blocks they left are garbage.
    scalpel_model::memory::release_freed_memory();
    let words = futexlocks::lock_words(&sinks);
    let latched = latches::latch_wakeups(&trace, &sinks);
    futexlocks::recut(
        reread,
        &trace,
        &mut sinks,
        words,
        latched.uncut,
        opts.lock_cuts,
    );
    Read {
        trace,
        sinks,
        latched: latched.pairs,
    }
}

/// Phase 2: the warnings for what the recording lost (an error in strict mode), and the
/// number of events read.
pub(crate) fn account(
    dir: &Path,
    opts: &GraphOptions,
    read: &mut Read,
) -> Result<(Vec<GraphWarning>, u64), GraphError> {
    let Read { trace, sinks, .. } = read;
    let mut warnings: Vec<GraphWarning> = trace
        .take_warnings()
        .into_iter()
        .map(GraphWarning::Read)
        .collect();
    if trace.losses.any() {
        warnings.push(GraphWarning::Unrecorded {
            path: trace.path.clone(),
            losses: trace.losses,
        });
    }
    for (_, f) in trace.files() {
        if f.lost_events() > 0 {
            warnings.push(GraphWarning::Lost {
                path: f.path.clone(),
                count: f.lost_events(),
            });
        }
    }
    if opts.strict && !warnings.is_empty() {
        return Err(GraphError::Strict {
            dir: dir.to_path_buf(),
            problems: warnings,
        });
    }
    let threads = || sinks.iter().flat_map(|p| p.threads.iter());
    let events = threads().map(|s| s.events).sum();
    let counted: u64 = threads()
        .filter_map(|s| s.out.as_ref().map(|o| o.counted_pairs))
        .fold(0, u64::saturating_add);
    if opts.lock_cuts && counted > 0 {
        warnings.push(GraphWarning::CountedLocks {
            path: trace.path.clone(),
            pairs: counted,
        });
    }
    Ok((warnings, events))
}
