//! Putting each side of a byte stream back in the order its bytes moved, before reads are
//! matched with writes by offset.
//!
//! The agent reserves a call's offset once the call has returned, since only then is the byte
//! count known. A thread held up between the kernel's copy and the reservation (preempted: 0.8 ms
//! was seen on a loaded machine) takes a later offset than a call that came after its own. Two
//! threads writing one pipe in turn then swap places, and the reader's edges point forward in
//! time; two senders taking tokens from one queue socket swap packets. The call times settle
//! most of it:
//!
//! - a write's bytes join the stream where the kernel queues them ([`order_writes`]): as the
//!   call begins on a pipe or TCP, so such writes go by start time (for two writes one of which
//!   caused the other through the reader this is always right); as it ends on a Unix socket,
//!   so such a write goes by its return, unless it was held up or may have woken a reader;
//! - a read takes bytes that were already there right after its call starts, and bytes it was
//!   waiting for as they arrive. So at each position of the stream the read that takes it is,
//!   among the reads not placed yet, the one that started first, unless several were already
//!   waiting when the bytes were written. Then it depends on how the channel wakes its readers
//!   ([`Wake`]): a socket wakes them all and the first to get a CPU takes the bytes, so the one
//!   that returned first; a pipe wakes one, the one waiting longest, so the one that started
//!   first, a reader woken for bytes another took going after those still asleep;
//! - but no read takes bytes written after it returned: a woken reader can be robbed by one that
//!   enters later, so the likely choice gives way when it would leave another read only such
//!   bytes. On a pipe a reader that entered after the bytes were written, while the woken
//!   reader had not yet returned, and found bytes there (no write began during its call) is
//!   taken to have robbed it: a woken reader that has not returned has most often not run yet,
//!   while one that enters is running (a generated pool, two workers on one pipe beside two
//!   busy threads: misses of which worker read a job fell from 32 to 8 in 144). When the
//!   likely choice gives way to a reader that was already waiting when the bytes came, that
//!   reader was the one woken: the queue's order was not the one guessed (a robbed reader
//!   queues again as soon as it runs, often well within a scheduler period), so the likely
//!   choice was robbed of nothing and keeps its place. Taking it for robbed put it out of the
//!   queue, and the next bytes went to the wrong worker (fixed seed 7 under load, corpus case
//!   `gen-pipe-readers`).
//!
//! The recorded offset breaks ties. Offsets move only within one unbroken run of a side's
//! calls, so a gap (lost events, bytes of an untraced writer) stays where it was. Among truly
//! simultaneous calls the order stays a guess.

mod waiting;
mod writes;

use std::collections::BTreeSet;

use waiting::Waiting;
pub(crate) use waiting::Wake;
pub(crate) use writes::{order_writes, Enqueue};

use scalpel_model::graph::Leaf;

/// One transfer: offset, length, leaf.
pub(super) type Xfer = (u64, u64, u32);

/// A call's start and return times.
#[derive(Clone, Copy)]
struct Span {
    start: u64,
    end: u64,
}

/// The span of the call that ended leaf `ended` (a write's leaf) or started leaf `started` (a
/// read's): a leaf ends when its ending call starts, the call's time is the leaf's block time,
/// and the next leaf of the thread starts when the call returns.
fn span_ending(leaves: &[Leaf], ended: u32) -> Span {
    leaves
        .get(ended as usize)
        .map_or(Span { start: 0, end: 0 }, |l| Span {
            start: l.end_ns,
            end: l.end_ns.saturating_add(l.block_ns),
        })
}

fn span_starting(leaves: &[Leaf], started: u32) -> Span {
    let Some(l) = leaves.get(started as usize) else {
        return Span { start: 0, end: 0 };
    };
    let before = started
        .checked_sub(1)
        .and_then(|p| leaves.get(p as usize))
        .filter(|p| p.thread == l.thread);
    Span {
        start: before.map_or(l.start_ns, |p| p.end_ns),
        end: l.start_ns,
    }
}

