//! Another local user attacking a recording: links and directories planted where the recorder
//! and the agent create their files. Tests that need a second user's files run as root (which
//! can hand a directory to uid 65534, `nobody`) and say "not run" otherwise.

use scalpel_e2e::*;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::process::Command;

/// A link planted as `shared.tbl` is not followed: the file it points to keeps its mode, size
/// and bytes (the agent used to open it through the link, make it 0666 and extend it to
/// 1.5 MiB), and the traced program runs as usual.
#[test]
fn a_shared_table_planted_as_a_link_is_not_followed() {
    let tmp = tempfile::tempdir().unwrap();
    let victim = tmp.path().join("victim");
    fs::write(&victim, b"precious\n").unwrap();
    fs::set_permissions(&victim, fs::Permissions::from_mode(0o600)).unwrap();
    let dir = tmp.path().join("trace");
    fs::create_dir(&dir).unwrap();
    std::os::unix::fs::symlink(&victim, dir.join("shared.tbl")).unwrap();
    let exe = build_c("hello", "hello", &[]);
    let out = Command::new(&exe)
        .env("LD_PRELOAD", agent())
        .env("SCALPEL_DIR", &dir)
        .output()
        .unwrap();
    // hello.c exits with 3 on purpose, after printing.
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hello ok\n");
    let m = fs::metadata(&victim).unwrap();
    assert_eq!(m.mode() & 0o777, 0o600, "the victim's mode");
    assert_eq!(
        fs::read(&victim).unwrap(),
        b"precious\n",
        "the victim's bytes"
    );
}

/// Runs `scalpel record -o dir -- true`, which must fail; returns what it said.
fn refused_record(dir: &std::path::Path) -> String {
    let out = Command::new(scalpel())
        .args(["record", "-o"])
        .arg(dir)
        .args(["--", "true"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{err}");
    err
}

/// `record -o DIR` refuses a directory other users can write (they could plant links in it or
/// remove the trace), naming it and its mode.
#[test]
fn record_refuses_a_directory_others_can_write() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("open");
    fs::create_dir(&dir).unwrap();
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o777)).unwrap();
    let err = refused_record(&dir);
    assert!(
        err.contains(&dir.display().to_string())
            && err.contains("other users can write here (mode 777"),
        "{err}"
    );
    assert_eq!(
        fs::read_dir(&dir).unwrap().count(),
        0,
        "nothing written there"
    );
}

/// `record -o DIR` refuses an (empty, world-writable) directory that another user made in
/// advance, naming its owner: the attack that turned a root-owned file world-writable.
#[test]
fn record_refuses_a_directory_another_user_owns() {
    if !is_root() {
        eprintln!("not run: needs root to give a directory to another user");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("theirs");
    fs::create_dir(&dir).unwrap();
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o777)).unwrap();
    std::os::unix::fs::chown(&dir, Some(65534), Some(65534)).unwrap();
    let err = refused_record(&dir);
    assert!(
        err.contains("owned by uid 65534, not by you (uid 0)"),
        "{err}"
    );
    assert_eq!(
        fs::read_dir(&dir).unwrap().count(),
        0,
        "nothing written there"
    );
}

/// A trace directory `record` makes holds a `shared.tbl` it created itself, a regular file,
/// before any traced process runs: a statically linked program, which the agent never enters,
/// leaves it there all the same.
#[test]
fn record_creates_the_shared_table_itself() {
    let exe = build_c("hello", "hello-static", &["-static"]);
    let run = record(&exe, &[]);
    assert!(run.stdout().contains("hello ok"), "{}", run.stderr());
    let m = fs::symlink_metadata(run.dir.join("shared.tbl")).unwrap();
    assert!(m.file_type().is_file(), "{m:?}");
}

/// Threads that cannot get a trace file (here: more live threads than the descriptor limit
/// allows the agent) are counted, `summary` says how many, and the recorded threads plus the
/// unrecorded ones are all of them; `infer --strict` refuses the trace. Before, the summary
/// said "warnings 0" and `--strict` passed.
#[test]
fn threads_without_a_trace_file_are_counted() {
    let exe = build_c("fdlimit", "fdlimit", &[]);
    let run = record(&exe, &[]).success();
    assert!(run.stdout().contains("40 threads ran"), "{}", run.stdout());
    let t = run.load();
    let files = thread_files(&t).len() as u64;
    let missing = t.losses.threads_without_file;
    assert!(
        missing > 0,
        "some threads found no descriptor left: {files} files"
    );
    assert_eq!(
        files + missing,
        41,
        "{files} files and {missing} unrecorded threads"
    );
    let o = Command::new(scalpel())
        .arg("summary")
        .arg(&run.dir)
        .output()
        .unwrap();
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(
        s.contains(&format!(
            "unrecorded: {missing} thread(s) without a trace file"
        )),
        "{s}"
    );
    let o = Command::new(scalpel())
        .args(["infer", "--strict", "--stage", "graph", "-o"])
        .arg(run.tmp.path().join("model"))
        .arg(&run.dir)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(
        err.contains("without a trace file") && err.contains("--strict"),
        "{err}"
    );
}
