//! The samples run under the agent and write ground truth that lines up with the trace: the
//! threads and times they report are the trace's own, so later stages can score inferred tasks
//! against them.

use scalpel_e2e::*;
use std::collections::BTreeMap;
use std::path::Path;

/// One ground-truth task instance.
#[derive(Debug)]
struct Truth {
    kind: String,
    id: i64,
    pid: u32,
    tid: u32,
    start: u64,
    end: u64,
}

fn truth_of(path: &Path) -> Vec<Truth> {
    let text = std::fs::read_to_string(path).expect("the sample wrote a truth file");
    text.lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("a JSON line"))
        .filter(|v| v.get("type").is_some())
        .map(|v| Truth {
            kind: v["type"].as_str().unwrap().to_string(),
            id: v["id"].as_i64().unwrap(),
            pid: v["pid"].as_u64().unwrap() as u32,
            tid: v["tid"].as_u64().unwrap() as u32,
            start: v["start_ns"].as_u64().unwrap(),
            end: v["end_ns"].as_u64().unwrap(),
        })
        .collect()
}

fn run_sample(name: &str, args: &[&str]) -> (Run, Vec<Truth>) {
    let tmp = tempfile::tempdir().unwrap();
    let truth = tmp.path().join("truth.jsonl");
    let run = record_with(&own_bin(name), args, |c| {
        c.env("SCALPEL_TRUTH", &truth);
    })
    .success();
    let t = truth_of(&truth);
    (run, t)
}

/// A call that sent bytes (C samples use write, Rust's sockets use send).
fn is_output(e: &Event) -> bool {
    matches!(
        e.op,
        Some(Op::Write | Op::Writev | Op::Send | Op::Sendto | Op::Sendmsg)
    )
}

fn counts(t: &[Truth]) -> BTreeMap<&str, usize> {
    let mut m = BTreeMap::new();
    for x in t {
        *m.entry(x.kind.as_str()).or_default() += 1;
    }
    m
}

/// The events of one thread.
fn thread_events(t: &TraceDir, pid: u32, tid: u32) -> Vec<&Event> {
    thread_files(t)
        .into_iter()
        .filter(|f| f.header.pid == pid && f.header.tid == tid)
        .flat_map(|f| f.events.iter())
        .collect()
}

/// How far trace times (TSC, converted with a line fitted to calibration points) and the
/// samples' CLOCK_MONOTONIC readings may disagree: the calibration pairs carry tens of
/// nanoseconds of noise.
const SLACK_NS: u64 = 2_000;

/// Every truth instance of `kind` saw, on its own thread and inside its own span, an event
/// matching `pred`.
fn each_instance_has(t: &TraceDir, truth: &[Truth], kind: &str, pred: impl Fn(&Event) -> bool) {
    let mut checked = 0;
    for x in truth.iter().filter(|x| x.kind == kind) {
        let evs = thread_events(t, x.pid, x.tid);
        let inside = evs
            .iter()
            .any(|e| e.ts_ns + SLACK_NS >= x.start && e.ts_ns <= x.end + SLACK_NS && pred(e));
        let nearest = evs
            .iter()
            .filter(|e| pred(e))
            .map(|e| e.ts_ns as i64 - x.start as i64)
            .min_by_key(|d| d.abs());
        assert!(
            inside,
            "{kind} {} on {}/{}: no matching event in [{}, {}] (nearest starts {nearest:?} ns after its start)",
            x.id, x.pid, x.tid, x.start, x.end
        );
        checked += 1;
    }
    assert!(checked > 0, "no {kind} instances");
}

/// How far after a span's start a call entered just before it may be timestamped: the
/// calibration noise (tens of nanoseconds) between trace times and the samples' clock.
const START_NOISE_NS: u64 = 200;

/// Every truth instance of `kind` ends at the sync call that ends it (samples/TRUTH.md): the
/// first sync call its thread entered after the span began matches `pred` and was not entered
/// before the span's end. (Mutex calls are no sync points. The call may be entered well after
/// the end: the agent classifies a descriptor on its first use before it reads the clock.)
///
/// "After the span began" is told by the thread's order of calls, not by the clocks alone: the
/// trace's times are the TSC put on a line fitted to calibration points, and under load that
/// line sat 130 ns and more before the samples' clock (a dispatch's lock and signal, both
/// made after its start, timestamped 136 and 76 ns before it). So the call before the span is
/// the last call that does not match `pred` timestamped before the start, or within
/// [`START_NOISE_NS`] after it (a worker's signal of room, right before it reads the clock),
/// and the span's call is the first after it, within [`SLACK_NS`] of the span.
fn each_instance_ends_at(t: &TraceDir, truth: &[Truth], kind: &str, pred: impl Fn(&Event) -> bool) {
    let lock = |e: &Event| matches!(e.op, Some(Op::MutexLock | Op::MutexUnlock));
    let mut checked = 0;
    for x in truth.iter().filter(|x| x.kind == kind) {
        let evs: Vec<&Event> = thread_events(t, x.pid, x.tid)
            .into_iter()
            .filter(|e| !lock(e))
            .collect();
        let before = |e: &Event| e.ts_ns < x.start + START_NOISE_NS && !pred(e);
        let from = evs.iter().rposition(|e| before(e)).map_or(0, |i| i + 1);
        let next = evs.get(from);
        let near: Vec<(Option<Op>, u64)> = evs
            .iter()
            .filter(|e| e.ts_ns + SLACK_NS >= x.start && e.ts_ns <= x.end + SLACK_NS)
            .map(|e| (e.op, e.ts_ns))
            .collect();
        assert!(
            next.is_some_and(|e| pred(e) && e.ts_ns + SLACK_NS >= x.end),
            "{kind} {} on {}/{} [{}, {}]: the first sync call after its start is {next:?}; \
             its sync calls within {SLACK_NS} ns of the span: {near:?}",
            x.id,
            x.pid,
            x.tid,
            x.start,
            x.end
        );
        checked += 1;
    }
    assert!(checked > 0, "no {kind} instances");
}

