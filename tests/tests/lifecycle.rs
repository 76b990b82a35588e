//! Threads, processes and the hard cases of a process's life: cancellation, pthread_exit, fork
//! then exec then a user switch, constructors that run before the agent's, jemalloc, signals,
//! SIGKILL, errno, static binaries and a full disk.

use scalpel_e2e::*;
use scalpel_model::format::state;
use std::process::Command;

/// One thread writes 300,000 one-byte records into a pipe: about 4 MB of trace, so its file goes
/// through windows of every size (16 KiB doubling to 1 MiB, then several of 1 MiB), each with
/// zeros written ahead of it before it is mapped. Every write is in the trace, with the byte
/// offsets 0, 1, 2, … in order: zeros written ahead never land on a record.
#[test]
fn records_survive_every_window_and_the_zeros_written_ahead() {
    let exe = build_c("bytestorm", "bytestorm", &[]);
    let run = record(&exe, &["300000"]).success();
    assert!(
        run.stdout().contains("read 300000 bytes"),
        "{}",
        run.stdout()
    );
    let t = run.load();
    let warnings: Vec<String> = t.all_warnings().map(|w| w.to_string()).collect();
    assert!(warnings.is_empty(), "{warnings:?}");
    let writer = thread_files(&t)
        .into_iter()
        .max_by_key(|f| f.events.len())
        .unwrap();
    assert!(
        writer.decoded_len > 3 << 20,
        "{} bytes of trace",
        writer.decoded_len
    );
    let offsets: Vec<u64> = writer
        .events
        .iter()
        .filter(|e| e.op == Some(Op::Write))
        .map(|e| e.offset.unwrap())
        .collect();
    assert_eq!(offsets.len(), 300_000);
    assert!(
        offsets.iter().enumerate().all(|(i, &o)| o == i as u64),
        "write offsets are 0, 1, 2, ..."
    );
}

#[test]
fn eight_threads_hundred_thousand_ops_lose_nothing() {
    let exe = build_c("stress", "stress", &[]);
    let run = record(&exe, &["8", "100000"]).success();
    let t = run.load();
    let files = thread_files(&t);
    let locks = with_op(&t, Op::MutexLock).len();
    let unlocks = with_op(&t, Op::MutexUnlock).len();
    assert_eq!(locks, 800_000);
    assert_eq!(unlocks, 800_000);
    assert_eq!(files.iter().map(|f| f.lost_events()).sum::<u64>(), 0);
    // Per-object sequence numbers of one thread's private mutex are consecutive.
    for f in files.iter().filter(|f| f.events.len() > 100_000) {
        let seqs: Vec<u64> = f
            .events
            .iter()
            .filter(|e| e.op == Some(Op::MutexLock) || e.op == Some(Op::MutexUnlock))
            .map(|e| e.seq.unwrap())
            .collect();
        assert!(
            seqs.windows(2).all(|w| w[1] > w[0]),
            "sequence numbers must increase"
        );
    }
    let bytes: u64 = files.iter().map(|f| f.decoded_len).sum();
    let events: usize = files.iter().map(|f| f.events.len()).sum();
    let per_event = bytes as f64 / events as f64;
    println!("bytes per event: {per_event:.2}");
    assert!(per_event <= 16.0, "{per_event} bytes per event");
}

#[test]
fn cancellation_and_pthread_exit_inside_cond_wait() {
    let exe = build_c("cancel", "cancel", &[]);
    let run = record(&exe, &[]).success();
    let t = run.load();
    let p = &processes_named(&t, "cancel")[0];
    assert_eq!(p.threads.len(), 4);
    let exits: Vec<u64> = p
        .threads
        .iter()
        .flat_map(|f| f.events.iter())
        .filter(|e| e.op == Some(Op::ThreadExit))
        .map(|e| e.aux.unwrap())
        .collect();
    let mut how = exits.clone();
    how.sort();
    assert_eq!(how, vec![0, 1, 2], "return, pthread_exit and cancellation");
    for f in p.threads.iter().skip(1) {
        assert_eq!(
            f.header.state,
            state::CLOSED,
            "{} not closed",
            f.path.display()
        );
    }
    // The cancelled thread's last recorded call is the cond wait it never returned from: its
    // synthesized unlock is there.
    let cancelled = p
        .threads
        .iter()
        .find(|f| {
            f.events
                .iter()
                .any(|e| e.op == Some(Op::ThreadExit) && e.aux == Some(2))
        })
        .unwrap();
    assert!(cancelled
        .events
        .iter()
        .any(|e| e.op == Some(Op::CondUnlock)));
    // Joins follow exits on the same thread handle.
    for j in with_op(&t, Op::ThreadJoin) {
        let k = j.event.obj.unwrap().key;
        let exit = with_op(&t, Op::ThreadExit)
            .into_iter()
            .find(|e| e.event.obj.unwrap().key == k)
            .expect("exit for join");
        assert!(exit.event.seq.unwrap() < j.event.seq.unwrap());
    }
}

