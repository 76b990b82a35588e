//! The order in which the concurrent writes of one stream moved their bytes.
//!
//! A write's bytes join the channel's order at some point between its call's start and its
//! return, and from the calls alone one cannot tell where. Where the kernel does it decides
//! which end of the call is the better guess ([`Enqueue`]):
//!
//! - a pipe's writer takes the pipe's lock as its call begins and copies under it, and a TCP
//!   sender its socket's: such writes go by their start, which for a write that caused the next
//!   one through a reader is always right;
//! - a Unix socket's sender first builds a buffer with the bytes and queues it on the peer at
//!   the end of the call: such a write goes by its return, unless its call was held up (far
//!   longer than usual: where, is not known) or a read during it took bytes that were not all
//!   there when it started (it may have woken that reader, who can take its CPU before it
//!   returns, 0.8 ms was seen): then by its start.
//!
//! What the recordings show. In the replicated-store sample, workers queue tokens on one Unix
//! socket that the senders read, often much later. Of two writes of the usual few microseconds
//! whose calls overlapped, the one that started first and returned later had moved second in 3
//! cases in 4 (7.3 µs against 3.3, 5.4 against 3.0, 3.07 against 3.04; not 11.5 against 1.9);
//! of those held up 0.2 to 1.7 ms, it had moved first in 2 of 3. On 13 recordings of the sample
//! on three machines (400 local commits and 400 remote acks each), the instances given another
//! instance's sender fell from 37 (writes by their start) to 29; by their return alone they
//! were 86. On generated pools whose workers answer through one pipe (`replies=sender`), the
//! two such pairs went one each way, and 7 pairs with a held-up writer all by start.

use super::{span_ending, span_starting, Span, Xfer};
use scalpel_model::graph::Leaf;

/// How many times its run's median call length a write's call must take to count as held up.
/// The token writes above took a median of 3.3 µs; 97% of them were under 10 µs, and those held
/// up took from 20 µs to 1.7 ms.
const HELD_UP: u64 = 4;

/// Where in a write's call the kernel puts its bytes in the channel's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Enqueue {
    /// As the call begins: a pipe's writer takes the pipe's lock first, a TCP sender its
    /// socket's, and copies under it.
    Start,
    /// As it ends: a Unix socket's sender builds its buffer first and then queues it on the
    /// peer.
    End,
}

/// Writes (each the leaf its call ended), renumbered by when their bytes most likely moved:
/// by call start where the channel queues them as the call begins, else as [`moved`] says;
/// sorted by offset. `reads` are the channel's reads (each the leaf its call started).
pub(crate) fn order_writes(writes: &mut [Xfer], reads: &[Xfer], leaves: &[Leaf], enqueue: Enqueue) {
    let span = |x: &Xfer| span_ending(leaves, x.2);
    // Built on the first run that needs them.
    let mut returns: Option<Vec<(u64, u64)>> = None;
    super::renumber_runs(writes, |base, run| {
        // The usual stream (one writer at a time) is in order already: no sort, no buffer.
        if run.windows(2).all(|w| {
            let (a, b) = (span(&w[0]), span(&w[1]));
            a.start <= b.start && a.end <= b.end
        }) {
            return;
        }
        if enqueue == Enqueue::Start {
            run.sort_by_key(|x| (span(x).start, x.0));
            return;
        }
        let run_of = Run::new(base, run, leaves);
        let returns = returns.get_or_insert_with(|| read_by(reads, leaves));
        run.sort_by_cached_key(|x| (moved(span(x), &run_of, returns), x.0));
    });
}

/// Every read's return, sorted, with the highest stream position read by then.
fn read_by(reads: &[Xfer], leaves: &[Leaf]) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = reads
        .iter()
        .map(|x| (span_starting(leaves, x.2).end, x.0.saturating_add(x.1)))
        .collect();
    out.sort_unstable();
    let mut high = 0;
    for r in &mut out {
        high = high.max(r.1);
        r.1 = high;
    }
    out
}

/// One unbroken run of writes, as [`moved`] needs it.
struct Run {
    /// The stream position the run starts at.
    base: u64,
    /// Every write's call start, sorted, with the position the run's bytes reach if every
    /// write that started by then has moved.
    starts: Vec<(u64, u64)>,
    /// A call longer than this was held up.
    held_up: u64,
}

impl Run {
    fn new(base: u64, run: &[Xfer], leaves: &[Leaf]) -> Run {
        let spans: Vec<Span> = run.iter().map(|x| span_ending(leaves, x.2)).collect();
        let mut starts: Vec<(u64, u64)> =
            spans.iter().zip(run).map(|(s, x)| (s.start, x.1)).collect();
        starts.sort_unstable();
        let mut pos = base;
        for s in &mut starts {
            pos = pos.saturating_add(s.1);
            s.1 = pos;
        }
        let mut lengths: Vec<u64> = spans
            .iter()
            .map(|s| s.end.saturating_sub(s.start))
            .collect();
        // The lower median: of two calls, the shorter.
        let mid = (lengths.len().saturating_sub(1)) / 2;
        let median = match lengths.is_empty() {
            true => 0,
            false => *lengths.select_nth_unstable(mid).1,
        };
        Run {
            base,
            starts,
            held_up: median.saturating_mul(HELD_UP),
        }
    }
}

/// When a write's bytes most likely moved: when its call returned, unless the call was held up
/// or a read during it took bytes that were not all there when it started (it may have woken
/// that reader); then when it started. `returns` is from [`read_by`].
fn moved(call: Span, run: &Run, returns: &[(u64, u64)]) -> u64 {
    if call.end.saturating_sub(call.start) > run.held_up {
        return call.start;
    }
    let high = |t: u64| {
        let i = returns.partition_point(|r| r.0 <= t);
        i.checked_sub(1).map_or(0, |k| returns[k].1)
    };
    // The highest position written by calls that started before this one.
    let i = run.starts.partition_point(|s| s.0 < call.start);
    let there = i.checked_sub(1).map_or(run.base, |k| run.starts[k].1);
    let by_end = high(call.end);
    if by_end > high(call.start) && by_end > there {
        call.start
    } else {
        call.end
    }
}
