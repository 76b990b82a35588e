//! On-CPU samples (`scalpel record --sample HZ`) and the flame graphs built on them
//! (`scalpel flame --on-cpu`, `--wall`), checked against programs that measure themselves:
//! tests/c/cpusplit.c (a worker burning 70% of its CPU in one function and 30% in another,
//! then waiting about 50 ms for a lock and sleeping 100 ms) and tests/c/sighost.c (a host
//! full of signals whose output must not change when sampled).

use scalpel_e2e::score::infer_model;
use scalpel_e2e::*;
use std::process::Command;

const MS: u64 = 1_000_000;
/// The rate the tests sample at: 1 ms of CPU per sample.
const HZ: &str = "999";

/// The count under stacks of thread `thread` (second frame) that pass `pick`.
fn under(lines: &[(String, u64)], thread: &str, pick: impl Fn(&[&str]) -> bool) -> u64 {
    lines
        .iter()
        .filter(|(s, _)| {
            let f: Vec<&str> = s.split(';').collect();
            f.get(1) == Some(&thread) && pick(&f)
        })
        .map(|(_, n)| n)
        .sum()
}

/// The innermost frame.
fn last<'a>(f: &[&'a str]) -> &'a str {
    f.last().copied().unwrap_or("")
}

fn cpusplit(name: &str, flags: &[&str]) -> Run {
    let exe = build_c("cpusplit", name, &[]);
    let mut all = vec!["--sample", HZ];
    all.extend_from_slice(flags);
    // Three seconds of CPU: about 750 samples at the kernel's 250 Hz tick, so a 5-point bound
    // is more than three standard deviations.
    record_flags(&exe, &all, &["3000"], |_| {}).success()
}

#[test]
fn on_cpu_samples_split_a_threads_time_as_the_program_measured() {
    let r = cpusplit("cpusplit-oncpu", &[]);
    let dir = r.dir.as_os_str();
    let lines = folded(&flame(&[dir, "--on-cpu".as_ref(), "--folded".as_ref()]));
    // The shares of the two functions within the worker's burning, against the program's own
    // CPU clock: within 5 points.
    let seventy = under(&lines, "worker", |f| f.contains(&"burn_seventy"));
    let thirty = under(&lines, "worker", |f| f.contains(&"burn_thirty"));
    let truth_seventy = r.printed("worker", "seventy_ns");
    let truth_thirty = r.printed("worker", "thirty_ns");
    let share = seventy as f64 / (seventy + thirty) as f64;
    let truth = truth_seventy as f64 / (truth_seventy + truth_thirty) as f64;
    assert!(
        (share - truth).abs() < 0.05,
        "burn_seventy: {seventy} samples, burn_thirty {thirty} ({:.1}%); the program measured \
         {:.1}%\n{lines:#?}",
        share * 100.0,
        truth * 100.0
    );
    // The samples add up to the CPU time the worker burned (1 ms each), within 10%.
    let burned = (truth_seventy + truth_thirty) / MS;
    assert!(
        (seventy + thirty).abs_diff(burned) <= burned / 10,
        "{} samples for {burned} ms of CPU",
        seventy + thirty
    );
    // Stacks go down to the program's functions: the thread's entry is below them.
    assert!(
        lines.iter().any(|(s, _)| s.contains("worker;burn_seventy")),
        "{lines:#?}"
    );
    // The same trace gives the same bytes.
    let a = flame(&[dir, "--on-cpu".as_ref(), "--folded".as_ref()]);
    let b = flame(&[dir, "--on-cpu".as_ref(), "--folded".as_ref()]);
    assert_eq!(a.stdout, b.stdout);
    // Off-CPU time of the same trace still adds up to the rollups' blocked time, within 1%.
    let off = folded(&flame(&[dir, "--folded".as_ref()]));
    let (_, g) = infer_model(&r.dir, &r.tmp.path().join("model"), &[]);
    let blocked: u64 = g
        .leaves
        .iter()
        .map(|l| l.block_ns + l.lock_ns + l.sleep_ns + l.other_ns)
        .sum();
    let total: u64 = off.iter().map(|(_, us)| us * 1000).sum();
    let rounding = 500 * off.len() as u64;
    assert!(
        total.abs_diff(blocked) <= blocked / 100 + rounding,
        "off-CPU total {total} ns, leaves' blocked time {blocked} ns"
    );
    assert!(!g.samples.is_empty(), "graph.json keeps the samples");
}

