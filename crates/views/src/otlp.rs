//! Task instances as OpenTelemetry traces (`scalpel export --format otlp`): OTLP/JSON, one
//! `ExportTraceServiceRequest` a line, the file format the OpenTelemetry Collector's
//! `otlpjsonfile` receiver reads and its file exporter writes; Jaeger, Tempo and Grafana take it
//! from there.
//!
//! - Each top-level occurrence of a task type (a group or a loop) is one trace and one line. Its
//!   root span is the occurrence; each nested occurrence is a span under the one it is part of;
//!   each leaf is a span under the occurrence it is directly part of. Leaves in no task are left
//!   out. A session (what one connection did) is no trace: each task in it is one, as a request
//!   is in a tracer's eyes, with the session named in `scalpel.session`; the leaves a session
//!   holds outside its tasks (an accept, a close) are left out.
//! - Spans are grouped by process (a `ResourceSpans` each: `service.name`, `process.pid`,
//!   `process.command_line`, and `host.name` for traces of several machines).
//! - A causal edge between two threads is a link on the receiving leaf's span to the sending
//!   leaf's, in its own trace or another's, when that leaf was exported.
//! - An occurrence's attributes are its critical path's composition (`scalpel.path.running_ns`,
//!   `scalpel.path.<kind>_ns`) and its bytes; a leaf's are its thread and its bytes, and its
//!   events the calls inside it that took time and the call that ended it.
//!
//! Ids are derived from the occurrence and leaf numbers, so the same model gives the same bytes.
//! Times are Unix nanoseconds, by the reference machine's CLOCK_REALTIME − CLOCK_MONOTONIC when
//! its first process started; a trace without it gives CLOCK_MONOTONIC times.
//!
//! Non-goals: OTLP over gRPC or HTTP (a Collector reads the file and sends it on), metrics and
//! logs.

use std::collections::BTreeMap;
use std::io::{self, Write};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{span, ResourceSpans, ScopeSpans, Span};
use scalpel_analysis::rollup::{BlockKind, TaskSpan};
use scalpel_model::graph::{Graph, LeafId, ProcessId};
use scalpel_model::task::{outermost_outside_session, Model, OccRef, TaskKind, TaskTypeId};

/// What an export wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OtlpCounts {
    /// Traces (lines).
    pub traces: u64,
    /// Spans of occurrences.
    pub task_spans: u64,
    /// Spans of leaves.
    pub leaf_spans: u64,
    /// Links.
    pub links: u64,
}

/// splitmix64: spreads a counter over 64 bits, so ids look like the random ones tools expect.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)).max(1)
}

fn trace_id(root: u32) -> Vec<u8> {
    let r = u64::from(root);
    [
        mix(r ^ 0x7472_6163_6500_0000),
        mix(r ^ 0x7472_6163_6501_0000),
    ]
    .iter()
    .flat_map(|x| x.to_be_bytes())
    .collect()
}

fn occ_span_id(occ: u32) -> Vec<u8> {
    mix(u64::from(occ) ^ 0x6f63_6300_0000_0000)
        .to_be_bytes()
        .to_vec()
}

fn leaf_span_id(leaf: LeafId) -> Vec<u8> {
    mix(leaf.index() as u64 ^ 0x6c65_6166_0000_0000)
        .to_be_bytes()
        .to_vec()
}

fn kv(key: &str, value: any_value::Value) -> KeyValue {
    KeyValue {
        key: key.to_owned(),
        value: Some(AnyValue { value: Some(value) }),
        ..KeyValue::default()
    }
}

fn int(key: &str, v: u64) -> KeyValue {
    kv(
        key,
        any_value::Value::IntValue(i64::try_from(v).unwrap_or(i64::MAX)),
    )
}

fn text(key: &str, v: &str) -> KeyValue {
    kv(key, any_value::Value::StringValue(v.to_owned()))
}

/// The model's occurrences, numbered in one sequence, with the number of the one whose trace
/// each belongs to: the top-level one above it, or the one just below a session.
struct Occurrences {
    bases: Vec<usize>,
    root: Vec<u32>,
}