#[test]
fn fork_exec_and_user_switch() {
    if !is_root() {
        not_run("fork_exec_and_user_switch", "needs root to switch user");
        return;
    }
    let exe = build_c("forkexec", "forkexec", &[]);
    let run = record(&exe, &[]).success();
    assert!(
        run.stdout().contains("child uid 65534 ok"),
        "{}",
        run.stdout()
    );
    let t = run.load();
    let ps = processes_named(&t, "forkexec");
    assert!(
        ps.len() >= 3,
        "parent, fork child, exec'ed child: {}",
        ps.len()
    );
    // The exec'ed child had an empty environment and was still traced; its thread started after
    // the user switch wrote a file as nobody.
    let nobody: Vec<_> = thread_files(&t)
        .into_iter()
        .filter(|f| f.header.uid == 65534)
        .collect();
    assert!(
        !nobody.is_empty(),
        "no thread file written after the switch to nobody"
    );
    assert!(nobody.iter().any(|f| f
        .events
        .iter()
        .any(|e| e.op == Some(Op::Read) && e.result == Some(1))));
    // The fork is linked: parent's Fork and child's ForkChild share a spawn key, parent first.
    let fork = with_op(&t, Op::Fork)
        .into_iter()
        .find(|e| e.process.exe().unwrap().ends_with("forkexec"))
        .unwrap();
    let child = with_op(&t, Op::ForkChild)
        .into_iter()
        .find(|e| e.event.obj.map(|o| o.key) == fork.event.obj.map(|o| o.key))
        .expect("fork child event");
    assert!(fork.event.seq.unwrap() < child.event.seq.unwrap());
    assert_eq!(child.event.aux, Some(u64::from(fork.file.header.pid)));
}

/// Builds `tests/c/<lib>.c` as `lib<lib>.so` and `tests/c/<main>.c` linked with it.
fn build_with_library(lib: &str, main: &str) -> std::path::PathBuf {
    let dir = target_dir().join("e2e-c");
    std::fs::create_dir_all(&dir).unwrap();
    assert!(Command::new("cc")
        .args(["-shared", "-fPIC", "-pthread", "-o"])
        .arg(dir.join(format!("lib{lib}.so")))
        .arg(c_dir().join(format!("{lib}.c")))
        .status()
        .unwrap()
        .success());
    let rpath = format!("-Wl,-rpath,{}", dir.display());
    let link = format!("-l{lib}");
    build_c(main, main, &["-L", dir.to_str().unwrap(), &link, &rpath])
}

#[test]
fn hooks_called_from_another_librarys_constructor() {
    let exe = build_with_library("ctorlib", "ctormain");
    let run = record(&exe, &[]).success();
    assert!(run.stdout().contains("main read 1"));
    let t = run.load();
    // The constructor's lock, pipe and write were recorded although they ran before the agent's
    // own constructor, and main's read of the byte links to that write.
    let ops: Vec<Op> = all_events(&t).iter().filter_map(|e| e.event.op).collect();
    for op in [Op::MutexLock, Op::Pipe, Op::Write, Op::Read] {
        assert!(ops.contains(&op), "{op:?} from the constructor missing");
    }
    let w = with_op(&t, Op::Write)
        .into_iter()
        .find(|e| e.event.result == Some(1))
        .unwrap();
    let r = with_op(&t, Op::Read)
        .into_iter()
        .find(|e| e.event.result == Some(1))
        .unwrap();
    assert_eq!(w.event.obj.unwrap().key, r.event.obj.unwrap().key);
    // The byte the read took is the one the write put there.
    assert!(w.event.offset.is_some());
    assert_eq!(w.event.offset, r.event.offset);
}

