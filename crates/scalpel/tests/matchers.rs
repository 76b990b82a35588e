//! The graph stage's matchers on traces written call by call (`tracebuild`, over the model's
//! `TraceWriter`): each test sets up the calls one matcher reads and checks the edges it draws,
//! and the case where it must draw none; and the miner's one rule the corpus cannot reach
//! (edges that close a cycle, which only clock trouble makes). The golden corpus
//! (`tests/corpus/`) covers the same matchers on recorded programs; these pin the rule itself.

#[allow(
    dead_code,
    reason = "the module serves several test binaries, each using a part"
)]
mod tracebuild;

use scalpel_mine::{mine, MineOptions};
use scalpel_model::format::{ChanKind, ObjKind, Op};
use scalpel_model::graph::EdgeKind;
use scalpel_model::progress::Quiet;
use scalpel_model::read::{Endpoint, Identity};
use tracebuild::{edges, graph, Call, Thread};

const COND: u64 = 0x1000;
const SEM: u64 = 0x2000;
const WORD: u64 = 0x3000;
const MUTEX: u64 = 0x4000;

/// `notify::cond`: a signal wakes the wait that began before it; a wait whose only signal came
/// before it began is left unmatched.
#[test]
fn notify_cond_signal_wakes_a_wait_that_began_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut waiter = Thread::new(1, 1);
    waiter.call(Call::new(100, 1_000, Op::CondWait).on(ObjKind::Cond, COND, 2));
    waiter.call(Call::new(5_000, 1_000, Op::CondWait).on(ObjKind::Cond, COND, 4));
    let mut signaller = Thread::new(1, 2);
    signaller.call(Call::new(500, 10, Op::CondSignal).on(ObjKind::Cond, COND, 1));
    // Issued before the second wait began: it woke nobody.
    signaller.call(Call::new(4_000, 10, Op::CondSignal).on(ObjKind::Cond, COND, 3));
    let g = graph(dir.path(), vec![waiter, signaller]);
    assert_eq!(edges(&g, EdgeKind::Cond), vec![(2, 1)]);
    assert_eq!(g.unmatched.cond_waits, 1);
}

/// `notify::sem`: the k-th successful wait takes the k-th post; a wait with no post left took
/// the initial value.
#[test]
fn notify_sem_tokens_are_taken_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let mut poster = Thread::new(1, 1);
    poster.call(Call::new(100, 10, Op::SemPost).on(ObjKind::Sem, SEM, 1));
    poster.call(Call::new(200, 10, Op::SemPost).on(ObjKind::Sem, SEM, 2));
    let mut a = Thread::new(1, 2);
    a.call(Call::new(50, 100, Op::SemWait).on(ObjKind::Sem, SEM, 3));
    let mut b = Thread::new(1, 3);
    b.call(Call::new(60, 200, Op::SemWait).on(ObjKind::Sem, SEM, 4));
    b.call(Call::new(400, 10, Op::SemWait).on(ObjKind::Sem, SEM, 5));
    let g = graph(dir.path(), vec![poster, a, b]);
    assert_eq!(edges(&g, EdgeKind::Sem), vec![(1, 2), (1, 3)]);
    assert_eq!(g.unmatched.sem_waits, 1);
}

fn futex_pair(dir: &std::path::Path, expected: u64) -> scalpel_model::graph::Graph {
    let mut waiter = Thread::new(1, 1);
    for (i, at) in [100u64, 5_000].into_iter().enumerate() {
        waiter.call(Call {
            aux2: Some(expected),
            ..Call::new(at, 1_000, Op::FutexWait).on(ObjKind::Futex, WORD, 2 * i as u64 + 2)
        });
    }
    let mut waker = Thread::new(1, 2);
    for (i, at) in [500u64, 5_500].into_iter().enumerate() {
        waker.call(Call {
            result: 1,
            ..Call::new(at, 10, Op::FutexWake).on(ObjKind::Futex, WORD, 2 * i as u64 + 1)
        });
    }
    graph(dir, vec![waiter, waker])
}

/// `notify::futex` and `futexlocks`: a wake releases the wait before it, unless every wait on
/// the word expects 2 (a lock's "locked, with waiters"), when the word is a lock and gets none.
#[test]
fn notify_futex_wakes_a_waiter_unless_the_word_is_a_lock() {
    let dir = tempfile::tempdir().unwrap();
    let g = futex_pair(dir.path(), 0);
    assert_eq!(edges(&g, EdgeKind::Futex), vec![(2, 1), (2, 1)]);
    let dir = tempfile::tempdir().unwrap();
    let g = futex_pair(dir.path(), 2);
    assert_eq!(edges(&g, EdgeKind::Futex), vec![]);
}

