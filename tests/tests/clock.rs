//! Trace times against CLOCK_MONOTONIC when the kernel slews it: the agent writes a calibration
//! point each millisecond a thread is busy, and the reader's clock bends at them.
//!
//! The slewed run changes the machine's clock rate (`adjtimex`), so it runs only when asked
//! (`SCALPEL_SLEW_CLOCK=1`, which CI sets; it needs root) and puts the rate back when done. It
//! is alone in this file, so no other test runs while the clock is bent.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use scalpel_e2e::score::{infer_model, load_tasks, report, score};
use scalpel_e2e::{own_bin, record_with};
use scalpel_model::format::CALIBRATION_GAP_NS;
use tempfile::TempDir;

/// A recorded run of `tasks mixed` with 5 ms sleeps in its puts, and the folder of its truth
/// file (`truth.jsonl`).
fn tasks_mixed() -> (scalpel_e2e::Run, TempDir) {
    let tmp = tempfile::tempdir().unwrap();
    let truth = tmp.path().join("truth.jsonl");
    let args = ["mixed", "--items", "400", "--put-sleep-us", "5000"];
    let r = record_with(&own_bin("tasks"), &args, |c| {
        c.env("SCALPEL_TRUTH", &truth);
    })
    .success();
    (r, tmp)
}

#[test]
fn a_busy_thread_has_a_calibration_point_within_each_millisecond() {
    let (r, _) = tasks_mixed();
    let trace = r.load();
    let mut checked = 0;
    for f in trace.processes.iter().flat_map(|p| p.threads.iter()) {
        // Points are written whatever the clock (ticks are then CLOCK_MONOTONIC's ns).
        let gap =
            u128::from(f.header.ticks_per_sec) * u128::from(CALIBRATION_GAP_NS) / 1_000_000_000;
        let gap = u64::try_from(gap).unwrap();
        // Every point says how wide its bracket was (0 without the TSC), which the knots weigh.
        for c in &f.calibrations {
            assert!(c.width.is_some(), "{}: point {c:?}", f.path.display());
        }
        // (file offset, ticks), in file order.
        let points: Vec<(u64, u64)> = f.calibrations.iter().map(|c| (c.offset, c.ticks)).collect();
        for (k, e) in f.events.iter().enumerate() {
            // The thread's last point is less than a gap before the call began, or a point is
            // the next record after the event's (the agent takes it once the call returned,
            // however long the thread then waits for a core).
            let i = points.partition_point(|p| p.0 < e.file_offset);
            let recent = i > 0 && points[i - 1].1 + gap > e.ticks;
            let next_event = f.events[k + 1..]
                .iter()
                .map(|x| x.file_offset)
                .find(|&o| o > e.file_offset)
                .unwrap_or(u64::MAX);
            let follows = points.get(i).is_some_and(|p| p.0 < next_event);
            assert!(
                recent || follows,
                "{}: no calibration point near the event at {} ticks ({:?}; {} points, the \
                 nearest {:?} and {:?})",
                f.path.display(),
                e.ticks,
                e.op,
                points.len(),
                i.checked_sub(1).map(|j| points[j]),
                points.get(i)
            );
            checked += 1;
        }
    }
    assert!(checked > 1_000, "{checked} events");
}

/// Sets the kernel's clock frequency (`adjtimex` ADJ_FREQUENCY, in 2^-16 ppm) and gives the
/// one it had.
fn set_frequency(freq: libc::c_long) -> std::io::Result<libc::c_long> {
    // SAFETY: a zeroed timex is a valid "read" request.
    let mut t: libc::timex = unsafe { std::mem::zeroed() };
    // SAFETY: `t` is a valid timex for the call's duration.
    if unsafe { libc::adjtimex(&mut t) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let old = t.freq;
    t.modes = libc::ADJ_FREQUENCY;
    t.freq = freq;
    // SAFETY: as above.
    if unsafe { libc::adjtimex(&mut t) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(old)
}

/// Bends CLOCK_MONOTONIC by ±500 ppm, flipping every 100 ms, until dropped; then puts the
/// machine's rate back.
struct Slew {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    old: libc::c_long,
}

impl Slew {
    fn start() -> Slew {
        let old = set_frequency(0).expect("adjtimex (SCALPEL_SLEW_CLOCK=1 needs root)");
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let mut sign = 1;
            while !flag.load(Ordering::Relaxed) {
                set_frequency(sign * 500 * 65_536).expect("adjtimex");
                sign = -sign;
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        Slew {
            stop,
            thread: Some(thread),
            old,
        }
    }
}

impl Drop for Slew {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let _ = set_frequency(self.old);
    }
}

#[test]
fn leaves_meet_the_truth_while_the_kernel_slews_its_clock() {
    if std::env::var_os("SCALPEL_SLEW_CLOCK").is_none_or(|v| v != "1") {
        scalpel_e2e::not_run(
            "clock::leaves_meet_the_truth_while_the_kernel_slews_its_clock",
            "bends the machine's clock: only with SCALPEL_SLEW_CLOCK=1, as root",
        );
        return;
    }
    let (r, truth) = {
        let _slew = Slew::start();
        tasks_mixed()
    };
    let out = r.tmp.path().join("model");
    let (model, g) = infer_model(&r.dir, &out, &[]);
    let composed: &[(&str, &[&str])] = &[
        ("get", &["get_ask", "get_serve"]),
        ("put", &["put_ask", "put_serve"]),
    ];
    let sc = score(
        &model,
        &g,
        &load_tasks(&truth.path().join("truth.jsonl")),
        composed,
    );
    eprintln!("{}", report(&sc));
    // The truth's times are CLOCK_MONOTONIC's; a trace on one straight clock line was off
    // them by up to hundreds of microseconds here and matched 10–60% of the requests.
    for ty in ["get", "put"] {
        let t = sc.iter().find(|t| t.truth == ty).unwrap();
        assert!(t.recall >= 0.95, "{ty} recall {}", t.recall);
    }
}
