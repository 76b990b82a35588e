//! Attacks on the recorder (issue 48): a descendant that truncates the shared table, links and
//! races at the trace directory's path, a umask that leaves it open, a server that starts
//! thousands of processes, FIFOs planted where the recorder reopens its files, and escape
//! sequences in what it prints. Cases with a second user run as root (uid 65534 attacks) and
//! say "not run" otherwise.

use scalpel_e2e::*;
use std::fs;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What `scalpel record -o dir [--force] -- true` said; it must have failed.
fn refused(dir: &Path, force: bool) -> String {
    let mut cmd = Command::new(scalpel());
    cmd.args(["record", "-o"]).arg(dir);
    if force {
        cmd.arg("--force");
    }
    let out = cmd.args(["--", "true"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "record ran: {err}");
    err
}

/// Mode, owner and sorted entries (with their modes) of a directory and what it holds.
fn snapshot(dir: &Path) -> Vec<(String, u32, u32, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(p) = stack.pop() {
        let m = fs::symlink_metadata(&p).unwrap();
        let body = if m.is_file() {
            fs::read(&p).unwrap()
        } else {
            Vec::new()
        };
        out.push((p.display().to_string(), m.mode(), m.uid(), body));
        if m.is_dir() {
            for e in fs::read_dir(&p).unwrap() {
                stack.push(e.unwrap().path());
            }
        }
    }
    out.sort();
    out
}

/// A directory that looks like an earlier trace: `2024.01/` and `shared.tbl`, mode 0755.
fn trace_like(dir: &Path) {
    fs::create_dir(dir).unwrap();
    fs::create_dir(dir.join("2024.01")).unwrap();
    fs::write(dir.join("2024.01/t1.trace"), b"victim's").unwrap();
    fs::write(dir.join("shared.tbl"), b"victim's table").unwrap();
    fs::set_permissions(dir, fs::Permissions::from_mode(0o755)).unwrap();
}

/// Sets `/proc/sys/fs/protected_symlinks` to 0 for its lifetime, then writes the old value back.
struct UnprotectedSymlinks(Option<String>);

impl UnprotectedSymlinks {
    const PATH: &'static str = "/proc/sys/fs/protected_symlinks";

    /// None when the value is not 0 and cannot be made 0.
    fn set() -> Option<Self> {
        let old = fs::read_to_string(Self::PATH).ok()?.trim().to_string();
        if old == "0" {
            return Some(UnprotectedSymlinks(None));
        }
        fs::write(Self::PATH, "0").ok()?;
        Some(UnprotectedSymlinks(Some(old)))
    }
}

impl Drop for UnprotectedSymlinks {
    fn drop(&mut self) {
        if let Some(old) = &self.0 {
            let _ = fs::write(Self::PATH, old);
        }
    }
}

/// A link another user planted at `-o` in a shared sticky directory, to a root-owned directory
/// holding entries named like a trace's: `record` refuses it, with and without `--force`, and
/// the target keeps its mode, owner and entries (before: chmodded 0700 even when refused as
/// "not empty", and emptied under `--force`). With `protected_symlinks` 0.
#[test]
fn a_link_planted_at_the_trace_path_is_refused_as_root() {
    if !is_root() {
        not_run(
            "a_link_planted_at_the_trace_path_is_refused_as_root",
            "needs root to plant a link as another user",
        );
        return;
    }
    let Some(_guard) = UnprotectedSymlinks::set() else {
        not_run(
            "a_link_planted_at_the_trace_path_is_refused_as_root",
            "cannot set fs.protected_symlinks to 0",
        );
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    fs::set_permissions(tmp.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let victim = tmp.path().join("victim");
    trace_like(&victim);
    for mode in [0o1777, 0o777] {
        let shared = tmp.path().join(format!("shared{mode:o}"));
        fs::create_dir(&shared).unwrap();
        std::os::unix::fs::chown(&shared, Some(65534), Some(65534)).unwrap();
        fs::set_permissions(&shared, fs::Permissions::from_mode(mode)).unwrap();
        let link = shared.join("t");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        std::os::unix::fs::lchown(&link, Some(65534), Some(65534)).unwrap();
        let before = snapshot(&victim);
        for force in [false, true] {
            let err = refused(&link, force);
            assert_eq!(
                snapshot(&victim),
                before,
                "the victim changed (force {force}): {err}"
            );
            assert!(
                err.contains(&link.display().to_string()) && err.contains("symbolic link"),
                "{err}"
            );
        }
        // A dangling one too, and nothing is made where it points.
        let dangling = shared.join("d");
        std::os::unix::fs::symlink(tmp.path().join("made"), &dangling).unwrap();
        refused(&dangling, false);
        assert!(!tmp.path().join("made").exists());
    }
}

/// A link of the user's own at `-o`, to a directory of theirs with entries: refused with and
/// without `--force`, and nothing in it changes.
#[test]
fn a_link_at_the_trace_path_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let victim = tmp.path().join("mine");
    trace_like(&victim);
    let link = tmp.path().join("t");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    let before = snapshot(&victim);
    for force in [false, true] {
        let err = refused(&link, force);
        assert_eq!(
            snapshot(&victim),
            before,
            "the target changed (force {force}): {err}"
        );
        assert!(err.contains("symbolic link"), "{err}");
    }
}

/// The creation race: while root records into a directory whose parent another user can
/// write, that user swaps the new trace directory for a link to a root-owned directory (one
/// atomic exchange), as fast as it can. Over 50 attempts the victim never changes (before:
/// the attacker won on attempts 1 and 4, and the victim was chmodded and filled). Each run
/// either refuses the link or records into the directory it made, which stays root's and 0700.
#[test]
fn a_directory_swapped_for_a_link_at_creation_changes_nothing() {
    if !is_root() {
        not_run(
            "a_directory_swapped_for_a_link_at_creation_changes_nothing",
            "needs root to race as another user",
        );
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    fs::set_permissions(tmp.path(), fs::Permissions::from_mode(0o755)).unwrap();
    // The attacker runs as uid 65534, which may not reach the build directory (a checkout in
    // root's 0700 home, as the README's newcomer has): it runs from a copy here.
    let swap = tmp.path().join("rec_swap");
    fs::copy(build_c("rec_swap", "rec_swap", &[]), &swap).unwrap();
    // Not named like a trace: a recorder that followed the link would fill it.
    let victim = tmp.path().join("victim");
    fs::create_dir(&victim).unwrap();
    fs::write(victim.join("keep"), b"victim's").unwrap();
    fs::set_permissions(&victim, fs::Permissions::from_mode(0o755)).unwrap();
    let before = snapshot(&victim);
    let parent = tmp.path().join("theirs");
    fs::create_dir(&parent).unwrap();
    std::os::unix::fs::chown(&parent, Some(65534), Some(65534)).unwrap();
    const ATTEMPTS: u32 = 50;
    let (mut won, mut refusals) = (0, 0);
    for attempt in 0..ATTEMPTS {
        let trace = parent.join("trace");
        let moved = parent.join("spare");
        let mut attacker = Command::new(&swap)
            .arg(&trace)
            .arg(&moved)
            .arg(&victim)
            .arg("5")
            .uid(65534)
            .gid(65534)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut ready = [0u8; 6];
        std::io::Read::read_exact(attacker.stdout.as_mut().unwrap(), &mut ready).unwrap();
        let out = Command::new(scalpel())
            .args(["record", "-o"])
            .arg(&trace)
            .args(["--", "true"])
            .output()
            .unwrap();
        let _ = attacker.kill();
        let status = attacker.wait().unwrap();
        if status.success() {
            won += 1;
        }
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            snapshot(&victim),
            before,
            "attempt {attempt}: the victim changed; {err}"
        );
        if !out.status.success() {
            refusals += 1;
            assert!(err.contains("symbolic link"), "attempt {attempt}: {err}");
        }
        for made in [&trace, &moved] {
            if let Ok(m) = fs::symlink_metadata(made) {
                if m.is_dir() {
                    assert_eq!(
                        (m.uid(), m.mode() & 0o7777),
                        (0, 0o700),
                        "{}",
                        made.display()
                    );
                    fs::remove_dir_all(made).unwrap();
                } else {
                    fs::remove_file(made).unwrap();
                }
            }
        }
    }
    eprintln!("the attacker won {won} of {ATTEMPTS} swaps; {refusals} runs refused the link");
}

/// Under `umask 000` the trace directory is never seen with a mode other than 0700, polled as
/// fast as a thread can while `record` makes it, over 30 recordings (before: made 0777, then
/// chmodded, and another user planted a process directory in between).
#[test]
fn the_trace_directory_is_never_open_under_umask_000() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let tmp = tempfile::tempdir().unwrap();
    let mut seen = Vec::new();
    for n in 0..30 {
        let dir = tmp.path().join(format!("trace{n}"));
        let done = Arc::new(AtomicBool::new(false));
        let poller = {
            let (dir, done) = (dir.clone(), done.clone());
            std::thread::spawn(move || {
                let mut modes = std::collections::BTreeSet::new();
                while !done.load(Ordering::Relaxed) {
                    if let Ok(m) = fs::symlink_metadata(&dir) {
                        modes.insert(m.mode() & 0o7777);
                    }
                }
                modes
            })
        };
        let mut cmd = Command::new(scalpel());
        cmd.args(["record", "-o"]).arg(&dir).args(["--", "true"]);
        // SAFETY: umask is async-signal-safe and cannot fail.
        unsafe {
            cmd.pre_exec(|| {
                libc::umask(0);
                Ok(())
            });
        }
        let out = cmd.output().unwrap();
        done.store(true, Ordering::Relaxed);
        let modes = poller.join().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        seen.extend(modes);
    }
    seen.sort();
    seen.dedup();
    let octal: Vec<String> = seen.iter().map(|m| format!("{m:o}")).collect();
    assert_eq!(seen, [0o700], "modes seen: {octal:?}");
}

/// A root master whose worker drops to uid 65534, gets the shared counter table from the broker
/// and truncates it, lives on: the live table cannot be cut (before: the master died of SIGBUS,
/// rc 135).
#[test]
fn a_descendant_cannot_cut_the_shared_table() {
    if !is_root() {
        not_run(
            "a_descendant_cannot_cut_the_shared_table",
            "needs root to drop a worker to another user",
        );
        return;
    }
    let exe = build_c("rec_sigbus", "rec_sigbus", &[]);
    let run = record(&exe, &[]);
    let out = run.stdout();
    assert_eq!(run.out.status.code(), Some(0), "{out}{}", run.stderr());
    assert!(out.contains("master ok 40000"), "{out}");
    assert!(
        out.contains(&format!("worker: ftruncate -1 errno {}", libc::EPERM)),
        "{out}"
    );
    // The counters are in the trace all the same.
    let t = run.load();
    assert!(!t.losses.any(), "{}", t.losses);
    let m = fs::symlink_metadata(run.dir.join("shared.tbl")).unwrap();
    assert!(m.is_file() && m.mode() & 0o777 == 0o600, "{m:?}");
}

/// 2,000 sequential short-lived processes (fork, exec, one lock) under `ulimit -n 1024` are all
/// recorded, none is counted unrecorded, and no empty process directory is left (before: the
/// recorder kept a descriptor per process, and after about 1,000 new ones went unrecorded).
#[test]
fn two_thousand_processes_are_all_recorded_under_the_usual_limit() {
    let exe = build_c("rec_spawn", "rec_spawn", &[]);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("trace");
    let script = format!(
        "ulimit -Sn 1024 && exec '{}' record -o '{}' -- '{}' 2000",
        scalpel().display(),
        dir.display(),
        exe.display()
    );
    let mut cmd = Command::new("sh");
    cmd.args(["-c", &script]).stdin(Stdio::null());
    let start = Instant::now();
    let out = output_within(cmd, &exe, Duration::from_secs(240));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && said.contains("spawned 2000 failed 0"),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("2000 processes recorded in {:?}", start.elapsed());
    let t = read_dir(&dir).unwrap();
    assert!(!t.losses.any(), "{}", t.losses);
    let children = t
        .processes
        .iter()
        .filter(|p| {
            p.cmdline()
                .is_some_and(|c| c.last().is_some_and(|a| a == "child"))
        })
        .filter(|p| !p.threads.is_empty())
        .count();
    assert_eq!(children, 2000, "exec'd children with a thread file");
    let mut empty = Vec::new();
    for e in fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() && fs::read_dir(&p).unwrap().next().is_none() {
            empty.push(p);
        }
    }
    assert!(empty.is_empty(), "empty process directories: {empty:?}");
}

