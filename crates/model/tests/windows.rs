//! A trace read in windows gives every event exactly once, as the whole read gives it: the same
//! ticks, object, sequence number and fields, each window resuming where the one before it
//! stopped (objects bound, sequence numbers and CPU times counted, stacks defined before it).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use proptest::prelude::*;
use scalpel_model::format::{flags, ObjKind, Op};
use scalpel_model::read::{read_dir_with, Event, FileSink, Header, Identity, ObjectDef, Windows};
use scalpel_model::record::RawEvent;
use scalpel_model::write::TraceWriter;

/// What a test keeps of an event: everything the reader derives from the file's state.
type Kept = (
    u64,
    u8,
    Option<(u8, u64)>,
    Option<u64>,
    Option<u64>,
    Option<u64>,
    Option<u64>,
);

fn kept(e: &Event) -> Kept {
    (
        e.ticks,
        e.op_code,
        e.obj.as_ref().map(|o| (o.kind, o.key)),
        e.seq,
        e.offset,
        e.cpu_ns,
        e.stack,
    )
}

/// Collects a file's events, and the objects bound when each arrived.
#[derive(Default)]
struct Collect {
    path: PathBuf,
    events: Vec<Kept>,
    objects: Vec<ObjectDef>,
}

impl FileSink for Collect {
    fn event(&mut self, e: &Event) {
        self.events.push(kept(e));
    }

    fn object(&mut self, def: &ObjectDef) {
        self.objects.push(def.clone());
    }
}

/// One thread's calls: objects bound once (some rebound after a reset), stacks defined before
/// their first use, sequence deltas, CPU times, and HELD pairs.
fn thread_file(seed: u64, tid: u32, calls: usize) -> TraceWriter {
    let mut h = Header::thread(1, tid);
    h.clock0 = 1_000;
    h.flags |= flags::CLOCK_TSC;
    h.ticks_per_sec = 2_000_000_000;
    h.mono0 = 5_000;
    let mut w = TraceWriter::new(h);
    w.calibration(1_000, 5_000, None);
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(u64::from(tid));
    let mut next = move || {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        x >> 33
    };
    let mut bound = [false; 4];
    let mut stacks = 0u64;
    for i in 0..calls {
        if i > 0 && i % 97 == 0 {
            w.object_reset();
            bound = [false; 4];
        }
        if i % 50 == 0 {
            w.calibration(1_000 + i as u64 * 3_000, 5_000 + i as u64 * 1_500, Some(60));
        }
        let o = (next() % 4) as usize;
        let (kind, op) = match o {
            0 => (ObjKind::Mutex, Op::MutexLock),
            1 => (ObjKind::Cond, Op::CondSignal),
            2 => (ObjKind::Sem, Op::SemPost),
            _ => (ObjKind::Futex, Op::FutexWake),
        };
        if !bound[o] {
            w.object(o as u64 + 1, kind.code(), 0x100 + o as u64, &Identity::None);
            bound[o] = true;
        }
        let stack = if next() % 3 == 0 {
            stacks += 1;
            w.stack(stacks, &[0x4000 + stacks, 0x5000]);
            stacks
        } else {
            stacks.min(next() % 4)
        };
        let raw = RawEvent {
            op: op as u8,
            dt: 500 + next() % 4_000,
            dur: next() % 3_000,
            obj: Some(o as u64 + 1),
            seq_delta: Some(1 + (next() % 3) as i64),
            stack: (stack > 0).then_some(stack),
            cpu: Some(next() % 900),
            ..RawEvent::default()
        };
        w.event(&raw);
    }
    w
}

fn write_trace(dir: &Path, seed: u64, calls: usize) {
    let p = dir.join("1.0");
    std::fs::create_dir_all(&p).unwrap();
    for tid in [1u32, 2, 3] {
        let n = calls / usize::try_from(tid).unwrap();
        thread_file(seed, tid, n)
            .write_to(p.join(format!("t{tid}.trace")))
            .unwrap();
    }
}

/// Every thread file's events, whole.
fn whole(dir: &Path) -> Vec<(PathBuf, Vec<Kept>)> {
    let (_, sinks) = read_dir_with(dir, |p| Collect {
        path: p.to_path_buf(),
        ..Collect::default()
    })
    .unwrap();
    let mut v: Vec<_> = sinks
        .into_iter()
        .flat_map(|p| p.threads)
        .map(|c| (c.path, c.events))
        .collect();
    v.sort();
    v
}