/// `queues`: on a queue whose items a futex word counts outside the mutex, a take after a wait
/// the wake ended has that wake's `futex` edge; a take after a wait that returned `EAGAIN` (the
/// word had changed: the item was counted before the wait began) never slept, and found its item
/// as a take without a wait does, so it gets a `queue` edge from the put.
#[test]
fn queues_a_futex_wait_that_found_the_word_changed_took_without_waiting() {
    let dir = tempfile::tempdir().unwrap();
    let word = |c: Call, seq: u64| Call {
        aux2: Some(0),
        ..c.on(ObjKind::Futex, WORD, seq)
    };
    let mutex = |at: u64, op: Op, seq: u64| Call::new(at, 5, op).on(ObjKind::Mutex, MUTEX, seq);
    let mut producer = Thread::new(1, 2);
    // Two puts, each a section and a wake after it: the first wakes the waiting taker, the
    // second nobody.
    for (at, seq, woke) in [(1_000u64, 1u64, 1i64), (2_000, 5, 0)] {
        producer.call(mutex(at, Op::MutexLock, seq));
        producer.call(mutex(at + 10, Op::MutexUnlock, seq + 1));
        let wake = Call::new(at + 20, 5, Op::FutexWake).on(ObjKind::Futex, WORD, at / 500 - 1);
        producer.call(Call {
            result: woke,
            ..wake
        });
    }
    let mut taker = Thread::new(1, 1);
    // A wait takes its sequence number when it returns.
    taker.call(word(Call::new(500, 600, Op::FutexWait), 2));
    taker.call(mutex(1_200, Op::MutexLock, 3));
    taker.call(mutex(1_210, Op::MutexUnlock, 4));
    let again = Call::new(2_500, 2, Op::FutexWait);
    taker.call(word(
        Call {
            result: -11,
            ..again
        },
        4,
    ));
    taker.call(mutex(2_510, Op::MutexLock, 7));
    taker.call(mutex(2_520, Op::MutexUnlock, 8));
    let g = graph(dir.path(), vec![producer, taker]);
    assert_eq!(edges(&g, EdgeKind::Futex), vec![(2, 1)]);
    assert_eq!(edges(&g, EdgeKind::Queue), vec![(2, 1)]);
}

fn pipe(key: u64) -> Identity {
    Identity::Stream {
        chan: ChanKind::Pipe.code(),
        channel_key: key,
        sender: Endpoint::Inode { dev: 1, ino: key },
        receiver: Endpoint::Inode { dev: 1, ino: key },
    }
}

/// A transfer of `bytes` at `offset` on pipe `key`.
fn on_pipe(c: Call, key: u64, offset: u64, bytes: i64) -> Call {
    Call {
        obj: Some((ObjKind::Stream, key, pipe(key))),
        offset: Some(offset),
        result: bytes,
        ..c
    }
}

/// `mine`'s acyclic rule: two leaves that each read what the other wrote (matched by offset,
/// whatever the clocks said) make a cycle, and the miner leaves out the edge that goes back in
/// time, counting it.
#[test]
fn mine_leaves_out_an_edge_that_closes_a_cycle() {
    let dir = tempfile::tempdir().unwrap();
    let mut a = Thread::new(1, 1);
    a.call(on_pipe(Call::new(100, 10, Op::Read), 0xb, 0, 8));
    a.call(on_pipe(Call::new(300, 10, Op::Write), 0xa, 0, 8));
    let mut b = Thread::new(1, 2);
    b.call(on_pipe(Call::new(150, 200, Op::Read), 0xa, 0, 8));
    b.call(on_pipe(Call::new(400, 10, Op::Write), 0xb, 0, 8));
    let g = graph(dir.path(), vec![a, b]);
    let mut got = edges(&g, EdgeKind::Stream);
    got.sort_unstable();
    assert_eq!(got, vec![(1, 2), (2, 1)], "the two transfers make a cycle");
    let m = mine(&g, "graph.json", &MineOptions::default(), &Quiet).model;
    assert_eq!(m.mining.cycle_edges_dropped, 1);
}

/// `streams::stream`: a read is caused by the write of the bytes it took (by offset); bytes
/// read that no traced write made come from an external source.
#[test]
fn streams_a_read_is_caused_by_the_write_of_its_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = Thread::new(1, 1);
    writer.call(on_pipe(Call::new(100, 10, Op::Write), 9, 0, 8));
    let mut reader = Thread::new(1, 2);
    reader.call(on_pipe(Call::new(50, 200, Op::Read), 9, 0, 8));
    // Bytes 8..16 were never written in the trace.
    reader.call(on_pipe(Call::new(1_000, 10, Op::Read), 9, 8, 8));
    let g = graph(dir.path(), vec![writer, reader]);
    assert_eq!(edges(&g, EdgeKind::Stream), vec![(1, 2)]);
    assert_eq!(g.unmatched.external_bytes_in, 8);
}

/// `signals`: `tgkill` to the target's next return from a blocking call entered near it; a
/// return long after, or one another edge explains, is no signal's.
#[test]
fn signals_a_kill_ends_the_targets_blocking_call() {
    let dir = tempfile::tempdir().unwrap();
    let mut target = Thread::new(1, 1);
    target.call(Call {
        result: -4,
        ..Call::new(100, 5_000, Op::Poll)
    });
    let mut sender = Thread::new(1, 2);
    sender.call(Call {
        aux: Some(1),
        ..Call::new(4_000, 10, Op::Tgkill)
    });
    let g = graph(dir.path(), vec![target, sender]);
    assert_eq!(edges(&g, EdgeKind::Signal), vec![(2, 1)]);
}
