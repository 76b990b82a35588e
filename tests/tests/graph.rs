//! The causal graph of recorded programs, scored against the edges the programs know to be true
//! (`samples/TRUTH.md`): every true edge found, no false one, none from mutex order.

use scalpel_e2e::*;
use scalpel_model::format::ObjKind;
use scalpel_model::graph::{EdgeKind, Graph, NodeId, ObjId, OpName};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// A call: process, thread, operation, ordinal among that thread's calls of the operation.
type Call = (u32, u32, String, u64);

#[derive(Default, Debug)]
struct Truth {
    /// Expected edges per kind name.
    edges: BTreeMap<String, BTreeSet<(Call, Call)>>,
    /// Threads that must have no edge to another thread but create and join.
    noise: BTreeSet<(u32, u32)>,
}

fn call(v: &serde_json::Value) -> Call {
    (
        v["pid"].as_u64().unwrap() as u32,
        v["tid"].as_u64().unwrap() as u32,
        v["op"].as_str().unwrap().to_string(),
        v["n"].as_u64().unwrap(),
    )
}

fn truth_of(path: &Path) -> Truth {
    let mut t = Truth::default();
    // Stream calls per stream: (write?, off, len, call).
    let mut io: BTreeMap<String, Vec<(bool, u64, u64, Call)>> = BTreeMap::new();
    for line in std::fs::read_to_string(path).unwrap().lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        if let Some(kind) = v["edge"].as_str() {
            let e = (call(&v["from"]), call(&v["to"]));
            t.edges.entry(kind.to_string()).or_default().insert(e);
        } else if let Some(dir) = v["io"].as_str() {
            let s = v["stream"].as_str().unwrap().to_string();
            let (off, len) = (v["off"].as_u64().unwrap(), v["len"].as_u64().unwrap());
            io.entry(s)
                .or_default()
                .push((dir == "write", off, len, call(&v)));
        } else if let Some(tid) = v["noise_tid"].as_u64() {
            t.noise
                .insert((v["pid"].as_u64().unwrap() as u32, tid as u32));
        }
    }
    // A read of [a, b) is caused by every write overlapping it.
    for calls in io.values() {
        for (w, wo, wl, wc) in calls.iter().filter(|c| c.0) {
            for (_, ro, rl, rc) in calls.iter().filter(|c| !c.0) {
                let _ = w;
                if wo < &(ro + rl) && ro < &(wo + wl) {
                    let set = t.edges.entry("stream".into()).or_default();
                    set.insert((wc.clone(), rc.clone()));
                }
            }
        }
    }
    t
}

fn infer(dir: &Path, out: &Path, extra: &[&str]) -> Output {
    Command::new(scalpel())
        .arg("infer")
        .arg(dir)
        .args(["--stage", "graph", "-o"])
        .arg(out)
        .args(extra)
        .output()
        .expect("scalpel runs")
}

fn load_graph(out: &Path) -> Graph {
    scalpel_model::store::read_graph(&out.join("graph.json")).unwrap_or_else(|e| panic!("{e}"))
}

/// The call that ended (`end`) or started a leaf, named the way the truth names calls.
struct Namer {
    /// Per (pid, tid): each event's op name and its ordinal among events of that op.
    ords: BTreeMap<(u32, u32), Vec<(String, u64)>>,
}

impl Namer {
    fn new(dir: &Path) -> Namer {
        let trace = scalpel_model::read::read_dir(dir).unwrap();
        let mut ords = BTreeMap::new();
        for (p, f) in trace.files() {
            let mut seen: BTreeMap<String, u64> = BTreeMap::new();
            let v: Vec<(String, u64)> = f
                .events
                .iter()
                .map(|e| {
                    let name = e.op_name().into_owned();
                    let n = seen.entry(name.clone()).or_default();
                    *n += 1;
                    (name, *n - 1)
                })
                .collect();
            ords.insert((p.pid, f.header.tid), v);
        }
        Namer { ords }
    }

    fn name(&self, g: &Graph, leaf: u32, end: bool) -> Option<Call> {
        let l = g.leaves.get(leaf as usize)?;
        let t = &g.threads[l.thread.index()];
        let at = if end { l.end_event } else { l.start_event };
        let (op, n) = self.ords.get(&(t.pid, t.tid))?.get(at as usize)?.clone();
        Some((t.pid, t.tid, op, n))
    }
}

