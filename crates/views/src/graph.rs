//! Views of the causal graph: the graph of leaf types as DOT, and the short text summary.

use std::collections::BTreeMap;
use std::io::{self, Write};

use ahash::AHashMap;

use scalpel_model::format::ChanKind;
use scalpel_model::graph::{Channel, EdgeKind, ExternalRole, Graph, NodeId, ObjectInfo};

use super::budget;
use super::graphviz::quote;
use scalpel_graph::Built;

/// How the type graph is drawn. `Default`: every type.
#[derive(Clone, Copy, Debug, Default)]
pub struct DrawOptions {
    /// Draw only leaf types with at least this many leaves (and the edges between them); 0 and 1
    /// draw all. The JSON always holds everything.
    pub min_count: u64,
}

/// What a node of the instance graph is drawn as: its leaf's type, or the external peer it is.
/// Edges are counted by this before any name is made, since a graph has millions of edges and
/// few distinct pairs of these.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Drawn {
    Type(usize),
    External(usize),
}

impl Drawn {
    fn of(g: &Graph, id: NodeId) -> Drawn {
        match id.index().checked_sub(g.leaves.len()) {
            Some(x) => Drawn::External(x),
            None => Drawn::Type(g.leaves[id.index()].ty.index()),
        }
    }

    /// Its node's name in the type graph.
    fn name(self, g: &Graph) -> String {
        let x = match self {
            Drawn::Type(ty) => return format!("t{ty}"),
            Drawn::External(x) => &g.externals[x],
        };
        let what = g
            .objects
            .get(x.obj.index())
            .and_then(ObjectInfo::channel_kind)
            .unwrap_or(ChanKind::Other.into());
        let role = match x.role {
            ExternalRole::Source => "source",
            ExternalRole::Sink => "sink",
        };
        format!("external_{role}_{what}")
    }
}

/// The leaf types drawn: those with at least `min_count` leaves, and of them the
/// [`budget::MAX_NODES`] with the most time in their leaves.
fn drawn_types(g: &Graph, min_count: u64) -> Vec<bool> {
    let mut time = vec![0u64; g.types.len()];
    for l in &g.leaves {
        if let Some(t) = time.get_mut(l.ty.index()) {
            *t += l.end_ns.saturating_sub(l.start_ns).max(1);
        }
    }
    for (t, ty) in time.iter_mut().zip(&g.types) {
        if ty.count == 0 || ty.count < min_count {
            *t = 0;
        }
    }
    let candidates = time.iter().filter(|&&t| t > 0).count();
    let mut drawn = vec![false; g.types.len()];
    for i in budget::heaviest(&time, budget::MAX_NODES.min(candidates)) {
        drawn[i] = time[i] > 0;
    }
    drawn
}

