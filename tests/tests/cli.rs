//! `scalpel record`, `dump` and the commands that read traces on bad input: clear messages and
//! non-zero exits.

use scalpel_e2e::*;
use std::process::Command;

fn scalpel_cmd(args: &[&str]) -> std::process::Output {
    Command::new(scalpel()).args(args).output().unwrap()
}

#[test]
fn target_that_does_not_exist() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("t");
    let o = scalpel_cmd(&[
        "record",
        "-o",
        out.to_str().unwrap(),
        "--",
        "/nonexistent/program",
    ]);
    assert_eq!(o.status.code(), Some(127));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("/nonexistent/program"), "{err}");
}

#[test]
fn output_directory_not_writable() {
    let o = scalpel_cmd(&["record", "-o", "/proc/scalpel-cannot-write", "--", "true"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("/proc/scalpel-cannot-write"));
}

#[test]
fn malformed_options() {
    let o = scalpel_cmd(&["record", "--no-such-flag"]);
    assert!(!o.status.success());
    let o = scalpel_cmd(&["dump", "/nonexistent/trace"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("/nonexistent/trace"));
}

/// A missing path is named with its cause once: the libraries' errors carry their cause in
/// their message, and the printed chain of causes must not say it again.
#[test]
fn a_missing_trace_or_model_is_named_once_with_its_cause() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("missing");
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    for (cmd, path, cause) in [
        ("top", &missing, "No such file or directory"),
        ("report", &missing, "No such file or directory"),
        ("infer", &missing, "No such file or directory"),
        ("top", &empty, "no trace found"),
    ] {
        let o = scalpel_cmd(&[cmd, path.to_str().unwrap()]);
        assert!(!o.status.success());
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(path.to_str().unwrap()), "{cmd}: {err}");
        assert_eq!(err.matches(cause).count(), 1, "{cmd}: {err}");
    }
}

#[test]
fn exit_status_passes_through_and_dump_reads_it() {
    let run = record(std::path::Path::new("/bin/sh"), &["-c", "exit 7"]);
    assert_eq!(run.out.status.code(), Some(7));
    let err = run.stderr();
    assert!(
        err.contains("processes") && err.contains("events"),
        "summary missing: {err}"
    );
    let exe = build_c("ordering", "ordering-cli", &[]);
    let run = record(&exe, &[]).success();
    let o = scalpel_cmd(&["dump", run.dir.to_str().unwrap(), "--op", "sem_post"]);
    assert!(o.status.success());
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        text.lines().filter(|l| l.contains("sem_post")).count(),
        2000,
        "{}",
        &text[..text.len().min(2000)]
    );
    let o = scalpel_cmd(&["dump", run.dir.to_str().unwrap(), "--op", "no_such_op"]);
    assert!(!o.status.success());
}

#[test]
fn truncated_real_trace_keeps_its_valid_prefix() {
    let exe = build_c("ordering", "ordering-damage", &[]);
    let run = record(&exe, &[]).success();
    let whole = run.load();
    let biggest = thread_files(&whole)
        .into_iter()
        .max_by_key(|f| f.file_len)
        .unwrap();
    let (path, all) = (biggest.path.clone(), biggest.events.len());
    // Cut the file in the middle of its records, as a crash during a copy would.
    let cut = 4096 + (biggest.file_len - 4096) / 2 + 3;
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(cut).unwrap();
    let t = read_dir(&run.dir).expect("the directory still reads");
    let damaged = thread_files(&t)
        .into_iter()
        .find(|f| f.path == path)
        .unwrap();
    assert!(
        damaged.events.len() > all / 3 && damaged.events.len() < all,
        "{} of {all}",
        damaged.events.len()
    );
    // The same events (nanosecond times may shift: the clock fit sees fewer calibration points).
    let key = |e: &Event| (e.op_code, e.ticks, e.dur_ticks, e.seq, e.result, e.offset);
    let kept: Vec<_> = damaged.events.iter().map(key).collect();
    let before: Vec<_> = biggest.events[..kept.len()].iter().map(key).collect();
    assert_eq!(kept, before);
    let w = damaged
        .warnings
        .iter()
        .map(|w| w.to_string())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        w.contains(path.to_str().unwrap()) && w.contains("offset"),
        "{w}"
    );
    // `scalpel dump` warns with the file and offset and still prints every valid event.
    let o = scalpel_cmd(&["dump", run.dir.to_str().unwrap()]);
    assert!(o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(path.to_str().unwrap()) && err.contains("offset"),
        "{err}"
    );
}