/// Precision and recall of the graph's edges of `kind` against `truth`.
fn score(
    g: &Graph,
    namer: &Namer,
    kind: EdgeKind,
    truth: &BTreeSet<(Call, Call)>,
) -> (f64, f64, usize, usize) {
    score_into(g, namer, kind, truth, None)
}

/// [`score`] over the edges that end on the threads `to` ((pid, tid)) only, when given: for a
/// kind the truth lists for one part of a sample.
fn score_into(
    g: &Graph,
    namer: &Namer,
    kind: EdgeKind,
    truth: &BTreeSet<(Call, Call)>,
    to: Option<&BTreeSet<(u32, u32)>>,
) -> (f64, f64, usize, usize) {
    let ends_in = |leaf: u32| {
        to.is_none_or(|set| {
            let t = &g.threads[g.leaves[leaf as usize].thread.index()];
            set.contains(&(t.pid, t.tid))
        })
    };
    let edges: Vec<_> = g
        .edges
        .iter()
        .filter(|e| e.kind == kind && ends_in(e.to.get()))
        .collect();
    let found: BTreeSet<(Call, Call)> = edges
        .iter()
        .filter_map(|e| {
            Some((
                namer.name(g, e.from.get(), true)?,
                namer.name(g, e.to.get(), false)?,
            ))
        })
        .collect();
    if std::env::var_os("SCALPEL_DEBUG_SCORE").is_some() {
        eprintln!(
            "false {:?}",
            found.difference(truth).take(5).collect::<Vec<_>>()
        );
        eprintln!(
            "missed {:?}",
            truth.difference(&found).take(5).collect::<Vec<_>>()
        );
    }
    let n_found = edges.len();
    let hits = found.intersection(truth).count();
    let precision = if n_found == 0 {
        1.0
    } else {
        hits as f64 / n_found as f64
    };
    let recall = if truth.is_empty() {
        1.0
    } else {
        hits as f64 / truth.len() as f64
    };
    (precision, recall, n_found, truth.len())
}

/// The handoff sample recorded once (with its truth), shared by the tests here.
fn handoff() -> &'static (Run, PathBuf) {
    static RUN: OnceLock<(Run, PathBuf)> = OnceLock::new();
    RUN.get_or_init(|| {
        let truth =
            std::env::temp_dir().join(format!("scalpel-handoff-{}.jsonl", std::process::id()));
        let _ = std::fs::remove_file(&truth);
        let run = record_with(&own_bin("handoff"), &["--items", "200"], |c| {
            c.env("SCALPEL_TRUTH", &truth);
        })
        .success();
        (run, truth)
    })
}