/// A traced program replaces its process file and thread file with FIFOs: the recorder finishes
/// (writes its list of files) without waiting on them, lists neither, and passes the program's
/// status on (before: `record` hung for good opening the FIFO).
#[test]
fn fifos_planted_as_trace_files_do_not_hang_the_recorder() {
    let exe = build_c("rec_fifo", "rec_fifo", &[]);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("trace");
    let mut child = Command::new(scalpel())
        .args(["record", "-o"])
        .arg(&dir)
        .arg("--")
        .arg(&exe)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    let list = dir.join("files.list");
    let start = Instant::now();
    while !list.exists() && start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let listed = list.exists();
    // The readers that print the summary are not this test's subject: release any of them
    // waiting on a FIFO (a writer opening and closing it), until `record` ends.
    let fifos = planted_fifos(&dir);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if !listed || start.elapsed() > Duration::from_secs(40) {
            break None;
        }
        for f in &fifos {
            let _ = fs::OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(f);
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    if status.is_none() {
        // SAFETY: kill(2) on the process group made for this run.
        unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
        let _ = child.wait();
    }
    assert!(listed, "the recorder hung before writing its list of files");
    let status = status.expect("record ended");
    let out = child.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(status.code(), Some(0), "{said}");
    assert!(said.contains("planted 2"), "{said}");
    assert_eq!(fifos.len(), 2, "{fifos:?}");
    let text = fs::read_to_string(&list).unwrap();
    for f in &fifos {
        let rel = f.strip_prefix(&dir).unwrap().display().to_string();
        assert!(!text.contains(&rel), "{rel} listed: {text}");
    }
}

/// The FIFOs under `dir`'s process directories.
fn planted_fifos(dir: &Path) -> Vec<PathBuf> {
    use std::os::unix::fs::FileTypeExt;
    let mut out = Vec::new();
    for d in fs::read_dir(dir).into_iter().flatten().flatten() {
        for f in fs::read_dir(d.path()).into_iter().flatten().flatten() {
            if f.file_type().is_ok_and(|t| t.is_fifo()) {
                out.push(f.path());
            }
        }
    }
    out
}

/// A program whose title and thread name hold escape sequences (OSC 52 clipboard write, window
/// title, screen clear): `record`'s summary shows the title escaped, and no ESC or BEL byte
/// reaches its output (before: printed raw).
#[test]
fn record_prints_titles_with_control_characters_escaped() {
    let exe = build_c("termtitle", "termtitle", &[]);
    let run = record(&exe, &["padding-for-the-title-padding-for-the-title"]).success();
    let err = run.stderr();
    assert!(
        err.contains("title:") && err.contains("\\x1b]52;c;"),
        "{err}"
    );
    for out in [&run.out.stderr, &run.out.stdout] {
        assert!(
            !out.iter().any(|&b| b == 0x1b || b == 0x07),
            "{}",
            String::from_utf8_lossy(out)
        );
    }
}