impl Occurrences {
    fn new(model: &Model) -> Self {
        let (bases, total) = model.occurrence_bases();
        let mut occ = Occurrences {
            bases,
            root: (0..total as u32).collect(),
        };
        for (t, ty) in model.types.iter().enumerate() {
            for (i, o) in ty.occurrences.iter().enumerate() {
                let me = OccRef {
                    ty: TaskTypeId::at(t),
                    index: i as u32,
                };
                let top = outermost_outside_session(&model.types, me, o.parent);
                let n = occ.bases[t] + i;
                occ.root[n] = occ.number(top).unwrap_or(n as u32);
            }
        }
        occ
    }

    fn number(&self, r: OccRef) -> Option<u32> {
        self.bases
            .get(r.ty.index())
            .map(|b| (b + r.index as usize) as u32)
    }
}

/// The process a leaf ran in.
fn process_of(g: &Graph, leaf: LeafId) -> ProcessId {
    g.threads[g.leaves[leaf.index()].thread.index()].process
}

/// What turns the graph's times into Unix time.
fn unix_offset(g: &Graph) -> i64 {
    g.processes
        .iter()
        .filter(|p| p.host.is_first())
        .find_map(|p| p.unix_offset_ns)
        .unwrap_or(0)
}

/// The resource of process `p`: named by its title, its executable or its command, or by its
/// pid where the graph holds no more of it.
fn resource(g: &Graph, p: ProcessId) -> Resource {
    let pid = g
        .threads
        .iter()
        .find(|t| t.process == p)
        .map_or(0, |t| t.pid);
    let Some(info) = g.processes.get(p.index()) else {
        let attributes = vec![
            text("service.name", &format!("pid {pid}")),
            int("process.pid", u64::from(pid)),
        ];
        return Resource {
            attributes,
            ..Resource::default()
        };
    };
    let service = info
        .title
        .clone()
        .or_else(|| {
            let exe = info.exe.as_deref()?;
            exe.rsplit('/').next().map(str::to_owned)
        })
        .or_else(|| info.cmdline.first().cloned())
        .unwrap_or_else(|| format!("pid {}", info.pid));
    let mut attributes = vec![
        text("service.name", &service),
        int("process.pid", u64::from(info.pid)),
    ];
    if !info.cmdline.is_empty() {
        attributes.push(text("process.command_line", &info.cmdline.join(" ")));
    }
    if let Some(h) = g.hosts.get(info.host.index()) {
        attributes.push(text("host.name", &h.host));
    }
    Resource {
        attributes,
        ..Resource::default()
    }
}

/// What the spans of every trace are made from.
struct Exporter<'a> {
    g: &'a Graph,
    model: &'a Model,
    occ: Occurrences,
    /// CLOCK_REALTIME − CLOCK_MONOTONIC (see [`unix_offset`]).
    offset: i64,
    /// Each occurrence's span in time, by its number.
    span_of: BTreeMap<u32, &'a TaskSpan>,
    /// Each leaf's trace (the number of the top-level occurrence it is part of) and direct
    /// parent occurrence; `None` for a leaf in no task.
    leaf_trace: Vec<Option<(u32, u32)>>,
    /// The cross-thread edges into each exported leaf, by edge index.
    incoming: BTreeMap<u32, Vec<usize>>,
}

impl<'a> Exporter<'a> {
    fn new(g: &'a Graph, model: &'a Model, spans: &'a [TaskSpan]) -> Self {
        let occ = Occurrences::new(model);
        let span_of = spans
            .iter()
            .filter_map(|s| {
                let r = OccRef {
                    ty: s.ty,
                    index: s.occurrence,
                };
                occ.number(r).map(|n| (n, s))
            })
            .collect();
        let leaf_trace: Vec<Option<(u32, u32)>> = model
            .leaf_parent
            .iter()
            .take(g.leaves.len())
            .map(|p| {
                let n = occ.number((*p)?)?;
                Some((*occ.root.get(n as usize)?, n))
            })
            .collect();
        let mut incoming: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
        let exported = |l: LeafId| leaf_trace.get(l.index()).is_some_and(Option::is_some);
        for (k, e) in g.edges.iter().enumerate() {
            let (Some(f), Some(t)) = (g.leaf_of(e.from), g.leaf_of(e.to)) else {
                continue;
            };
            let across = g.leaves[f.index()].thread != g.leaves[t.index()].thread;
            if !e.kind.in_thread() && across && exported(f) && exported(t) {
                incoming.entry(t.index() as u32).or_default().push(k);
            }
        }
        Exporter {
            g,
            model,
            occ,
            offset: unix_offset(g),
            span_of,
            leaf_trace,
            incoming,
        }
    }

