//! Machines' graphs built apart, each from its own trace, and the messages between them found
//! by a join of their tables (`docs/guide/tables.md`'s query on `peer_transfers`, run by
//! `scalpel sql` on the machines' datasets together): they must be the edges between machines
//! that one graph of all the traces has.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use scalpel_model::graph::{EdgeKind, Graph};
use scalpel_model::store::read_graph;
use serde_json::Value;

use crate::scalpel;
use crate::sqltop::guide_queries;

/// The guide's heading over the queries that take several machines' datasets.
pub const FLEET_HEADING: &str = "Several machines, each written where its trace is";

/// A leaf as both graphs can name it: its machine, process, thread and its events in the
/// thread's file (leaf ids differ from one graph to the other).
pub type LeafKey = (String, u32, u32, u32, u32);

/// A message: `connect` or `stream`, from one machine's leaf to another's.
pub type Message = (String, LeafKey, LeafKey);

/// The machines' datasets, and their graphs to name leaves by.
pub struct Apart {
    /// Each machine's dataset, named as the machine.
    pub datasets: Vec<PathBuf>,
    graphs: Vec<(String, Graph)>,
}

fn ok(o: &Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout.clone()).unwrap()
}

/// For each `(machine, trace)`: `scalpel infer --stage graph` of the trace alone, then its
/// tables as a dataset `root/apart/MACHINE`.
pub fn graphs_apart(root: &Path, traces: &[(&str, PathBuf)]) -> Apart {
    let base = root.join("apart");
    std::fs::create_dir_all(&base).unwrap();
    let mut apart = Apart {
        datasets: Vec::new(),
        graphs: Vec::new(),
    };
    for (machine, trace) in traces {
        let graph_dir = base.join(format!("{machine}-graph"));
        ok(&Command::new(scalpel())
            .arg("infer")
            .arg(trace)
            .args(["--stage", "graph", "-o"])
            .arg(&graph_dir)
            .output()
            .unwrap());
        let data = base.join(machine);
        ok(&Command::new(scalpel())
            .arg("export")
            .arg(&graph_dir)
            .args(["--format", "parquet", "-o"])
            .arg(&data)
            .output()
            .unwrap());
        let g = read_graph(&graph_dir.join("graph.json")).unwrap();
        apart.graphs.push(((*machine).to_owned(), g));
        apart.datasets.push(data);
    }
    apart
}

/// The guide's query for the messages between machines.
pub fn messages_query() -> String {
    fleet_query("the messages query", |q| !q.contains("offset_ns"))
}

/// The guide's query for what the messages say of two machines' clocks, if neither drifts.
pub fn clocks_query() -> String {
    fleet_query("the clocks query", |q| {
        q.contains("offset_ns") && !q.contains("clock_fit")
    })
}

/// The guide's query for the fit of two machines' clocks with a drift (`clock_fit`).
pub fn drift_query() -> String {
    fleet_query("the drift query", |q| q.contains("clock_fit("))
}

/// The guide's query on `peer_transfers` under the fleet's heading that `pick` picks.
fn fleet_query(what: &str, pick: impl Fn(&str) -> bool) -> String {
    let queries = guide_queries();
    let found = queries
        .iter()
        .find(|(h, q)| h == FLEET_HEADING && q.contains("peer_transfers") && pick(q));
    found
        .unwrap_or_else(|| panic!("the guide's {what}"))
        .1
        .clone()
}

/// A row of the guide's clocks query: the offsets that put `other`'s times on `host`'s clock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PairClock {
    pub host: String,
    pub other: String,
    pub min_offset_ns: i64,
    pub max_offset_ns: i64,
    pub offset_ns: i64,
    pub bound_ns: i64,
    pub messages: u64,
}

/// A row of the guide's drift query: `clock_fit` of the messages between `host` and `other`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PairDrift {
    pub host: String,
    pub other: String,
    pub offset_ns: i64,
    pub drift_ppb: i64,
    pub bound_ns: i64,
    pub drift_bound_ppb: i64,
    pub drift_known: bool,
    pub crossed: bool,
    pub messages: u64,
    pub start_ns: i64,
}

fn key_of(g: &Graph, host: String, leaf: u32) -> LeafKey {
    let l = &g.leaves[leaf as usize];
    let t = &g.threads[l.thread.index()];
    (host, t.pid, t.tid, l.start_event, l.end_event)
}