/// Sorts `x` by offset, then renumbers each unbroken run in the order `order` leaves it in.
fn renumber_runs(x: &mut [Xfer], mut order: impl FnMut(u64, &mut [Xfer])) {
    x.sort_unstable();
    let mut start = 0;
    while start < x.len() {
        let mut end = start + 1;
        while end < x.len() && x[end - 1].0.saturating_add(x[end - 1].1) == x[end].0 {
            end += 1;
        }
        let run = &mut x[start..end];
        let base = run[0].0;
        if run.len() > 1 {
            order(base, run);
            let mut pos = base;
            for t in run.iter_mut() {
                t.0 = pos;
                pos = pos.saturating_add(t.1);
            }
        }
        start = end;
    }
}

/// How many pending reads the feasibility check looks ahead over. A tight chain of reads that
/// must all be placed before the next write longer than this would need that many readers
/// waiting on one stream at once.
const LOOKAHEAD: usize = 64;

/// Reads (each the leaf its call started), renumbered in the order they took their bytes from
/// `writes` (already ordered, sorted by offset), waiting readers woken as `wake` says; sorted by
/// offset.
pub(super) fn order_reads(reads: &mut [Xfer], writes: &[Xfer], leaves: &[Leaf], wake: Wake) {
    // When the byte at `pos` was written: 0 (long ago) where no traced write put it.
    let written = |pos: u64| -> u64 {
        let i = writes.partition_point(|w| w.0.saturating_add(w.1) <= pos);
        writes
            .get(i)
            .filter(|w| w.0 <= pos)
            .map_or(0, |w| span_ending(leaves, w.2).start)
    };
    // Built on the first run that needs them: the earliest start among writes[i..], and the
    // writes' starts in order.
    let mut later_start: Vec<u64> = Vec::new();
    let mut write_starts: Vec<u64> = Vec::new();
    renumber_runs(reads, |base, run| {
        // Reads one after another (one reader at a time, the usual stream) keep their order:
        // each started after the one before had returned.
        let span = |x: &Xfer| span_starting(leaves, x.2);
        if run.windows(2).all(|w| span(&w[0]).end <= span(&w[1]).start) {
            return;
        }
        if later_start.len() != writes.len() {
            later_start = suffix_min_start(writes, leaves);
            write_starts = writes
                .iter()
                .map(|w| span_ending(leaves, w.2).start)
                .collect();
            write_starts.sort_unstable();
        }
        let ctx = Placing {
            written: &written,
            writes,
            later_start: &later_start,
            leaves,
            wake,
            write_starts: &write_starts,
        };
        if let Some(placed) = place_reads(base, run, &ctx) {
            run.copy_from_slice(&placed);
        }
    });
}

/// `out[i]`: the earliest call start among `writes[i..]` (non-decreasing in `i`).
fn suffix_min_start(writes: &[Xfer], leaves: &[Leaf]) -> Vec<u64> {
    let mut out = vec![0; writes.len()];
    let mut min = u64::MAX;
    for (i, w) in writes.iter().enumerate().rev() {
        min = min.min(span_ending(leaves, w.2).start);
        out[i] = min;
    }
    out
}

/// What placing the reads of a run needs besides the run.
struct Placing<'a, W> {
    /// When the byte at a position was written (0: no traced write put it there).
    written: &'a W,
    writes: &'a [Xfer],
    /// `later_start[i]`: the earliest call start among `writes[i..]`.
    later_start: &'a [u64],
    leaves: &'a [Leaf],
    wake: Wake,
    /// Every write's call start, sorted.
    write_starts: &'a [u64],
}