/// The graph of leaf types: one node per type (and per kind of external peer), edges counted,
/// solid within a thread (grey where weak), dashed across threads. At most
/// [`budget::MAX_NODES`] types (the most time first) and [`budget::MAX_EDGES`] edges (the most
/// leaves first) are drawn; a line in the picture says what was left out.
pub fn write_type_dot(w: &mut impl Write, g: &Graph, draw: &DrawOptions) -> io::Result<()> {
    let drawn_type = drawn_types(g, draw.min_count);
    let shown = |id: NodeId| match g.leaves.get(id.index()) {
        Some(l) => drawn_type.get(l.ty.index()).copied().unwrap_or(false),
        None => true,
    };
    let mut counted: AHashMap<(Drawn, Drawn, EdgeKind), u64> = AHashMap::new();
    for e in g.edges.iter().filter(|e| shown(e.from) && shown(e.to)) {
        let key = (Drawn::of(g, e.from), Drawn::of(g, e.to), e.kind);
        *counted.entry(key).or_default() += 1;
    }
    // Several externals share a name: their counts add up.
    let mut edges: BTreeMap<(String, String, EdgeKind), u64> = BTreeMap::new();
    for ((a, b, kind), n) in counted {
        *edges.entry((a.name(g), b.name(g), kind)).or_default() += n;
    }
    w.write_all(b"digraph leaf_types {\n  rankdir=TB;\n  node [shape=box, fontname=\"Helvetica\", fontsize=10];\n  edge [fontname=\"Helvetica\", fontsize=9];\n")?;
    let all_types = g
        .types
        .iter()
        .filter(|t| t.count > 0 && t.count >= draw.min_count)
        .count();
    let n_types = drawn_type.iter().filter(|&&d| d).count();
    let edges: Vec<_> = edges.into_iter().collect();
    let weights: Vec<u64> = edges.iter().map(|(_, n)| *n).collect();
    let keep = budget::heaviest(&weights, budget::MAX_EDGES);
    // The external peers the kept edges reach.
    let mut externals: BTreeMap<&str, ()> = BTreeMap::new();
    for &i in &keep {
        let ((a, b, _), _) = &edges[i];
        for n in [a, b] {
            if n.starts_with("external_") {
                externals.insert(n, ());
            }
        }
    }
    let cuts = [
        budget::cut(
            "leaf types",
            n_types,
            all_types,
            "the most time in their leaves",
        ),
        budget::cut("edges", keep.len(), edges.len(), "the most leaves"),
    ];
    if let Some(line) = budget::note_line(cuts.into_iter().flatten(), "graph.json") {
        writeln!(w, "{line}")?;
    }
    for (i, t) in g.types.iter().enumerate().filter(|(i, _)| drawn_type[*i]) {
        let op = |o: Option<scalpel_model::graph::OpName>| {
            o.map(|o| o.name()).unwrap_or_else(|| "-".into())
        };
        let label = format!(
            "{}\n{} → {}\n×{}",
            t.name,
            op(t.start.op),
            op(t.end.op),
            t.count
        );
        writeln!(w, "  t{i} [label={}];", quote(&label))?;
    }
    for name in externals.keys() {
        let label = name.trim_start_matches("external_").replacen('_', " ", 1);
        writeln!(
            w,
            "  {name} [label={}, shape=ellipse, style=dashed];",
            quote(&format!("external {label}"))
        )?;
    }
    for ((a, b, kind), n) in keep.iter().map(|&i| &edges[i]) {
        let style = match kind {
            EdgeKind::Program => "style=solid".to_string(),
            EdgeKind::ProgramWeak => "style=solid, color=gray60, fontcolor=gray40".to_string(),
            _ => "style=dashed".to_string(),
        };
        let label = if kind.in_thread() {
            format!("{n}")
        } else {
            format!("{} ×{n}", kind.name())
        };
        writeln!(w, "  {a} -> {b} [label={}, {style}];", quote(&label))?;
    }
    w.write_all(b"}\n")
}

/// For traces of several machines: how many, the connections between them (the byte channels
/// with a stream edge from one machine to another) and each clock.
fn write_hosts_summary(w: &mut impl Write, g: &Graph) -> io::Result<()> {
    let host = |n: NodeId| g.leaf_of(n).map(|l| g.host_of(g.leaf(l).thread));
    let mut channels: Vec<u64> = g
        .edges
        .iter()
        .filter(|e| e.kind == EdgeKind::Stream)
        .filter(|e| matches!((host(e.from), host(e.to)), (Some(a), Some(b)) if a != b))
        .filter_map(|e| match &g.objects.get(e.obj?.index())?.channel {
            Some(Channel::Stream { key, .. }) => Some(*key),
            _ => None,
        })
        .collect();
    channels.sort_unstable();
    channels.dedup();
    writeln!(
        w,
        "{} machines, {} between them; clocks on {}'s:",
        g.hosts.len(),
        super::units::count(channels.len() as u64, "connection", "connections"),
        g.hosts[0].host
    )?;
    for h in &g.hosts[1..] {
        let c = &h.clock;
        let bound = c
            .bound_ns
            .map_or_else(|| "no bound".into(), |b| format!("± {b} ns"));
        let drift_bound = c
            .drift_bound_ppb
            .map_or_else(String::new, |b| format!(" ± {b}"));
        writeln!(
            w,
            "  {}: {:+} ns {bound}, drift {} ppb{drift_bound}, {} ({} messages)",
            h.host, c.offset_ns, c.drift_ppb, c.grade, c.pairs
        )?;
    }
    Ok(())
}

