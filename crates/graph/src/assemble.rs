//! Putting the threads' pieces together: global object, thread and leaf numbering, times in
//! nanoseconds on the trace's clock, and leaf types.

use ahash::AHashMap;
use rayon::prelude::*;
use scalpel_model::format::ObjKind;
use scalpel_model::graph::{
    Channel, CpuSample, Graph, InnerWait, LeafFile, LeafId, LeafTypeId, ObjId, ObjectInfo,
    ProcessId, ProcessInfo, SiteId, ThreadId, ThreadInfo, INNER_MIN_NS,
};
use scalpel_model::read::{Identity, ProcessSinks, TraceDir};

use super::event::{KindOf, LocalObj, ObjName, NO_OBJ};
use super::leaves::{Bound, LatchCall, LockAcquire, LockAgg, LockRelease, ThreadOut};
use super::queues::Section;
use super::ready::{Close, Ctl, ReadyWait};
use super::sink::ThreadSink;
use super::types::TypeTable;
use super::weak::WeakOrder;
use scalpel_model::memory::move_into;
use scalpel_symbols::{ModuleWarning, SkipList};

/// A thread whose leaves array held at least this many leaves (about 8 MiB) gives its freed
/// arrays back as soon as they are copied; smaller ones are left to the allocator, so that a
/// trace of many small threads does not walk the heap once per thread.
const RELEASE_LEAVES: usize = 1 << 16;

/// The graph's nodes and what the matchers need, all with global indices.
pub(super) struct Assembled {
    /// Processes, threads, objects, types and leaves filled in; no edges yet.
    pub graph: Graph,
    /// Every cut kept for matching.
    pub bounds: Vec<Bound>,
    /// Every lock release.
    pub releases: Vec<LockRelease>,
    /// Every kept lock acquisition, with durations in nanoseconds.
    pub acquires: Vec<LockAcquire>,
    /// Per-thread acquisition totals per lock (global objects, nanoseconds).
    pub lock_aggs: Vec<(u32, LockAgg)>,
    /// Per leaf: whether program order out of it is weak, and whether only by the loop-head
    /// guess.
    pub weak: WeakOrder,
    /// Per object: its kind code and channel kind.
    pub obj_kinds: Vec<KindOf>,
    /// Per object: the channel key of a stream direction (0 for other objects).
    pub obj_channel: Vec<u64>,
    /// Symbolization warnings.
    pub warnings: Vec<ModuleWarning>,
    /// Readiness waits (global leaves).
    pub ready: Vec<ReadyWait>,
    /// `epoll_ctl` registrations (global objects, nanoseconds).
    pub ctls: Vec<Ctl>,
    /// Descriptors closed (process, descriptor, nanoseconds).
    pub closes: Vec<Close>,
    /// Mutex sections that may put into or take from a queue (global objects and leaves).
    pub sections: Vec<Section>,
    /// The latch wake-ups' calls by (process index, file index, event index), with global
    /// leaves and objects and durations in nanoseconds.
    pub latch: AHashMap<(usize, usize, u32), LatchCall>,
    /// Stream key → global object, for the stream keys poll and select report.
    pub stream_by_key: AHashMap<u64, u32>,
}