/// The order in which the concurrent reads of one run took their bytes, or None if it cannot
/// be settled (left as recorded).
///
/// Among the reads not placed yet, the bytes at each position go to the read that started
/// first, unless several were already waiting when the bytes were written: then to the one
/// [`Wake`] says. That is the likely order, but not always a possible one: a reader woken
/// by a write may not get a CPU before another thread enters its read, finds the bytes there
/// and takes them, so the woken reader sleeps on until the next write. The likely choice is
/// then kept only if every other pending read can still be given bytes written before it
/// returned; otherwise the read that must return soonest takes the position. (Seen in the
/// replicated-store sample: the last reply's token went to a sender that was still asleep 4 ms
/// later, the sender that took it was matched to the shutdown token written after it had
/// returned, and the reply task lost its send.)
fn place_reads<W: Fn(u64) -> u64>(
    base: u64,
    run: &[Xfer],
    ctx: &Placing<'_, W>,
) -> Option<Vec<Xfer>> {
    let Placing {
        written,
        writes,
        later_start,
        leaves,
        wake,
        ..
    } = *ctx;
    let spans: Vec<Span> = run.iter().map(|x| span_starting(leaves, x.2)).collect();
    // The highest offset at which each read can begin: its last byte must have been written by
    // a call that started before the read returned.
    let limit: Vec<u64> = run
        .iter()
        .zip(&spans)
        .map(|(x, s)| {
            let i = later_start.partition_point(|&w| w <= s.end);
            writes.get(i).map_or(u64::MAX, |w| w.0.saturating_sub(x.1))
        })
        .collect();
    let mut by_start: Vec<(u64, u64, u64, usize)> = (0..run.len())
        .map(|i| (spans[i].start, spans[i].end, run[i].0, i))
        .collect();
    by_start.sort_unstable();
    // Pending reads by the highest offset each can take, then by call start: the one that must
    // come soonest first, the sooner started among equals.
    let key = |i: usize| (limit[i], spans[i].start, i);
    let mut pending: BTreeSet<(u64, u64, usize)> = (0..run.len()).map(key).collect();
    // Whether placing read `i` at `pos` leaves every other pending read a possible position
    // (the reads that must come soonest placed first, which is possible if any order is).
    let feasible = |pending: &BTreeSet<(u64, u64, usize)>, pos: u64, i: usize| -> bool {
        if pos > limit[i] {
            return false;
        }
        let mut at = pos.saturating_add(run[i].1);
        for &(last, _, j) in pending.iter().filter(|p| p.2 != i).take(LOOKAHEAD) {
            if at > last {
                return false;
            }
            at = at.saturating_add(run[j].1);
        }
        true
    };
    let mut done = vec![false; run.len()];
    // Reads that had started by the time the next bytes were written.
    let mut waiting = Waiting::new(wake);
    let mut next = 0;
    let mut pos = base;
    let mut placed: Vec<Xfer> = Vec::with_capacity(run.len());
    let thread = |k: usize| leaves.get(run[k].2 as usize).map(|l| l.thread);
    while placed.len() < run.len() {
        let at = written(pos);
        waiting.retain(&done);
        while let Some(&(start, end, off, i)) = by_start.get(next) {
            if done[i] {
                next += 1;
                continue;
            }
            // With no read waiting, the next to start takes the bytes on entry.
            if start > at && !waiting.is_empty() {
                break;
            }
            waiting.push(start, end, off, i);
            next += 1;
            if start > at {
                break;
            }
        }
        let likely = waiting.take_woken(at)?;
        let woken = spans[likely];
        // On a pipe, the first reader to enter after the bytes came, while the woken one was
        // not back, robs it when it found them there (and no earlier read of its thread waits).
        let robber = (wake == Wake::Oldest)
            .then(|| {
                let r = by_start[next..].iter().find(|r| !done[r.3])?;
                let entered = r.0 > at && r.0 < woken.end && found_bytes(ctx, spans[r.3]);
                let first_of_thread = !waiting.any(|w| thread(w) == thread(r.3));
                (entered && first_of_thread && feasible(&pending, pos, r.3)).then_some(r.3)
            })
            .flatten();
        let i = match robber {
            Some(r) => r,
            None if feasible(&pending, pos, likely) => likely,
            None => pending.first()?.2,
        };
        if i != likely {
            if spans[i].start > at {
                waiting.put_back(likely, (woken.start, woken.end), run[likely].0, at);
            } else {
                // A reader already waiting when the bytes came took them: it was the one woken
                // (the queue was not in the order guessed, as when a robbed reader queued
                // again at once), and the guessed one slept on in its place, robbed of nothing.
                waiting.push(woken.start, woken.end, run[likely].0, likely);
            }
        }
        done[i] = true;
        pending.remove(&key(i));
        placed.push(run[i]);
        pos = pos.saturating_add(run[i].1);
    }
    Some(placed)
}