#[test]
fn the_wall_clock_graph_holds_cpu_and_waits_in_samples() {
    let r = cpusplit("cpusplit-wall", &[]);
    let dir = r.dir.as_os_str();
    let lines = folded(&flame(&[dir, "--wall".as_ref(), "--folded".as_ref()]));
    let cpu = under(&lines, "worker", |f| last(f).ends_with("_[c]"));
    let lock = under(&lines, "worker", |f| last(f).ends_with("[lock]_[o]"));
    let sleep = under(&lines, "worker", |f| last(f).ends_with("[sleep]_[o]"));
    // Waits are converted at the sampling rate: 1 sample per ms. The program's clock reads
    // around a call are an upper bound of the wait: they also hold what ran in the call after
    // the wait ended, such as the agent's write of its record, which a machine busy writing to
    // disk can throttle for milliseconds. The lower bound is what the wait cannot be shorter
    // than: for the lock, from the worker's first clock read to main's last before unlocking;
    // for the sleep, the time asked.
    let within = |what: &str, got: u64, floor: &str| {
        let ns = r.printed("worker", &format!("{what}_ns"));
        let runq = r.printed("worker", &format!("{what}_runq_ns"));
        let (lo, hi) = (r.printed("worker", floor) / MS, ns / MS);
        assert!(
            got + 2 >= lo && got <= hi + 2,
            "{what} {got} samples, at least {lo} ms and at most {hi} ms by the program's \
             clock ({} ms of it runnable)",
            runq / MS
        );
    };
    within("lock", lock, "lock_held_ns");
    within("sleep", sleep, "sleep_asked_ns");
    let burned = (r.printed("worker", "seventy_ns") + r.printed("worker", "thirty_ns")) / MS;
    assert!(
        cpu.abs_diff(burned) <= burned / 10,
        "cpu {cpu} samples, {burned} ms burned"
    );
    // Every leaf frame says which side it is on.
    assert!(lines
        .iter()
        .all(|(s, _)| s.ends_with("_[c]") || s.ends_with("_[o]")));
    // Per process: the threads add up under one root.
    let per = folded(&flame(&[
        dir,
        "--wall".as_ref(),
        "--per-process".as_ref(),
        "--folded".as_ref(),
    ]));
    assert!(per
        .iter()
        .all(|(s, _)| !s.starts_with("cpusplit-wall;worker;")));
    let sum = |l: &[(String, u64)]| l.iter().map(|(_, n)| n).sum::<u64>();
    assert!(sum(&per).abs_diff(sum(&lines)) <= lines.len() as u64);
    // One task: the worker's thread-long leaf alone.
    let task = folded(&flame(&[
        dir,
        "--wall".as_ref(),
        "--task".as_ref(),
        "thread_start → thread_exit".as_ref(),
        "--folded".as_ref(),
    ]));
    assert!(!task.is_empty());
    assert!(
        task.iter()
            .all(|(s, _)| s.split(';').nth(1) == Some("worker")),
        "{task:#?}"
    );
    assert!(under(&task, "worker", |f| f.contains(&"burn_thirty")) > 0);
    // The SVG: inferno draws it, with the functions and the units.
    let svg = r.tmp.path().join("wall.svg");
    let o = flame(&[dir, "--wall".as_ref(), "-o".as_ref(), svg.as_os_str()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<?xml") && text.contains("burn_seventy_[c]"));
    assert!(text.contains("samples"));
    // A report of a sampled trace draws wall-clock graphs.
    let html = r.tmp.path().join("r.html");
    let o = Command::new(scalpel())
        .arg("report")
        .arg(dir)
        .arg("-o")
        .arg(&html)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("wall-clock flame graph of"),
        "no wall-clock graph in the report"
    );
}

#[test]
fn a_trace_without_samples_says_how_to_get_them() {
    let exe = build_c("cpusplit", "cpusplit-nosample", &[]);
    let r = record(&exe, &["50"]).success();
    for kind in ["--on-cpu", "--wall"] {
        let o = flame(&[r.dir.as_os_str(), kind.as_ref(), "--folded".as_ref()]);
        assert!(!o.status.success());
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("no on-CPU samples") && err.contains("--sample"),
            "{err}"
        );
    }
    let o = flame(&[r.dir.as_os_str(), "--on-cpu".as_ref(), "--waker".as_ref()]);
    assert!(!o.status.success(), "--waker is for off-CPU graphs");
}

