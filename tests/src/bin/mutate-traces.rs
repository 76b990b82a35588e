//! `mutate-traces`: damages copies of real traces one structure-aware mutation at a time and runs
//! `scalpel dump`, `summary` and `infer` on each, counting panics, aborts, slow runs and memory.
//!
//! Usage: `mutate-traces [--count N] [--seed S] [--jobs J] [--keep DIR] [--scalpel PATH] TRACE...`
//! (defaults: 500 mutants, seed 1, one job per core, `scalpel` beside this binary). A failing or
//! slow mutant is printed with its seed and mutation, and its trace files copied under
//! `--keep DIR` when given. Exits 1 if any run panicked, died of a signal, ended without a clear
//! message or passed the memory limit; slow runs are counted and printed, and fail the run only
//! with `--strict-time`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use scalpel_e2e::fuzzrun::{run, Verdict, COMMANDS};
use scalpel_e2e::mutate::{apply, choose, copy_trace, Rng};

/// A run slower than this many times the intact trace's fails.
const SLOWER: u32 = 10;
/// The least time limit: starting a process alone varies by milliseconds on a busy machine.
const MIN_LIMIT: Duration = Duration::from_secs(1);
/// Peak memory a run may use.
const MAX_PEAK: u64 = 2 << 30;

struct Opts {
    count: usize,
    seed: u64,
    jobs: usize,
    keep: Option<PathBuf>,
    strict_time: bool,
    scalpel: PathBuf,
    traces: Vec<PathBuf>,
}

fn parse() -> Result<Opts, String> {
    let mut args = std::env::args_os().skip(1);
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut o = Opts {
        count: 500,
        seed: 1,
        jobs: std::thread::available_parallelism().map_or(1, |n| n.get()),
        keep: None,
        strict_time: false,
        scalpel: exe.with_file_name("scalpel"),
        traces: Vec::new(),
    };
    while let Some(a) = args.next() {
        let mut value = |name: &str| {
            args.next()
                .ok_or_else(|| format!("{name} needs a value"))
                .map(|v| v.to_string_lossy().into_owned())
        };
        match a.to_str() {
            Some("--count") => {
                o.count = value("--count")?
                    .parse()
                    .map_err(|e| format!("--count: {e}"))?
            }
            Some("--seed") => {
                o.seed = value("--seed")?
                    .parse()
                    .map_err(|e| format!("--seed: {e}"))?
            }
            Some("--jobs") => {
                o.jobs = value("--jobs")?
                    .parse()
                    .map_err(|e| format!("--jobs: {e}"))?
            }
            Some("--keep") => o.keep = Some(PathBuf::from(value("--keep")?)),
            Some("--strict-time") => o.strict_time = true,
            Some("--scalpel") => o.scalpel = PathBuf::from(value("--scalpel")?),
            Some(s) if s.starts_with("--") => return Err(format!("unknown option {s}")),
            _ => o.traces.push(PathBuf::from(a)),
        }
    }
    if o.traces.is_empty() {
        return Err(
            "usage: mutate-traces [--count N] [--seed S] [--jobs J] [--keep DIR] TRACE...".into(),
        );
    }
    Ok(o)
}

#[derive(Default)]
struct Tally {
    mutants: usize,
    kinds: std::collections::BTreeMap<&'static str, usize>,
    clear_ok: usize,
    clear_err: usize,
    failures: Vec<String>,
    slow: Vec<String>,
    slowest: f64,
    peak: u64,
}

/// Median wall time of each command on the intact trace (3 runs).
fn baseline(scalpel: &Path, trace: &Path, work: &Path) -> [Duration; 3] {
    let mut out = [Duration::ZERO; 3];
    for (i, cmd) in COMMANDS.iter().enumerate() {
        let mut times: Vec<Duration> = (0..3)
            .map(|k| {
                let r = run(
                    scalpel,
                    cmd,
                    trace,
                    &work.join(format!("base-{i}-{k}")),
                    Duration::from_secs(600),
                );
                assert!(
                    matches!(r.verdict, Verdict::Clear { code: 0 }),
                    "{cmd} fails on the intact trace {}: {:?}",
                    trace.display(),
                    r.verdict
                );
                r.time
            })
            .collect();
        times.sort();
        out[i] = times[1];
    }
    out
}

/// Copies a mutant's trace files (not the outputs, not the 1.5 MiB counter table) to `to`.
fn keep_input(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        let name = e.file_name();
        let n = name.to_string_lossy();
        if n.starts_with("out-") || n == "shared.tbl" {
            continue;
        }
        if e.path().is_dir() {
            std::fs::create_dir_all(to.join(&name))?;
            for f in std::fs::read_dir(e.path())? {
                let f = f?;
                std::fs::copy(f.path(), to.join(&name).join(f.file_name()))?;
            }
        } else {
            std::fs::copy(e.path(), to.join(&name))?;
        }
    }
    Ok(())
}