#[test]
fn threadpool_truth_lines_up_with_its_trace() {
    let (run, truth) = run_sample(
        "threadpool",
        &["--workers", "3", "--connections", "4", "--requests", "50"],
    );
    assert!(run.stdout().contains("ok"));
    let c = counts(&truth);
    assert_eq!(
        (c["accept"], c["connection"], c["request"], c["call"]),
        (4, 4, 200, 200),
        "{c:?}"
    );
    let t = run.load();
    // Each request's span (header read → response write) holds its payload read (16 to 515
    // bytes; the header is 4), on the worker.
    each_instance_has(&t, &truth, "request", |e| {
        e.op == Some(Op::Read) && e.result.is_some_and(|r| r >= 16)
    });
    // Each accept's span holds the queue's lock taken to hand the connection over.
    each_instance_has(&t, &truth, "accept", |e| e.op == Some(Op::MutexLock));
    each_instance_ends_at(&t, &truth, "accept", |e| e.op == Some(Op::CondSignal));
}

#[test]
fn workqueue_truth_lines_up_with_its_trace() {
    let (run, truth) = run_sample("workqueue", &["100"]);
    let c = counts(&truth);
    assert_eq!((c["dispatch"], c["process"]), (100, 100));
    let t = run.load();
    each_instance_ends_at(&t, &truth, "process", |e| {
        e.op == Some(Op::Write) && e.result == Some(8)
    });
    each_instance_ends_at(&t, &truth, "dispatch", |e| e.op == Some(Op::CondSignal));
}

#[test]
fn replicated_store_async_stalls_its_senders_and_sync_does_not() {
    let (run, truth) = run_sample(
        "replicated-store",
        &["--flow-limit", "16384", "--flow-sleep-ms", "100"],
    );
    let out = run.stdout();
    assert!(
        out.contains("async rpc") && !out.contains(" 0 flow-control stalls"),
        "{out}"
    );
    let c = counts(&truth);
    for k in [
        "local_commit",
        "remote_ack",
        "send_mutation",
        "send_reply",
        "apply",
        "commit",
    ] {
        assert_eq!(c[k], 400, "{k}: {c:?}");
    }
    // Every packet the primary receives (400 commits, 400 acks) goes through a worker task.
    assert_eq!(c["worker_task"], 800, "{c:?}");
    let t = run.load();
    assert_eq!(t.processes.len(), 3, "client, primary and backup");
    each_instance_has(&t, &truth, "apply", |e| {
        // An ack: a 13-byte header and the backup's 8-byte log position.
        is_output(e) && e.result == Some(21)
    });
    // The flow-control stalls are sleeps of the requested length on the sender threads.
    let stall_sleeps = with_op(&t, Op::Sleep)
        .into_iter()
        .filter(|e| e.event.aux == Some(100_000_000))
        .count();
    assert!(stall_sleeps > 0, "no 100 ms sleeps in the trace");

    let (run, _) = run_sample(
        "replicated-store",
        &[
            "--rpc",
            "sync",
            "--flow-limit",
            "16384",
            "--flow-sleep-ms",
            "100",
        ],
    );
    assert!(
        run.stdout().contains(" 0 flow-control stalls"),
        "{}",
        run.stdout()
    );
    let t = run.load();
    assert_eq!(
        with_op(&t, Op::Sleep)
            .into_iter()
            .filter(|e| e.event.aux == Some(100_000_000))
            .count(),
        0
    );
}

#[test]
fn pipeline_fanout_and_lowlock_write_their_truth() {
    let (run, truth) = run_sample("pipeline", &["300", "--window", "4"]);
    let c = counts(&truth);
    assert_eq!(
        (c["parse"], c["transform"], c["store"], c["item"]),
        (300, 300, 300, 300)
    );
    let t = run.load();
    // Each stage's span ends at the write that hands its item on: 24, 16 and 8 bytes.
    for (stage, bytes) in [("parse", 24), ("transform", 16), ("store", 8)] {
        each_instance_ends_at(&t, &truth, stage, |e| {
            is_output(e) && e.result == Some(bytes)
        });
    }

    let (run, truth) = run_sample("fanout", &["100"]);
    let c = counts(&truth);
    assert_eq!((c["request"], c["subrequest"]), (100, 200));
    let t = run.load();
    // A sub-request ends at its 8-byte reply; a request's span holds its 24-byte sub-request
    // writes.
    each_instance_ends_at(&t, &truth, "subrequest", |e| {
        is_output(e) && e.result == Some(8)
    });
    each_instance_has(&t, &truth, "request", |e| {
        is_output(e) && e.result == Some(24)
    });

    let (_run, truth) = run_sample(
        "lowlock",
        &["--items", "2000", "--consumers", "2", "--truth-sample"],
    );
    let c = counts(&truth);
    assert_eq!((c["produce"], c["consume"]), (2000, 2000));
    // Each is a critical section far shorter than the clocks' disagreement, so its place
    // between its lock and unlock is checked through the leaves instead (`scored.rs`, lowlock:
    // with `--cut-at-locks` every instance must be exactly one critical-section leaf).
}