/// Fork handlers registered before the agent's own (by another library's constructor) run
/// while the agent marks the thread as forking; the parent's calls in them are recorded (before,
/// all 10 passed through uncounted). Each child's release, made before the agent has given the
/// child its files, passes through and is counted lost.
#[test]
fn fork_handlers_registered_before_the_agent_are_recorded_in_the_parent() {
    let exe = build_with_library("atforklib", "atforkmain");
    let run = record(&exe, &[]).success();
    assert!(run.stdout().contains("forked 5"), "{}", run.stdout());
    let t = run.load();
    let forks = with_op(&t, Op::Fork);
    assert_eq!(forks.len(), 5);
    let parent = forks[0].file.header.pid;
    let count = |op| {
        with_op(&t, op)
            .into_iter()
            .filter(|e| e.file.header.pid == parent)
            .count()
    };
    assert_eq!(count(Op::MutexLock), 6, "5 prepare handlers and main's own");
    assert_eq!(
        count(Op::MutexUnlock),
        6,
        "5 parent handlers and main's own"
    );
    // Each child's release, made before the child had its files, is counted lost there.
    let children: Vec<u64> = t
        .processes
        .iter()
        .filter(|p| p.pid != parent)
        .map(|p| p.threads.iter().map(FileTrace::lost_events).sum())
        .collect();
    assert_eq!(children, vec![1; 5], "lost per child");
}

#[test]
fn program_linked_with_jemalloc() {
    let Some(lib) = [
        "/usr/lib/x86_64-linux-gnu/libjemalloc.so",
        "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2",
    ]
    .iter()
    .find(|p| std::path::Path::new(p).exists()) else {
        not_run(
            "program_linked_with_jemalloc",
            "Debian's libjemalloc is not installed (apt-get install libjemalloc-dev)",
        );
        return;
    };
    let exe = build_c("jemalloc", "jemalloc", &[lib]);
    let run = record(&exe, &[]).success();
    assert!(run.stdout().contains("jemalloc ok 80000"));
    let t = run.load();
    assert!(with_op(&t, Op::MutexLock).len() >= 80_000);
}

#[test]
fn signal_handlers_calling_hooks() {
    let exe = build_c("signal", "signal", &[]);
    let run = record(&exe, &[]).success();
    let t = run.load();
    let writes = with_op(&t, Op::Write)
        .into_iter()
        .filter(|e| e.event.result == Some(1))
        .count() as u64;
    // A handler that interrupts the agent's own bookkeeping passes through untraced and its event
    // is counted as lost; every one of the 50 handler writes is one or the other.
    let lost: u64 = thread_files(&t).iter().map(|f| f.lost_events()).sum();
    assert_eq!(writes + lost, 50, "{writes} recorded + {lost} lost");
    assert!(writes > 0);
}

#[test]
fn sigkill_leaves_parseable_traces() {
    let exe = build_c("sigkill", "sigkill", &[]);
    let run = record_then_kill(&exe, &[], std::time::Duration::from_millis(300));
    assert_eq!(
        run.out.status.code(),
        Some(128 + 9),
        "record passes the signal death through"
    );
    let dir = run.dir.clone();
    let t = read_dir(&dir).unwrap();
    let warnings: Vec<String> = t.all_warnings().map(|w| w.to_string()).collect();
    assert!(warnings.is_empty(), "{warnings:?}");
    let writes = with_op(&t, Op::Write).len();
    assert!(writes > 1000, "only {writes} writes survived");
}

#[test]
fn errno_is_preserved() {
    let exe = build_c("errno", "errno", &[]);
    let run = record(&exe, &[]).success();
    assert!(run.stdout().contains("errno ok"));
    let t = run.load();
    let reads = with_op(&t, Op::Read);
    assert!(reads
        .iter()
        .any(|e| e.event.result == Some(-(libc::EAGAIN as i64))));
    assert!(reads
        .iter()
        .any(|e| e.event.result == Some(-(libc::EINTR as i64))));
}

#[test]
fn static_binary_runs_untraced_and_unharmed() {
    let exe = build_c("hello", "hello-static", &["-static"]);
    let run = record(&exe, &[]);
    assert_eq!(run.out.status.code(), Some(3), "exit status passes through");
    assert!(run.stdout().contains("hello ok"));
    let traced = read_dir(&run.dir)
        .map(|t| thread_files(&t).len())
        .unwrap_or(0);
    assert_eq!(traced, 0);
}

