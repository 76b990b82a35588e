//! The wait-for graph for people and tools: a text report with the knots first, JSON, and DOT
//! with the knots drawn as red boxes (`scalpel waitfor`, and the report's bottleneck section).

use std::io::{self, Write};

use crate::graphviz::Quoted;
use crate::units::{count, duration, pct};
use scalpel_analysis::waitfor::{Knot, WaitEdge, WaitFor, WaitForOptions, WaitSite};

/// Edges listed in the text report's table.
pub const TEXT_EDGES: usize = 20;

/// Edges drawn; the lightest beyond it are left out, with a line saying so.
pub const DRAWN_EDGES: usize = 60;

/// A call site on one line: `fdatasync in flush_log < syncer_main < start_thread`.
pub fn site_line(s: &WaitSite) -> String {
    let op = s
        .call
        .or(s.site.op)
        .map_or_else(|| "call".to_owned(), |o| o.name());
    let frames: Vec<&str> = if s.site.frames.is_empty() {
        s.site.function.as_deref().into_iter().collect()
    } else {
        s.site.frames.iter().take(4).map(String::as_str).collect()
    };
    if frames.is_empty() {
        op
    } else {
        format!("{op} in {}", frames.join(" < "))
    }
}

/// `from → to`.
pub fn edge_name(w: &WaitFor, e: &WaitEdge) -> String {
    format!(
        "{} → {}",
        w.nodes[e.from.index()].name,
        w.nodes[e.to.index()].name
    )
}

/// A knot's members joined by ` + `.
pub fn knot_name(w: &WaitFor, k: &Knot) -> String {
    let names: Vec<&str> = k
        .members
        .iter()
        .map(|m| w.nodes[m.index()].name.as_str())
        .collect();
    names.join(" + ")
}

/// How an edge's weight splits: `(1.20 s direct, 3.40 s passed on)`. Idle time is said from the
/// waiter's side, `[disk] → syncer  (8.22 s idle until given work)`: the disk had nothing to do
/// until the syncer gave it some ("waiting for work" read as if the syncer waited).
fn split(e: &WaitEdge) -> String {
    let mut parts = Vec::new();
    if e.direct_ns > 0 {
        parts.push(format!("{} direct", duration(e.direct_ns)));
    }
    if e.cascaded_ns > 0 {
        parts.push(format!("{} passed on", duration(e.cascaded_ns)));
    }
    if e.idle_ns > 0 {
        parts.push(format!("{} idle until given work", duration(e.idle_ns)));
    }
    parts.join(", ")
}

fn write_edge(o: &mut impl Write, w: &WaitFor, e: &WaitEdge, indent: &str) -> io::Result<()> {
    writeln!(
        o,
        "{indent}{}  {}  ({})",
        edge_name(w, e),
        duration(e.weight()),
        split(e)
    )?;
    for s in &e.sites {
        writeln!(
            o,
            "{indent}    {} {} in {}: {}",
            s.kind.name(),
            duration(s.ns),
            count(s.count, "wait", "waits"),
            site_line(s)
        )?;
    }
    Ok(())
}

/// The text report: what the graph holds, each knot with the edges inside and into it and the
/// call sites behind them, then the heaviest edges and the nodes.
pub fn write_waitfor_text(
    o: &mut impl Write,
    w: &WaitFor,
    opts: &WaitForOptions,
) -> io::Result<()> {
    let scope = w
        .task
        .as_ref()
        .map_or_else(String::new, |t| format!(" of the waits in {t}"));
    writeln!(
        o,
        "Wait-for graph{scope}: {}, {}; {} of waiting in a {} run.",
        count(w.nodes.len() as u64, "node", "nodes"),
        count(w.edges.len() as u64, "edge", "edges"),
        duration(w.total_wait_ns),
        duration(w.span_ns)
    )?;
    writeln!(
        o,
        "An edge A → B is time A waited on something B ended, plus time passed on to it while \
         others waited on A."
    )?;
    if w.cascade_cut {
        writeln!(
            o,
            "Warning: the cascade stopped after {} steps; time passed on is a lower bound.",
            w.cascade_steps
        )?;
    }
    writeln!(o)?;
    if w.knots.is_empty() {
        writeln!(
            o,
            "No knot: every chain of waits leaves the graph (or ends in [unknown])."
        )?;
    }
    for (i, k) in w.knots.iter().enumerate() {
        writeln!(
            o,
            "Knot {}: {}  explains {} of all waiting ({})",
            i + 1,
            knot_name(w, k),
            pct(k.share),
            duration(k.explained_ns)
        )?;
        if !k.inside.is_empty() {
            writeln!(o, "  inside:")?;
            for e in &k.inside {
                write_edge(o, w, &w.edges[e.index()], "    ")?;
            }
        }
        if !k.into.is_empty() {
            writeln!(o, "  waited on by:")?;
            for e in k.into.iter().take(5) {
                write_edge(o, w, &w.edges[e.index()], "    ")?;
            }
            if k.into.len() > 5 {
                writeln!(
                    o,
                    "    … and {} lighter",
                    count(k.into.len() as u64 - 5, "edge", "edges")
                )?;
            }
        }
        writeln!(o)?;
    }
    if !w.trimmed.is_empty() {
        writeln!(
            o,
            "Trimmed from knots (lighter than {} of the knot's weight):",
            pct(opts.trim)
        )?;
        for e in &w.trimmed {
            let e = &w.edges[e.index()];
            writeln!(o, "  {}  {}", edge_name(w, e), duration(e.weight()))?;
        }
        writeln!(o)?;
    }
    writeln!(o, "Heaviest edges:")?;
    for e in w.edges.iter().take(TEXT_EDGES) {
        write_edge(o, w, e, "  ")?;
    }
    if w.edges.len() > TEXT_EDGES {
        writeln!(
            o,
            "  … and {} lighter (--format json lists every one)",
            count((w.edges.len() - TEXT_EDGES) as u64, "edge", "edges")
        )?;
    }
    writeln!(o)?;
    writeln!(o, "Nodes:")?;
    for n in &w.nodes {
        match n.pseudo {
            Some(_) => writeln!(o, "  {}", n.name)?,
            None => writeln!(
                o,
                "  {}  {}, waited {}",
                n.name,
                count(n.threads.len() as u64, "thread", "threads"),
                duration(n.waited_ns)
            )?,
        }
    }
    Ok(())
}

