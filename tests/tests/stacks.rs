//! Call stacks recorded by the agent in programs built without frame pointers: optimized C
//! (`-O2 -fomit-frame-pointer`) with a dlopen'ed library and a thread started from a library
//! constructor, and an optimized Rust program. At known call sites the symbolized stack must
//! hold the program's own chain of functions, innermost first.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use scalpel::inspect::map_at;
use scalpel_e2e::{build_c, build_lib, record_with, target_dir, Run};
use scalpel_model::format::Op;
use scalpel_model::read::{FileTrace, TraceDir};
use scalpel_symbols::Symbolizer;

const NO_FP: &[&str] = &["-O2", "-fomit-frame-pointer", "-g"];

/// The C program, its constructor library linked in, and the plug-in to dlopen (built once:
/// the tests run in parallel).
fn c_program() -> (PathBuf, PathBuf) {
    static BUILT: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    BUILT.get_or_init(build_c_program).clone()
}

fn build_c_program() -> (PathBuf, PathBuf) {
    build_lib("stackctor", NO_FP);
    let plug = build_lib("stackplug", NO_FP);
    let dir = target_dir().join("e2e-c");
    let rpath = format!("-Wl,-rpath,{}", dir.display());
    let mut extra = NO_FP.to_vec();
    extra.extend(["-L", dir.to_str().unwrap(), "-lstackctor", &rpath, "-ldl"]);
    (build_c("stackmain", "stackmain", &extra), plug)
}

fn record_stacks(exe: &Path, args: &[&str], flags: &[&str]) -> Run {
    let flags: Vec<String> = flags.iter().map(|s| s.to_string()).collect();
    record_with(exe, args, move |c| {
        // The flags go before `--`: rebuild the argument list around them.
        let mut all: Vec<std::ffi::OsString> = c.get_args().map(|a| a.to_owned()).collect();
        let at = all.iter().position(|a| a == "--").unwrap();
        for (k, f) in flags.iter().enumerate() {
            all.insert(at + k, f.into());
        }
        let mut n = Command::new(c.get_program());
        n.args(all);
        *c = n;
    })
    .success()
}

/// The function names of every stacked event with operation `op`, innermost first.
fn stacks_of(t: &TraceDir, op: Op) -> Vec<Vec<String>> {
    let mut sym = Symbolizer::new();
    let mut out = Vec::new();
    for p in &t.processes {
        for f in &p.threads {
            for e in f.events.iter().filter(|e| e.op == Some(op)) {
                let Some(frames) = e.stack.and_then(|id| f.stacks.get(&id)) else {
                    continue;
                };
                let map = map_at(p, e.ts_ns).expect("a module map");
                out.push(
                    frames
                        .iter()
                        .map(|&pc| sym.frame(map, pc - 1).function.unwrap_or_default())
                        .collect(),
                );
            }
        }
    }
    out
}

/// Whether `names` holds `chain` as consecutive frames (allowing a `::`-qualified Rust path).
fn has_chain(names: &[String], chain: &[&str]) -> bool {
    let is = |n: &String, want: &str| n == want || n.ends_with(&format!("::{want}"));
    names
        .windows(chain.len())
        .any(|w| w.iter().zip(chain).all(|(n, c)| is(n, c)))
}

fn count_with_chain(stacks: &[Vec<String>], chain: &[&str]) -> usize {
    stacks.iter().filter(|s| has_chain(s, chain)).count()
}

#[test]
fn c_chains_without_frame_pointers() {
    let (exe, plug) = c_program();
    let run = record_stacks(&exe, &[plug.to_str().unwrap()], &[]);
    assert!(run.stdout().contains("done 1"), "{}", run.stdout());
    let t = run.load();
    let writes = stacks_of(&t, Op::Write);
    // 200 writes before the dlopen and 10 after the dlclose.
    let app = ["app_four", "app_three", "app_two", "app_one", "main"];
    assert_eq!(
        count_with_chain(&writes, &app),
        210,
        "write stacks: {writes:#?}"
    );
    let reads = stacks_of(&t, Op::Read);
    let drain = ["drain_four", "drain_three", "drain_two", "drain_one"];
    assert!(
        count_with_chain(&reads, &drain) >= 200,
        "read stacks: {reads:#?}"
    );
    let locks = stacks_of(&t, Op::MutexLock);
    // The dlopen'ed library: plug_run is exported and called through a pointer from main.
    let plug_chain = ["plug_four", "plug_three", "plug_two", "plug_run", "main"];
    assert_eq!(count_with_chain(&locks, &plug_chain), 200, "{locks:#?}");
    // The thread started by a library constructor.
    let ctor = [
        "ctor_four",
        "ctor_three",
        "ctor_two",
        "ctor_one",
        "ctor_main",
    ];
    assert_eq!(count_with_chain(&locks, &ctor), 50, "{locks:#?}");
}

