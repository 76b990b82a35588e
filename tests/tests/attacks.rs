//! Another local user attacking a recording: links and directories planted where the recorder
//! and the agent create their files. Tests that need a second user's files run as root (which
//! can hand a directory to uid 65534, `nobody`) and say "not run" otherwise.

use scalpel_e2e::*;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::process::Command;

/// The agent opens no path in the trace directory: loaded by hand with `SCALPEL_DIR` and no
/// recorder, it records nothing, and a link planted as `shared.tbl` is left alone (the agent used
/// to open it through the link, make its target 0666 and extend it to 1.5 MiB). The traced
/// program runs as usual.
#[test]
fn an_agent_without_its_recorder_opens_nothing() {
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
    assert_eq!(fs::read_dir(&dir).unwrap().count(), 1, "nothing added");
}

/// `SCALPEL_BROKER` naming a descriptor that is not the recorder's socket (here a file the shell
/// opened, then a socket pair of the program's own) gets no request written into it: the agent
/// checks the socket's type and its peer before it asks for anything.
#[test]
fn an_agent_sends_nothing_to_a_descriptor_that_is_not_its_recorder() {
    let tmp = tempfile::tempdir().unwrap();
    let out_file = tmp.path().join("fd7");
    let exe = build_c("hello", "hello", &[]);
    let script = format!(
        "exec 7>'{}'; SCALPEL_BROKER=7,1 LD_PRELOAD='{}' '{}'",
        out_file.display(),
        agent().display(),
        exe.display()
    );
    let out = Command::new("sh").args(["-c", &script]).output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hello ok\n");
    assert_eq!(fs::read(&out_file).unwrap(), b"", "nothing written to fd 7");
}

/// Every directory of a recording is 0700 and every file 0600, owned by the recording user,
/// even under `umask 000` and with threads, fork children that `_exit`, and an exec'd child
/// (before: files 0666 in 1777 directories, so any local user could read argv and memory maps,
/// or truncate `shared.tbl` and kill the target with SIGBUS).
#[test]
fn a_recording_is_closed_to_every_other_user() {
    let exe = build_c("forkexit", "forkexit", &[]);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("trace");
    let out = record_from_shell("umask 000", &dir, &exe);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("20 children exited"),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    let mut seen = (0, 0);
    let mut stack = vec![dir.clone()];
    while let Some(d) = stack.pop() {
        let m = fs::symlink_metadata(&d).unwrap();
        assert_eq!(m.mode() & 0o7777, 0o700, "{}", d.display());
        assert_eq!(m.uid(), me, "{}", d.display());
        seen.0 += 1;
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let m = fs::symlink_metadata(&p).unwrap();
            if m.is_dir() {
                stack.push(p);
            } else {
                assert!(m.is_file(), "{}", p.display());
                assert_eq!(m.mode() & 0o7777, 0o600, "{}", p.display());
                assert_eq!(m.uid(), me, "{}", p.display());
                seen.1 += 1;
            }
        }
    }
    // The root, the parent, 20 fork children and the exec'd child's two images at least.
    assert!(seen.0 >= 23 && seen.1 >= 45, "{seen:?} directories, files");
}

/// A fork child that leaves with `_exit` never closes its thread file; the recorder trims it to
/// what it holds when the recording ends (before: each kept its 1 MiB reservation, 205 MB for
/// 200 forks).
#[test]
fn files_of_children_that_exit_at_once_are_trimmed() {
    let exe = build_c("forkexit", "forkexit", &[]);
    let run = record(&exe, &[]).success();
    let t = run.load();
    let files = thread_files(&t);
    assert!(files.len() >= 22, "{} thread files", files.len());
    let mut big = Vec::new();
    for d in fs::read_dir(&run.dir).unwrap() {
        let d = d.unwrap().path();
        if !d.is_dir() {
            continue;
        }
        for f in fs::read_dir(&d).unwrap() {
            let p = f.unwrap().path();
            let len = fs::metadata(&p).unwrap().len();
            if len > 64 << 10 {
                big.push((p, len));
            }
        }
    }
    assert!(big.is_empty(), "files left at their reservation: {big:?}");
    assert_eq!(run.load().warnings.len(), 0, "{:?}", run.load().warnings);
}