    fn unix(&self, t: u64) -> u64 {
        t.saturating_add_signed(self.offset)
    }

    /// The type of occurrence number `n`.
    fn type_of(&self, n: u32) -> usize {
        self.occ.bases.partition_point(|&b| b as u32 <= n) - 1
    }

    /// Each trace's occurrences and leaves, by the number of its top-level occurrence.
    fn traces(&self) -> BTreeMap<u32, (Vec<u32>, Vec<LeafId>)> {
        let mut members: BTreeMap<u32, (Vec<u32>, Vec<LeafId>)> = BTreeMap::new();
        for (n, &r) in self.occ.root.iter().enumerate() {
            members.entry(r).or_default().0.push(n as u32);
        }
        for (l, t) in self.leaf_trace.iter().enumerate() {
            if let Some((r, _)) = t {
                members.entry(*r).or_default().1.push(LeafId::at(l));
            }
        }
        members.retain(|&root, (_, leaves)| {
            let kind = self.model.types[self.type_of(root)].kind;
            !matches!(kind, TaskKind::Leaf | TaskKind::Session)
                && !leaves.is_empty()
                && self.span_of.contains_key(&root)
        });
        members
    }

    /// The span of occurrence number `n`, in trace `tid`, with its process.
    fn occurrence_span(&self, n: u32, tid: &[u8]) -> Option<(ProcessId, Span)> {
        let s = self.span_of.get(&n)?;
        let t = self.type_of(n);
        let o = &self.model.types[t].occurrences[n as usize - self.occ.bases[t]];
        let session = o
            .parent
            .filter(|p| self.model.types[p.ty.index()].kind == TaskKind::Session);
        let parent = o
            .parent
            .filter(|_| session.is_none())
            .and_then(|p| self.occ.number(p));
        let mut attributes = vec![
            int("scalpel.task.occurrence", u64::from(s.occurrence)),
            int("scalpel.task.leaves", u64::from(s.leaves)),
            int("scalpel.path.running_ns", s.running_ns),
        ];
        if let Some(p) = session {
            attributes.push(text(
                "scalpel.session",
                &self.model.types[p.ty.index()].name,
            ));
            attributes.push(int("scalpel.session.occurrence", u64::from(p.index)));
        }
        for k in BlockKind::ALL {
            let ns = s.blocked[k.index()];
            if ns > 0 {
                attributes.push(int(&format!("scalpel.path.{}_ns", k.name()), ns));
            }
        }
        attributes.push(int("scalpel.bytes_in", s.bytes_in));
        attributes.push(int("scalpel.bytes_out", s.bytes_out));
        let span = Span {
            trace_id: tid.to_vec(),
            span_id: occ_span_id(n),
            parent_span_id: parent.map(occ_span_id).unwrap_or_default(),
            name: self.model.types[t].name.clone(),
            kind: span::SpanKind::Internal as i32,
            start_time_unix_nano: self.unix(s.start_ns),
            end_time_unix_nano: self.unix(s.end_ns.max(s.start_ns)),
            attributes,
            ..Span::default()
        };
        Some((process_of(self.g, s.first_leaf), span))
    }

    /// The calls that took time inside leaf `l` and the call that ended it, as span events
    /// (`scalpel.wait_ns`, `scalpel.kind` as in `top`).
    fn events(&self, l: LeafId) -> Vec<span::Event> {
        let g = self.g;
        let waits = &g.inner_waits;
        let from = waits.partition_point(|w| w.leaf < l);
        let to = from + waits[from..].partition_point(|w| w.leaf == l);
        let event = |name: String, at: u64, ns: u64, kind: BlockKind| span::Event {
            time_unix_nano: self.unix(at),
            name,
            attributes: vec![
                int("scalpel.wait_ns", ns),
                text("scalpel.kind", kind.name()),
            ],
            ..span::Event::default()
        };
        let mut out: Vec<span::Event> = waits[from..to]
            .iter()
            .map(|w| event(w.op.name(), w.at_ns, w.ns, BlockKind::inside(w.op.op())))
            .collect();
        let leaf = &g.leaves[l.index()];
        if let Some(op) = leaf.end_op {
            out.push(event(
                op.name(),
                leaf.end_ns,
                leaf.block_ns,
                BlockKind::of(op.op()),
            ));
        }
        out
    }