#[test]
fn optimized_rust_chain() {
    let dir = target_dir().join("e2e-rust");
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join("rust_stacks");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("rust/rust_stacks.rs");
    let ok = Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()))
        .args([
            "--edition",
            "2021",
            "-C",
            "opt-level=3",
            "-C",
            "debuginfo=1",
            "-o",
        ])
        .arg(&exe)
        .arg(&src)
        .status()
        .unwrap()
        .success();
    assert!(ok, "rustc failed");
    let run = record_stacks(&exe, &[], &[]);
    assert!(run.stdout().contains("read 200"), "{}", run.stdout());
    let writes = stacks_of(&run.load(), Op::Send);
    let chain = [
        "stage_four",
        "stage_three",
        "stage_two",
        "stage_one",
        "main",
    ];
    let n = writes.iter().filter(|s| has_chain(s, &chain[..4])).count();
    assert_eq!(n, 200, "write stacks: {writes:#?}");
}

#[test]
fn stack_cache_agrees_with_full_walks() {
    let (exe, plug) = c_program();
    let run = record_stacks(&exe, &[plug.to_str().unwrap()], &["--stack-cache", "check"]);
    let t = run.load();
    // Nearly every event repeats an earlier call site, so nearly all are cache hits.
    cache_hits_agree(t.processes.iter().flat_map(|p| p.threads.iter()), 501);
}

/// The files' cache hits, checked by full walks under `--stack-cache check`: at least
/// `at_least` of them, none differing from its walk.
fn cache_hits_agree<'a>(files: impl IntoIterator<Item = &'a FileTrace>, at_least: u32) {
    let (checked, wrong) = files.into_iter().fold((0, 0), |(c, w), f| {
        (c + f.header.stack_checked, w + f.header.stack_mismatched)
    });
    assert!(
        checked >= at_least,
        "only {checked} cache hits were checked"
    );
    assert_eq!(
        wrong, 0,
        "{wrong} of {checked} cached stacks differed from a full walk"
    );
}

#[test]
fn stack_modes_and_depth() {
    let (exe, plug) = c_program();
    let off = record_stacks(&exe, &[plug.to_str().unwrap()], &["--stacks", "off"]).load();
    let any = off.processes.iter().flat_map(|p| p.threads.iter());
    assert!(any.clone().all(|f| f.stacks.is_empty()));
    assert!(any.flat_map(|f| f.events.iter()).all(|e| e.stack.is_none()));

    let sampled = record_stacks(&exe, &[], &["--stacks", "sampled:10"]).load();
    let writes = sampled
        .processes
        .iter()
        .flat_map(|p| p.threads.iter())
        .flat_map(|f| f.events.iter())
        .filter(|e| e.op == Some(Op::Write) && e.result == Some(1));
    let (all, stacked) = writes.fold((0, 0), |(a, s), e| (a + 1, s + e.stack.is_some() as u32));
    // One call site, 200 calls: the 1st, 11th, 21st... carry a stack.
    assert_eq!((all, stacked), (200, 20));

    let shallow = record_stacks(&exe, &[], &["--stack-depth", "2"]).load();
    let writes = stacks_of(&shallow, Op::Write);
    assert!(!writes.is_empty());
    assert!(writes.iter().all(|s| s.len() <= 2));
    assert!(writes
        .iter()
        .any(|s| has_chain(s, &["app_four", "app_three"])));
}

#[test]
fn bad_stack_flags_are_refused() {
    let (exe, _) = c_program();
    for flags in [
        ["--stacks", "sometimes"],
        ["--stack-depth", "0"],
        ["--stack-depth", "99"],
        ["--stack-cache", "maybe"],
    ] {
        let out = Command::new(scalpel_e2e::scalpel())
            .args(["record", "-o", "/nonexistent/never"])
            .args(flags)
            .arg("--")
            .arg(&exe)
            .output()
            .unwrap();
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(flags[1]), "{flags:?}: {err}");
    }
}