/// `scalpel sql` of `query` on `datasets` at `engine`, as JSON rows.
fn sql_rows(datasets: &[PathBuf], engine: &str, query: &str) -> Vec<Value> {
    let o = Command::new(scalpel())
        .arg("sql")
        .args(datasets)
        .args(["--engine", engine, "--format", "jsonl", query])
        .output()
        .unwrap();
    let rows = ok(&o);
    rows.lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// Column `k` of a JSON row, which must be there with its type.
fn int(v: &Value, k: &str) -> i64 {
    let n = v[k].as_i64();
    n.unwrap_or_else(|| panic!("{k} in {v}"))
}

fn flag(v: &Value, k: &str) -> bool {
    let b = v[k].as_bool();
    b.unwrap_or_else(|| panic!("{k} in {v}"))
}

fn name(v: &Value, k: &str) -> String {
    let s = v[k].as_str();
    s.unwrap_or_else(|| panic!("{k} in {v}")).to_owned()
}

impl Apart {
    /// The guide's clocks query on the datasets at `engine`.
    pub fn clocks(&self, engine: &str) -> Vec<PairClock> {
        let rows = sql_rows(&self.datasets, engine, &clocks_query());
        rows.iter()
            .map(|v| PairClock {
                host: name(v, "host"),
                other: name(v, "other"),
                min_offset_ns: int(v, "min_offset_ns"),
                max_offset_ns: int(v, "max_offset_ns"),
                offset_ns: int(v, "offset_ns"),
                bound_ns: int(v, "bound_ns"),
                messages: int(v, "messages") as u64,
            })
            .collect()
    }

    /// The guide's drift query on the datasets at `engine`.
    pub fn drifts(&self, engine: &str) -> Vec<PairDrift> {
        let rows = sql_rows(&self.datasets, engine, &drift_query());
        rows.iter()
            .map(|v| PairDrift {
                host: name(v, "host"),
                other: name(v, "other"),
                offset_ns: int(v, "offset_ns"),
                drift_ppb: int(v, "drift_ppb"),
                bound_ns: int(v, "bound_ns"),
                drift_bound_ppb: int(v, "drift_bound_ppb"),
                drift_known: flag(v, "drift_known"),
                crossed: flag(v, "crossed"),
                messages: int(v, "messages") as u64,
                start_ns: int(v, "start_ns"),
            })
            .collect()
    }

    /// The query's rows from `scalpel sql` on the datasets at `engine` (`embedded` or a
    /// cluster's `ballista://…`), each as the leaves it joins.
    pub fn joined(&self, engine: &str) -> Vec<Message> {
        sql_rows(&self.datasets, engine, &messages_query())
            .into_iter()
            .map(|v| {
                let end = |host: &str, leaf: &str| {
                    let h = v[host].as_str().unwrap().to_owned();
                    let g = &self.graphs.iter().find(|(m, _)| *m == h).unwrap().1;
                    key_of(g, h, v[leaf].as_u64().unwrap() as u32)
                };
                let kind = v["kind"].as_str().unwrap().to_owned();
                (
                    kind,
                    end("from_host", "from_leaf"),
                    end("to_host", "to_leaf"),
                )
            })
            .collect()
    }
}

/// The stream and connect edges between leaves of two machines in `g` (a graph of several).
pub fn crossing(g: &Graph) -> BTreeSet<Message> {
    let leaves = g.leaves.len() as u32;
    let host = |leaf: u32| {
        let t = g.leaves[leaf as usize].thread;
        let h = g.processes[g.threads[t.index()].process.index()].host;
        g.hosts[h.index()].host.clone()
    };
    g.edges
        .iter()
        .filter(|e| e.from.get() < leaves && e.to.get() < leaves)
        .filter_map(|e| {
            let kind = match e.kind {
                EdgeKind::Stream => "stream",
                EdgeKind::Connect => "connect",
                _ => return None,
            };
            let (f, t) = (e.from.get(), e.to.get());
            let (hf, ht) = (host(f), host(t));
            (hf != ht).then(|| (kind.to_owned(), key_of(g, hf, f), key_of(g, ht, t)))
        })
        .collect()
}

/// Fails unless the messages joined from the machines' graphs built apart, at each of
/// `engines`, are the edges between machines of `merged` (the graph of all their traces), and
/// there are some. Returns the machines' datasets.
pub fn same_messages(
    root: &Path,
    machines: &[(&str, PathBuf)],
    merged: &Graph,
    engines: &[&str],
) -> Apart {
    let apart = graphs_apart(root, machines);
    let want = crossing(merged);
    let first = apart.joined(engines[0]);
    for e in &engines[1..] {
        assert_eq!(apart.joined(e), first, "the messages at {e} differ");
    }
    let got: BTreeSet<Message> = first.iter().cloned().collect();
    assert_eq!(got.len(), first.len(), "a message twice");
    let missing: Vec<&Message> = want.difference(&got).collect();
    let extra: Vec<&Message> = got.difference(&want).collect();
    eprintln!(
        "messages between machines: {} edges in the graph of all, {} joined from the graphs \
         built apart; {} missing, {} extra",
        want.len(),
        got.len(),
        missing.len(),
        extra.len()
    );
    assert!(!want.is_empty());
    assert!(
        missing.is_empty() && extra.is_empty(),
        "missing: {:?}\nextra: {:?}",
        &missing[..missing.len().min(5)],
        &extra[..extra.len().min(5)]
    );
    apart
}

/// Fails unless the guide's clocks query on the machines' datasets, at each of `engines`, gives
/// for every pair of machines that exchanged messages an interval of offsets that holds the
/// true one (`ahead`: how far each machine's clock reads ahead, in ns), and a middle within
/// both bounds of what `scalpel infer` of the traces together fitted (`merged`'s machines).
pub fn same_clocks(apart: &Apart, merged: &Graph, engines: &[&str], ahead: &[(&str, i64)]) {
    let rows = apart.clocks(engines[0]);
    for e in &engines[1..] {
        assert_eq!(apart.clocks(e), rows, "the clocks at {e} differ");
    }
    assert!(!rows.is_empty(), "no pair of machines exchanged messages");
    let of = |m: &str| {
        let found = ahead.iter().find(|(n, _)| *n == m);
        found.unwrap_or_else(|| panic!("no truth for {m}")).1
    };
    // What `infer` put on the first machine's clock: add `offset_ns` to a machine's times.
    let fitted = |m: &str| {
        let h = merged.hosts.iter().find(|h| h.host == m);
        let h = h.unwrap_or_else(|| panic!("{m} is none of the merged graph's machines"));
        (h.clock.offset_ns, h.clock.bound_ns.unwrap_or(0) as i64)
    };
    for r in &rows {
        eprintln!("clocks: {r:?}");
        assert!(
            r.messages > 0 && r.min_offset_ns <= r.max_offset_ns,
            "{r:?}"
        );
        let truth = of(&r.host) - of(&r.other);
        assert!(
            (r.min_offset_ns..=r.max_offset_ns).contains(&truth),
            "{r:?}: the true offset is {truth} ns"
        );
        let ((host_off, host_bound), (other_off, other_bound)) =
            (fitted(&r.host), fitted(&r.other));
        let infer = other_off - host_off;
        let room = r.bound_ns + host_bound + other_bound;
        assert!(
            (infer - r.offset_ns).abs() <= room,
            "{r:?}: infer put {} on {}'s clock {infer} ns off (bounds {host_bound} and \
             {other_bound} ns)",
            r.other,
            r.host
        );
    }
}

/// Fails unless the guide's drift query (`clock_fit`) on the machines' datasets, at each of
/// `engines`, fits every pair the clocks query bounds, with the same messages; the true offset
/// (`ahead`, as for [`same_clocks`]; the machines share one physical clock, so no drift) inside
/// its bound and no drift outside its drift bound; and the offset `scalpel infer` of the traces
/// together put between the two machines (`merged`) within both fits' bounds, at the same time.
pub fn same_drifts(apart: &Apart, merged: &Graph, engines: &[&str], ahead: &[(&str, i64)]) {
    let rows = apart.drifts(engines[0]);
    for e in &engines[1..] {
        assert_eq!(apart.drifts(e), rows, "the drift fits at {e} differ");
    }
    let clocks = apart.clocks(engines[0]);
    let pairs = |v: Vec<(String, String, u64)>| v.into_iter().collect::<BTreeSet<_>>();
    assert_eq!(
        pairs(
            rows.iter()
                .map(|r| (r.host.clone(), r.other.clone(), r.messages))
                .collect()
        ),
        pairs(
            clocks
                .iter()
                .map(|r| (r.host.clone(), r.other.clone(), r.messages))
                .collect()
        ),
        "the pairs and messages of the drift query are the clocks query's"
    );
    let of = |m: &str| {
        let found = ahead.iter().find(|(n, _)| *n == m);
        found.unwrap_or_else(|| panic!("no truth for {m}")).1
    };
    let host = |m: &str| {
        let h = merged.hosts.iter().find(|h| h.host == m);
        h.unwrap_or_else(|| panic!("{m} is none of the merged graph's machines"))
    };
    for r in &rows {
        eprintln!("drift: {r:?}");
        assert!(!r.crossed, "{r:?}");
        let truth = of(&r.host) - of(&r.other);
        assert!(
            (r.offset_ns - truth).abs() <= r.bound_ns,
            "{r:?}: the true offset is {truth} ns"
        );
        assert!(
            r.drift_ppb.abs() <= r.drift_bound_ppb,
            "{r:?}: no clock drifts here"
        );
        // `infer`'s clocks, each on the reference's: `other`'s time `t` is `t + offset +
        // drift * (t - start)` there, and so is `host`'s. Both at `other`'s `start_ns`.
        let (h, o) = (host(&r.host), host(&r.other));
        let on_ref = |c: &scalpel_model::host::HostInfo, t: f64| {
            t + c.clock.offset_ns as f64 + c.clock.drift_ppb as f64 * 1e-9 * (t - c.start_ns as f64)
        };
        let t = r.start_ns as f64;
        let on_host = t + (r.offset_ns as f64);
        let infer = on_ref(o, t) - on_ref(h, on_host) + r.offset_ns as f64;
        let bound = |c: &scalpel_model::host::HostInfo| {
            let far = (t - c.start_ns as f64).abs();
            c.clock.bound_ns.unwrap_or(0) as f64
                + c.clock.drift_bound_ppb.unwrap_or(0) as f64 * 1e-9 * far
        };
        let room = r.bound_ns as f64 + bound(h) + bound(o) + 2.0;
        assert!(
            (infer - r.offset_ns as f64).abs() <= room,
            "{r:?}: infer put {} on {}'s clock {infer} ns off at {t} (room {room} ns)",
            r.other,
            r.host
        );
    }
}
