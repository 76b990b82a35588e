//! What `scalpel infer --stage graph` writes: the instance graph as JSON, the graph of leaf types
//! as DOT and SVG, and a short text summary.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use scalpel_model::graph::{EdgeKind, ExternalRole, Graph};

use super::Built;

/// The files written, and why the SVG is missing if it is.
#[derive(Debug)]
pub struct Outputs {
    /// `graph.json`.
    pub json: PathBuf,
    /// `types.dot`.
    pub dot: PathBuf,
    /// `types.svg`, or why it could not be made.
    pub svg: Result<PathBuf, String>,
    /// `graph-summary.txt`.
    pub summary: PathBuf,
}

pub(crate) fn io_err(path: &Path, e: std::io::Error) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

/// How the type graph is drawn. `Default`: every type.
#[derive(Clone, Copy, Debug, Default)]
pub struct DrawOptions {
    /// Draw only leaf types with at least this many leaves (and the edges between them); 0 and 1
    /// draw all. The JSON always holds everything.
    pub min_count: u64,
}

/// Writes every output into `dir` (created if needed).
pub fn write_outputs(built: &Built, dir: &Path, draw: &DrawOptions) -> std::io::Result<Outputs> {
    std::fs::create_dir_all(dir).map_err(|e| io_err(dir, e))?;
    let json = dir.join("graph.json");
    let f = std::fs::File::create(&json).map_err(|e| io_err(&json, e))?;
    let mut w = BufWriter::new(f);
    serde_json::to_writer(&mut w, &built.graph).map_err(std::io::Error::other)?;
    w.write_all(b"\n")?;
    w.flush().map_err(|e| io_err(&json, e))?;
    let dot_text = type_dot(&built.graph, draw);
    let dot = dir.join("types.dot");
    std::fs::write(&dot, &dot_text).map_err(|e| io_err(&dot, e))?;
    let svg_path = dir.join("types.svg");
    let svg = match render_svg(dot_text) {
        Ok(bytes) => match std::fs::write(&svg_path, bytes) {
            Ok(()) => Ok(svg_path),
            Err(e) => Err(format!("{}: {e}", svg_path.display())),
        },
        Err(e) => Err(e),
    };
    let summary = dir.join("graph-summary.txt");
    std::fs::write(&summary, summary_text(built)).map_err(|e| io_err(&summary, e))?;
    Ok(Outputs {
        json,
        dot,
        svg,
        summary,
    })
}

/// Runs Graphviz `dot` on `text`.
pub(crate) fn render_svg(text: String) -> Result<Vec<u8>, String> {
    use graphviz_rust::cmd::Format;
    graphviz_rust::exec_dot(text, vec![Format::Svg.into()]).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            "Graphviz `dot` is not installed (apt-get install graphviz); the DOT file is written"
                .to_string()
        } else {
            format!("Graphviz `dot` failed: {e}")
        }
    })
}

/// A DOT string literal.
pub(crate) fn quote(s: &str) -> String {
    let mut q = String::with_capacity(s.len() + 2);
    q.push('"');
    for c in s.chars() {
        match c {
            '"' => q.push_str("\\\""),
            '\\' => q.push_str("\\\\"),
            '\n' => q.push_str("\\n"),
            c => q.push(c),
        }
    }
    q.push('"');
    q
}

/// The node of the type graph that node `id` of the instance graph belongs to.
fn type_node(g: &Graph, id: u32) -> String {
    match g.external(id) {
        Some(x) => {
            let what = g.objects[x.obj as usize]
                .desc
                .split(' ')
                .next()
                .unwrap_or("");
            let role = match x.role {
                ExternalRole::Source => "source",
                ExternalRole::Sink => "sink",
            };
            format!(
                "external_{role}_{}",
                if what.is_empty() { "other" } else { what }
            )
        }
        None => format!("t{}", g.leaves[id as usize].ty),
    }
}