/// Every thread file's events, window after window, concatenated; and how many windows.
fn windowed(dir: &Path, per_window: u64) -> (Vec<(PathBuf, Vec<Kept>)>, usize) {
    let mut w = Windows::survey(dir, per_window).unwrap();
    let all: Mutex<Vec<(PathBuf, Vec<Kept>)>> = Mutex::new(Vec::new());
    for k in 0..w.count() {
        let (trace, sinks) = w
            .read_with(k, |p| Collect {
                path: p.to_path_buf(),
                ..Collect::default()
            })
            .unwrap();
        // Every window's files carry the whole file's clock.
        for f in trace.processes.iter().flat_map(|p| p.threads.iter()) {
            let s = w
                .survey_dir()
                .processes
                .iter()
                .flat_map(|p| p.threads.iter())
                .find(|s| s.path == f.path)
                .unwrap();
            assert_eq!(f.clock, s.clock, "{}", f.path.display());
            assert_eq!(f.stacks, s.stacks, "{}", f.path.display());
        }
        let mut all = all.lock().unwrap();
        for c in sinks.into_iter().flat_map(|p| p.threads) {
            // A window begins with the objects bound where it begins, then its own.
            let used: Vec<(u8, u64)> = c.events.iter().filter_map(|e| e.2).collect();
            for u in used {
                assert!(c.objects.iter().any(|d| (d.kind, d.key) == u));
            }
            match all.iter_mut().find(|(p, _)| *p == c.path) {
                Some((_, ev)) => ev.extend(c.events),
                None => all.push((c.path, c.events)),
            }
        }
    }
    let mut v = all.into_inner().unwrap();
    v.sort();
    (v, w.count())
}

#[test]
fn windows_read_every_event_once_as_the_whole_read_does() {
    let dir = tempfile::tempdir().unwrap();
    write_trace(dir.path(), 7, 3_000);
    let expected = whole(dir.path());
    let events: usize = expected.iter().map(|(_, e)| e.len()).sum();
    for per_window in [u64::MAX, 2_000, 700, 300] {
        let (got, windows) = windowed(dir.path(), per_window);
        assert_eq!(got, expected, "windows of {per_window} events");
        if per_window < events as u64 {
            assert!(windows > 1, "{per_window} events a window gave {windows}");
        }
    }
}

#[test]
fn windows_are_read_in_order() {
    let dir = tempfile::tempdir().unwrap();
    write_trace(dir.path(), 3, 2_000);
    let mut w = Windows::survey(dir.path(), 500).unwrap();
    assert!(w.count() > 2);
    let none = |_: &Path| ();
    assert!(w.read_with(1, none).is_err(), "window 1 before window 0");
    w.read_with(0, none).unwrap();
    w.read_with(0, none).unwrap();
    w.read_with(1, none).unwrap();
    let e = w.read_with(0, none).unwrap_err().to_string();
    assert!(e.contains("window 0 cannot be read now"), "{e}");
    assert!(w.read_with(w.count(), none).is_err());
}

/// Collects a file's events, and up to `want` of those past the window's end.
#[derive(Default)]
struct Peek {
    path: PathBuf,
    events: Vec<Kept>,
    beyond: Vec<Kept>,
    want: usize,
}

impl FileSink for Peek {
    fn event(&mut self, e: &Event) {
        assert!(
            self.beyond.is_empty(),
            "an event of the window after one past it"
        );
        self.events.push(kept(e));
    }

    fn beyond(&mut self, e: &Event) -> bool {
        self.beyond.push(kept(e));
        self.beyond.len() < self.want
    }
}

#[test]
fn a_sink_sees_the_events_past_a_windows_end_as_the_next_window_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    write_trace(dir.path(), 11, 2_000);
    let expected = whole(dir.path());
    let mut w = Windows::survey(dir.path(), 400).unwrap();
    assert!(w.count() > 2);
    let mut read: Vec<(PathBuf, Vec<Kept>)> = Vec::new();
    let mut shown: Vec<(PathBuf, Vec<Kept>)> = Vec::new();
    for k in 0..w.count() {
        let (_, sinks) = w
            .read_with(k, |p| Peek {
                path: p.to_path_buf(),
                want: 5,
                ..Peek::default()
            })
            .unwrap();
        for c in sinks.into_iter().flat_map(|p| p.threads) {
            // What the window before showed past its end is what this one reads first.
            if let Some((_, past)) = shown.iter().find(|(p, _)| *p == c.path) {
                assert_eq!(
                    &c.events[..past.len().min(c.events.len())],
                    &past[..past.len().min(c.events.len())]
                );
            }
            shown.retain(|(p, _)| *p != c.path);
            if !c.beyond.is_empty() {
                assert!(c.beyond.len() <= 5);
                shown.push((c.path.clone(), c.beyond));
            }
            match read.iter_mut().find(|(p, _)| *p == c.path) {
                Some((_, ev)) => ev.extend(c.events),
                None => read.push((c.path, c.events)),
            }
        }
    }
    // The last window ends at the files' ends: nothing past it.
    assert!(
        shown.is_empty(),
        "{} files showed events past the last window",
        shown.len()
    );
    // Looking past the end changes nothing the windows hold.
    read.sort();
    assert_eq!(read, expected);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    #[test]
    fn any_window_size_reads_the_same_events(seed in any::<u64>(), per_window in 50u64..2_000) {
        let dir = tempfile::tempdir().unwrap();
        write_trace(dir.path(), seed, 1_200);
        let expected = whole(dir.path());
        let (got, _) = windowed(dir.path(), per_window);
        prop_assert_eq!(got, expected);
    }
}
