//! Putting the threads together one after the other: each thread's objects, leaves, cuts and
//! waits renumbered into the trace's numbering.

use ahash::AHashMap;
use scalpel_model::format::ObjKind;
use scalpel_model::graph::{
    Channel, CpuSample, Graph, InnerWait, LeafFile, LeafId, LeafTypeId, ObjId, ObjectInfo,
    ProcessId, ProcessInfo, SiteId, ThreadId, ThreadInfo,
};
use scalpel_model::read::{FileTrace, Identity, ProcessTrace, TraceDir};

use crate::event::{LocalObj, ObjName, NO_OBJ};
use crate::leaves::{Bound, LatchCall, LockAcquire, ThreadOut};
use crate::queues::Section;
use crate::ready::{Ctl, ReadyWait};
use crate::types::TypeTable;
use crate::weak::WeakOrder;
use scalpel_model::memory::move_into;
use scalpel_symbols::SkipList;

use super::{Assembled, Timed, RELEASE_LEAVES};

/// The graph as it is put together, thread after thread.
pub(super) struct Assembly<'s> {
    a: Assembled,
    ids: std::collections::HashMap<(u8, u64), &'s Identity>,
    obj_index: AHashMap<ObjName, u32>,
    table: TypeTable<'s>,
    /// CPU times are kept per leaf only when some thread recorded them.
    any_cpu: bool,
}

impl<'s> Assembly<'s> {
    /// Every array sized once: grown by doubling, each would leave its old blocks resident
    /// (see `scalpel_model::memory`), a third of the stage's peak on a 1.77M-event recording.
    pub(super) fn new(dir: &'s TraceDir, timed: &[Timed], skip: &'s SkipList) -> Self {
        let sum = |f: fn(&Timed) -> usize| timed.iter().map(f).sum::<usize>();
        let total = sum(|t| t.leaves.len());
        let any_cpu = timed.iter().any(|t| !t.out.cpu.is_empty());
        let mut graph = Graph {
            processes: dir.processes.iter().map(process_info).collect(),
            ..Graph::new(
                Vec::new(),
                Vec::new(),
                Vec::with_capacity(total),
                Vec::new(),
            )
        };
        graph.inner_waits.reserve_exact(sum(|t| t.out.inner.len()));
        graph.leaf_files.reserve_exact(sum(|t| t.out.files.len()));
        if any_cpu {
            graph.leaf_cpu_ns.reserve_exact(total);
        }
        let a = Assembled {
            graph,
            bounds: Vec::with_capacity(sum(|t| t.out.bounds.len())),
            releases: Vec::new(),
            acquires: Vec::with_capacity(sum(|t| t.out.acquires.len())),
            lock_aggs: Vec::with_capacity(sum(|t| t.out.lock_aggs.len())),
            weak: WeakOrder {
                weak: Vec::with_capacity(total),
                head: Vec::with_capacity(total),
                passed: Vec::with_capacity(total),
                head_site: None,
            },
            obj_kinds: Vec::new(),
            obj_names: Vec::new(),
            obj_channel: Vec::new(),
            warnings: Vec::new(),
            ready: Vec::with_capacity(sum(|t| t.out.ready.len())),
            ctls: Vec::with_capacity(sum(|t| t.out.ctls.len())),
            closes: Vec::with_capacity(sum(|t| t.out.closes.len())),
            sections: Vec::with_capacity(sum(|t| t.out.sections.len())),
            signal_holds: Vec::with_capacity(sum(|t| t.out.signal_holds.len())),
            stream_by_key: AHashMap::new(),
            latch: AHashMap::new(),
        };
        Assembly {
            a,
            ids: dir.identities(),
            obj_index: AHashMap::new(),
            table: TypeTable::new(skip),
            any_cpu,
        }
    }

