//! The order the trace gives notifications is the real order: every wakeup follows a notification
//! on the same object, every semaphore wait follows enough posts, and every byte read on a pipe,
//! socketpair or loopback TCP connection follows the writes that produced it (by offset and
//! time: byte streams carry no sequence numbers).

use scalpel_e2e::*;
use std::collections::BTreeMap;

fn key(e: &EventRef<'_>) -> u64 {
    e.event.obj.expect("object").key
}

fn end(e: &EventRef<'_>) -> u64 {
    e.event.ts_ns + e.event.dur_ns
}

#[test]
fn notifications_and_bytes_are_ordered() {
    let exe = build_c("ordering", "ordering", &[]);
    let run = record(&exe, &[]).success();
    let t = run.load();

    // Condition variables.
    let mut signals: BTreeMap<u64, Vec<(u64, u64)>> = BTreeMap::new();
    for e in with_op(&t, Op::CondSignal)
        .iter()
        .chain(with_op(&t, Op::CondBroadcast).iter())
    {
        signals
            .entry(key(e))
            .or_default()
            .push((e.event.seq.unwrap(), e.event.ts_ns));
    }
    let wakeups: Vec<_> = with_op(&t, Op::CondWait)
        .into_iter()
        .filter(|e| e.event.result == Some(0))
        .collect();
    assert!(wakeups.len() >= 2000, "only {} wakeups", wakeups.len());
    for w in &wakeups {
        let s = w.event.seq.expect("a wakeup has a sequence number");
        let earlier = signals.get(&key(w)).map_or(0, |v| {
            v.iter().filter(|(q, ts)| *q < s && *ts <= end(w)).count()
        });
        assert!(
            earlier > 0,
            "wakeup seq {s} on cond {:#x} has no earlier signal",
            key(w)
        );
    }

    // Semaphores: counting semantics with an initial value of 0.
    let posts: Vec<u64> = with_op(&t, Op::SemPost)
        .iter()
        .map(|e| e.event.seq.unwrap())
        .collect();
    let waits: Vec<u64> = with_op(&t, Op::SemWait)
        .iter()
        .map(|e| e.event.seq.unwrap())
        .collect();
    assert_eq!(waits.len(), 2000);
    for w in &waits {
        let posted = posts.iter().filter(|p| *p < w).count();
        let waited = waits.iter().filter(|x| *x <= w).count();
        assert!(
            posted >= waited,
            "wait seq {w}: {waited} waits but only {posted} earlier posts"
        );
    }

    // Byte streams: their transfers are ordered by offset (they carry no sequence number), and
    // every read returned after the writes of its bytes had started.
    #[derive(Default)]
    struct Stream {
        writes: Vec<(u64, u64, u64)>, // offset, len, ts
        reads: Vec<(u64, u64, u64)>,  // offset, len, end
    }
    let mut streams: BTreeMap<u64, Stream> = BTreeMap::new();
    for e in all_events(&t) {
        let Some(op) = e.event.op else { continue };
        let (Some(off), Some(len), Some(obj)) = (e.event.offset, e.event.result, e.event.obj)
        else {
            continue;
        };
        if len <= 0 {
            continue;
        }
        let s = streams.entry(obj.key).or_default();
        match op {
            Op::Write | Op::Writev | Op::Send | Op::Sendto | Op::Sendmsg => {
                assert_eq!(e.event.seq, None, "a stream write with a sequence number");
                s.writes.push((off, len as u64, e.event.ts_ns))
            }
            Op::Read | Op::Readv | Op::Recv | Op::Recvfrom | Op::Recvmsg => {
                assert_eq!(e.event.seq, None, "a stream read with a sequence number");
                s.reads.push((off, len as u64, end(&e)))
            }
            _ => {}
        }
    }
    let full: Vec<_> = streams
        .values()
        .filter(|s| s.reads.iter().map(|r| r.1).sum::<u64>() == 200_000)
        .collect();
    // pipe, socketpair both ways, TCP both ways
    assert_eq!(
        full.len(),
        5,
        "expected 5 streams of 200000 bytes, found {}",
        full.len()
    );
    for s in full {
        let mut writes = s.writes.clone();
        writes.sort();
        // Writes tile the stream without gaps or overlaps.
        let mut at = 0;
        for w in &writes {
            assert_eq!(w.0, at, "write offsets leave a gap or overlap");
            at += w.1;
        }
        for r in &s.reads {
            let (a, b) = (r.0, r.0 + r.1);
            let covering: Vec<_> = writes.iter().filter(|w| w.0 < b && w.0 + w.1 > a).collect();
            let covered: u64 = covering
                .iter()
                .map(|w| (w.0 + w.1).min(b) - w.0.max(a))
                .sum();
            assert_eq!(covered, b - a, "read [{a},{b}) not covered by writes");
            for w in covering {
                assert!(
                    w.2 <= r.2,
                    "write started after the read of its bytes [{a},{b}) returned"
                );
            }
        }
    }
}