/// Runs `scalpel dump --op mutex_lock` on a trace; returns (stdout, stderr), asserting success.
fn dump_locks(dir: &Path) -> (String, String) {
    let out = Command::new(scalpel_e2e::scalpel())
        .args(["dump", "--op", "mutex_lock"])
        .arg(dir)
        .output()
        .unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    assert!(out.status.success(), "dump failed: {}", text(&out.stderr));
    (text(&out.stdout), text(&out.stderr))
}

#[test]
fn corrupt_or_missing_module_gives_a_warning_and_addresses() {
    let (exe, plug) = c_program();
    let tmp = tempfile::tempdir().unwrap();
    let copy = tmp.path().join("libplugcopy.so");
    std::fs::copy(&plug, &copy).unwrap();
    let run = record_stacks(&exe, &[copy.to_str().unwrap()], &[]);
    let (out, err) = dump_locks(&run.dir);
    assert!(out.contains("at plug_four"), "{out}");
    assert!(err.is_empty(), "{err}");

    // Overwritten in place (same inode): the module is there but is not ELF any more.
    std::fs::write(&copy, b"not an ELF file at all").unwrap();
    let (out, err) = dump_locks(&run.dir);
    let name = copy.display().to_string();
    assert!(
        err.contains(&format!("{name}: cannot be read as ELF")),
        "{err}"
    );
    assert_eq!(
        err.matches(&name).count(),
        1,
        "one warning per module: {err}"
    );
    assert!(
        !out.contains("plug_four") && out.contains("in libplugcopy.so"),
        "{out}"
    );
    // The program's own frames are still named.
    assert!(out.contains("at ctor_four"), "{out}");

    std::fs::remove_file(&copy).unwrap();
    let (out, err) = dump_locks(&run.dir);
    assert!(
        err.contains(&format!("{name}: missing since the recording")),
        "{err}"
    );
    assert!(out.contains("in a deleted module"), "{out}");
    assert!(out.contains("at ctor_four"), "{out}");
}

/// `tests/c/sites.c`: twelve call sites of one function lock their own mutexes at the same stack
/// depth, fifty rounds. Their stacks share a set of the agent's stack cache and the same
/// agent frames; the cache must give each site its own stack, every round the same, and agree
/// with full walks.
#[test]
fn call_sites_at_one_depth_keep_their_own_stacks() {
    let exe = build_c("sites", "sites", NO_FP);
    let run = record_stacks(&exe, &[], &[]);
    let t = run.load();
    let main = t
        .processes
        .iter()
        .flat_map(|p| p.threads.iter())
        .find(|f| f.header.tid == f.header.pid)
        .expect("the main thread's file");
    let mut firsts = Vec::new();
    for j in 0..12 {
        let addr = run.printed(&format!("site{j}"), "addr");
        let stacks: Vec<Option<u64>> = main
            .events
            .iter()
            .filter(|e| e.op == Some(Op::MutexLock) && e.obj.is_some_and(|o| o.key == addr))
            .map(|e| e.stack)
            .collect();
        assert_eq!(stacks.len(), 50, "site {j}: locks");
        assert!(stacks[0].is_some(), "site {j}: no stack");
        assert!(
            stacks.iter().all(|s| *s == stacks[0]),
            "site {j}: the stack changed between rounds: {stacks:?}"
        );
        firsts.push(stacks[0]);
    }
    let distinct: std::collections::BTreeSet<_> = firsts.iter().collect();
    assert_eq!(distinct.len(), 12, "sites sharing a stack: {firsts:?}");

    let t = record_stacks(&exe, &[], &["--stack-cache", "check"]).load();
    cache_hits_agree(t.processes.iter().flat_map(|p| p.threads.iter()), 12 * 49);
}

/// The files of a trace's threads other than the main one, in the order the threads started.
fn workers(t: &TraceDir) -> Vec<&FileTrace> {
    let mut w: Vec<&FileTrace> = t
        .processes
        .iter()
        .flat_map(|p| p.threads.iter())
        .filter(|f| f.header.tid != f.header.pid)
        .collect();
    w.sort_by_key(|f| f.header.thread_index);
    w
}

