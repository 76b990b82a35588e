//! `dump` on a trace built with the model's writer: layout, filters and determinism.

mod common;

use scalpel::inspect::{dump, parse_op, DumpDir, DumpOptions, Summary};
use scalpel_model::format::Op;
use scalpel_model::read::{read_dir, ReadError};

/// The dump of the built trace, also read without keeping the events (`DumpDir`, what
/// `scalpel dump` does), which must print the same.
fn run(opts: &DumpOptions) -> String {
    let tmp = tempfile::tempdir().unwrap();
    common::build(tmp.path());
    let trace = read_dir(tmp.path()).unwrap();
    let mut out = Vec::new();
    let stats = dump(&trace, opts, &mut out).unwrap();
    let out = String::from_utf8(out).unwrap();
    let mut streamed = Vec::new();
    let d = DumpDir::read(tmp.path()).unwrap();
    let streamed_stats = d.write(opts, &mut streamed).unwrap();
    assert_eq!(String::from_utf8(streamed).unwrap(), out, "{opts:?}");
    assert_eq!(streamed_stats, stats, "{opts:?}");
    out
}

fn lines(opts: DumpOptions) -> Vec<String> {
    run(&opts).lines().map(str::to_string).collect()
}

const LOCK: &str =
    "   0.000000000       100/100 mutex_lock         obj=mutex:0x1000 seq=1 result=0 dur=40ns";
const WRITE: &str = "   0.000000500       100/100 write              obj=stream:0xabc \
     [tcp 127.0.0.1:5000->127.0.0.1:41234] seq=1 bytes=5 fd=3 offset=0";
const UNKNOWN: &str = "   0.000001500       100/100 op#250";
const UNLOCK: &str = "   0.000001200       100/101 mutex_unlock       obj=mutex:0x1000 seq=2";
const READ: &str = "   0.000001300       100/101 read               obj=stream:0xabc \
     [tcp 127.0.0.1:5000->127.0.0.1:41234] seq=1 result=-11(EAGAIN) fd=4";
const SLEEP: &str = "   0.000000300       200/200 sleep";

#[test]
fn grouped_per_thread() {
    let out = lines(DumpOptions::default());
    assert_eq!(
        out,
        [
            "== pid 100 tid 100 \"main\" exe /bin/prog: 3 events, 0 lost ==",
            LOCK,
            WRITE,
            UNKNOWN,
            "== pid 100 tid 101 \"worker\" exe /bin/prog: 2 events, 0 lost ==",
            UNLOCK,
            READ,
            "== pid 200 tid 200 \"other\" exe /bin/prog: 1 events, 0 lost ==",
            SLEEP,
        ]
    );
    assert_eq!(run(&DumpOptions::default()), run(&DumpOptions::default()));
}

#[test]
fn merged_by_time() {
    let out = lines(DumpOptions {
        merged: true,
        ..DumpOptions::default()
    });
    assert_eq!(out, [LOCK, SLEEP, WRITE, UNLOCK, READ, UNKNOWN]);
}

#[test]
fn filters() {
    let merged = DumpOptions {
        merged: true,
        ..DumpOptions::default()
    };
    let f = |o: DumpOptions| lines(o);
    let pid = f(DumpOptions {
        pids: vec![200],
        ..merged.clone()
    });
    assert_eq!(pid, [SLEEP]);
    let tid = f(DumpOptions {
        tids: vec![101, 200],
        ..merged.clone()
    });
    assert_eq!(tid, [SLEEP, UNLOCK, READ]);
    let ops = f(DumpOptions {
        ops: vec![Op::Read, Op::MutexLock],
        ..merged.clone()
    });
    assert_eq!(ops, [LOCK, READ]);
    for key in ["0xabc", "ABC", "2748", "41234", "tcp"] {
        let obj = f(DumpOptions {
            object: Some(key.into()),
            ..merged.clone()
        });
        assert_eq!(obj, [WRITE, READ], "{key}");
    }
    let limited = f(DumpOptions {
        limit: Some(2),
        ..merged.clone()
    });
    assert_eq!(limited, [LOCK, SLEEP]);
    let grouped = f(DumpOptions {
        object: Some("mutex".into()),
        limit: Some(1),
        ..DumpOptions::default()
    });
    assert_eq!(
        grouped,
        [
            "== pid 100 tid 100 \"main\" exe /bin/prog: 3 events (1 shown), 0 lost ==",
            LOCK
        ]
    );
}

