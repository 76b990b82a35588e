//! What `scalpel infer` writes for the model: `model.json`, `model.dot` and `model.svg` (task
//! types as nested boxes around the leaf types they are made of), and `model-tree.txt` (the
//! hierarchy as an indented tree).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use ahash::AHashSet;
use scalpel_model::graph::{EdgeKind, Graph};
use scalpel_model::task::{Model, OccRef, TaskKind};

use crate::graph::output::{io_err, quote, render_svg};

/// How the model is drawn. `Default`: every level, every task, every node.
#[derive(Clone, Debug, Default)]
pub struct ModelDraw {
    /// Draw only the top N levels (deeper tasks become one box each); `None` draws all.
    pub depth: Option<u32>,
    /// Draw only this task type (by name), expanded.
    pub task: Option<String>,
    /// Leave out drawn nodes with fewer occurrences than this.
    pub min_count: u64,
}

/// The files written, and why the SVG is missing if it is.
#[derive(Debug)]
pub struct ModelOutputs {
    pub json: PathBuf,
    pub dot: PathBuf,
    pub svg: Result<PathBuf, String>,
    pub tree: PathBuf,
}

/// Writes the model files into `dir`.
pub fn write_model(
    model: &Model,
    graph: &Graph,
    dir: &Path,
    draw: &ModelDraw,
) -> std::io::Result<ModelOutputs> {
    std::fs::create_dir_all(dir).map_err(|e| io_err(dir, e))?;
    let dot_text = model_dot(model, graph, draw)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    let json = dir.join("model.json");
    let f = std::fs::File::create(&json).map_err(|e| io_err(&json, e))?;
    let mut w = BufWriter::new(f);
    serde_json::to_writer(&mut w, model).map_err(std::io::Error::other)?;
    w.write_all(b"\n")?;
    w.flush().map_err(|e| io_err(&json, e))?;
    let dot = dir.join("model.dot");
    std::fs::write(&dot, &dot_text).map_err(|e| io_err(&dot, e))?;
    let svg_path = dir.join("model.svg");
    let svg = render_svg(dot_text).and_then(|bytes| {
        std::fs::write(&svg_path, bytes)
            .map(|()| svg_path.clone())
            .map_err(|e| format!("{}: {e}", svg_path.display()))
    });
    let tree = dir.join("model-tree.txt");
    std::fs::write(&tree, tree_text(model)).map_err(|e| io_err(&tree, e))?;
    Ok(ModelOutputs {
        json,
        dot,
        svg,
        tree,
    })
}

/// The hierarchy as an indented tree: top-level types by count, each with its children.
pub fn tree_text(model: &Model) -> String {
    let mut s = String::new();
    let supers = model
        .types
        .iter()
        .filter(|t| t.kind != TaskKind::Leaf)
        .count();
    let _ = writeln!(
        s,
        "task model: {} leaves, {} leaf types, {} task types, {} rounds (min support {})",
        model.leaves,
        model.types.len() - supers,
        supers,
        model.mining.rounds,
        model.mining.min_support
    );
    let mut top: Vec<usize> = (0..model.types.len())
        .filter(|&t| model.types[t].top_level > 0 && model.types[t].kind != TaskKind::Leaf)
        .collect();
    top.sort_by_key(|&t| (std::cmp::Reverse(model.types[t].top_level), t));
    for t in top {
        let ty = &model.types[t];
        let _ = writeln!(s, "{} ×{} (top level: {})", ty.name, ty.count, ty.top_level);
        children(&mut s, model, t, 1, &mut vec![t]);
    }
    let loose: u64 = model
        .types
        .iter()
        .filter(|t| t.kind == TaskKind::Leaf)
        .map(|t| t.top_level)
        .sum();
    let _ = writeln!(s, "unclustered leaves: {loose}");
    s
}

fn children(s: &mut String, model: &Model, t: usize, indent: usize, path: &mut Vec<usize>) {
    let ty = &model.types[t];
    for c in &ty.children {
        let child = &model.types[c.ty as usize];
        let per = c.count as f64 / ty.count.max(1) as f64;
        let _ = writeln!(
            s,
            "{:w$}{} ×{:.3} per occurrence ({} in all)",
            "",
            child.name,
            per,
            c.count,
            w = indent * 2
        );
        if !path.contains(&(c.ty as usize)) {
            path.push(c.ty as usize);
            children(s, model, c.ty as usize, indent + 1, path);
            path.pop();
        }
    }
}

/// Each leaf's chain of containing occurrences, from the top down (the leaf itself last).
fn chains(model: &Model, graph: &Graph) -> Vec<Vec<OccRef>> {
    graph
        .leaves
        .iter()
        .enumerate()
        .map(|(l, leaf)| {
            let mut chain = vec![OccRef {
                ty: leaf.ty,
                index: l as u32,
            }];
            let mut at = model.leaf_parent.get(l).copied().flatten();
            while let Some(r) = at {
                chain.push(r);
                at = model
                    .types
                    .get(r.ty as usize)
                    .and_then(|t| t.occurrences.get(r.index as usize))
                    .and_then(|o| o.parent);
            }
            chain.reverse();
            chain
        })
        .collect()
}

