//! Uncontended mutex locks kept back for their unlocks (HELD records): the trace reads exactly as
//! if every call were its own event, every mutex type behaves as without the agent, the records
//! are smaller, and a lock held across a blocking call survives a SIGKILL.

use scalpel_e2e::*;
use scalpel_model::read::Event;

/// The main thread's events on the mutex at `key`, in order.
fn on<'a>(events: &[&'a Event], key: u64) -> Vec<&'a Event> {
    events
        .iter()
        .copied()
        .filter(|e| e.obj.is_some_and(|o| o.key == key))
        .collect()
}

fn op_of(e: &Event) -> Option<Op> {
    e.op
}

#[test]
fn uncontended_pairs_read_back_as_their_calls() {
    let exe = build_c("heldlock", "heldlock", &[]);
    let run = record(&exe, &[]).success();
    let printed = |label: &str| run.printed(label, label);
    // Every mutex type returned what it returns without the agent.
    assert_eq!(printed("trylock"), 0);
    assert!(run.stdout().contains("recursive 0 0\n"), "{}", run.stdout());
    assert_eq!(printed("edeadlk"), libc::EDEADLK as u64);
    assert_eq!(printed("eperm"), libc::EPERM as u64);
    assert_eq!(printed("busy"), libc::EBUSY as u64);
    let addr = |name: &str| run.printed("many", name);
    let (many, outer, inner, busy) = (addr("many"), addr("outer"), addr("inner"), addr("busy"));

    let t = run.load();
    let main = thread_files(&t)
        .into_iter()
        .find(|f| f.header.tid == f.header.pid)
        .expect("the main thread's file");
    let events: Vec<&Event> = main.events.iter().collect();

    // 1000 pairs, then the trylock pair, then the pair around a pipe write: lock and unlock
    // alternate, each a sequence number after the last, every one succeeded, the locks taken
    // without waiting. An uncontended lock reserves its unlock's number with its own; the lock
    // before the pipe write was written alone (the write came between), so its unlock took a
    // fresh number and the reserved one is a gap.
    let m = on(&events, many);
    assert_eq!(m.len(), 2 * 1002, "events on the busy-looped mutex");
    for (i, e) in m.iter().enumerate() {
        let want = if i % 2 == 1 {
            Op::MutexUnlock
        } else if i == 2000 {
            Op::MutexTrylock
        } else {
            Op::MutexLock
        };
        assert_eq!(op_of(e), Some(want), "event {i}");
        let seq = if i == 2003 { 2005 } else { i as u64 + 1 };
        assert_eq!(e.seq, Some(seq), "event {i}");
        assert_eq!(e.result, Some(0), "event {i}");
        assert_eq!(
            e.dur_ticks, 0,
            "event {i}: an uncontended lock takes one clock reading"
        );
        if i > 0 {
            assert!(e.ticks >= m[i - 1].ticks, "event {i} goes back in time");
        }
        assert!(e.stack.is_some(), "event {i} has no stack");
    }
    // The lock and its unlock have their own call sites.
    assert_ne!(m[0].stack, m[1].stack);

    // The write inside the last pair comes between its lock and its unlock.
    let at = |e: &Event| events.iter().position(|x| std::ptr::eq(*x, e)).unwrap();
    let write = events
        .iter()
        .position(|e| op_of(e) == Some(Op::Write))
        .expect("the pipe write");
    assert!(at(m[2002]) < write && write < at(m[2003]));

    // Nested locks keep their order.
    let (o, n) = (on(&events, outer), on(&events, inner));
    assert_eq!(o.len(), 2);
    assert_eq!(n.len(), 2);
    let order = [at(o[0]), at(n[0]), at(n[1]), at(o[1])];
    assert!(order.is_sorted(), "nested locks out of order: {order:?}");

    // The failed calls on the error-checking mutex are there with their errors.
    let results: Vec<Option<i64>> = events
        .iter()
        .filter(|e| matches!(op_of(e), Some(Op::MutexLock | Op::MutexUnlock)))
        .filter(|e| e.result != Some(0))
        .map(|e| e.result)
        .collect();
    assert_eq!(
        results,
        [
            Some(-i64::from(libc::EDEADLK)),
            Some(-i64::from(libc::EPERM))
        ]
    );

    // The contended lock waited for the holder's 30 ms and kept its full event; the trylock that
    // found it busy is there too.
    let b = on(&events, busy);
    let ops: Vec<Option<Op>> = b.iter().map(|e| op_of(e)).collect();
    assert_eq!(
        ops,
        [
            Some(Op::MutexTrylock),
            Some(Op::MutexLock),
            Some(Op::MutexUnlock)
        ]
    );
    assert_eq!(b[0].result, Some(-i64::from(libc::EBUSY)));
    assert!(
        b[1].dur_ns >= 20_000_000,
        "the contended lock waited {} ns",
        b[1].dur_ns
    );
    // Its stack was taken before it waited, and is its own call site's.
    assert!(b.iter().all(|e| e.stack.is_some()), "busy: {b:?}");
    assert_ne!(
        b[0].stack, b[1].stack,
        "the trylock's and the lock's call sites"
    );
    assert_ne!(
        b[1].stack, m[0].stack,
        "the contended lock's and another lock's call sites"
    );

    // Two events in one record for each lock and the unlock right after it: the 1000 pairs,
    // the trylock's, the inner lock's, and the recursive mutex's second lock with the first
    // unlock. Not the lock around the pipe write, the outer lock (the inner one came next), the
    // error-checking mutex's (its second lock came next) nor the contended lock.
    assert_eq!(main.held_records, 1003);
}

#[test]
fn a_lock_held_across_a_blocking_call_survives_sigkill() {
    let exe = build_c("heldlock", "heldlock", &[]);
    // The program prints its pid just before it takes the lock and blocks in read: give the
    // read time to begin.
    let run = record_then_kill(&exe, &["hang"], std::time::Duration::from_millis(200));
    assert_eq!(run.out.status.code(), Some(128 + 9));
    let dir = run.dir.clone();
    let t = read_dir(&dir).unwrap();
    let warnings: Vec<String> = t.all_warnings().map(|w| w.to_string()).collect();
    assert!(warnings.is_empty(), "{warnings:?}");
    let locks = with_op(&t, Op::MutexLock);
    assert_eq!(
        locks.len(),
        1,
        "the lock taken before the blocking read is in the trace"
    );
    assert_eq!(locks[0].event.result, Some(0));
}