    /// Links to the spans of the leaves whose edges lead into `l`.
    fn links(&self, l: LeafId) -> Vec<span::Link> {
        let edges = self.incoming.get(&(l.index() as u32));
        edges
            .into_iter()
            .flatten()
            .filter_map(|&k| {
                let e = &self.g.edges[k];
                let from = self.g.leaf_of(e.from)?;
                let (r, _) = self.leaf_trace[from.index()]?;
                Some(span::Link {
                    trace_id: trace_id(r),
                    span_id: leaf_span_id(from),
                    attributes: vec![text("scalpel.edge", e.kind.name())],
                    ..span::Link::default()
                })
            })
            .collect()
    }

    /// The span of leaf `l`, in trace `tid`, with its process.
    fn leaf_span(&self, l: LeafId, tid: &[u8]) -> (ProcessId, Span) {
        let g = self.g;
        let leaf = &g.leaves[l.index()];
        let thread = &g.threads[leaf.thread.index()];
        let parent = self.leaf_trace[l.index()].map(|(_, p)| occ_span_id(p));
        let mut attributes = vec![
            int("thread.id", u64::from(thread.tid)),
            text("thread.name", &thread.name),
            int("scalpel.leaf", l.index() as u64),
        ];
        if leaf.bytes_in > 0 {
            attributes.push(int("scalpel.bytes_in", leaf.bytes_in));
        }
        if leaf.bytes_out > 0 {
            attributes.push(int("scalpel.bytes_out", leaf.bytes_out));
        }
        let name = g
            .types
            .get(leaf.ty.index())
            .map_or("leaf", |t| t.name.as_str());
        let span = Span {
            trace_id: tid.to_vec(),
            span_id: leaf_span_id(l),
            parent_span_id: parent.unwrap_or_default(),
            name: name.to_owned(),
            kind: span::SpanKind::Internal as i32,
            start_time_unix_nano: self.unix(leaf.start_ns),
            end_time_unix_nano: self.unix((leaf.end_ns + leaf.block_ns).max(leaf.start_ns)),
            attributes,
            links: self.links(l),
            events: self.events(l),
            ..Span::default()
        };
        (thread.process, span)
    }

    /// The request of one trace: its spans grouped by process.
    fn request(&self, by_process: BTreeMap<ProcessId, Vec<Span>>) -> ExportTraceServiceRequest {
        let scope = InstrumentationScope {
            name: "scalpel".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            ..InstrumentationScope::default()
        };
        ExportTraceServiceRequest {
            resource_spans: by_process
                .into_iter()
                .map(|(p, spans)| ResourceSpans {
                    resource: Some(resource(self.g, p)),
                    scope_spans: vec![ScopeSpans {
                        scope: Some(scope.clone()),
                        spans,
                        ..ScopeSpans::default()
                    }],
                    ..ResourceSpans::default()
                })
                .collect(),
        }
    }
}

/// Writes every top-level task instance of `model` as a trace, one line each (`spans`: the
/// model's [`scalpel_analysis::rollup::task_spans`]).
pub fn write_otlp(
    o: &mut impl Write,
    g: &Graph,
    model: &Model,
    spans: &[TaskSpan],
) -> io::Result<OtlpCounts> {
    let x = Exporter::new(g, model, spans);
    let mut c = OtlpCounts::default();
    for (root, (occs, leaves)) in x.traces() {
        let tid = trace_id(root);
        let mut by_process: BTreeMap<ProcessId, Vec<Span>> = BTreeMap::new();
        for (p, span) in occs.iter().filter_map(|&n| x.occurrence_span(n, &tid)) {
            by_process.entry(p).or_default().push(span);
            c.task_spans += 1;
        }
        for (p, span) in leaves.iter().map(|&l| x.leaf_span(l, &tid)) {
            c.links += span.links.len() as u64;
            by_process.entry(p).or_default().push(span);
            c.leaf_spans += 1;
        }
        serde_json::to_writer(&mut *o, &x.request(by_process)).map_err(io::Error::from)?;
        o.write_all(b"\n")?;
        c.traces += 1;
    }
    Ok(c)
}