/// The short summary: leaves, types, edges by kind, externals, what did not pair up, locks.
pub fn write_graph_summary(w: &mut impl Write, built: &Built) -> io::Result<()> {
    let g = &built.graph;
    writeln!(
        w,
        "{} processes, {} threads, {} events",
        g.processes.len(),
        g.threads.len(),
        built.events
    )?;
    if !g.hosts.is_empty() {
        write_hosts_summary(w, g)?;
    }
    let used = g.types.iter().filter(|t| t.count > 0).count();
    writeln!(w, "{} leaves of {} types", g.leaves.len(), used)?;
    let mut by_kind: BTreeMap<EdgeKind, u64> = BTreeMap::new();
    for e in &g.edges {
        *by_kind.entry(e.kind).or_default() += 1;
    }
    let kinds: Vec<String> = EdgeKind::ALL
        .iter()
        .filter_map(|k| by_kind.get(k).map(|n| format!("{} {n}", k.name())))
        .collect();
    writeln!(w, "{} edges: {}", g.edges.len(), kinds.join(", "))?;
    let sources = g
        .externals
        .iter()
        .filter(|x| x.role == ExternalRole::Source)
        .count();
    let u = &g.unmatched;
    writeln!(w,
        "external nodes: {sources} sources, {} sinks ({} bytes in from outside the trace, {} bytes out to it)",
        g.externals.len() - sources,
        u.external_bytes_in,
        u.external_bytes_out
    )?;
    writeln!(
        w,
        "unmatched: {} cond waits, {} sem waits, {} futex waits, {} joins, {} thread starts",
        u.cond_waits, u.sem_waits, u.futex_waits, u.joins, u.starts
    )?;
    let contended: u64 = g.locks.iter().map(|l| l.contended).sum();
    let wait: u64 = g.locks.iter().map(|l| l.wait_ns).sum();
    writeln!(
        w,
        "locks: {} (no edges), {contended} contended acquisitions, {:.3} ms waiting",
        g.locks.len(),
        wait as f64 / 1e6
    )?;
    if !built.warnings.is_empty() {
        writeln!(
            w,
            "{} warnings (data kept where valid):",
            built.warnings.len()
        )?;
        for warning in &built.warnings {
            writeln!(w, "  {warning}")?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use scalpel_model::testgraph::GraphBuilder;

    /// 120 leaf types on one thread, type `i` lasting `i + 1` µs: the 80 longest are drawn, the
    /// picture says 80 of 120, and no type that was left out appears.
    #[test]
    fn the_type_drawing_keeps_the_heaviest_types_and_says_so() {
        let mut b = GraphBuilder::new();
        let th = b.thread("main");
        let mut at = 0;
        for i in 0..120u64 {
            let ty = b.leaf_type(&format!("f{i}"), None);
            b.leaf(th, ty, at, at + (i + 1) * 1000);
            at += (i + 1) * 1000;
        }
        b.program_order(|_, _| Some(EdgeKind::Program));
        let g = b.build();
        let mut out = Vec::new();
        write_type_dot(&mut out, &g, &DrawOptions::default()).unwrap();
        let dot = String::from_utf8(out).unwrap();
        let nodes = dot.lines().filter(|l| l.contains("[label=\"f")).count();
        assert_eq!(nodes, budget::MAX_NODES);
        assert!(dot.contains("drawn: 80 of 120 leaf types"), "{dot}");
        assert!(dot.contains("label=\"f119\\n"));
        assert!(
            !dot.contains("label=\"f39\\n"),
            "the 40 shortest are left out"
        );
        assert!(!dot.contains("t39"), "and so are their edges");
    }
}