/// The graph as JSON.
pub fn write_waitfor_json(o: &mut impl Write, w: &WaitFor) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *o, w).map_err(io::Error::from)?;
    writeln!(o)
}

/// The graph as DOT: thread groups as boxes, pseudo-threads as ellipses, knots red and in a
/// box of their own, edge widths by weight, the heaviest [`DRAWN_EDGES`] edges.
pub fn write_waitfor_dot(o: &mut impl Write, w: &WaitFor) -> io::Result<()> {
    writeln!(o, "digraph waitfor {{")?;
    writeln!(o, "  rankdir=LR; node [fontname=\"Helvetica\", fontsize=11]; edge [fontname=\"Helvetica\", fontsize=9];")?;
    let mut knot_of = vec![None; w.nodes.len()];
    for (i, k) in w.knots.iter().enumerate() {
        for m in &k.members {
            knot_of[m.index()] = Some(i);
        }
    }
    let drawn: Vec<&WaitEdge> = w.edges.iter().take(DRAWN_EDGES).collect();
    let mut shown = vec![false; w.nodes.len()];
    for e in &drawn {
        shown[e.from.index()] = true;
        shown[e.to.index()] = true;
    }
    for k in &w.knots {
        for m in &k.members {
            shown[m.index()] = true;
        }
    }
    let node = |o: &mut dyn Write, i: usize| -> io::Result<()> {
        let n = &w.nodes[i];
        let shape = if n.pseudo.is_some() { "ellipse" } else { "box" };
        let style = if knot_of[i].is_some() {
            ", style=\"filled,bold\", color=\"#b00000\", fillcolor=\"#ffd8d8\""
        } else {
            ""
        };
        let label = match n.pseudo {
            Some(_) => n.name.clone(),
            None => format!("{}\nwaited {}", n.name, duration(n.waited_ns)),
        };
        writeln!(
            o,
            "  n{i} [shape={shape}, label={}{style}];",
            Quoted(&label)
        )
    };
    for (k, knot) in w.knots.iter().enumerate() {
        writeln!(o, "  subgraph cluster_knot{k} {{")?;
        writeln!(
            o,
            "    label={}; color=\"#b00000\"; fontcolor=\"#b00000\";",
            Quoted(&format!(
                "knot {}: {} of all waiting",
                k + 1,
                pct(knot.share)
            ))
        )?;
        for m in &knot.members {
            write!(o, "  ")?;
            node(o, m.index())?;
        }
        writeln!(o, "  }}")?;
    }
    for i in (0..w.nodes.len()).filter(|&i| shown[i] && knot_of[i].is_none()) {
        node(o, i)?;
    }
    let heaviest = drawn.first().map_or(1, |e| e.weight().max(1));
    for e in &drawn {
        let width = 1.0 + 4.0 * e.weight() as f64 / heaviest as f64;
        let kind = e.kinds.first().map_or("idle", |k| k.0.name());
        let red = match (knot_of[e.from.index()], knot_of[e.to.index()]) {
            (_, Some(k)) if knot_of[e.from.index()] == Some(k) => ", color=\"#b00000\"",
            _ => "",
        };
        writeln!(
            o,
            "  n{} -> n{} [label={}, penwidth={width:.1}{red}];",
            e.from.index(),
            e.to.index(),
            Quoted(&format!("{} {}", duration(e.weight()), kind))
        )?;
    }
    if w.edges.len() > drawn.len() {
        writeln!(
            o,
            "  note [shape=plaintext, label={}];",
            Quoted(&format!(
                "{} lighter edges not drawn",
                w.edges.len() - drawn.len()
            ))
        )?;
    }
    writeln!(o, "}}")
}
