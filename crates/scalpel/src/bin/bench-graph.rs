//! `scalpel-bench-graph`: the graph stage's throughput and memory on a large synthetic trace.
//!
//! `gen DIR --events N` writes a trace of N events with a known shape: pipelines of four
//! threads (a dispatcher signalling a worker through a mutex+cond queue, the worker writing to
//! a pipe under a second lock, a reader posting a semaphore, a waiter taking it), 14 events and
//! 6 leaves per request. `run DIR` builds the graph in this process and prints events per
//! second and peak memory per event; run it in a fresh process so that the peak is the
//! graph's. `scripts/bench-graph.sh` does both. `compare WHOLE WINDOWS` counts the leaves on
//! which a trace inferred in windows (`infer --memory`) and inferred whole disagree.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use scalpel::pipeline::{window_dir_name, WindowedDifference};
use scalpel_graph::{build_graph, GraphOptions};
use scalpel_model::format::{ChanKind, ObjKind, Op};
use scalpel_model::read::{Endpoint, Header, Identity};
use scalpel_model::record::RawEvent;
use scalpel_model::store::{read_graph, read_model};
use scalpel_model::write::TraceFile;

const PIPELINES: u64 = 4;
const EVENTS_PER_REQUEST: u64 = 14;
const PERIOD_NS: u64 = 10_000;

/// One event before sequence numbers: thread, entry time, duration, op, object, offset.
#[derive(Clone, Copy)]
struct Gen {
    thread: usize,
    t: u64,
    dur: u64,
    op: Op,
    obj: Option<(u8, u64)>,
    offset: Option<u64>,
    result: i64,
}

struct Thread {
    file: TraceFile,
    last: u64,
    index: HashMap<(u8, u64), (u64, u64)>,
}

impl Thread {
    fn create(path: &Path, pid: u32, tid: u32) -> std::io::Result<Thread> {
        let mut h = Header::thread(pid, tid);
        h.clock0 = 0;
        let mut file = TraceFile::create(path, h)?;
        // Each op gets its own small stack, as a real call site would.
        for op in Op::ALL {
            let id = u64::from(*op as u8);
            file.writer().stack(id, &[0x1000 + id * 16, 0x2000, 0x3000]);
        }
        Ok(Thread {
            file,
            last: 0,
            index: HashMap::new(),
        })
    }

    fn emit(&mut self, g: &Gen, seq: Option<u64>) {
        let mut obj_index = None;
        let mut seq_delta = None;
        if let Some((kind, key)) = g.obj {
            let n = self.index.len() as u64 + 1;
            let w = self.file.writer();
            let entry = self.index.entry((kind, key)).or_insert_with(|| {
                let id = if kind == ObjKind::Stream.code() {
                    Identity::Stream {
                        chan: ChanKind::Pipe.code(),
                        channel_key: key,
                        sender: Endpoint::None,
                        receiver: Endpoint::None,
                    }
                } else {
                    Identity::None
                };
                w.object(n, kind, key, &id);
                (n, 0)
            });
            obj_index = Some(entry.0);
            if let Some(s) = seq {
                seq_delta = Some(s as i64 - entry.1 as i64);
                entry.1 = s;
            }
        }
        self.file.writer().event(&RawEvent {
            op: g.op as u8,
            dt: g.t - self.last,
            dur: g.dur,
            obj: obj_index,
            seq_delta,
            result: Some(g.result),
            offset: g.offset,
            stack: Some(u64::from(g.op as u8)),
            ..RawEvent::default()
        });
        self.last = g.t;
    }
}

/// The events of one request of one pipeline (threads 0..4 of it), at base time `t`.
fn request(r: u64, t: u64, k: u64, out: &mut Vec<Gen>) {
    let q = (ObjKind::Mutex.code(), 0x1000 + k);
    let m2 = (ObjKind::Mutex.code(), 0x2000 + k);
    let c = (ObjKind::Cond.code(), 0x3000 + k);
    let pipe = (ObjKind::Stream.code(), 0x4000 + k);
    let s = (ObjKind::Sem.code(), 0x5000 + k);
    let ev = |thread, t, dur, op, obj, offset, result| Gen {
        thread,
        t,
        dur,
        op,
        obj: Some(obj),
        offset,
        result,
    };
    use Op::*;
    out.extend([
        ev(1, t - 6000, 10, MutexLock, q, None, 0),
        ev(1, t - 5990, 5, CondUnlock, q, None, 0),
        ev(1, t - 5980, 6130, CondWait, c, None, 0),
        ev(0, t, 50, MutexLock, q, None, 0),
        ev(0, t + 100, 20, CondSignal, c, None, 0),
        ev(0, t + 200, 10, MutexUnlock, q, None, 0),
        ev(1, t + 160, 60, CondRelock, q, None, 0),
        ev(1, t + 300, 10, MutexUnlock, q, None, 0),
        ev(1, t + 1000, 30, MutexLock, m2, None, 0),
        ev(1, t + 1100, 10, MutexUnlock, m2, None, 0),
        ev(1, t + 2000, 500, Write, pipe, Some(r * 64), 64),
        ev(2, t + 2600, 100, Read, pipe, Some(r * 64), 64),
        ev(2, t + 3000, 20, SemPost, s, None, 0),
        ev(3, t - 6800, 9900, SemWait, s, None, 0),
    ]);
}

