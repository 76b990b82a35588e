//! `scalpel flame`: off-CPU folded stacks and SVG of a recorded program whose waits are known
//! (tests/c/metrics.c: the holder sleeps 30 ms holding a lock, then 20 ms, then writes a pipe;
//! main sleeps 5 ms, waits about 25 ms for the lock, about 20 ms in the read).

use scalpel_e2e::score::infer_model;
use scalpel_e2e::*;

const MS: u64 = 1_000_000;

/// Nanoseconds under stacks of `thread` whose wait frame (the last before any `--`) has `tag`.
fn waited(lines: &[(String, u64)], thread: &str, tag: &str) -> u64 {
    lines
        .iter()
        .filter(|(s, _)| {
            let blocked = s.split(";--;").next().unwrap();
            let frames: Vec<&str> = blocked.split(';').collect();
            frames.get(1) == Some(&thread) && frames.last().is_some_and(|f| f.ends_with(tag))
        })
        .map(|(_, us)| us * 1000)
        .sum()
}

fn near(what: &str, got: u64, want: u64) {
    let slack = want / 20 + MS;
    assert!(
        got + slack >= want && got <= want + slack,
        "{what}: {got} ns in the flame graph, {want} ns by the program's clock"
    );
}

#[test]
fn off_cpu_stacks_hold_the_waits_a_program_timed() {
    // An executable of its own per test: the other test's build replacing it while this trace
    // is symbolized would leave its frames unnamed.
    let exe = build_c("metrics", "metrics-folded", &[]);
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("out.txt");
    let r = record(&exe, &[file.to_str().unwrap()]).success();
    let dir = r.dir.as_os_str();
    let lines = folded(&flame(&[dir, "--folded".as_ref(), "--waker".as_ref()]));
    // The waits, each under its thread and kind, as long as the program timed them.
    for (thread, tag, label, what) in [
        ("holder", "[sleep]", "holder", "sleep"),
        ("metrics-folded", "[sleep]", "main", "sleep"),
        ("metrics-folded", "[lock]", "main", "lock"),
        ("metrics-folded", "[read]", "main", "read"),
    ] {
        near(
            &format!("{thread}'s {tag} waits"),
            waited(&lines, thread, tag),
            r.printed(label, what),
        );
    }
    // The read was ended by the holder's write: the waker's stack follows `--`, its innermost
    // frame first, its thread last.
    let read = lines
        .iter()
        .find(|(s, us)| s.contains("[read];--;") && *us > 1000)
        .unwrap_or_else(|| panic!("no read with a waker: {lines:#?}"));
    let waker: Vec<&str> = read.0.split(";--;").nth(1).unwrap().split(';').collect();
    assert!(waker.contains(&"hold_and_send"), "{waker:?}");
    assert_eq!(waker.last(), Some(&"holder"), "{waker:?}");
    // Everything the rollups count as blocked is in the graph, and nothing else.
    let (_, g) = infer_model(&r.dir, &tmp.path().join("model"), &[]);
    let blocked: u64 = g
        .leaves
        .iter()
        .map(|l| l.block_ns + l.lock_ns + l.sleep_ns + l.other_ns)
        .sum();
    let total: u64 = lines.iter().map(|(_, us)| us * 1000).sum();
    let rounding = 500 * lines.len() as u64;
    assert!(
        total.abs_diff(blocked) <= blocked / 100 + rounding,
        "flame total {total} ns, leaves' blocked time {blocked} ns"
    );
    // The same trace gives the same lines.
    let again = folded(&flame(&[dir, "--folded".as_ref(), "--waker".as_ref()]));
    assert_eq!(lines, again);
}

#[test]
fn the_flame_graph_is_drawn_and_bad_names_are_refused() {
    let exe = build_c("metrics", "metrics-drawn", &[]);
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("out.txt");
    let r = record(&exe, &[file.to_str().unwrap()]).success();
    let svg = tmp.path().join("off.svg");
    let o = flame(&[r.dir.as_os_str(), "-o".as_ref(), svg.as_os_str()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<?xml") && text.contains("<svg"));
    assert!(
        text.contains("hold_and_send"),
        "the holder's stack is drawn: {}",
        &text[..text.len().min(3000)]
    );
    assert!(text.contains("Off-CPU time"));
    let o = flame(&[
        r.dir.as_os_str(),
        "--task".as_ref(),
        "no such task".as_ref(),
    ]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("no task named \"no such task\"") && err.contains("closest names"),
        "{err}"
    );
    let o = flame(&[
        r.dir.as_os_str(),
        "-o".as_ref(),
        tmp.path().join("missing/off.svg").as_os_str(),
    ]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("does not exist"));
}