/// Assembles the per-thread results of [`super::sink::ThreadSink`] in directory order.
pub(super) fn assemble(
    dir: &TraceDir,
    mut sinks: Vec<ProcessSinks<ThreadSink>>,
    skip: &SkipList,
) -> Assembled {
    // Times first, in parallel: ticks to nanoseconds with each file's (trace-wide) clock.
    let mut outs: Vec<(usize, usize, ThreadOut)> = Vec::new();
    for (pi, ps) in sinks.iter_mut().enumerate() {
        for (fi, s) in ps.threads.iter_mut().enumerate() {
            if let Some(out) = s.out.take() {
                outs.push((pi, fi, out));
            }
        }
    }
    outs.par_iter_mut().for_each(|(pi, fi, out)| {
        let clock = &dir.processes[*pi].threads[*fi].clock;
        for l in &mut out.leaves {
            l.start_ns = clock.ns(l.start_ns);
            l.end_ns = clock.ns(l.end_ns);
            l.block_ns = clock.dur_ns(l.block_ns);
            l.lock_ns = clock.dur_ns(l.lock_ns);
            l.sleep_ns = clock.dur_ns(l.sleep_ns);
            l.other_ns = clock.dur_ns(l.other_ns);
        }
        for w in &mut out.inner {
            w.at = clock.ns(w.at);
            w.dur = clock.dur_ns(w.dur);
        }
        out.inner.retain(|w| w.dur >= INNER_MIN_NS);
        for k in &mut out.acquires {
            k.dur = clock.dur_ns(k.dur);
        }
        for c in &mut out.latch {
            c.dur = clock.dur_ns(c.dur);
        }
        for c in &mut out.ctls {
            c.at = clock.ns(c.at);
            c.process = *pi as u32;
        }
        for c in &mut out.closes {
            c.0 = *pi as u32;
            c.2 = clock.ns(c.2);
        }
        for (_, a) in &mut out.lock_aggs {
            a.wait = clock.dur_ns(a.wait);
            a.max = clock.dur_ns(a.max);
        }
    });
    // Every array sized once: grown by doubling, each would leave its old blocks resident
    // (see `crate::memory`), a third of the stage's peak on a 1.77M-event recording.
    let sum = |f: fn(&ThreadOut) -> usize| outs.iter().map(|(_, _, o)| f(o)).sum::<usize>();
    let total = sum(|o| o.leaves.len());
    let ids = dir.identities();
    let mut graph = Graph {
        processes: dir
            .processes
            .iter()
            .map(|p| ProcessInfo {
                pid: p.pid,
                incarnation: p.incarnation,
                exe: p.exe().map(|e| e.display().to_string()),
                cmdline: p.cmdline().map(<[String]>::to_vec).unwrap_or_default(),
                title: p.title(),
            })
            .collect(),
        ..Graph::new(
            Vec::new(),
            Vec::new(),
            Vec::with_capacity(total),
            Vec::new(),
        )
    };
    // CPU times are kept per leaf only when some thread recorded them.
    let any_cpu = outs.iter().any(|(_, _, o)| !o.cpu.is_empty());
    graph.inner_waits.reserve_exact(sum(|o| o.inner.len()));
    graph.leaf_files.reserve_exact(sum(|o| o.files.len()));
    if any_cpu {
        graph.leaf_cpu_ns.reserve_exact(total);
    }
    let mut obj_index: AHashMap<ObjName, u32> = AHashMap::new();
    let mut obj_kinds = Vec::new();
    let mut obj_channel = Vec::new();
    let mut stream_by_key = AHashMap::new();
    let mut ready = Vec::with_capacity(sum(|o| o.ready.len()));
    let mut ctls = Vec::with_capacity(sum(|o| o.ctls.len()));
    let mut closes = Vec::with_capacity(sum(|o| o.closes.len()));
    let mut sections = Vec::with_capacity(sum(|o| o.sections.len()));
    let mut latch = AHashMap::new();
    let mut table = TypeTable::new(skip);
    let mut bounds = Vec::with_capacity(sum(|o| o.bounds.len()));
    let mut releases = Vec::with_capacity(sum(|o| o.releases.len()));
    let mut acquires = Vec::with_capacity(sum(|o| o.acquires.len()));
    let mut lock_aggs = Vec::with_capacity(sum(|o| o.lock_aggs.len()));
    let mut weak = WeakOrder {
        weak: Vec::with_capacity(total),
        head: Vec::with_capacity(total),
    };
    for (pi, fi, mut out) in outs {
        let p = &dir.processes[pi];
        let file = &p.threads[fi];
        let base = graph.leaves.len() as u32;
        let objs: Vec<u32> = out
            .objs
            .iter()
            .map(|o| {
                let next = graph.objects.len() as u32;
                *obj_index.entry(o.name(pi)).or_insert_with(|| {
                    graph
                        .objects
                        .push(object_info(o, ids.get(&(o.kind.code(), o.key)).copied()));
                    if o.kind.is(ObjKind::Stream) {
                        stream_by_key.insert(o.key, next);
                    }
                    obj_kinds.push((o.kind, o.chan));
                    obj_channel.push(o.channel);
                    next
                })
            })
            .collect();
        let global = |o: u32| {
            if o == NO_OBJ {
                NO_OBJ
            } else {
                objs[o as usize]
            }
        };
        let types = table.thread_types(p, file, &out.types);
        let thread = graph.threads.len() as u32;
        graph.threads.push(ThreadInfo {
            process: ProcessId::at(pi),
            pid: p.pid,
            tid: file.header.tid,
            name: file.thread_name(),
            first_leaf: LeafId::new(base),
            leaves: out.leaves.len() as u32,
        });
        if any_cpu {
            let n = out.leaves.len();
            out.cpu.resize(n, None);
            graph.leaf_cpu_ns.append(&mut out.cpu);
        }
        graph.leaf_files.extend(out.files.iter().map(|f| LeafFile {
            leaf: LeafId::new(f.leaf.get() + base),
            ..*f
        }));
        let big = out.leaves.capacity() >= RELEASE_LEAVES;
        let leaves = std::mem::take(&mut out.leaves);
        move_into(&mut graph.leaves, leaves, |mut l| {
            l.thread = ThreadId::new(thread);
            l.ty = LeafTypeId::new(types[l.ty.index()]);
            l.end_obj = l.end_obj.map(|o| ObjId::new(global(o.get())));
            l
        });
        // The largest array goes back before the others are copied.
        if big {
            scalpel_model::memory::release_freed_memory();
        }
        move_into(&mut bounds, std::mem::take(&mut out.bounds), |b| Bound {
            obj: global(b.obj),
            leaf: b.leaf + base,
            ..b
        });
        move_into(&mut releases, std::mem::take(&mut out.releases), |k| {
            LockRelease {
                obj: global(k.obj),
                leaf: k.leaf + base,
                ..k
            }
        });
        acquires.extend(out.acquires.iter().map(|k| LockAcquire {
            obj: global(k.obj),
            leaf: k.leaf + base,
            ..*k
        }));
        lock_aggs.extend(out.lock_aggs.iter().map(|&(o, a)| (global(o), a)));
        ready.extend(out.ready.drain(..).map(|w| ReadyWait {
            leaf: w.leaf + base,
            ..w
        }));
        closes.append(&mut out.closes);
        // Renumbered in place: a section's signal list moves, it is not copied.
        move_into(&mut sections, std::mem::take(&mut out.sections), |mut s| {
            for (c, l) in &mut s.signals {
                (*c, *l) = (global(*c), *l + base);
            }
            Section {
                obj: global(s.obj),
                leaf: s.leaf + base,
                waited: s.waited.map(global),
                ..s
            }
        });
        latch.extend(out.latch.iter().map(|c| {
            let call = LatchCall {
                leaf: c.leaf + base,
                obj: global(c.obj),
                ..*c
            };
            ((pi, fi, c.event), call)
        }));
        ctls.extend(out.ctls.iter().map(|c| Ctl {
            obj: global(c.obj),
            ..*c
        }));
        let sites = table.thread_sites(p, file, out.inner.iter().map(|w| w.stack));
        graph
            .inner_waits
            .extend(out.inner.iter().zip(sites).map(|(w, site)| InnerWait {
                leaf: LeafId::new(w.leaf + base),
                op: w.op,
                obj: (w.obj != NO_OBJ).then(|| ObjId::new(global(w.obj))),
                at_ns: w.at,
                ns: w.dur,
                site: SiteId::new(site),
            }));
        let sites = table.thread_sites(
            p,
            file,
            file.samples
                .iter()
                .map(|s| u32::try_from(s.stack).unwrap_or(0)),
        );
        let first = graph.samples.len();
        graph
            .samples
            .extend(file.samples.iter().zip(sites).map(|(s, site)| CpuSample {
                thread: ThreadId::new(thread),
                at_ns: file.clock.ns(s.ticks),
                weight_ns: s.weight_ns(),
                site: SiteId::new(site),
                in_agent: s.in_agent,
            }));
        graph.samples[first..].sort_by_key(|s| s.at_ns);
        for s in &file.samples {
            if s.period_ns > 0
                && (graph.sample_period_ns == 0 || s.period_ns < graph.sample_period_ns)
            {
                graph.sample_period_ns = s.period_ns;
            }
        }
        weak.weak.append(&mut out.weak.weak);
        weak.head.append(&mut out.weak.head);
        // The thread's arrays are copied: give them back now rather than hold every thread's
        // beside the graph's (see `crate::memory`).
        drop(out);
        if big {
            scalpel_model::memory::release_freed_memory();
        }
    }
    graph.types = std::mem::take(&mut table.types);
    graph.sites = std::mem::take(&mut table.sites);
    for l in &graph.leaves {
        graph.types[l.ty.index()].count += 1;
    }
    Assembled {
        graph,
        bounds,
        releases,
        acquires,
        lock_aggs,
        weak,
        obj_kinds,
        obj_channel,
        warnings: table.warnings().to_vec(),
        ready,
        ctls,
        closes,
        sections,
        stream_by_key,
        latch,
    }
}

/// What the graph says of object `o`, whose OBJECT record gave identity `id`.
fn object_info(o: &LocalObj, id: Option<&Identity>) -> ObjectInfo {
    // Another process's object at the same address says nothing of this one.
    let id = id.filter(|_| !o.shared && !o.kind.known().is_some_and(ObjKind::process_scoped));
    ObjectInfo {
        kind: o.kind,
        key: o.key,
        shared: o.shared,
        channel: id.and_then(Channel::of),
        desc: match id {
            _ if o.shared => Identity::Shared.to_string(),
            Some(id) => id.to_string(),
            None => String::new(),
        },
    }
}