/// The graph of leaf types: one node per type (and per kind of external peer), edges counted,
/// solid within a thread (grey where weak), dashed across threads.
pub fn type_dot(g: &Graph, draw: &DrawOptions) -> String {
    let shown = |id: u32| match g.leaves.get(id as usize) {
        Some(l) => g.types[l.ty as usize].count >= draw.min_count,
        None => true,
    };
    let mut edges: BTreeMap<(String, String, EdgeKind), u64> = BTreeMap::new();
    let mut externals: BTreeMap<String, ()> = BTreeMap::new();
    for e in g.edges.iter().filter(|e| shown(e.from) && shown(e.to)) {
        let (a, b) = (type_node(g, e.from), type_node(g, e.to));
        for n in [&a, &b] {
            if n.starts_with("external_") {
                externals.insert(n.clone(), ());
            }
        }
        *edges.entry((a, b, e.kind)).or_default() += 1;
    }
    let mut s = String::from("digraph leaf_types {\n  rankdir=TB;\n  node [shape=box, fontname=\"Helvetica\", fontsize=10];\n  edge [fontname=\"Helvetica\", fontsize=9];\n");
    let drawn = |t: &&scalpel_model::graph::LeafType| t.count > 0 && t.count >= draw.min_count;
    for (i, t) in g.types.iter().enumerate().filter(|(_, t)| drawn(t)) {
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
        let _ = writeln!(s, "  t{i} [label={}];", quote(&label));
    }
    for name in externals.keys() {
        let label = name.trim_start_matches("external_").replacen('_', " ", 1);
        let _ = writeln!(
            s,
            "  {name} [label={}, shape=ellipse, style=dashed];",
            quote(&format!("external {label}"))
        );
    }
    for ((a, b, kind), n) in &edges {
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
        let _ = writeln!(s, "  {a} -> {b} [label={}, {style}];", quote(&label));
    }
    s.push_str("}\n");
    s
}

/// The short summary: leaves, types, edges by kind, externals, what did not pair up, locks.
pub fn summary_text(built: &Built) -> String {
    let g = &built.graph;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} processes, {} threads, {} events",
        g.processes.len(),
        g.threads.len(),
        built.events
    );
    let used = g.types.iter().filter(|t| t.count > 0).count();
    let _ = writeln!(s, "{} leaves of {} types", g.leaves.len(), used);
    let mut by_kind: BTreeMap<EdgeKind, u64> = BTreeMap::new();
    for e in &g.edges {
        *by_kind.entry(e.kind).or_default() += 1;
    }
    let kinds: Vec<String> = EdgeKind::ALL
        .iter()
        .filter_map(|k| by_kind.get(k).map(|n| format!("{} {n}", k.name())))
        .collect();
    let _ = writeln!(s, "{} edges: {}", g.edges.len(), kinds.join(", "));
    let sources = g
        .externals
        .iter()
        .filter(|x| x.role == ExternalRole::Source)
        .count();
    let u = &g.unmatched;
    let _ = writeln!(
        s,
        "external nodes: {sources} sources, {} sinks ({} bytes in from outside the trace, {} bytes out to it)",
        g.externals.len() - sources,
        u.external_bytes_in,
        u.external_bytes_out
    );
    let _ = writeln!(
        s,
        "unmatched: {} cond waits, {} sem waits, {} futex waits, {} joins, {} thread starts",
        u.cond_waits, u.sem_waits, u.futex_waits, u.joins, u.starts
    );
    let contended: u64 = g.locks.iter().map(|l| l.contended).sum();
    let wait: u64 = g.locks.iter().map(|l| l.wait_ns).sum();
    let _ = writeln!(
        s,
        "locks: {} (no edges), {contended} contended acquisitions, {:.3} ms waiting",
        g.locks.len(),
        wait as f64 / 1e6
    );
    if !built.warnings.is_empty() {
        let _ = writeln!(
            s,
            "{} warnings (data kept where valid):",
            built.warnings.len()
        );
        for w in &built.warnings {
            let _ = writeln!(s, "  {w}");
        }
    }
    s
}