/// Requests generated and written at a time: a request's events lie between the end of the
/// request before's and the start of the next one's, in each thread and in sequence order, so
/// chunks of requests are written one after the other as the whole would be, in bounded memory.
const CHUNK_REQUESTS: u64 = 1 << 16;

fn gen(dir: &Path, events: u64) -> std::io::Result<()> {
    let requests = events.div_ceil(EVENTS_PER_REQUEST * PIPELINES);
    for k in 0..PIPELINES {
        let pid = 1000 + k as u32;
        let pdir = dir.join(format!("{pid}.0"));
        std::fs::create_dir_all(&pdir)?;
        let mut threads = (0..4)
            .map(|i| {
                let tid = pid + i;
                Thread::create(&pdir.join(format!("t{tid}.trace")), pid, tid)
            })
            .collect::<std::io::Result<Vec<Thread>>>()?;
        let mut counters: HashMap<(u8, u64), u64> = HashMap::new();
        let mut all = Vec::new();
        for first in (0..requests).step_by(CHUNK_REQUESTS as usize) {
            all.clear();
            for r in first..(first + CHUNK_REQUESTS).min(requests) {
                request(r, 10_000 + r * PERIOD_NS, k, &mut all);
            }
            write_chunk(&all, &mut counters, &mut threads)?;
        }
        for t in threads {
            t.file.finish()?;
        }
    }
    Ok(())
}

/// Numbers the events of `all` on their objects, continuing `counters`, and writes them to
/// their threads' files.
fn write_chunk(
    all: &[Gen],
    counters: &mut HashMap<(u8, u64), u64>,
    threads: &mut [Thread],
) -> std::io::Result<()> {
    // Sequence numbers in the order the agent takes them: a release's at its entry, an
    // acquire's at its return.
    let seq_time = |g: &Gen| match g.op.side() {
        scalpel_model::format::Side::Acquire => g.t + g.dur,
        _ => g.t,
    };
    let mut order: Vec<usize> = (0..all.len()).collect();
    order.sort_by_key(|&i| (seq_time(&all[i]), i));
    let mut seqs = vec![0u64; all.len()];
    for i in order {
        let c = counters.entry(all[i].obj.unwrap_or_default()).or_default();
        *c += 1;
        seqs[i] = *c;
    }
    let mut by_thread: Vec<usize> = (0..all.len()).collect();
    by_thread.sort_by_key(|&i| (all[i].thread, all[i].t, i));
    for i in by_thread {
        threads[all[i].thread].emit(&all[i], Some(seqs[i]));
    }
    threads.iter_mut().try_for_each(|t| t.file.flush())
}

