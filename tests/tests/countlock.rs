//! `scalpel record --locks count`: uncontended mutex pairs only counted, and what stays
//! recorded. The same program is recorded in both modes; the lock table's acquisitions, the
//! contended acquisition's holder and the queue's hand-off edges must come out the same.

use scalpel_e2e::score::{infer_model, infer_output};
use scalpel_e2e::*;
use scalpel_model::format::ObjKind;
use scalpel_model::graph::{EdgeKind, Graph};

struct Recorded {
    run: Run,
    graph: Graph,
    keys: Keys,
}

struct Keys {
    mine: [u64; 2],
    stats: u64,
    queue: u64,
    robust: u64,
    hot: u64,
    nested: u64,
    /// The producer's looks at the queue before its first item.
    checks: u64,
}

fn recorded(flags: &[&str]) -> Recorded {
    let exe = build_c("countlock", "countlock", &[]);
    let run = record_flags(&exe, flags, &[], |_| {}).success();
    let key = |name: &str| run.printed("mutexes", name);
    let keys = Keys {
        mine: [key("mine0"), key("mine1")],
        stats: key("stats"),
        queue: key("queue"),
        robust: key("robust"),
        hot: key("hot"),
        nested: key("nested"),
        checks: run.printed("checks", "checks"),
    };
    assert!(
        run.stdout().contains("counter 4000 own 3000 3000\n"),
        "{}",
        run.stdout()
    );
    let (_, graph) = infer_model(&run.dir, &run.tmp.path().join("model"), &[]);
    Recorded { run, graph, keys }
}

/// Every event on the mutex `key`, of every thread.
fn on(t: &TraceDir, key: u64) -> Vec<&Event> {
    thread_files(t)
        .into_iter()
        .flat_map(|f| f.events.iter())
        .filter(|e| {
            e.obj
                .is_some_and(|o| o.key == key && o.kind == ObjKind::Mutex.code())
        })
        .collect()
}

/// Acquisitions of the mutex `key` in the trace: successful lock calls and counted pairs.
fn acquisitions(events: &[&Event]) -> u64 {
    events
        .iter()
        .map(|e| match e.op {
            Some(Op::MutexCounted) => e.aux.unwrap_or(0),
            Some(Op::MutexLock | Op::MutexTrylock) if e.result == Some(0) => 1,
            _ => 0,
        })
        .sum()
}

/// The lock table's acquisitions of the mutex `key`.
fn table(g: &Graph, key: u64) -> u64 {
    g.locks
        .iter()
        .filter(|l| {
            let o = &g.objects[l.obj.get() as usize];
            o.kind.is(ObjKind::Mutex) && o.key == key
        })
        .map(|l| l.acquisitions)
        .sum()
}

/// Cond and queue edges: the items the consumer was handed.
fn handoffs(g: &Graph) -> usize {
    g.edges
        .iter()
        .filter(|e| matches!(e.kind, EdgeKind::Cond | EdgeKind::Queue))
        .count()
}

/// The contended acquisition of `hot`: its holder's thread id, and the wait.
fn hot_wait(r: &Recorded) -> (Option<u32>, u64) {
    let g = &r.graph;
    let waits: Vec<_> = g
        .lock_waits
        .iter()
        .filter(|w| g.objects[w.obj.get() as usize].key == r.keys.hot)
        .collect();
    assert_eq!(waits.len(), 1, "{:?}", g.lock_waits);
    let holder = waits[0]
        .holder
        .map(|l| g.threads[g.leaves[l.index()].thread.index()].tid);
    (holder, waits[0].wait_ns)
}