#[test]
fn rust_program_futexes_and_threads() {
    let run = record(&own_bin("rust-sync"), &[]).success();
    assert!(run.stdout().contains("rust-sync ok 8000"));
    let t = run.load();
    assert!(
        with_op(&t, Op::FutexWake).len() + with_op(&t, Op::FutexWait).len() > 0,
        "std sync uses futexes"
    );
    assert_eq!(with_op(&t, Op::ThreadCreate).len(), 5);
    let starts = with_op(&t, Op::ThreadStart);
    assert_eq!(starts.len(), 5);
    for s in starts {
        let k = s.event.obj.unwrap().key;
        let c = with_op(&t, Op::ThreadCreate)
            .into_iter()
            .find(|c| c.event.obj.unwrap().key == k)
            .expect("create for start");
        assert!(c.event.seq.unwrap() < s.event.seq.unwrap());
    }
    // Futex waits that returned 0 were woken by an earlier wake on the same word.
    for w in with_op(&t, Op::FutexWait)
        .into_iter()
        .filter(|e| e.event.result == Some(0))
    {
        let k = w.event.obj.unwrap().key;
        assert!(with_op(&t, Op::FutexWake)
            .iter()
            .any(|x| x.event.obj.unwrap().key == k && x.event.seq < w.event.seq));
    }
}

#[test]
fn full_disk_drops_and_counts_without_harm() {
    if !is_root() {
        not_run(
            "full_disk_drops_and_counts_without_harm",
            "needs root to mount a tmpfs",
        );
        return;
    }
    let exe = build_c("stress", "stress-disk", &[]);
    let tmp = tempfile::tempdir().unwrap();
    let mnt = tmp.path().join("small");
    std::fs::create_dir(&mnt).unwrap();
    let ok = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=3m", "tmpfs"])
        .arg(&mnt)
        .status()
        .unwrap()
        .success();
    assert!(ok, "mounting a tmpfs failed");
    struct Unmount(std::path::PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).status();
        }
    }
    let _guard = Unmount(mnt.clone());
    let dir = mnt.join("trace");
    let out = Command::new(scalpel())
        .arg("record")
        .arg("-o")
        .arg(&dir)
        .arg("--")
        .arg(&exe)
        .args(["4", "200000"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("stress ok 4 200000"));
    let t = read_dir(&dir).unwrap();
    let lost: u64 = thread_files(&t).iter().map(|f| f.lost_events()).sum();
    let kept = with_op(&t, Op::MutexLock).len() + with_op(&t, Op::MutexUnlock).len();
    assert!(
        lost > 0,
        "a 3 MiB disk cannot hold 1.6M events, yet none were dropped"
    );
    assert!(kept > 0);
    // What was written, plus what was counted as dropped, is everything (threads whose file
    // could not even be created are the only other loss).
    assert!(kept as u64 + lost <= 1_600_000 + 100);
}

/// Threads that name themselves after they started keep their names in a process killed before
/// any clean exit: `prctl(PR_SET_NAME)` on the main thread and `pthread_setname_np` on itself in
/// another thread are recorded when they happen (`tests/c/renamed.c`), and the `raise` that ends
/// the process is recorded before it.
#[test]
fn names_given_after_start_survive_a_kill() {
    let exe = build_c("renamed", "renamed", &[]);
    let run = record(&exe, &[]);
    let t = run.load();
    let mut names: Vec<String> = thread_files(&t).iter().map(|f| f.thread_name()).collect();
    names.sort();
    assert_eq!(
        names,
        ["main-renamed", "worker-renamed"],
        "{}",
        run.stderr()
    );
    assert_eq!(with_op(&t, Op::Raise).len(), 1);
}

/// A process that renames itself (by overwriting argv) is named by the title it held longest:
/// `tests/c/retitle.c` serves as "retitle: serving requests" for 400 ms and shuts down as
/// "retitle: shutting down" for 80 ms; nginx's workers and PostgreSQL's checkpointer do the same
/// at shutdown.
#[test]
fn a_process_is_named_by_the_title_it_held_longest() {
    let exe = build_c("retitle", "retitle", &[]);
    // Arguments give the title room to be written in.
    let run = record(&exe, &["0123456789012345678901234567890123456789"]).success();
    let t = run.load();
    let titles: Vec<String> = t
        .processes
        .iter()
        .flat_map(|p| p.files().flat_map(|f| f.titles.iter()))
        .map(|x| x.args.join(" "))
        .collect();
    assert!(
        titles.iter().any(|x| x.contains("shutting down")),
        "the last title was recorded: {titles:?}"
    );
    assert_eq!(
        t.processes[0].title().as_deref(),
        Some("retitle: serving requests"),
        "{titles:?}"
    );
}