fn main() {
    let o = match parse() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("mutate-traces: {e}");
            std::process::exit(2);
        }
    };
    let work = tempfile::tempdir().expect("temporary directory");
    let bases: Vec<[Duration; 3]> = o
        .traces
        .iter()
        .map(|t| baseline(&o.scalpel, t, work.path()))
        .collect();
    for (t, b) in o.traces.iter().zip(&bases) {
        println!(
            "intact {}: dump {:.1} ms, summary {:.1} ms, infer {:.1} ms",
            t.display(),
            b[0].as_secs_f64() * 1e3,
            b[1].as_secs_f64() * 1e3,
            b[2].as_secs_f64() * 1e3
        );
    }
    let next = AtomicUsize::new(0);
    let tally = Mutex::new(Tally::default());
    std::thread::scope(|s| {
        for _ in 0..o.jobs.max(1) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= o.count {
                    return;
                }
                let seed = o.seed.wrapping_add(i as u64);
                let t = i % o.traces.len();
                let trace = &o.traces[t];
                let mut rng = Rng::new(seed);
                let Some(m) = choose(trace, &mut rng) else {
                    continue;
                };
                let dir = work.path().join(format!("m{i}"));
                copy_trace(trace, &dir).expect("copy the trace");
                apply(&m, trace, &dir).expect("apply the mutation");
                let mut failed = Vec::new();
                let mut slow = Vec::new();
                let mut ratio: f64 = 0.0;
                let mut peak = 0;
                let mut codes = Vec::new();
                for (c, cmd) in COMMANDS.iter().enumerate() {
                    let base = bases[t][c];
                    let limit = (base * SLOWER).max(MIN_LIMIT);
                    let r = run(
                        &o.scalpel,
                        cmd,
                        &dir,
                        &dir.join(format!("out-{cmd}")),
                        limit,
                    );
                    ratio = ratio.max(r.time.as_secs_f64() / base.as_secs_f64().max(1e-6));
                    peak = peak.max(r.peak);
                    match &r.verdict {
                        Verdict::Clear { code } => codes.push(*code),
                        Verdict::Slow => slow.push(format!("{cmd}: slower than {:?}", limit)),
                        v => failed.push(format!("{cmd}: {v:?}")),
                    }
                    if r.peak > MAX_PEAK {
                        failed.push(format!("{cmd}: peak {} MiB", r.peak >> 20));
                    }
                }
                if !failed.is_empty() || !slow.is_empty() {
                    if let Some(keep) = &o.keep {
                        let to = keep.join(format!("{}-{seed}", m.kind()));
                        let _ = keep_input(&dir, &to);
                        let _ = std::fs::write(
                            to.join("mutation.txt"),
                            format!("seed {seed}\n{m}\n{failed:?} {slow:?}\n"),
                        );
                    }
                }
                let _ = std::fs::remove_dir_all(&dir);
                let mut g = tally.lock().unwrap_or_else(|e| e.into_inner());
                g.mutants += 1;
                *g.kinds.entry(m.kind()).or_default() += 1;
                g.slowest = g.slowest.max(ratio);
                g.peak = g.peak.max(peak);
                if !slow.is_empty() {
                    let line = format!("seed {seed} {m}: {}", slow.join("; "));
                    println!("SLOW {line}");
                    g.slow.push(line);
                }
                if failed.is_empty() && slow.is_empty() {
                    if codes.iter().all(|&c| c == 0) {
                        g.clear_ok += 1;
                    } else {
                        g.clear_err += 1;
                    }
                } else if !failed.is_empty() {
                    let line = format!("seed {seed} {m}: {}", failed.join("; "));
                    println!("FAIL {line}");
                    g.failures.push(line);
                }
            });
        }
    });
    let g = tally.into_inner().unwrap_or_else(|e| e.into_inner());
    let kinds: Vec<String> = g.kinds.iter().map(|(k, n)| format!("{k} {n}")).collect();
    println!("mutants: {} ({})", g.mutants, kinds.join(", "));
    println!(
        "every command ended clearly: {} (all succeeded {}, some refused with an error {})",
        g.clear_ok + g.clear_err,
        g.clear_ok,
        g.clear_err
    );
    println!(
        "failed (a panic, a signal, an unclear exit or over the memory limit): {}",
        g.failures.len()
    );
    println!(
        "slower than {SLOWER}x the intact trace (or {} s): {}",
        MIN_LIMIT.as_secs(),
        g.slow.len()
    );
    println!(
        "slowest run: {:.1}x its intact time (limit {SLOWER}x, at least {} s); peak memory {} MiB (limit {} MiB)",
        g.slowest,
        MIN_LIMIT.as_secs(),
        g.peak >> 20,
        MAX_PEAK >> 20
    );
    if !g.failures.is_empty() || (o.strict_time && !g.slow.is_empty()) {
        std::process::exit(1);
    }
}