#[test]
fn uncontended_pairs_are_counted_and_everything_else_recorded() {
    let r = recorded(&["--locks", "count"]);
    let t = r.run.load();
    let k = &r.keys;
    // Each worker's own mutex: 3000 locks and 500 trylocks, nobody else's, so every pair is
    // counted and none is an event.
    for key in k.mine {
        let events = on(&t, key);
        assert!(
            events.iter().all(|e| e.op == Some(Op::MutexCounted)),
            "{events:#?}"
        );
        assert_eq!(acquisitions(&events), 3500);
        assert!(events.iter().all(|e| e.seq.is_none() && e.stack.is_none()));
    }
    // The shared stats mutex: counted or recorded, 4000 in all.
    assert_eq!(acquisitions(&on(&t, k.stats)), 4000);
    // The queue's mutex is a condition's: recorded from the first wait on.
    let queue = on(&t, k.queue);
    assert_eq!(acquisitions(&queue), 400 + k.checks);
    assert!(
        queue
            .iter()
            .filter(|e| e.op == Some(Op::MutexUnlock))
            .count()
            >= 100,
        "the queue's sections were not recorded"
    );
    // A robust mutex is never counted.
    let robust = on(&t, k.robust);
    assert!(robust.iter().all(|e| e.op != Some(Op::MutexCounted)));
    assert_eq!(acquisitions(&robust), 10);
    // A recursive mutex nested deeper than the counted locks a thread tracks: the inner ones
    // are recorded, and every acquisition is there once.
    let nested = on(&t, k.nested);
    assert_eq!(acquisitions(&nested), 1200);
    assert!(nested.iter().any(|e| e.op == Some(Op::MutexLock)));
    assert!(nested.iter().any(|e| e.op == Some(Op::MutexCounted)));
    // The holder of `hot` took it without waiting (counted), but a thread waited when it let
    // go: that unlock is recorded, with a number before the waiter's.
    let files = thread_files(&t);
    let (main, others): (Vec<&FileTrace>, Vec<&FileTrace>) =
        files.iter().partition(|f| f.header.tid == f.header.pid);
    let on_hot = |f: &&FileTrace, op: Op| {
        f.events
            .iter()
            .find(|e| e.op == Some(op) && e.obj.is_some_and(|o| o.key == k.hot))
            .cloned()
    };
    let unlock = others
        .iter()
        .find_map(|f| on_hot(f, Op::MutexUnlock))
        .expect("the unlock that found a waiter");
    let lock = on_hot(&main[0], Op::MutexLock).expect("the waiting lock");
    assert!(lock.dur_ns > 10_000_000, "{lock:?}");
    assert!(unlock.seq.unwrap() < lock.seq.unwrap());
    // `--cut-at-locks` says it cannot cut at counted pairs (and `--strict` still passes).
    let out = infer_output(
        &r.run.dir,
        &r.run.tmp.path().join("cut"),
        &["--cut-at-locks", "--strict"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("were counted, not recorded"), "{err}");
}

#[test]
fn counting_keeps_the_lock_table_the_holder_and_the_handoffs() {
    let count = recorded(&["--locks", "count"]);
    let full = recorded(&[]);
    for r in [&count, &full] {
        let k = &r.keys;
        assert_eq!(table(&r.graph, k.mine[0]), 3500);
        assert_eq!(table(&r.graph, k.mine[1]), 3500);
        assert_eq!(table(&r.graph, k.stats), 4000);
        // A condition wait's re-lock is an acquisition too.
        let relocks = on(&r.run.load(), k.queue)
            .iter()
            .filter(|e| e.op == Some(Op::CondRelock))
            .count() as u64;
        assert_eq!(table(&r.graph, k.queue), 400 + k.checks + relocks);
        assert_eq!(table(&r.graph, k.robust), 10);
        assert_eq!(table(&r.graph, k.nested), 1200);
        // The holder is the thread that slept holding `hot`, not the waiter.
        let (holder, wait) = hot_wait(r);
        let waiter = r.run.load().processes[0].threads[0].header.tid;
        assert!(holder.is_some_and(|h| h != waiter), "holder {holder:?}");
        assert!(wait > 10_000_000, "waited {wait} ns");
    }
    // Every item the producer signalled reached the consumer in both modes. Counted, the
    // consumer's first section (its lock counted before its first wait made the mutex a
    // condition's) is known from the wait on, at the call site of its next lock.
    assert_eq!(handoffs(&full.graph), 200, "recorded in full");
    assert_eq!(handoffs(&count.graph), 200, "counted");
}

/// Counts a thread had not written out when the process ended: the worker's, still blocked
/// when main calls exit(3), and both threads' when main SIGKILLs the process. The reader takes
/// them from the thread files' headers, once each: the trace and the lock table have every
/// pair.
#[test]
fn counts_not_written_out_are_read_from_the_header() {
    let exe = build_c("countexit", "countexit", &[]);
    for how in ["exit", "kill"] {
        let run = record_flags(&exe, &["--locks", "count"], &[how], |_| {});
        assert_eq!(
            run.out.status.success(),
            how == "exit",
            "{how}: {:?}\n{}",
            run.out.status,
            run.stderr()
        );
        let worker = run.printed("mutexes", "worker");
        let main = run.printed("mutexes", "main");
        let t = run.load();
        let (w, m) = (on(&t, worker), on(&t, main));
        assert!(
            w.iter().chain(&m).all(|e| e.op == Some(Op::MutexCounted)),
            "{how}: {w:#?} {m:#?}"
        );
        assert_eq!(acquisitions(&w), 1000, "{how}: {w:#?}");
        assert_eq!(acquisitions(&m), 700, "{how}: {m:#?}");
        let (_, graph) = infer_model(&run.dir, &run.tmp.path().join("model"), &[]);
        assert_eq!(table(&graph, worker), 1000, "{how}");
        assert_eq!(table(&graph, main), 700, "{how}");
    }
}