/// The model as DOT: each drawn node is a path of types from the top (leaf types as ellipses
/// named by function, tasks cut by `--depth` as boxes), each task a cluster around its parts.
/// Solid edges stay within a thread, dashed ones cross threads; labels are counts.
pub fn model_dot(model: &Model, graph: &Graph, draw: &ModelDraw) -> Result<String, String> {
    let focus = match &draw.task {
        None => None,
        Some(name) => Some(
            model
                .types
                .iter()
                .position(|t| &t.name == name)
                .ok_or_else(|| {
                    let known: Vec<&str> = model
                        .types
                        .iter()
                        .filter(|t| t.kind != TaskKind::Leaf)
                        .map(|t| t.name.as_str())
                        .take(20)
                        .collect();
                    format!("no task is named {name:?}; tasks: {}", known.join(", "))
                })? as u32,
        ),
    };
    let depth = draw.depth.map(|d| d.max(1) as usize);
    let chains = chains(model, graph);
    // The drawn part of every leaf's chain (None: not drawn): start and length.
    let paths: Vec<Option<Vec<u32>>> = chains
        .iter()
        .map(|c| {
            let start = match focus {
                None => 0,
                Some(f) => c.iter().position(|r| r.ty == f)?,
            };
            let mut c = &c[start..];
            if let Some(d) = depth {
                c = &c[..c.len().min(d)];
            }
            (!c.is_empty()).then(|| c.iter().map(|r| r.ty).collect())
        })
        .collect();
    // Occurrences per drawn path and per cluster prefix.
    let mut occs: BTreeMap<Vec<u32>, AHashSet<(u32, u32)>> = BTreeMap::new();
    for (p, chain) in paths.iter().zip(&chains) {
        let Some(path) = p else { continue };
        let start = chain.iter().position(|r| r.ty == path[0]).unwrap_or(0);
        for k in 1..=path.len() {
            let r = chain[start + k - 1];
            occs.entry(path[..k].to_vec())
                .or_default()
                .insert((r.ty, r.index));
        }
    }
    let drawn: AHashSet<&Vec<u32>> = paths
        .iter()
        .flatten()
        .filter(|p| occs.get(*p).map_or(0, |s| s.len() as u64) >= draw.min_count)
        .collect();
    let id = |p: &[u32]| -> String {
        let parts: Vec<String> = p.iter().map(|t| t.to_string()).collect();
        parts.join("_")
    };
    let mut out = String::new();
    let _ = writeln!(out, "digraph model {{");
    let _ = writeln!(out, "  rankdir=TB; compound=true;");
    let _ = writeln!(out, "  node [fontname=\"Helvetica\", fontsize=10];");
    let _ = writeln!(out, "  edge [fontname=\"Helvetica\", fontsize=9];");
    // Clusters and nodes, nested by prefix (BTreeMap order puts a prefix before its extensions).
    let mut open: Vec<Vec<u32>> = Vec::new();
    let keys: Vec<(&Vec<u32>, usize)> = occs.iter().map(|(k, v)| (k, v.len())).collect();
    for (i, &(path, count)) in keys.iter().enumerate() {
        let extended = keys
            .get(i + 1)
            .is_some_and(|(next, _)| next.len() > path.len() && next.starts_with(path));
        while let Some(top) = open.last() {
            if path.starts_with(top) && path.len() > top.len() {
                break;
            }
            open.pop();
            let _ = writeln!(out, "{:w$}}}", "", w = 2 * (open.len() + 1));
        }
        let ty = &model.types[*path.last().unwrap_or(&0) as usize];
        let indent = 2 * (open.len() + 1);
        if drawn.contains(path) {
            let shape = if ty.kind == TaskKind::Leaf {
                "ellipse"
            } else {
                "box"
            };
            let label = format!("{}\n×{count}", ty.name);
            let _ = writeln!(
                out,
                "{:indent$}n{} [label={}, shape={shape}];",
                "",
                id(path),
                quote(&label)
            );
        } else if ty.kind != TaskKind::Leaf && extended {
            let label = format!("{} ×{count}", ty.name);
            let _ = writeln!(
                out,
                "{:indent$}subgraph cluster_{} {{ label={}; style=rounded;",
                "",
                id(path),
                quote(&label)
            );
            open.push(path.to_vec());
        }
    }
    while open.pop().is_some() {
        let _ = writeln!(out, "{:w$}}}", "", w = 2 * (open.len() + 1));
    }
    // Edges between drawn paths.
    let mut edges: BTreeMap<(String, String, bool, &'static str), u64> = BTreeMap::new();
    for e in &graph.edges {
        let (Some(Some(a)), Some(Some(b))) = (paths.get(e.from as usize), paths.get(e.to as usize))
        else {
            continue;
        };
        if a == b || !drawn.contains(a) || !drawn.contains(b) {
            continue;
        }
        let within = e.kind.in_thread();
        let label = if within { "" } else { e.kind.name() };
        *edges.entry((id(a), id(b), within, label)).or_insert(0) += 1;
    }
    for ((a, b, within, kind), n) in edges {
        let style = if within { "solid" } else { "dashed" };
        let label = if kind.is_empty() || kind == EdgeKind::ProgramWeak.name() {
            n.to_string()
        } else {
            format!("{kind} {n}")
        };
        let _ = writeln!(
            out,
            "  n{a} -> n{b} [style={style}, label={}];",
            quote(&label)
        );
    }
    let _ = writeln!(out, "}}");
    Ok(out)
}