#[test]
fn force_replaces_only_a_trace_and_only_for_a_runnable_command() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    // A directory with something else in it is never emptied.
    let mine = tmp.path().join("mine");
    std::fs::create_dir(&mine).unwrap();
    std::fs::write(mine.join("notes.txt"), "keep me").unwrap();
    let o = scalpel_cmd(&[
        "record",
        "--force",
        "-o",
        mine.to_str().unwrap(),
        "--",
        "true",
    ]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("notes.txt"));
    assert!(mine.join("notes.txt").exists());
    // An existing empty directory others could read is closed to them (the trace is the
    // recording user's alone).
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    std::fs::set_permissions(&empty, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert!(
        scalpel_cmd(&["record", "-o", empty.to_str().unwrap(), "--", "true"])
            .status
            .success()
    );
    assert_eq!(
        std::fs::metadata(&empty).unwrap().permissions().mode() & 0o7777,
        0o700
    );
    // A command that cannot start leaves the previous trace alone.
    let run = record(std::path::Path::new("/bin/true"), &[]);
    let before = std::fs::read_dir(&run.dir).unwrap().count();
    let o = scalpel_cmd(&[
        "record",
        "--force",
        "-o",
        run.dir.to_str().unwrap(),
        "--",
        "no-such-command-xyz",
    ]);
    assert_eq!(o.status.code(), Some(127));
    assert_eq!(std::fs::read_dir(&run.dir).unwrap().count(), before);
}

#[test]
fn odd_files_and_closed_pipes_do_not_hang_or_panic() {
    let run = record(std::path::Path::new("/bin/true"), &[]);
    let proc_dir = std::fs::read_dir(&run.dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_dir())
        .unwrap();
    let fifo = proc_dir.join("t999999.trace");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid path for mkfifo.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let o = scalpel_cmd(&["summary", run.dir.to_str().unwrap()]);
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("expected a regular file"));
    // Output into a pipe closed at once: a clean exit, not a panic.
    let mut child = Command::new(scalpel())
        .args(["summary", run.dir.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let status = child.wait().unwrap();
    assert_ne!(
        status.code(),
        Some(101),
        "scalpel panicked on a closed pipe"
    );
}

/// Every command that writes to standard output treats a reader that went away as done
/// (`scalpel export … | head`): exit 0 and no error. `export` and `waitfor --format json` used
/// to exit 1 with "cannot write: Broken pipe" (the JSON writer's error hid the pipe's).
#[test]
fn a_reader_that_stops_early_is_not_an_error() {
    use std::io::Read;
    let exe = build_c("selfpipe", "selfpipe", &[]);
    // About 60,000 events: every output below is larger than a pipe holds.
    let run = record(&exe, &["10", "2000"]).success();
    let model = run.tmp.path().join("model");
    let o = scalpel_cmd(&[
        "infer",
        "-o",
        model.to_str().unwrap(),
        run.dir.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let m = model.to_str().unwrap();
    let t = run.dir.to_str().unwrap();
    for args in [
        vec!["export", m],
        vec!["export", "--table", "leaves", m],
        vec!["export", "--table", "edges", "--format", "json", m],
        vec!["export", "--table", "occurrences", m],
        vec!["waitfor", "--format", "json", m],
        vec!["flame", "--folded", m],
        vec!["dump", t],
    ] {
        let mut child = Command::new(scalpel())
            .args(&args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut head = [0u8; 10];
        child.stdout.take().unwrap().read_exact(&mut head).unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            (
                out.status.code(),
                String::from_utf8_lossy(&out.stderr).into_owned()
            ),
            (Some(0), String::new()),
            "scalpel {args:?} | head"
        );
    }
}

/// A program that makes none of the calls Scalpel records gives a trace with no leaf: `top`
/// says so beside its empty table, instead of the table alone.
#[test]
fn top_on_a_trace_with_no_leaf_says_why_its_table_is_empty() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t");
    let d = dir.to_str().unwrap();
    let o = scalpel_cmd(&["record", "-o", d, "--", "true"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = scalpel_cmd(&["top", d]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("holds no leaf"), "{err}");
}