    /// The trace's number of each of the thread's objects, adding those not seen before.
    fn objects(&mut self, process: usize, objs: &[LocalObj]) -> Vec<u32> {
        let a = &mut self.a;
        objs.iter()
            .map(|o| {
                let next = a.graph.objects.len() as u32;
                let name = o.name(process);
                *self.obj_index.entry(name).or_insert_with(|| {
                    a.obj_names.push(name);
                    let id = self.ids.get(&(o.kind.code(), o.key)).copied();
                    a.graph.objects.push(object_info(o, id));
                    if o.kind.is(ObjKind::Stream) {
                        a.stream_by_key.insert(o.key, next);
                    }
                    a.obj_kinds.push((o.kind, o.chan));
                    a.obj_channel.push(o.channel);
                    next
                })
            })
            .collect()
    }

    /// Adds one thread: its leaves, cuts, waits and samples, renumbered trace-wide.
    pub(super) fn add_thread(&mut self, dir: &TraceDir, t: Timed) {
        let Timed {
            process,
            file,
            mut out,
            leaves,
        } = t;
        let p = &dir.processes[process];
        let f = &p.threads[file];
        let objs = self.objects(process, &out.objs);
        let n = Renumber {
            base: self.a.graph.leaves.len() as u32,
            objs: &objs,
        };
        let types = self.table.thread_types(p, f, &out.types);
        let thread = ThreadId::at(self.a.graph.threads.len());
        let g = &mut self.a.graph;
        g.threads.push(ThreadInfo {
            process: ProcessId::at(process),
            pid: p.pid,
            tid: f.header.tid,
            name: f.thread_name(),
            first_leaf: LeafId::new(n.base),
            leaves: leaves.len() as u32,
        });
        if self.any_cpu {
            out.cpu.resize(leaves.len(), None);
            g.leaf_cpu_ns.append(&mut out.cpu);
        }
        g.leaf_files.extend(out.files.iter().map(|lf| LeafFile {
            leaf: n.leaf_id(lf.leaf.get()),
            ..*lf
        }));
        let big = leaves.capacity() >= RELEASE_LEAVES;
        move_into(&mut g.leaves, leaves, |l| {
            let ty = LeafTypeId::new(types[l.ty as usize]);
            let obj = l.end_obj.map(|o| ObjId::new(n.obj(o)));
            l.assemble(thread, ty, obj)
        });
        // The largest array goes back before the others are copied.
        if big {
            scalpel_model::memory::release_freed_memory();
        }
        self.add_cuts(&mut out, &n, (process, file));
        self.add_waits(p, f, &out, &n, thread);
        // The thread's arrays are copied: give them back now rather than hold every thread's
        // beside the graph's (see `scalpel_model::memory`).
        drop(out);
        if big {
            scalpel_model::memory::release_freed_memory();
        }
    }

    /// The thread's cuts, lock data, readiness and queue sections, renumbered.
    fn add_cuts(&mut self, out: &mut ThreadOut, n: &Renumber<'_>, (pi, fi): (usize, usize)) {
        let a = &mut self.a;
        move_into(&mut a.bounds, std::mem::take(&mut out.bounds), |b| Bound {
            obj: n.obj(b.obj),
            leaf: n.leaf(b.leaf),
            ..b
        });
        let releases = std::mem::take(&mut out.releases).into_locks();
        a.releases
            .extend(releases.map(|(obj, r)| (n.obj(obj), n.base, r)));
        a.acquires.extend(out.acquires.iter().map(|k| LockAcquire {
            obj: n.obj(k.obj),
            leaf: n.leaf(k.leaf),
            ..*k
        }));
        a.lock_aggs
            .extend(out.lock_aggs.iter().map(|&(o, g)| (n.obj(o), g)));
        a.ready.extend(out.ready.drain(..).map(|w| ReadyWait {
            leaf: n.leaf(w.leaf),
            ..w
        }));
        a.closes.append(&mut out.closes);
        // Renumbered in place: a section's signal list moves, it is not copied.
        move_into(
            &mut a.sections,
            std::mem::take(&mut out.sections),
            |mut s| {
                for (c, l, _) in &mut s.signals {
                    (*c, *l) = (n.obj(*c), n.leaf(*l));
                }
                Section {
                    obj: n.obj(s.obj),
                    leaf: n.leaf(s.leaf),
                    waited: s.waited.map(|o| n.obj(o)),
                    ..s
                }
            },
        );
        a.signal_holds
            .extend(out.signal_holds.iter().map(|&(c, m)| {
                let m = if m == crate::queues::ANY_MUTEX {
                    m
                } else {
                    n.obj(m)
                };
                (n.obj(c), m)
            }));
        a.latch.extend(out.latch.iter().map(|c| {
            let call = LatchCall {
                leaf: n.leaf(c.leaf),
                obj: n.obj(c.obj),
                ..*c
            };
            ((pi, fi, c.event), call)
        }));
        a.ctls.extend(out.ctls.iter().map(|c| Ctl {
            obj: n.obj(c.obj),
            ..*c
        }));
        a.weak.weak.append(&mut out.weak.weak);
        a.weak.head.append(&mut out.weak.head);
        a.weak.passed.append(&mut out.weak.passed);
    }