#[test]
fn handoff_edges_match_the_truth_exactly() {
    let (run, truth_path) = handoff();
    let truth = truth_of(truth_path);
    let out = run.tmp.path().join("graph-score");
    let o = infer(&run.dir, &out, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let g = load_graph(&out);
    let namer = Namer::new(&run.dir);
    let kinds = [
        ("cond", EdgeKind::Cond),
        ("queue", EdgeKind::Queue),
        ("sem", EdgeKind::Sem),
        ("stream", EdgeKind::Stream),
        ("create", EdgeKind::Create),
        ("join", EdgeKind::Join),
        ("fork", EdgeKind::Fork),
        ("connect", EdgeKind::Connect),
    ];
    let mut report = String::from("kind      precision  recall  found  true\n");
    let mut perfect = true;
    for (name, kind) in kinds {
        let empty = BTreeSet::new();
        let t = truth.edges.get(name).unwrap_or(&empty);
        let (p, r, found, n) = score(&g, &namer, kind, t);
        report += &format!("{name:<9} {p:>9.3} {r:>7.3} {found:>6} {n:>5}\n");
        perfect &= p == 1.0 && r == 1.0;
        assert!(
            n > 0 || name == "cond" || name == "queue",
            "the truth has {name} edges"
        );
    }
    eprintln!("{report}");
    assert!(perfect, "edges differ from the truth:\n{report}");
    // Nothing else: no futex, eventfd or external edges in this program, and no edge through a
    // mutex (mutex order is contention data only).
    let allowed: BTreeSet<EdgeKind> = kinds
        .iter()
        .map(|k| k.1)
        .chain([EdgeKind::Program, EdgeKind::ProgramWeak])
        .collect();
    for e in &g.edges {
        assert!(allowed.contains(&e.kind), "unexpected edge {e:?}");
        if let Some(o) = e.obj {
            let kind = g.objects[o.get() as usize].kind;
            assert!(
                !kind.is(ObjKind::Mutex) && !kind.is(ObjKind::Rwlock),
                "an edge through a {kind}: {e:?}"
            );
        }
    }
    assert!(g.externals.is_empty(), "{:?}", g.externals);
    // The noise threads only take locks: their only cross-thread edges are create and join.
    for e in g.edges.iter().filter(|e| !e.kind.in_thread()) {
        for end in [e.from, e.to] {
            let t = &g.threads[g.leaves[end.index()].thread.index()];
            if truth.noise.contains(&(t.pid, t.tid)) {
                assert!(
                    matches!(e.kind, EdgeKind::Create | EdgeKind::Join),
                    "a {:?} edge touches noise thread {}",
                    e.kind,
                    t.tid
                );
            }
        }
    }
    assert_eq!(truth.noise.len(), 2);
    // The noise did contend with the queue's users, and that is kept as data.
    assert!(!g.locks.is_empty());
    assert!(
        g.locks.iter().any(|l| l.acquisitions > 2000),
        "{:?}",
        g.locks
    );
}

#[test]
fn output_is_byte_identical_with_one_and_two_threads() {
    let (run, _) = handoff();
    let mut outs = Vec::new();
    for (i, threads) in ["1", "2", "2"].iter().enumerate() {
        let out = run.tmp.path().join(format!("det-{i}"));
        let o = infer(&run.dir, &out, &["--threads", threads]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let read = |f: &str| std::fs::read(out.join(f)).unwrap();
        outs.push((read("graph.json"), read("graph.bin"), read("types.dot")));
    }
    assert!(outs[0].0.len() > 1_000 && outs[0].1.len() > 10_000);
    assert!(outs[0] == outs[1], "1 and 2 threads differ");
    assert!(outs[1] == outs[2], "two runs differ");
}

/// A copy of the handoff trace in a fresh directory.
fn copy_trace(name: &str) -> PathBuf {
    let (run, _) = handoff();
    let dst = run.tmp.path().join(name);
    let ok = Command::new("cp")
        .arg("-r")
        .arg(&run.dir)
        .arg(&dst)
        .status()
        .unwrap()
        .success();
    assert!(ok);
    dst
}

#[test]
fn a_damaged_file_is_named_and_the_rest_still_used_unless_strict() {
    let dir = copy_trace("damaged");
    let trace = scalpel_model::read::read_dir(&dir).unwrap();
    // The thread with the most semaphore posts: damage the middle of its records.
    let posts = |f: &scalpel_model::read::FileTrace| {
        let p = f.events.iter().filter(|e| e.op == Some(Op::SemPost));
        p.count()
    };
    let victim = trace
        .files()
        .filter(|(_, f)| f.header.tid != 0)
        .max_by_key(|(_, f)| posts(f))
        .map(|(_, f)| f.path.clone())
        .unwrap();
    let total: usize = trace.files().map(|(_, f)| f.events.len()).sum();
    let mut bytes = std::fs::read(&victim).unwrap();
    let mid = 4096 + (bytes.len() - 4096) / 2;
    bytes[mid..mid + 16].fill(0xff);
    std::fs::write(&victim, &bytes).unwrap();

    let out = dir.join("out");
    let o = infer(&dir, &out, &[]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(
        stderr.contains(&victim.display().to_string()) && stderr.contains("offset"),
        "the warning names the file and the offset: {stderr}"
    );
    let summary = std::fs::read_to_string(out.join("graph-summary.txt")).unwrap();
    assert!(summary.contains("warnings"), "{summary}");
    // Every other file, and the damaged one's valid start, still give leaves.
    let g = load_graph(&out);
    let name = victim.file_name().unwrap().to_string_lossy().into_owned();
    let tid: u32 = name
        .trim_start_matches('t')
        .trim_end_matches(".trace")
        .parse()
        .unwrap();
    let t = g.threads.iter().find(|t| t.tid == tid).unwrap();
    assert!(t.leaves > 10, "the damaged file's valid part is used");
    let kept: u64 = g.types.iter().map(|t| t.count).sum();
    assert!(kept > 100 && total > 1000);

    let o = infer(&dir, &dir.join("strict"), &["--strict"]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "--strict fails on damage");
    assert!(
        stderr.contains("--strict") && stderr.contains(&victim.display().to_string()),
        "{stderr}"
    );
    assert!(!dir.join("strict").join("graph.json").exists());
}

#[test]
fn bad_arguments_get_clear_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("no-such-trace");
    let o = infer(&missing, &tmp.path().join("out"), &[]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(stderr.contains("no-such-trace"), "{stderr}");
    for bad in ["pid:x", "colour:red", "time:5..1", "thread:", "pid"] {
        let o = infer(tmp.path(), &tmp.path().join("out"), &["--include", bad]);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{bad} accepted");
        assert!(stderr.contains("expected pid:N"), "{bad}: {stderr}");
    }
    let o = infer(tmp.path(), &tmp.path().join("out"), &["--stage", "bogus"]);
    assert!(!o.status.success());
}

#[test]
fn filters_keep_processes_threads_and_time_windows() {
    let (run, _) = handoff();
    let full = {
        let out = run.tmp.path().join("filter-all");
        assert!(infer(&run.dir, &out, &[]).status.success());
        load_graph(&out)
    };
    // The forked server process alone.
    let server = full.processes.iter().map(|p| p.pid).max().unwrap();
    let out = run.tmp.path().join("filter-pid");
    let arg = format!("pid:{server}");
    let o = infer(&run.dir, &out, &["--include", &arg]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let g = load_graph(&out);
    assert!(!g.leaves.is_empty());
    assert!(g
        .leaves
        .iter()
        .all(|l| g.threads[l.thread.index()].pid == server));
    // Every edge left joins nodes that are left.
    assert!(g
        .edges
        .iter()
        .all(|e| (e.from.index()) < g.leaves.len() + g.externals.len()));
    assert!(g.leaves.len() < full.leaves.len());
    // Excluding the noise threads by name removes exactly their leaves.
    let noise: u32 = full
        .threads
        .iter()
        .filter(|t| t.name.contains("noise"))
        .map(|t| t.leaves)
        .sum();
    let out = run.tmp.path().join("filter-noise");
    let o = infer(&run.dir, &out, &["--exclude", "thread:noise"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let g = load_graph(&out);
    assert!(noise > 0, "the noise threads are named");
    assert_eq!(g.leaves.len() as u32, full.leaves.len() as u32 - noise);
    // A window of the first millisecond keeps fewer leaves, all starting in it.
    let out = run.tmp.path().join("filter-time");
    let o = infer(&run.dir, &out, &["--include", "time:..0.001"]);
    assert!(o.status.success());
    let g = load_graph(&out);
    let t0 = full.leaves.iter().map(|l| l.start_ns).min().unwrap();
    assert!(g.leaves.len() < full.leaves.len());
    assert!(g.leaves.iter().all(|l| l.start_ns <= t0 + 1_000_000));
}

#[test]
fn futex_wakes_link_rust_condvar_and_channel_waits_but_not_mutex_words() {
    let run = record(&own_bin("rust-sync"), &[]).success();
    let out = run.tmp.path().join("graph");
    let o = infer(&run.dir, &out, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let g = load_graph(&out);
    // Per futex word: the values its waits expected.
    let trace = run.load();
    let mut expected: BTreeMap<u64, BTreeSet<u64>> = BTreeMap::new();
    for (_, f) in trace.files() {
        for e in f.events.iter().filter(|e| e.op == Some(Op::FutexWait)) {
            if let (Some(o), Some(v)) = (e.obj, e.aux2) {
                expected.entry(o.key).or_default().insert(v);
            }
        }
    }
    let futex: Vec<_> = g
        .edges
        .iter()
        .filter(|e| e.kind == EdgeKind::Futex)
        .collect();
    assert!(
        !futex.is_empty(),
        "condvar and channel wakeups give futex edges"
    );
    for e in &futex {
        let (a, b) = (&g.leaves[e.from.index()], &g.leaves[e.to.index()]);
        assert_ne!(a.thread, b.thread, "a wake links two threads: {e:?}");
        let key = g.objects[e.obj.unwrap().get() as usize].key;
        let values = &expected[&key];
        assert!(
            values.iter().any(|&v| v != 2),
            "an edge through a futex used as a lock (every wait expected 2): {e:?}"
        );
    }
    // The mutex word was contended (waits expecting 2) and gave no edge.
    let lock_words: Vec<u64> = expected
        .iter()
        .filter(|(_, v)| v.iter().all(|&x| x == 2))
        .map(|(k, _)| *k)
        .collect();
    eprintln!(
        "{} futex edges, lock-like words {lock_words:x?}",
        futex.len()
    );
    let joins = g.edges.iter().filter(|e| e.kind == EdgeKind::Join).count();
    assert!(joins >= 5, "std's joins are linked: {joins}");
}

#[test]
fn private_objects_of_forked_processes_stay_apart_and_shared_ones_link_them() {
    let exe = build_c("pshared", "pshared", &[]);
    let run = record(&exe, &[]).success();
    let out = run.tmp.path().join("graph");
    let o = infer(&run.dir, &out, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let g = load_graph(&out);
    let pid = |leaf: u32| g.threads[g.leaves[leaf as usize].thread.index()].pid;
    let shared = |e: &scalpel_model::graph::Edge| g.objects[e.obj.unwrap().get() as usize].shared;
    // Per kind and object scope: links within one process, links across two. A link is an
    // edge, or a wait whose waker is known: a ping-pong's answer (the helper wakes the thread
    // that called it and waits) is a wait of the caller with the helper's leaf as its holder.
    let mut within: BTreeMap<(EdgeKind, bool), usize> = BTreeMap::new();
    let mut across: BTreeMap<(EdgeKind, bool), usize> = BTreeMap::new();
    let kind_of = |obj: scalpel_model::graph::ObjId| {
        let o = &g.objects[obj.get() as usize];
        if o.kind.is(ObjKind::Sem) {
            EdgeKind::Sem
        } else {
            EdgeKind::Cond
        }
    };
    let edges = g
        .edges
        .iter()
        .filter(|e| matches!(e.kind, EdgeKind::Cond | EdgeKind::Sem))
        .map(|e| (e.from.get(), e.to.get(), e.kind, shared(e)));
    let waits = g.lock_waits.iter().filter_map(|w| {
        let o = &g.objects[w.obj.get() as usize];
        let answered = o.kind.is(ObjKind::Cond) || o.kind.is(ObjKind::Sem);
        let holder = w.holder.filter(|_| answered)?;
        Some((holder.get(), w.waiter.get(), kind_of(w.obj), o.shared))
    });
    for (from, to, kind, is_shared) in edges.chain(waits) {
        let side = if pid(from) == pid(to) {
            &mut within
        } else {
            &mut across
        };
        *side.entry((kind, is_shared)).or_default() += 1;
    }
    eprintln!("within {within:?}, across {across:?}");
    // Both processes ping-pong through the same private addresses: every such wake stays in
    // its process (the helper's waits and main's, 20 rounds each, in each of two processes).
    assert_eq!(across.get(&(EdgeKind::Cond, false)), None);
    let private = within.get(&(EdgeKind::Cond, false)).copied().unwrap_or(0);
    assert!(
        private >= 2 * 20,
        "private cond edges within processes: {private}"
    );
    // The shared cond and semaphore link the parent and the child, each one object.
    assert_eq!(across.get(&(EdgeKind::Cond, true)), Some(&1));
    assert_eq!(across.get(&(EdgeKind::Sem, true)), Some(&1));
    for kind in [ObjKind::Cond, ObjKind::Sem] {
        let n = g
            .objects
            .iter()
            .filter(|o| o.kind.is(kind) && o.shared)
            .count();
        assert_eq!(n, 1, "one shared {} object", kind.name());
    }
}

/// The hand-offs no read names (the wakeups sample): an eventfd completion that edge-triggered
/// epoll reports and nobody reads reaches the event loop's wait, exactly, and no eventfd write
/// is left to an external sink; items of a flooded queue taken without waiting reach the leaf
/// that works on them, exactly, and the statistics-lock noise thread stays unlinked; a signal
/// reaches the wait it ended (pthread_kill and a process-directed kill); every job of a pool of
/// two takers (a waiter and a thief) reaches the taker that popped it, as a `cond` edge when it waited (from the
/// signal of the job it popped, even when another taker popped the job whose signal woke it)
/// and a `queue` edge when it did not; and every fdatasync is a wait inside its leaf with the
/// call site that made it.
#[test]
fn readiness_and_queue_edges_match_the_truth_exactly() {
    let truth_path =
        std::env::temp_dir().join(format!("scalpel-wakeups-{}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&truth_path);
    let run = record_with(&own_bin("wakeups"), &["--items", "300"], |c| {
        c.env("SCALPEL_TRUTH", &truth_path);
    })
    .success();
    let truth = truth_of(&truth_path);
    let _ = std::fs::remove_file(&truth_path);
    let out = run.tmp.path().join("graph-score");
    let o = infer(&run.dir, &out, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let g = load_graph(&out);
    let namer = Namer::new(&run.dir);
    assert_eq!(truth.edges["ready"].len(), 300);
    assert_eq!(truth.edges["signal"].len(), 300);
    assert!(
        truth.edges["queue"].len() > 150,
        "{}",
        truth.edges["queue"].len()
    );
    let mut report = String::new();
    let mut perfect = true;
    // The pool of takers' wakeups: the only `cond` edges the truth lists, scored over the edges
    // into the takers' threads (the other parts' waits have cond edges of their own).
    let poster: BTreeSet<u32> = truth.edges["cond"].iter().map(|(f, _)| f.1).collect();
    assert_eq!(poster.len(), 1, "one poster: {poster:?}");
    let takers: BTreeSet<(u32, u32)> = truth.edges["cond"]
        .iter()
        .chain(&truth.edges["queue"])
        .filter(|(from, _)| poster.contains(&from.1))
        .map(|(_, to)| (to.0, to.1))
        .collect();
    for (name, kind, only) in [
        ("ready", EdgeKind::Ready, None),
        ("queue", EdgeKind::Queue, None),
        ("signal", EdgeKind::Signal, None),
        ("cond", EdgeKind::Cond, Some(&takers)),
    ] {
        let (p, r, found, n) = score_into(&g, &namer, kind, &truth.edges[name], only);
        report += &format!("{name}: precision {p:.3} recall {r:.3} ({found} found, {n} true)\n");
        perfect &= p == 1.0 && r == 1.0;
    }
    eprint!("{report}");
    assert!(perfect, "{report}");
    assert_eq!(truth.noise.len(), 1);
    for e in g.edges.iter().filter(|e| !e.kind.in_thread()) {
        for end in [e.from, e.to] {
            let t = &g.threads[g.leaves[end.index()].thread.index()];
            assert!(
                !truth.noise.contains(&(t.pid, t.tid))
                    || matches!(e.kind, EdgeKind::Create | EdgeKind::Join),
                "a {:?} edge touches the noise thread",
                e.kind
            );
        }
    }
    assert!(g.externals.is_empty(), "{:?}", g.externals);
    for e in &g.edges {
        if let Some(o) = e.obj {
            let kind = g.objects[o.get() as usize].kind;
            assert!(!kind.is(ObjKind::Mutex), "an edge through a mutex: {e:?}");
        }
    }
    // The syncer's 31 fdatasync calls (items / 10 + 1), each a wait inside its leaf, at its site.
    let syncs: Vec<_> = g
        .inner_waits
        .iter()
        .filter(|w| w.op.name() == "fdatasync")
        .collect();
    assert_eq!(syncs.len(), 31, "fdatasync waits: {syncs:?}");
    for w in syncs {
        let site = &g.sites[w.site.index()];
        assert!(
            site.frames.iter().any(|f| f.contains("syncer")),
            "fdatasync site {site:?}"
        );
    }
}

#[test]
fn latches_set_to_hand_a_lock_over_give_no_edges_and_cut_no_leaf() {
    let run = record(&build_c("latch", "latch", &[]), &[]).success();
    let handovers = run.printed("handovers", "handovers");
    let flushes = run.printed("handovers", "flushes");
    assert!(handovers >= 200, "{}", run.stdout());
    let out = run.tmp.path().join("graph");
    let o = infer(&run.dir, &out, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let g = load_graph(&out);
    let thread = |l: u32| g.threads[g.leaves[l as usize].thread.index()].name.as_str();
    let worker = |l: u32| thread(l).starts_with("worker");
    // A kill that hands the lock to a worker waiting on its latch in the middle of a request
    // is lock order: no edge. Those that set the flusher's latch (it waits for work at the
    // head of its loop) keep theirs, one per kill.
    let signals: Vec<_> = g
        .edges
        .iter()
        .filter(|e| e.kind == EdgeKind::Signal)
        .collect();
    for e in &signals {
        assert!(worker(e.from.get()), "{e:?}");
        assert_eq!(thread(e.to.get()), "flusher", "{e:?}");
    }
    assert_eq!(signals.len() as u64, flushes);
    // A request is one leaf, from the read of the request to the reply, unless its worker set
    // the flusher's latch on the way: the hand-over's kill and the wait cut nothing.
    let op = |o: Option<OpName>| o.map(OpName::name).unwrap_or_default();
    let mut requests = 0;
    for (i, l) in g.leaves.iter().enumerate() {
        if !worker(i as u32) {
            continue;
        }
        assert!(
            op(l.start_op) != "epoll_wait" && op(l.end_op) != "epoll_wait",
            "leaf {i}: {l:?}"
        );
        if op(l.start_op) == "recv" {
            requests += 1;
        }
    }
    assert_eq!(requests, 4 * 200);
    // The waits are lock time inside their requests.
    let waited: u64 = g
        .leaves
        .iter()
        .enumerate()
        .filter(|(i, _)| worker(*i as u32))
        .map(|(_, l)| l.lock_ns)
        .sum();
    assert!(waited > 0);
    assert!(
        g.inner_waits
            .iter()
            .any(|w| w.op.name() == "epoll_wait" && worker(w.leaf.get())),
        "no latch wait inside a worker's leaf"
    );
    // Each such wait names the worker whose kill ended it as the lock's holder.
    let held: Vec<_> = g
        .lock_waits
        .iter()
        .filter(|w| g.objects[w.obj.get() as usize].kind.is(ObjKind::Epoll))
        .collect();
    assert!(
        held.len() as u64 >= handovers / 2,
        "{} of {handovers}",
        held.len()
    );
    for w in held {
        let h = w.holder.expect("a latch wait's holder");
        assert!(worker(w.waiter.get()) && worker(h.get()), "{w:?}");
        assert_ne!(thread(w.waiter.get()), thread(h.get()), "{w:?}");
    }
}

#[test]
fn semaphores_used_as_a_lock_give_no_edges_and_cut_no_leaf() {
    let run = record(&build_c("semlock", "semlock", &[]), &[]).success();
    let out = run.tmp.path().join("graph");
    let o = infer(&run.dir, &out, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let g = load_graph(&out);
    let thread = |l: NodeId| g.threads[g.leaves[l.index()].thread.index()].name.as_str();
    let kind = |o: ObjId| g.objects[o.get() as usize].kind;
    // Every semaphore edge is a completion, from a worker to the client: none is a hand-over
    // of the lock between two workers.
    let sem: Vec<_> = g.edges.iter().filter(|e| e.kind == EdgeKind::Sem).collect();
    assert_eq!(sem.len(), 4 * 200, "one completion edge per request");
    for e in &sem {
        assert!(thread(e.from).starts_with("worker"), "{e:?}");
        assert_eq!(thread(e.to), "client", "{e:?}");
    }
    // The workers' own semaphores are the lock's: in the lock table, with their waits.
    let waits: Vec<_> = g
        .locks
        .iter()
        .filter(|l| kind(l.obj).is(ObjKind::Sem))
        .collect();
    assert!(
        !waits.is_empty(),
        "the hand-over semaphores are locks: {:?}",
        g.locks
    );
    assert!(
        waits.iter().map(|l| l.contended).sum::<u64>() > 0,
        "{waits:?}"
    );
    // A request is one leaf, from the read of the request to the completion's post, whether
    // or not its worker waited for the lock on the way.
    let op = |o: Option<OpName>| o.map(OpName::name).unwrap_or_default();
    let mut requests = 0;
    for (i, l) in g.leaves.iter().enumerate() {
        if thread(NodeId::new(i as u32)).starts_with("worker") && op(l.start_op) == "read" {
            assert_eq!(op(l.end_op), "sem_post", "leaf {i}: {l:?}");
            requests += 1;
        }
    }
    assert_eq!(requests, 4 * 200);
}
