//! Trace directories written call by call with the model's `TraceWriter`, for the matcher
//! tests: each thread's calls at given times (in ticks, one tick a nanosecond), on objects
//! named by kind and key, with the sequence numbers the agent would have given them.

pub(crate) mod talk;

use std::collections::HashMap;
use std::path::Path;

use scalpel_graph::{build_graph, GraphOptions};
use scalpel_model::format::{ObjKind, Op};
use scalpel_model::graph::{EdgeKind, Graph};
use scalpel_model::read::{Header, Identity};
use scalpel_model::record::RawEvent;
use scalpel_model::write::TraceWriter;

/// One thread's file being written.
pub(crate) struct Thread {
    pid: u32,
    tid: u32,
    w: TraceWriter,
    objs: HashMap<(u8, u64), u64>,
    last_seq: HashMap<u64, u64>,
    last_ticks: u64,
}

/// One call: what [`Thread::call`] writes.
pub(crate) struct Call {
    /// When it was entered, ticks after the trace's start.
    pub(crate) at: u64,
    /// How long it took.
    pub(crate) dur: u64,
    /// The operation.
    pub(crate) op: Op,
    /// Its object, by kind and key, with the identity a stream's first use carries.
    pub(crate) obj: Option<(ObjKind, u64, Identity)>,
    /// Its trace-wide sequence number on the object, if the agent gives it one.
    pub(crate) seq: Option<u64>,
    /// Its result.
    pub(crate) result: i64,
    /// Byte-stream offset.
    pub(crate) offset: Option<u64>,
    /// First auxiliary value (signal target, poll descriptor count …).
    pub(crate) aux: Option<u64>,
    /// Second auxiliary value (the value a futex wait expected …).
    pub(crate) aux2: Option<u64>,
}

impl Call {
    /// A call of `op` at `at` taking `dur`, returning 0, on no object.
    pub(crate) fn new(at: u64, dur: u64, op: Op) -> Call {
        Call {
            at,
            dur,
            op,
            obj: None,
            seq: None,
            result: 0,
            offset: None,
            aux: None,
            aux2: None,
        }
    }

    /// On object `kind`/`key` (identity none), with sequence number `seq`.
    pub(crate) fn on(self, kind: ObjKind, key: u64, seq: u64) -> Call {
        Call {
            obj: Some((kind, key, Identity::None)),
            seq: Some(seq),
            ..self
        }
    }
}

impl Thread {
    /// Thread `tid` of process `pid`.
    pub(crate) fn new(pid: u32, tid: u32) -> Thread {
        let mut h = Header::thread(pid, tid);
        h.thread_name = format!("t{tid}").into_bytes();
        Thread {
            pid,
            tid,
            w: TraceWriter::new(h),
            objs: HashMap::new(),
            last_seq: HashMap::new(),
            last_ticks: 0,
        }
    }

    /// Its file's header, to set what the defaults leave out (clock points, …).
    pub(crate) fn header(&mut self) -> &mut Header {
        self.w.header_mut()
    }

    /// Appends `c` (calls must come in time order).
    pub(crate) fn call(&mut self, c: Call) -> &mut Thread {
        let obj = c.obj.map(|(kind, key, id)| {
            let next = self.objs.len() as u64 + 1;
            *self.objs.entry((kind.code(), key)).or_insert_with(|| {
                self.w.object(next, kind.code(), key, &id);
                next
            })
        });
        let seq_delta = match (obj, c.seq) {
            (Some(o), Some(s)) => {
                let prev = self.last_seq.insert(o, s).unwrap_or(0);
                Some(s as i64 - prev as i64)
            }
            _ => None,
        };
        let dt = c.at - self.last_ticks;
        self.last_ticks = c.at;
        self.w.event(&RawEvent {
            op: c.op as u8,
            dt,
            dur: c.dur,
            obj,
            seq_delta,
            result: Some(c.result),
            offset: c.offset,
            aux: c.aux,
            aux2: c.aux2,
            ..RawEvent::default()
        });
        self
    }
}

/// Writes the threads into `root` (a process directory per pid) and builds the graph.
pub(crate) fn graph(root: &Path, threads: Vec<Thread>) -> Graph {
    write(root, threads);
    build_graph(root, &GraphOptions::default()).unwrap().graph
}

/// Writes the threads into `root`: a process directory per pid.
pub(crate) fn write(root: &Path, threads: Vec<Thread>) {
    let mut pids: Vec<u32> = threads.iter().map(|t| t.pid).collect();
    pids.sort_unstable();
    pids.dedup();
    for pid in pids {
        let dir = root.join(format!("{pid}.0"));
        std::fs::create_dir_all(&dir).unwrap();
        TraceWriter::new(Header::process(pid))
            .write_to(dir.join("process.trace"))
            .unwrap();
    }
    for t in threads {
        let path = root.join(format!("{}.0/t{}.trace", t.pid, t.tid));
        t.w.write_to(path).unwrap();
    }
}

/// The graph's edges of `kind` as (from thread's tid, to thread's tid), leaf-level only.
pub(crate) fn edges(g: &Graph, kind: EdgeKind) -> Vec<(u32, u32)> {
    g.edges
        .iter()
        .filter(|e| e.kind == kind)
        .filter_map(|e| {
            let (a, b) = (g.leaf_of(e.from)?, g.leaf_of(e.to)?);
            let tid = |l: scalpel_model::graph::LeafId| g.threads[g.leaf(l).thread.index()].tid;
            Some((tid(a), tid(b)))
        })
        .collect()
}