/// The frames of every lock of the mutex at `addr` in the files `fs`, by their stack ids.
fn lock_frames<'a>(fs: &[&'a FileTrace], addr: u64) -> Vec<&'a Vec<u64>> {
    fs.iter()
        .flat_map(|f| {
            f.events
                .iter()
                .filter(move |e| {
                    e.op == Some(Op::MutexLock) && e.obj.is_some_and(|o| o.key == addr)
                })
                .map(move |e| {
                    let id = e.stack.expect("a stack");
                    f.stacks
                        .get(&id)
                        .expect("the stack's id is defined in the file")
                })
        })
        .collect()
}

/// Every site's locks have one stack, and no two sites share theirs; `locks` per site.
fn one_stack_per_site(run: &Run, fs: &[&FileTrace], sites: usize, locks: usize) {
    let mut per_site = Vec::new();
    for j in 0..sites {
        let frames = lock_frames(fs, run.printed(&format!("site{j}"), "addr"));
        assert_eq!(frames.len(), locks, "site {j}: locks");
        assert!(
            frames.iter().all(|s| *s == frames[0]),
            "site {j}: calls got different stacks: {frames:x?}"
        );
        per_site.push(frames[0]);
    }
    let distinct: std::collections::BTreeSet<_> = per_site.iter().collect();
    assert_eq!(
        distinct.len(),
        sites,
        "sites sharing a stack: {per_site:x?}"
    );
}

/// Threads that run the same code meet the same stacks at the same depths below their stack
/// tops: one thread's walks answer the next threads' captures (the stack cache is the
/// process's), and every thread still gets its own, right stacks.
#[test]
fn threads_share_the_stack_cache_and_keep_their_stacks() {
    let exe = build_c("sites", "sites", NO_FP);
    let run = record_stacks(&exe, &["threads"], &[]);
    let t = run.load();
    let w = workers(&t);
    assert_eq!(w.len(), 4, "worker threads");
    one_stack_per_site(&run, &w, 12, 4);

    let t = record_stacks(&exe, &["threads"], &["--stack-cache", "check"]).load();
    let w = workers(&t);
    // Each thread meets each of its stacks once or, for the unlocks (a tail call from every
    // site), twelve times. A cache of the thread's own would answer only those repeats; the
    // process's answers every call of the threads after the first.
    for f in &w[1..] {
        let with_stacks = f.events.iter().filter(|e| e.stack.is_some()).count() as u32;
        assert_eq!(
            f.header.stack_checked, with_stacks,
            "thread {}: cache hits among its calls with stacks",
            f.header.thread_index
        );
    }
    let wrong: u32 = w.iter().map(|f| f.header.stack_mismatched).sum();
    assert_eq!(wrong, 0, "{wrong} cached stacks differed from a full walk");
}

/// More stacks at one depth than a set of the stack cache holds, met by four threads at once:
/// entries are rewritten while other threads check them. Every call still gets its own site's
/// stack, and every hit agrees with a full walk.
#[test]
fn threads_racing_through_one_cache_set_keep_their_stacks() {
    let exe = build_c("stackrace", "stackrace", NO_FP);
    let run = record_stacks(&exe, &[], &[]);
    let t = run.load();
    let w = workers(&t);
    assert_eq!(w.len(), 4, "worker threads");
    one_stack_per_site(&run, &w, 40, 4 * 100);

    let t = record_stacks(&exe, &[], &["--stack-cache", "check"]).load();
    cache_hits_agree(workers(&t), 1001);
}

/// One call site reached from two callers in turn at the same depth: the captures there start
/// at the same stack pointer and find the same return address at the site, and only a frame
/// further out differs. Each lock and unlock keeps its own caller's stack, round after round: a
/// cache that trusted the site would not.
#[test]
fn one_site_from_two_callers_keeps_each_callers_stack() {
    let exe = build_c("callers", "callers", NO_FP);
    let t = record_stacks(&exe, &[], &[]).load();
    for op in [Op::MutexLock, Op::MutexUnlock] {
        let stacks = stacks_of(&t, op);
        assert_eq!(stacks.len(), 100, "{op:?}: calls with stacks");
        for (i, s) in stacks.iter().enumerate() {
            let caller = if i % 2 == 0 { "caller_a" } else { "caller_b" };
            assert!(
                has_chain(s, &["site", caller, "main"]),
                "{op:?} {i}: not from {caller}: {s:?}"
            );
        }
    }
}