fn peak_rss_bytes() -> u64 {
    let text = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    text.lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

fn run(dir: &Path) -> Result<(), String> {
    let before = peak_rss_bytes();
    let t0 = Instant::now();
    let built = build_graph(dir, &GraphOptions::default()).map_err(|e| e.to_string())?;
    let secs = t0.elapsed().as_secs_f64();
    let peak = peak_rss_bytes();
    let g = &built.graph;
    let n = built.events.max(1);
    println!(
        "events {}  leaves {}  edges {}  threads {}  time {:.3} s  throughput {:.2} M events/s  peak memory {:.1} MiB ({:.1} B/event; {:.1} MiB before loading)",
        built.events,
        g.leaves.len(),
        g.edges.len(),
        rayon::current_num_threads(),
        secs,
        n as f64 / secs / 1e6,
        peak as f64 / (1 << 20) as f64,
        peak.saturating_sub(before) as f64 / n as f64,
        before as f64 / (1 << 20) as f64,
    );
    Ok(())
}

/// Prints how far the windows `infer --memory` wrote into `windows` are from the model of the
/// whole trace in `whole` (see [`WindowedDifference`]); fails when more than `bound` of the
/// leaves are grouped apart in the task they are directly part of.
/// The most leaves that may stand in another task than in the whole model: in the innermost
/// task (the one a leaf is directly part of), in the outermost (`top`'s).
#[derive(Clone, Copy, Default)]
struct Bounds {
    inner: Option<f64>,
    outer: Option<f64>,
}

fn compare(whole: &Path, windows: &Path, bounds: Bounds) -> Result<(), String> {
    let load = |dir: &Path| {
        let graph = read_graph(&dir.join("graph.json")).map_err(|e| e.to_string())?;
        let model = read_model(&dir.join("model.json")).map_err(|e| e.to_string())?;
        Ok::<_, String>((graph, model))
    };
    let (g, m) = load(whole)?;
    let mut d = WindowedDifference::new(&g, &m);
    drop((g, m));
    let mut k = 0;
    while windows.join(window_dir_name(k)).is_dir() {
        let (g, m) = load(&windows.join(window_dir_name(k)))?;
        let before = (d.grouped, d.inner_grouped);
        d.add_window(&g, &m);
        println!(
            "window={k} leaves={} grouped_alike={} inner_grouped_alike={}",
            g.leaves.len(),
            d.grouped - before.0,
            d.inner_grouped - before.1
        );
        k += 1;
    }
    if k == 0 {
        return Err(format!("{}: no window-0000 in it", windows.display()));
    }
    println!(
        "windows={k} leaves={} grouped_apart={:.4}% named_apart={:.4}% \
         inner_grouped_apart={:.4}% inner_named_apart={:.4}%",
        d.leaves,
        d.grouped_apart() * 100.0,
        d.named_apart() * 100.0,
        d.inner_grouped_apart() * 100.0,
        d.inner_named_apart() * 100.0
    );
    // Where the leaves apart went: the first few pairs of innermost task names.
    for (whole, window, n) in d.inner_apart_by_name().into_iter().take(8) {
        let name = |t: Option<&str>| t.unwrap_or("(no task)").to_string();
        println!("  {n} leaves: {} → {}", name(whole), name(window));
    }
    if d.unmatched() > 0 {
        println!(
            "  {} leaves: in no window (cut by a boundary)",
            d.unmatched()
        );
    }
    let over = |what: &str, apart: f64, bound: Option<f64>| match bound {
        Some(b) if apart > b => Err(format!(
            "{:.4}% of the leaves are grouped apart in their {what} task, more than the bound \
             of {:.4}%",
            apart * 100.0,
            b * 100.0
        )),
        _ => Ok(()),
    };
    over("innermost", d.inner_grouped_apart(), bounds.inner)?;
    over("outermost", d.grouped_apart(), bounds.outer)
}

/// `compare`'s options after WHOLE and WINDOWS: `--inner-bound B`, `--outer-bound B`.
fn bounds(args: &[&str]) -> Result<Bounds, String> {
    let mut b = Bounds::default();
    for pair in args.chunks(2) {
        let share = |v: &str| match v.parse::<f64>() {
            Ok(x) if (0.0..=1.0).contains(&x) => Ok(Some(x)),
            _ => Err(format!("{} wants a share from 0 to 1, not {v:?}", pair[0])),
        };
        match *pair {
            ["--inner-bound", v] => b.inner = share(v)?,
            ["--outer-bound", v] => b.outer = share(v)?,
            _ => return Err(format!("unknown option {:?}", pair.join(" "))),
        }
    }
    Ok(b)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: scalpel-bench-graph gen DIR --events N | run DIR | compare WHOLE WINDOWS \
         [--inner-bound B] [--outer-bound B]";
    let r = match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["gen", dir, "--events", n] => match n.parse::<u64>() {
            Ok(n) if n > 0 => gen(&PathBuf::from(dir), n).map_err(|e| format!("{dir}: {e}")),
            _ => Err(format!("--events wants a positive number, not {n:?}")),
        },
        ["run", dir] => run(Path::new(dir)),
        ["compare", whole, windows, ref rest @ ..] => {
            bounds(rest).and_then(|b| compare(Path::new(whole), Path::new(windows), b))
        }
        _ => Err(usage.to_string()),
    };
    if let Err(e) = r {
        eprintln!("scalpel-bench-graph: {e}");
        std::process::exit(2);
    }
}