/// Runs `scalpel record -o dir -- exe` from a shell after `setup` (a umask, a limit).
fn record_from_shell(
    setup: &str,
    dir: &std::path::Path,
    exe: &std::path::Path,
) -> std::process::Output {
    let script = format!(
        "{setup}; exec '{}' record -o '{}' -- '{}'",
        scalpel().display(),
        dir.display(),
        exe.display()
    );
    Command::new("sh").args(["-c", &script]).output().unwrap()
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
        not_run(
            "record_refuses_a_directory_another_user_owns",
            "needs root to give a directory to another user",
        );
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

/// A trace directory `record` makes holds a `shared.tbl` it wrote itself, a regular file, even
/// when no traced process used the table: a statically linked program, which the agent never
/// enters, leaves it there all the same.
#[test]
fn record_creates_the_shared_table_itself() {
    let exe = build_c("hello", "hello-static", &["-static"]);
    let run = record(&exe, &[]);
    assert!(run.stdout().contains("hello ok"), "{}", run.stderr());
    let m = fs::symlink_metadata(run.dir.join("shared.tbl")).unwrap();
    assert!(m.file_type().is_file(), "{m:?}");
}

/// Threads that cannot get a trace file (here: the program has used up every descriptor its
/// limit allows before starting them) are counted, `summary` says how many, and the recorded
/// threads plus the unrecorded ones are all of them; `infer --strict` refuses the trace. Before,
/// the summary said "warnings 0" and `--strict` passed.
#[test]
fn threads_without_a_trace_file_are_counted() {
    let exe = build_c("fdlimit", "fdlimit", &[]);
    let run = record(&exe, &["fill"]).success();
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

/// A thread's trace file holds no descriptor once it is mapped: 40 live threads under a limit of
/// 16 descriptors are all recorded, and the program's own `pipe()` calls never fail (before, the
/// agent kept one descriptor per live thread: 12 of 41 threads recorded, and a program with 480
/// threads under `ulimit -n 1024` got 142 EMFILE failures traced and none untraced).
#[test]
fn threads_leave_the_host_its_descriptors() {
    let exe = build_c("fdlimit", "fdlimit", &[]);
    let run = record(&exe, &[]).success();
    assert!(
        run.stdout().contains("40 threads ran, 0 pipe failures"),
        "{}",
        run.stdout()
    );
    let t = run.load();
    assert_eq!(thread_files(&t).len(), 41);
    assert_eq!(t.losses.threads_without_file, 0);
}

/// The recorder lists the files it made: a thread file or a `process.trace` removed after the
/// recording, and a file added, are each named in a warning, and `infer --strict` refuses the
/// trace (before, a removed file passed without a word).
#[test]
fn files_removed_or_added_after_the_recording_are_named() {
    let exe = build_c("forkexit", "forkexit", &[]);
    let run = record(&exe, &[]).success();
    assert!(
        !run.stderr().contains("scalpel: warning"),
        "{}",
        run.stderr()
    );
    let t = run.load();
    let p = &t.processes[0];
    let thread = p.threads[0].path.clone();
    let process = t.processes[1].process.as_ref().unwrap().path.clone();
    fs::remove_file(&thread).unwrap();
    fs::remove_file(&process).unwrap();
    let added = p.dir.join("t999999.trace");
    fs::copy(&p.threads[1].path, &added).unwrap();
    let o = Command::new(scalpel())
        .arg("summary")
        .arg(&run.dir)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    for (path, what) in [
        (&thread, "missing: the recorder made it"),
        (&process, "missing: the recorder made it"),
        (&added, "not made by the recorder"),
    ] {
        assert!(
            err.lines()
                .any(|l| l.contains(&path.display().to_string()) && l.contains(what)),
            "{what} {}: {err}",
            path.display()
        );
    }
    let o = Command::new(scalpel())
        .args(["infer", "--strict", "--stage", "graph", "-o"])
        .arg(run.tmp.path().join("model"))
        .arg(&run.dir)
        .output()
        .unwrap();
    assert!(
        !o.status.success(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Another local user can neither read a running recording nor cut its files under the target
/// (before: `truncate -s 0 TRACE/shared.tbl` as any user killed the target with SIGBUS, and
/// argv, memory maps and peer addresses were readable by all). Runs as root, attacking as uid
/// 65534.
#[test]
fn another_user_can_neither_read_nor_cut_a_live_recording() {
    use std::os::unix::process::CommandExt;
    if !is_root() {
        not_run(
            "another_user_can_neither_read_nor_cut_a_live_recording",
            "needs root to attack as another user",
        );
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    // The attacker must reach the trace's parent to try at all.
    fs::set_permissions(tmp.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let dir = tmp.path().join("trace");
    let target = Command::new(scalpel())
        .args(["record", "-o"])
        .arg(&dir)
        .args(["--", "sh", "-c", "sleep 1; echo survived"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for the trace's files to exist.
    for _ in 0..200 {
        if dir.join("files.list").exists() || fs::read_dir(&dir).map_or(0, |d| d.count()) > 1 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let script = format!(
        "cd '{d}' || exit 10; truncate -s 0 '{d}/shared.tbl' && exit 11; \
         for f in '{d}'/*/*.trace; do truncate -s 4096 \"$f\" && exit 12; cat \"$f\" && exit 13; done; exit 0",
        d = dir.display()
    );
    let attack = Command::new("sh")
        .args(["-c", &script])
        .uid(65534)
        .gid(65534)
        .output()
        .unwrap();
    let out = target.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && said.contains("survived"), "{said}");
    assert_eq!(
        attack.status.code(),
        Some(10),
        "the attacker got into the trace: {}",
        String::from_utf8_lossy(&attack.stderr)
    );
}

/// A thread whose calls all come from a handler on an alternate signal stack gets no call
/// stacks; the agent counts the events it could not walk, `summary` prints the count and the
/// reader names the thread's file (before: 312,489 events without a stack under a signal storm,
/// and no word).
#[test]
fn a_thread_without_any_stack_is_named() {
    let exe = build_c("altstack", "altstack", &[]);
    let run = record(&exe, &[]).success();
    assert!(run.stdout().contains("100 locks taken"), "{}", run.stdout());
    let err = run.stderr();
    assert!(
        err.contains("events wanted a stack the agent could not take"),
        "{err}"
    );
    // (`Run::load` refuses warnings; this trace has one on purpose.)
    let t = read_dir(&run.dir).unwrap();
    let lonely = thread_files(&t)
        .into_iter()
        .find(|f| f.header.stacks_missed >= 200)
        .expect("the handler's thread counted its missed stacks");
    assert!(lonely.stacks.is_empty());
    assert!(
        err.lines()
            .any(|l| l.contains(&lonely.path.display().to_string())
                && l.contains("the agent could take none")),
        "{err}"
    );
}

/// A traced process may finish or reopen only its own files: a fork child that forges the
/// recorder's "finished" message for its parent's thread file does not get that file trimmed
/// under the parent's live mapping (which would kill the parent with SIGBUS at its next record;
/// a compromised www-data worker could so kill its root master).
#[test]
fn a_process_cannot_finish_another_process_file() {
    let exe = build_c("forge", "forge", &[]);
    let run = record(&exe, &[]);
    assert!(
        run.out.status.success() && run.stdout().contains("parent survived"),
        "{:?} {}{}",
        run.out.status,
        run.stdout(),
        run.stderr()
    );
    let t = run.load();
    assert_eq!(with_op(&t, Op::MutexLock).len(), 51_000);
}

/// Under a small descriptor limit (`ulimit -n 16`) the recorder puts its socket below the limit,
/// and the command is recorded (it failed to start: "Bad file descriptor").
#[test]
fn a_command_under_a_small_descriptor_limit_is_recorded() {
    let exe = build_c("hello", "hello", &[]);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("trace");
    let out = record_from_shell("ulimit -n 16", &dir, &exe);
    // hello.c exits with 3 on purpose, after printing.
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let t = read_dir(&dir).unwrap();
    assert!(!thread_files(&t).is_empty());
}