#[test]
fn op_names() {
    assert_eq!(parse_op("futex_wait").unwrap(), Op::FutexWait);
    let e = parse_op("nope").unwrap_err().to_string();
    assert!(
        e.starts_with("unknown operation `nope`; valid operations: mutex_lock, "),
        "{e}"
    );
}

#[test]
fn summary_and_warnings() {
    let tmp = tempfile::tempdir().unwrap();
    common::build(tmp.path());
    let trace = read_dir(tmp.path()).unwrap();
    let warnings: Vec<_> = trace.all_warnings().collect();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(warnings
        .iter()
        .any(|w| matches!(w, ReadError::Damaged { .. })
            && w.path().ends_with("200.0/t200.trace")
            && w.offset() == Some(4096 + 7)));
    let s = Summary::of(&trace);
    assert_eq!((s.processes, s.threads, s.events, s.warnings), (2, 3, 6, 2));
    let (streamed, _) = Summary::read(tmp.path()).unwrap();
    assert_eq!(streamed, s);
    let text = s.to_string();
    assert!(text.contains("events:     6"), "{text}");
}

/// A file whose clock readings go back (a damaged delta wraps them) is not in time order:
/// merged by time, `DumpDir` then sorts the loaded trace, and prints what `dump` prints.
#[test]
fn merged_with_readings_that_go_back() {
    use scalpel_model::read::Header;
    use scalpel_model::record::RawEvent;
    use scalpel_model::write::TraceWriter;
    let tmp = tempfile::tempdir().unwrap();
    common::build(tmp.path());
    let mut h = Header::thread(100, 102);
    h.clock0 = 1_000_000;
    let mut w = TraceWriter::new(h);
    for dt in [500, u64::MAX - 200, 100] {
        w.event(&RawEvent {
            op: Op::Sleep as u8,
            dt,
            ..RawEvent::default()
        });
    }
    w.write_to(tmp.path().join("100.0/t102.trace")).unwrap();
    let opts = DumpOptions {
        merged: true,
        ..DumpOptions::default()
    };
    let trace = read_dir(tmp.path()).unwrap();
    let (mut a, mut b) = (Vec::new(), Vec::new());
    dump(&trace, &opts, &mut a).unwrap();
    DumpDir::read(tmp.path())
        .unwrap()
        .write(&opts, &mut b)
        .unwrap();
    assert_eq!(
        String::from_utf8(b).unwrap(),
        String::from_utf8(a.clone()).unwrap()
    );
    let text = String::from_utf8(a).unwrap();
    assert_eq!(text.matches("100/102 sleep").count(), 3, "{text}");
}

/// A thread on a 3 GHz TSC with a calibration point a millisecond for 20 ms, each read in a
/// bracket of 60 ticks (20 ns), and one more alone in its millisecond, 900 ticks wide, whose
/// reading came 140 ns before its middle: the summary's clock line tells the two apart.
#[test]
fn the_summary_says_how_closely_the_clock_follows_its_points() {
    use scalpel_model::format::flags;
    use scalpel_model::read::Header;
    use scalpel_model::write::TraceWriter;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("300.0");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(tmp.path().join("shared.tbl"), [0u8; 64]).unwrap();
    let mut h = Header::thread(300, 300);
    h.flags |= flags::CLOCK_TSC;
    (h.ticks_per_sec, h.clock0, h.mono0) = (3_000_000_000, 3_000, 1_000_000_001);
    let mut w = TraceWriter::new(h);
    for i in 1..=20u64 {
        let t = 3_000 + i * 3_000_000;
        w.calibration(t, 1_000_000_001 + i * 1_000_000, Some(60));
    }
    let t = 3_000 + 10 * 3_000_000 + 1_500_000;
    w.calibration(t, 1_000_000_001 + 10_500_000 - 140, Some(900));
    w.write_to(dir.join("t300.trace")).unwrap();
    let trace = read_dir(tmp.path()).unwrap();
    let s = Summary::of(&trace);
    assert_eq!((s.clock.points, s.clock.median_width_ns), (21, 20));
    assert!(s.clock.tight_off_ns <= 1, "{:?}", s.clock);
    assert!(s.clock.any_off_ns.abs_diff(140) <= 1, "{:?}", s.clock);
    assert!(
        s.to_string().contains("clock:      21 calibration points"),
        "{s}"
    );
}