/// Whether a read found bytes waiting when it entered: no write began while it was in the call.
fn found_bytes<W>(ctx: &Placing<'_, W>, span: Span) -> bool {
    let i = ctx.write_starts.partition_point(|&w| w <= span.start);
    ctx.write_starts.get(i).is_none_or(|&w| w >= span.end)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A leaf on `thread` from `start` to `end` whose ending call takes `block`.
    fn leaf(thread: u32, start: u64, end: u64, block: u64) -> Leaf {
        Leaf {
            block_ns: block,
            ..Leaf::new(
                scalpel_model::graph::ThreadId::new(thread),
                scalpel_model::graph::LeafTypeId::new(0),
                start,
                end,
            )
        }
    }

    /// Two senders take tokens from one queue socket long after both were written. The one
    /// that started its read first took the first token although it returned later (held up
    /// on the way out), and the agent gave it the later offset.
    #[test]
    fn a_read_of_bytes_already_there_goes_by_start() {
        let leaves = vec![
            leaf(0, 0, 100, 1),    // 0: writer, writes token A at 100
            leaf(0, 101, 200, 1),  // 1: writer, writes token B at 200
            leaf(1, 0, 1_000, 80), // 2: sender 1 calls recv at 1000, returns at 1080
            leaf(1, 1_080, 2_000, 0),
            leaf(2, 0, 1_020, 5), // 4: sender 2 calls recv at 1020, returns at 1025
            leaf(2, 1_025, 2_000, 0),
        ];
        let mut writes = vec![(0, 8, 0), (8, 8, 1)];
        order_writes(&mut writes, &[], &leaves, Enqueue::Start);
        // As recorded: sender 2 reserved first.
        let mut reads = vec![(8, 8, 3), (0, 8, 5)];
        order_reads(&mut reads, &writes, &leaves, Wake::All);
        assert_eq!(reads, vec![(0, 8, 3), (8, 8, 5)]);
    }

    /// Two readers wait on an empty pipe; the bytes come later. The first to return took the
    /// first bytes, whichever started waiting first.
    #[test]
    fn readers_already_waiting_go_by_return() {
        let leaves = vec![
            leaf(0, 0, 500, 1),   // 0: writer, writes A at 500
            leaf(0, 501, 600, 1), // 1: writer, writes B at 600
            leaf(1, 0, 10, 700),  // 2: reader 1 waits from 10, returns at 710
            leaf(1, 710, 900, 0), // 3
            leaf(2, 0, 20, 490),  // 4: reader 2 waits from 20, returns at 510
            leaf(2, 510, 900, 0), // 5
        ];
        let mut writes = vec![(0, 8, 0), (8, 8, 1)];
        order_writes(&mut writes, &[], &leaves, Enqueue::Start);
        let mut reads = vec![(0, 8, 3), (8, 8, 5)];
        order_reads(&mut reads, &writes, &leaves, Wake::All);
        assert_eq!(reads, vec![(0, 8, 5), (8, 8, 3)]);
    }

    /// A reader waits on the queue socket (sender 1); a token is written; before sender 1 gets a
    /// CPU, sender 2 enters its read, takes the token and returns. Sender 1 sleeps on until the
    /// next token, written after sender 2 had returned. Sender 1 was waiting first, but giving
    /// it the first token would leave sender 2 a token written after its return.
    #[test]
    fn a_waiting_reader_robbed_by_a_later_one_takes_the_next_bytes() {
        let leaves = vec![
            leaf(0, 0, 100, 1),     // 0: writer, writes token A at 100
            leaf(0, 101, 5_000, 1), // 1: writer, writes token B at 5000
            leaf(1, 0, 50, 4_960),  // 2: sender 1 waits from 50, returns at 5010
            leaf(1, 5_010, 6_000, 0),
            leaf(2, 0, 150, 2), // 4: sender 2 calls recv at 150, returns at 152
            leaf(2, 152, 6_000, 0),
        ];
        let mut writes = vec![(0, 8, 0), (8, 8, 1)];
        order_writes(&mut writes, &[], &leaves, Enqueue::Start);
        for recorded in [vec![(0, 8, 3), (8, 8, 5)], vec![(8, 8, 3), (0, 8, 5)]] {
            let mut reads = recorded;
            order_reads(&mut reads, &writes, &leaves, Wake::All);
            assert_eq!(reads, vec![(0, 8, 5), (8, 8, 3)]);
        }
    }

    /// Two tokens are written while reader 1 waits; before it gets a CPU, readers 2 and 3 enter
    /// one after the other and take them. Reader 1 returns with the third token, much later.
    /// Both tokens must go to the robbers, in the order they entered (even though the agent
    /// reserved reader 3's offset first): the likely choice, reader 1, would leave one of them
    /// bytes written after its return.
    #[test]
    fn robbers_take_the_tokens_in_the_order_they_entered() {
        let leaves = vec![
            leaf(0, 0, 100, 1),     // 0: token A at 100
            leaf(0, 101, 105, 1),   // 1: token B at 105
            leaf(0, 106, 9_000, 1), // 2: token C at 9000
            leaf(1, 0, 10, 9_005),  // 3: reader 1 waits from 10, returns at 9015
            leaf(1, 9_015, 9_900, 0),
            leaf(2, 0, 110, 10), // 5: reader 2 enters at 110, returns at 120
            leaf(2, 120, 9_900, 0),
            leaf(3, 0, 113, 2), // 7: reader 3 enters at 113, returns at 115
            leaf(3, 115, 9_900, 0),
        ];
        let mut writes = vec![(0, 8, 0), (8, 8, 1), (16, 8, 2)];
        order_writes(&mut writes, &[], &leaves, Enqueue::Start);
        let mut reads = vec![(0, 8, 8), (8, 8, 6), (16, 8, 4)];
        order_reads(&mut reads, &writes, &leaves, Wake::All);
        assert_eq!(reads, vec![(0, 8, 6), (8, 8, 8), (16, 8, 4)]);
    }

    /// Two workers wait on a pipe of jobs; a job is written, then a second. The worker that
    /// waited longest is woken for the first and takes it, but is held up before it returns;
    /// the other, woken for the second, returns first. A pipe wakes its oldest reader, so the
    /// first job is the first waiter's; a socket's readers all wake, and the first back took it.
    #[test]
    fn a_pipe_gives_the_first_bytes_to_the_reader_waiting_longest() {
        let leaves = vec![
            leaf(0, 0, 1_000, 1),     // 0: writer, job A at 1000
            leaf(0, 1_001, 1_100, 1), // 1: writer, job B at 1100
            leaf(1, 0, 100, 1_900),   // 2: worker 1 waits from 100, returns at 2000
            leaf(1, 2_000, 3_000, 0),
            leaf(2, 0, 500, 700), // 4: worker 2 waits from 500, returns at 1200
            leaf(2, 1_200, 3_000, 0),
        ];
        let mut writes = vec![(0, 8, 0), (8, 8, 1)];
        order_writes(&mut writes, &[], &leaves, Enqueue::Start);
        let recorded = vec![(0, 8, 5), (8, 8, 3)];
        let mut pipe = recorded.clone();
        order_reads(&mut pipe, &writes, &leaves, Wake::Oldest);
        assert_eq!(pipe, vec![(0, 8, 3), (8, 8, 5)]);
        let mut socket = recorded;
        order_reads(&mut socket, &writes, &leaves, Wake::All);
        assert_eq!(socket, vec![(0, 8, 5), (8, 8, 3)]);
    }

    /// Worker 2 waits on a pipe; job A wakes it, but before it runs worker 1 enters, takes A and
    /// returns, then waits again. Job B wakes worker 1, the only reader still queued, and job C
    /// is left for worker 2, which at last runs. Worker 2 began waiting first, but a reader
    /// robbed of the bytes that woke it goes after those still waiting.
    #[test]
    fn a_pipe_reader_robbed_of_its_bytes_goes_after_those_still_waiting() {
        let leaves = vec![
            leaf(0, 0, 1_000, 1),       // 0: job A at 1000
            leaf(0, 1_001, 1_500, 1),   // 1: job B at 1500
            leaf(0, 1_501, 1_700, 1),   // 2: job C at 1700
            leaf(1, 0, 1_100, 10),      // 3: worker 1 enters at 1100, returns at 1110
            leaf(1, 1_110, 1_400, 800), // 4: worker 1 waits from 1400, returns at 2200
            leaf(1, 2_200, 3_000, 0),
            leaf(2, 0, 900, 1_000), // 6: worker 2 waits from 900, returns at 1900
            leaf(2, 1_900, 3_000, 0),
        ];
        let mut writes = vec![(0, 8, 0), (8, 8, 1), (16, 8, 2)];
        order_writes(&mut writes, &[], &leaves, Enqueue::Start);
        let mut reads = vec![(0, 8, 4), (8, 8, 7), (16, 8, 5)];
        order_reads(&mut reads, &writes, &leaves, Wake::Oldest);
        assert_eq!(reads, vec![(0, 8, 4), (8, 8, 5), (16, 8, 7)]);
    }

    /// Worker 1 waits on a pipe; job A wakes it, but it gets no CPU. Worker 2 enters after A
    /// was written, finds it and returns at once; job B comes later and worker 1 at last runs
    /// and takes it. Both orders are possible (each read returned after the bytes it would
    /// take were written), so this is the entering reader's rule, not feasibility. When
    /// worker 2's call lasted past B's write, it may have waited for B: worker 1 keeps A.
    #[test]
    fn a_pipe_reader_that_enters_and_finds_bytes_robs_the_one_not_yet_back() {
        let leaves = vec![
            leaf(0, 0, 1_000, 1),     // 0: job A at 1000
            leaf(0, 1_001, 1_300, 1), // 1: job B at 1300
            leaf(1, 0, 100, 1_900),   // 2: worker 1 waits from 100, returns at 2000
            leaf(1, 2_000, 3_000, 0),
            leaf(2, 0, 1_200, 50), // 4: worker 2 enters at 1200, returns at 1250
            leaf(2, 1_250, 3_000, 0),
        ];
        let mut writes = vec![(0, 8, 0), (8, 8, 1)];
        order_writes(&mut writes, &[], &leaves, Enqueue::Start);
        let recorded = vec![(0, 8, 3), (8, 8, 5)];
        let mut reads = recorded.clone();
        order_reads(&mut reads, &writes, &leaves, Wake::Oldest);
        assert_eq!(reads, vec![(0, 8, 5), (8, 8, 3)]);
        // A reader that waited through a write did not find bytes on entry: no robbery.
        let mut waited = leaves.clone();
        waited[4] = leaf(2, 0, 1_200, 150); // returns at 1350, after B was written
        waited[5] = leaf(2, 1_350, 3_000, 0);
        let mut reads = recorded;
        order_reads(&mut reads, &writes, &waited, Wake::Oldest);
        assert_eq!(reads, vec![(0, 8, 3), (8, 8, 5)]);
    }

    /// Worker 2 waits on a pipe from 100 and worker 1 from 500, yet job A goes to worker 1: it
    /// returned before any other bytes were written, so it must have. It was at the head of the
    /// queue, then (worker 2 queued behind it once more, as a robbed reader does), and A woke
    /// it, not worker 2, which slept on in its place: job B, written while worker 1 was back at
    /// the queue's tail, is worker 2's, and C worker 1's, although worker 1 returned first.
    #[test]
    fn a_waiting_reader_that_must_take_the_bytes_leaves_the_one_guessed_in_its_place() {
        let leaves = vec![
            leaf(0, 0, 1_000, 1),         // 0: job A at 1000
            leaf(0, 1_001, 2_000, 1),     // 1: job B at 2000
            leaf(0, 2_001, 3_000, 1),     // 2: job C at 3000
            leaf(1, 0, 500, 550),         // 3: worker 1 waits from 500, returns at 1050
            leaf(1, 1_050, 1_200, 2_800), // 4: and from 1200, returns at 4000
            leaf(1, 4_000, 9_000, 0),
            leaf(2, 0, 100, 4_900), // 6: worker 2 waits from 100, returns at 5000
            leaf(2, 5_000, 9_000, 0),
        ];
        let mut writes = vec![(0, 8, 0), (8, 8, 1), (16, 8, 2)];
        order_writes(&mut writes, &[], &leaves, Enqueue::Start);
        let mut reads = vec![(0, 8, 4), (8, 8, 5), (16, 8, 7)];
        order_reads(&mut reads, &writes, &leaves, Wake::Oldest);
        assert_eq!(reads, vec![(0, 8, 4), (8, 8, 7), (16, 8, 5)]);
    }

    /// Worker 1 waits on a pipe; job A wakes it but worker 2 enters and takes A. Both then wait
    /// 20 ms for the next jobs, B and C. By then worker 1 had long run, found the pipe empty
    /// and queued again, ahead of worker 2: B is its, although worker 2 returned first.
    #[test]
    fn a_robbed_pipe_reader_is_back_in_its_place_when_the_next_bytes_come_much_later() {
        let leaves = vec![
            leaf(0, 0, 1_000, 1),               // 0: job A at 1000
            leaf(0, 1_001, 20_000_000, 1),      // 1: job B at 20 ms
            leaf(0, 20_000_001, 20_000_050, 1), // 2: job C
            leaf(1, 0, 900, 19_999_400),        // 3: worker 1 waits from 900
            leaf(1, 20_000_300, 30_000_000, 0), // 4
            leaf(2, 0, 1_100, 10),              // 5: worker 2 enters at 1100
            leaf(2, 1_110, 1_400, 19_998_800),  // 6: and waits from 1400
            leaf(2, 20_000_200, 30_000_000, 0), // 7
        ];
        let mut writes = vec![(0, 8, 0), (8, 8, 1), (16, 8, 2)];
        order_writes(&mut writes, &[], &leaves, Enqueue::Start);
        let mut reads = vec![(0, 8, 4), (8, 8, 6), (16, 8, 7)];
        order_reads(&mut reads, &writes, &leaves, Wake::Oldest);
        assert_eq!(reads, vec![(0, 8, 6), (8, 8, 4), (16, 8, 7)]);
    }

    /// A writer held up after its write (the reader it woke took its CPU) reserved after the
    /// writer that followed it, through the reader; a gap (a lost write) keeps its place.
    #[test]
    fn writes_go_by_start_within_unbroken_runs() {
        let leaves = vec![
            leaf(0, 0, 100, 900), // 0: write at 100, back at 1000
            leaf(1, 0, 300, 1),   // 1: write at 300
            leaf(0, 0, 50, 1),    // 2: write at 50, after the gap
            leaf(1, 0, 40, 1),    // 3: write at 40, after the gap
            leaf(2, 0, 90, 110),  // 4: a reader waits from 90, back at 200
            leaf(2, 200, 250, 0), // 5
        ];
        let mut writes = vec![(8, 8, 0), (0, 8, 1), (24, 4, 2), (28, 8, 3)];
        order_writes(&mut writes, &[(0, 8, 5)], &leaves, Enqueue::End);
        assert_eq!(writes, vec![(0, 8, 0), (8, 8, 1), (24, 8, 3), (32, 4, 2)]);
    }

    /// A write wakes a reader that takes its bytes and returns while the writer is still in its
    /// call (held up by the reader on its CPU, though not for long); the reader then has the
    /// next write made, which returns first. The first write goes by its start.
    #[test]
    fn a_write_whose_bytes_were_read_during_its_call_goes_by_start() {
        let leaves = vec![
            leaf(0, 0, 100, 12),  // 0: write from 100, back at 112
            leaf(1, 0, 106, 3),   // 1: write from 106, back at 109
            leaf(2, 0, 90, 14),   // 2: a reader waits from 90, back at 104
            leaf(2, 104, 200, 0), // 3
        ];
        for recorded in [vec![(0, 8, 0), (8, 8, 1)], vec![(8, 8, 0), (0, 8, 1)]] {
            let mut writes = recorded;
            order_writes(&mut writes, &[(0, 8, 3)], &leaves, Enqueue::End);
            assert_eq!(writes, vec![(0, 8, 0), (8, 8, 1)]);
        }
    }

    /// A writer held up far longer than the usual call (preempted on its way back) goes by its
    /// start, though nobody read during its call.
    #[test]
    fn a_write_held_up_goes_by_start() {
        let leaves = vec![
            leaf(0, 0, 1_000, 636_000), // 0: write from 1000, back 636 µs later
            leaf(1, 0, 40_000, 3_000),  // 1: write from 40 µs
            leaf(2, 0, 80_000, 4_000),  // 2: write from 80 µs
        ];
        let mut writes = vec![(16, 8, 0), (0, 8, 1), (8, 8, 2)];
        order_writes(&mut writes, &[], &leaves, Enqueue::End);
        assert_eq!(writes, vec![(0, 8, 0), (8, 8, 1), (16, 8, 2)]);
    }

    /// Two writers of a pipe, one call inside the other, nobody reading: the pipe queues bytes
    /// as a call begins (under its lock), so the one that started first goes first.
    #[test]
    fn overlapping_writes_of_a_pipe_go_by_start() {
        let leaves = vec![
            leaf(0, 0, 1_000, 2_204), // 0: write from 1000, back at 3204
            leaf(1, 0, 1_080, 1_002), // 1: write from 1080, back at 2082
        ];
        for recorded in [vec![(0, 8, 0), (8, 8, 1)], vec![(8, 8, 0), (0, 8, 1)]] {
            let mut writes = recorded;
            order_writes(&mut writes, &[], &leaves, Enqueue::Start);
            assert_eq!(writes, vec![(0, 8, 0), (8, 8, 1)]);
        }
    }

    /// Two workers put tokens into a queue socket while no reader waits (seen in the
    /// replicated-store sample): the write that started first but returned later moved its
    /// bytes second, whatever the agent reserved.
    #[test]
    fn overlapping_writes_nobody_reads_go_by_return() {
        let leaves = vec![
            leaf(0, 0, 1_000, 7_343), // 0: write from 1000, back at 8343
            leaf(1, 0, 2_743, 3_336), // 1: write from 2743, back at 6079
            leaf(2, 0, 9_000, 10),    // 2: a sender reads long after
            leaf(2, 9_010, 9_500, 10),
            leaf(2, 9_510, 9_900, 0),
        ];
        for recorded in [vec![(0, 8, 0), (8, 8, 1)], vec![(8, 8, 0), (0, 8, 1)]] {
            let mut writes = recorded;
            order_writes(&mut writes, &[(0, 8, 3), (8, 8, 4)], &leaves, Enqueue::End);
            assert_eq!(writes, vec![(0, 8, 1), (8, 8, 0)]);
        }
    }
}