    /// The thread's waits inside leaves and its CPU samples, with their call sites.
    fn add_waits(
        &mut self,
        p: &ProcessTrace,
        f: &FileTrace,
        out: &ThreadOut,
        n: &Renumber<'_>,
        thread: ThreadId,
    ) {
        let g = &mut self.a.graph;
        let sites = self
            .table
            .thread_sites(p, f, out.inner.iter().map(|w| w.stack));
        g.inner_waits
            .extend(out.inner.iter().zip(sites).map(|(w, site)| InnerWait {
                leaf: n.leaf_id(w.leaf),
                op: w.op,
                obj: (w.obj != NO_OBJ).then(|| ObjId::new(n.obj(w.obj))),
                at_ns: w.at,
                ns: w.dur,
                site: SiteId::new(site),
            }));
        let stacks = f
            .samples
            .iter()
            .map(|s| u32::try_from(s.stack).unwrap_or(0));
        let sites = self.table.thread_sites(p, f, stacks);
        let first = g.samples.len();
        g.samples
            .extend(f.samples.iter().zip(sites).map(|(s, site)| CpuSample {
                thread,
                at_ns: f.clock.ns(s.ticks),
                weight_ns: s.weight_ns(),
                site: SiteId::new(site),
                in_agent: s.in_agent,
            }));
        g.samples[first..].sort_by_key(|s| s.at_ns);
        for s in &f.samples {
            if s.period_ns > 0 && (g.sample_period_ns == 0 || s.period_ns < g.sample_period_ns) {
                g.sample_period_ns = s.period_ns;
            }
        }
    }

    /// The graph with its leaf types, their counts, and the symbolization warnings.
    pub(super) fn finish(mut self) -> Assembled {
        let g = &mut self.a.graph;
        g.types = std::mem::take(&mut self.table.types);
        g.sites = std::mem::take(&mut self.table.sites);
        for l in &g.leaves {
            g.types[l.ty.index()].count += 1;
        }
        self.a.warnings = self.table.warnings().to_vec();
        self.a
    }
}

/// A thread's numbering into the trace's: its leaves from `base`, its objects by `objs`.
struct Renumber<'o> {
    base: u32,
    objs: &'o [u32],
}

impl Renumber<'_> {
    /// The trace's index of the thread's leaf `l`.
    fn leaf(&self, l: u32) -> u32 {
        l + self.base
    }

    fn leaf_id(&self, l: u32) -> LeafId {
        LeafId::new(self.leaf(l))
    }

    /// The trace's index of the thread's object `o` ([`NO_OBJ`] stays).
    fn obj(&self, o: u32) -> u32 {
        if o == NO_OBJ {
            NO_OBJ
        } else {
            self.objs[o as usize]
        }
    }
}

fn process_info(p: &ProcessTrace) -> ProcessInfo {
    ProcessInfo {
        pid: p.pid,
        incarnation: p.incarnation,
        exe: p.exe().map(|e| e.display().to_string()),
        cmdline: p.cmdline().map(<[String]>::to_vec).unwrap_or_default(),
        title: p.title(),
        host: p.host,
        unix_offset_ns: p
            .files()
            .map(|f| &f.header)
            .filter(|h| h.unix_offset_ns().is_some())
            .min_by_key(|h| h.mono0)
            .and_then(|h| i64::try_from(h.unix_offset_ns()?).ok()),
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