#[test]
fn a_host_full_of_signals_behaves_the_same_sampled() {
    let exe = build_c("sighost", "sighost", &[]);
    let plain = Command::new(&exe).output().unwrap();
    assert!(plain.status.success());
    let r = record_flags(&exe, &["--sample", HZ], &[], |_| {}).success();
    assert_eq!(
        String::from_utf8_lossy(&plain.stdout),
        r.stdout(),
        "sampled output differs"
    );
    // The thread that blocks every signal is sampled all the same.
    let lines = folded(&flame(&[
        r.dir.as_os_str(),
        "--on-cpu".as_ref(),
        "--folded".as_ref(),
    ]));
    let masked = under(&lines, "sigwaiter", |f| f.contains(&"burn_masked"));
    assert!(
        masked >= 100,
        "{masked} samples of 150 ms burned with all signals blocked"
    );
}

#[test]
fn sampled_programs_exec_and_fork_safely() {
    // A shell forks and execs a CPU-bound program ten times, each exec right after burning:
    // a sampling signal pending at an exec would kill the new program.
    let exe = build_c("cpusplit", "cpusplit-exec", &[]);
    let script = format!(
        "for i in 1 2 3 4 5 6 7 8 9 10; do {} 20 || exit 9; done",
        exe.display()
    );
    let r = record_flags(
        std::path::Path::new("/bin/sh"),
        &["--sample", "4999"],
        &["-c", &script],
        |_| {},
    )
    .success();
    let t = r.load();
    let sampled = t
        .processes
        .iter()
        .filter(|p| p.threads.iter().any(|f| !f.samples.is_empty()))
        .count();
    assert!(sampled >= 10, "{sampled} processes have samples");
}

/// Self shares (percent of all samples) by innermost function, from folded lines.
fn self_shares(lines: &[(String, u64)]) -> Vec<(String, f64)> {
    let total: u64 = lines.iter().map(|(_, n)| n).sum();
    let mut by: std::collections::BTreeMap<String, u64> = Default::default();
    for (s, n) in lines {
        *by.entry(s.rsplit(';').next().unwrap_or("").to_owned())
            .or_insert(0) += n;
    }
    by.into_iter()
        .map(|(f, n)| (f, 100.0 * n as f64 / total.max(1) as f64))
        .collect()
}

#[test]
fn on_cpu_samples_agree_with_perf_on_the_top_functions() {
    let test = "on_cpu_samples_agree_with_perf_on_the_top_functions";
    if !is_root() {
        return not_run(test, "perf's cpu-clock events need root here");
    }
    let exe = build_c("cpumix", "cpumix", &[]);
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("perf.data");
    let recorded = Command::new("perf")
        .args(["record", "-q", "-e", "cpu-clock", "-F", "999", "-g", "-o"])
        .arg(&data)
        .arg("--")
        .arg(&exe)
        .arg("1500")
        .output();
    if !recorded.is_ok_and(|o| o.status.success()) {
        return not_run(test, "perf is not installed or cannot record here");
    }
    let report = Command::new("perf")
        .args([
            "report",
            "--no-children",
            "--sort",
            "sym",
            "--stdio",
            "-q",
            "-g",
            "none",
            "-i",
        ])
        .arg(&data)
        .output()
        .unwrap();
    assert!(report.status.success());
    // `    33.74%  [.] mix_thirty_five`
    let perf: Vec<(String, f64)> = String::from_utf8_lossy(&report.stdout)
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let pct = w.next()?.strip_suffix('%')?.parse().ok()?;
            let _kind = w.next()?;
            Some((w.collect::<Vec<_>>().join(" "), pct))
        })
        .collect();
    // Four times perf's run: a thread's CPU-time timer fires only at the kernel's tick (250 Hz
    // on some hosts, whatever the rate asked for), so at the same length our side would have a
    // quarter of perf's samples, and a share's sampling error (about 2% at 35% of 500 samples)
    // would come near the bound. The shares do not depend on the length.
    let r = record_flags(&exe, &["--sample", HZ], &["6000"], |_| {}).success();
    let ours = self_shares(&folded(&flame(&[
        r.dir.as_os_str(),
        "--on-cpu".as_ref(),
        "--folded".as_ref(),
    ])));
    let mut table = String::from("function              perf   scalpel\n");
    for (f, p) in perf.iter().take(5) {
        let s = ours.iter().find(|(o, _)| o == f).map_or(0.0, |o| o.1);
        table += &format!("{f:<20} {p:6.1}% {s:6.1}%\n");
    }
    eprintln!("{table}");
    for (f, p) in perf.iter().take(5) {
        let s = ours.iter().find(|(o, _)| o == f).map_or(0.0, |o| o.1);
        assert!(
            (p - s).abs() <= 5.0,
            "{f}: perf {p:.1}%, scalpel {s:.1}%\n{table}"
        );
    }
}
