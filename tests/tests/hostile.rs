//! Hosts that fight back: closing every descriptor, forking without fork handlers, vfork, and
//! libraries that dlopen their siblings through `$ORIGIN`. None may be harmed, and the trace must
//! stay intact.

use scalpel_e2e::*;
use std::process::Command;

#[test]
fn host_closing_every_descriptor_keeps_its_files_and_the_trace() {
    let exe = build_c("hostile", "hostile", &[]);
    let run = record(&exe, &["closefd"]).success();
    assert!(
        run.stdout().contains("closefd ok size=26"),
        "{}",
        run.stdout()
    );
    let t = run.load();
    // The work after the close loop was recorded too.
    assert_eq!(with_op(&t, Op::MutexLock).len(), 205_000);
}

/// A host that `dup2`s over every descriptor number (the agent's socket to the recorder
/// included) keeps recording: the socket moves out of the way first, so the thread started
/// afterwards and the exec'd child get their files (before, neither did, and the thread was only
/// counted as unrecorded).
#[test]
fn host_dup2_over_every_descriptor_keeps_recording() {
    let exe = build_c("hostile", "hostile", &[]);
    records_thread_and_exec_after(&exe, "dupall");
}

/// Runs `hostile MODE` and checks what came after its descriptor sweep was recorded: the
/// thread's work and the exec'd child, with no thread or process left without files.
fn records_thread_and_exec_after(exe: &std::path::Path, mode: &str) -> TraceDir {
    let run = record(exe, &[mode]).success();
    assert!(
        run.stdout().contains(&format!("{mode} ok")),
        "{}",
        run.stdout()
    );
    let t = run.load();
    assert_eq!(t.losses.threads_without_file, 0);
    assert_eq!(t.losses.processes_without_dir, 0);
    assert_eq!(with_op(&t, Op::MutexLock).len(), 6_000);
    assert!(
        t.processes
            .iter()
            .any(|p| p.exe().is_some_and(|e| e.ends_with("true"))),
        "the exec'd child was recorded"
    );
    t
}

/// The same through `syscall(2)`, as hosts that bypass libc's wrappers do: `SYS_dup2`,
/// `SYS_dup3`, `SYS_close` and `SYS_close_range` over every descriptor number leave the agent's
/// socket to the recorder alone (before, the thread and the exec'd child got no files).
#[test]
fn host_raw_close_and_dup_system_calls_keep_recording() {
    let exe = build_c("hostile", "hostile", &[]);
    let t = records_thread_and_exec_after(&exe, "rawclose");
    // Recorded as the wrappers' calls are: each went through its hook (every close of 3..1023
    // but the one of the agent's socket, which is left open unrecorded, if it is in that range:
    // it sits above the soft descriptor limit when the hard limit leaves room).
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct it is given.
    unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) };
    let socket_in_range = lim.rlim_max <= lim.rlim_cur && lim.rlim_cur <= 1024;
    assert_eq!(
        with_op(&t, Op::Close).len(),
        1_021 - usize::from(socket_in_range)
    );
    assert_eq!(with_op(&t, Op::Dup2).len(), 509);
    assert_eq!(with_op(&t, Op::Dup3).len(), 512);
}

#[test]
fn fork_without_handlers_gives_the_child_its_own_files() {
    let exe = build_c("hostile", "hostile-fork", &[]);
    let run = record(&exe, &["_fork"]).success();
    let t = run.load(); // fails on any damaged file
    let ps = processes_named(&t, "hostile-fork");
    assert_eq!(ps.len(), 2, "parent and child directories");
    let locks: Vec<usize> = ps
        .iter()
        .map(|p| {
            p.threads
                .iter()
                .flat_map(|f| f.events.iter())
                .filter(|e| e.op == Some(Op::MutexLock))
                .count()
        })
        .collect();
    assert!(
        locks.contains(&4000),
        "parent: 1000 before and 3000 after the fork: {locks:?}"
    );
    // The child's events after its first hook land in its own file (a few may be lost right at
    // the fork, never written into the parent's).
    assert!(locks.iter().any(|&n| n > 2900 && n <= 3000), "{locks:?}");
}

#[test]
fn vfork_child_does_not_write_into_the_parent() {
    let exe = build_c("hostile", "hostile-vfork", &[]);
    let run = record(&exe, &["vfork"]).success();
    assert!(
        run.stdout().contains("vfork ok from-child"),
        "{}",
        run.stdout()
    );
    let t = run.load();
    let parent = processes_named(&t, "hostile-vfork")
        .into_iter()
        .min_by_key(|p| p.pid)
        .unwrap();
    let parent_dup2 = parent
        .threads
        .iter()
        .flat_map(|f| f.events.iter())
        .filter(|e| e.op == Some(Op::Dup2))
        .count();
    assert_eq!(
        parent_dup2, 0,
        "the child's dup2 was recorded as the parent's"
    );
    // vfork stays a vfork (issue 48): the child runs on the parent's memory until it execs, so
    // its calls pass through unrecorded rather than into a process directory of its own; the
    // program it execs is recorded.
    assert_eq!(with_op(&t, Op::Dup2).len(), 0);
    assert_eq!(processes_named(&t, "echo").len(), 1, "the exec'd program");
}

#[test]
fn dlopen_through_origin_runpath_still_works() {
    let dir = target_dir().join("e2e-c").join("origin");
    std::fs::create_dir_all(&dir).unwrap();
    let cc = |args: &[&str]| assert!(Command::new("cc").args(args).status().unwrap().success());
    let d = dir.to_str().unwrap();
    let c = c_dir();
    cc(&[
        "-shared",
        "-fPIC",
        "-o",
        &format!("{d}/liboriginsib.so"),
        c.join("originsib.c").to_str().unwrap(),
    ]);
    cc(&[
        "-shared",
        "-fPIC",
        "-Wl,-rpath,$ORIGIN",
        "-o",
        &format!("{d}/liboriginlib.so"),
        c.join("originlib.c").to_str().unwrap(),
        "-ldl",
    ]);
    cc(&[
        "-o",
        &format!("{d}/originmain"),
        c.join("originmain.c").to_str().unwrap(),
        "-L",
        d,
        "-loriginlib",
        &format!("-Wl,-rpath,{d}"),
    ]);
    let run = record(&dir.join("originmain"), &[]);
    assert!(
        run.out.status.success() && run.stdout().contains("origin ok"),
        "{}\n{}",
        run.stdout(),
        run.stderr()
    );
}
