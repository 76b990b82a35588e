//! The model drawn: task types as nested boxes around the leaf types they are made of, as DOT
//! fitted to a size Graphviz lays out quickly and a reader takes in, and as SVG.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use ahash::AHashSet;
use scalpel_model::graph::{EdgeKind, Graph};
use scalpel_model::task::{Model, OccRef, TaskKind, TaskTypeId};

use super::budget;
use super::graphviz::{quote, render_svg, DrawError};
use super::units::duration;

/// How the model is drawn. `Default`: every level, every task, every node.
#[derive(Clone, Debug, Default)]
pub struct ModelDraw {
    /// Draw only the top N levels (deeper tasks become one box each); `None` draws all.
    pub depth: Option<u32>,
    /// Draw only this task type (by name), expanded.
    pub task: Option<String>,
    /// Leave out drawn nodes with fewer occurrences than this.
    pub min_count: u64,
    /// Mean latency per model type, shown on nodes and boxes (empty: none shown).
    pub mean_latency: Vec<u64>,
}

impl ModelDraw {
    /// ` · mean 1.20 ms` for type `t`, when latencies are known.
    fn latency(&self, t: usize) -> String {
        self.mean_latency
            .get(t)
            .map(|&ns| format!(" · mean {}", duration(ns)))
            .unwrap_or_default()
    }
}

/// The most task boxes (clusters) `model.svg` is laid out with: each shrinks the edges it can
/// hold ([`budget::edge_budget`]).
pub const MAX_BOXES: usize = 50;

fn too_big(dot_text: &str, (nodes, _): (usize, usize)) -> bool {
    nodes > budget::MAX_NODES || boxes(dot_text) > MAX_BOXES
}

/// The task boxes (clusters) in DOT text `model_dot` wrote.
fn boxes(dot_text: &str) -> usize {
    dot_text.matches("subgraph cluster_").count()
}

/// The model's DOT text, fitted to a readable size: without `--depth` or `--task`, as many
/// levels as fit in [`budget::MAX_NODES`] nodes and [`MAX_BOXES`] boxes, then without the
/// rarest nodes if it must be, and the heaviest edges that fit (the first line, and a line in
/// the picture, say what was drawn). Also returns how many nodes and edges it draws.
pub fn fitted_dot(
    model: &Model,
    graph: &Graph,
    draw: &ModelDraw,
) -> Result<(String, (usize, usize)), DrawError> {
    // Every leaf's chain of occurrences and their trie, once for all the depths tried.
    let paths = Paths::new(Chains { model, graph }, draw.task.as_deref())?;
    let (mut dot_text, mut size) = dot_of_paths(model, graph, draw, &paths);
    // Unless told what to draw, draw fewer levels until the picture is one a reader (and
    // Graphviz, whose layout time grows fast with nested boxes) can take in.
    if draw.depth.is_none() && draw.task.is_none() {
        let deepest = model.types.iter().map(|t| t.level).max().unwrap_or(0);
        let mut d = draw.clone();
        if too_big(&dot_text, size) && deepest > 1 {
            // The deepest drawing of 2 levels or more that fits, found by bisection: fewer
            // levels never draw more, and a model of a hundred levels would otherwise be laid
            // out a hundred times (each a pass over every leaf).
            let (mut lo, mut hi) = (2, deepest);
            let mut fits = None;
            while lo <= hi {
                let mid = lo + (hi - lo) / 2;
                d.depth = Some(mid);
                let drawn = dot_of_paths(model, graph, &d, &paths);
                if too_big(&drawn.0, drawn.1) {
                    hi = mid - 1;
                } else {
                    fits = Some((mid, drawn));
                    lo = mid + 1;
                }
            }
            (dot_text, size) = match fits {
                Some((depth, drawn)) => {
                    d.depth = Some(depth);
                    drawn
                }
                None => {
                    d.depth = Some(2);
                    dot_of_paths(model, graph, &d, &paths)
                }
            };
        }
        // Then leave out the rarest nodes.
        while too_big(&dot_text, size) && d.min_count < graph.leaves.len() as u64 {
            d.min_count = (d.min_count * 2).max(2);
            (dot_text, size) = dot_of_paths(model, graph, &d, &paths);
        }
    }
    Ok((dot_text, size))
}

/// Lays out DOT text of `size` nodes and edges with Graphviz, unless it is too big to.
pub(super) fn svg_of(dot_text: String, size: (usize, usize)) -> Result<Vec<u8>, DrawError> {
    if too_big(&dot_text, size) {
        return Err(DrawError::TooBig {
            nodes: size.0,
            boxes: boxes(&dot_text),
            max_nodes: budget::MAX_NODES,
            max_boxes: MAX_BOXES,
        });
    }
    if size.0 == 0 {
        return Err(DrawError::Empty);
    }
    render_svg(dot_text)
}

/// The model drawn as SVG (see [`fitted_dot`]), or why it could not be.
pub fn model_svg(model: &Model, graph: &Graph, draw: &ModelDraw) -> Result<Vec<u8>, DrawError> {
    let (dot_text, size) = fitted_dot(model, graph, draw)?;
    svg_of(dot_text, size)
}

/// Each leaf's chain of containing occurrences, from the top down (the leaf itself last), walked
/// when needed: kept for every leaf, the chains took 44 MiB on a 1.77M-event nginx recording
/// as a vector per leaf, and 30 MiB in one array.
#[derive(Clone, Copy)]
struct Chains<'m> {
    model: &'m Model,
    graph: &'m Graph,
}

impl Chains<'_> {
    fn len(&self) -> usize {
        self.graph.leaves.len()
    }

    /// Leaf `l`'s chain, into `buf`.
    fn fill(&self, l: usize, buf: &mut Vec<OccRef>) {
        buf.clear();
        let Some(leaf) = self.graph.leaves.get(l) else {
            return;
        };
        buf.push(OccRef {
            ty: TaskTypeId::new(leaf.ty.get()),
            index: l as u32,
        });
        let mut at = self.model.leaf_parent.get(l).copied().flatten();
        while let Some(r) = at {
            buf.push(r);
            at = self
                .model
                .types
                .get(r.ty.index())
                .and_then(|t| t.occurrences.get(r.index as usize))
                .and_then(|o| o.parent);
        }
        buf.reverse();
    }
}

/// The paths of types drawn, as a trie: node 0 is the root (no type).
#[derive(Default)]
struct Trie {
    /// Parent and type of each node but the root.
    up: Vec<(usize, u32)>,
    children: ahash::AHashMap<(usize, u32), usize>,
    /// Each node's children: (type, node).
    kids: Vec<Vec<(u32, usize)>>,
    /// Occurrences through each node.
    occs: Vec<u64>,
}

impl Trie {
    fn child(&mut self, node: usize, ty: u32) -> usize {
        if self.up.is_empty() {
            self.up.push((0, u32::MAX));
            self.kids.push(Vec::new());
            self.occs.push(0);
        }
        let next = self.up.len();
        let c = *self.children.entry((node, ty)).or_insert(next);
        if c == next {
            self.up.push((node, ty));
            self.kids.push(Vec::new());
            self.kids[node].push((ty, c));
            self.occs.push(0);
        }
        c
    }

    /// The types from the top to `node`.
    fn path(&self, mut node: usize) -> Vec<u32> {
        let mut p = Vec::new();
        while node != 0 {
            let (up, ty) = self.up[node];
            p.push(ty);
            node = up;
        }
        p.reverse();
        p
    }

    /// The children of `node`, by type.
    fn sorted_children(&self, node: usize) -> Vec<usize> {
        let mut c = self.kids.get(node).cloned().unwrap_or_default();
        c.sort_unstable();
        c.into_iter().map(|(_, c)| c).collect()
    }
}

/// A leaf type's operations, `read → write` (`… → write` where it starts at new work), unless
/// its name already says them (a stripped program's leaves are named by their operations).
fn operations(ty: &scalpel_model::task::TaskType, graph: &Graph) -> Option<String> {
    let lt = graph.types.get(ty.leaf_type?.index())?;
    let op = |o: Option<scalpel_model::graph::OpName>| o.map(|o| o.name());
    // Names made of operations read `tcp read → sendmsg in f` or `eventfd read in nginx`.
    if ty.name.contains(" → ") || ty.name.contains(" in ") {
        return None;
    }
    let end = op(lt.end.op).unwrap_or_else(|| "exit".to_owned());
    Some(match op(lt.start.op) {
        Some(start) => format!("{start} → {end}"),
        None => format!("… → {end}"),
    })
}

/// The model as DOT: each drawn node is a path of types from the top (leaf types as ellipses
/// named by function, with their operations under the name, tasks cut by `--depth` as boxes),
/// each task a cluster around its parts.
/// Solid edges stay within a thread, dashed ones cross threads; labels are counts.
/// Returns the DOT text and how many nodes and edges it draws.
pub fn model_dot(
    model: &Model,
    graph: &Graph,
    draw: &ModelDraw,
) -> Result<(String, (usize, usize)), DrawError> {
    let paths = Paths::new(Chains { model, graph }, draw.task.as_deref())?;
    Ok(dot_of_paths(model, graph, draw, &paths))
}

/// Every leaf's drawn path (its chain of types from the focus, or from the top, down to the
/// leaf) in a trie, at full depth: a drawing of fewer levels cuts each path at a depth, and a
/// path's first `d` types lead to the same trie node, with the same occurrences, however deep
/// the rest goes, so one trie serves every depth `fitted_dot` tries.
struct Paths<'m> {
    chains: Chains<'m>,
    /// Where each leaf's drawn path starts in its chain (`None`: not drawn).
    starts: Vec<Option<u32>>,
    trie: Trie,
    /// Each leaf's trie node at full depth.
    ends: Vec<Option<u32>>,
    /// Each trie node's depth (the root's is 0).
    depth: Vec<usize>,
    /// The longest drawn path.
    deepest: usize,
}

impl<'m> Paths<'m> {
    /// The paths of `chains` from the task named `focus`, or from the top.
    fn new(chains: Chains<'m>, focus: Option<&str>) -> Result<Paths<'m>, DrawError> {
        let model = chains.model;
        let focus = match focus {
            None => None,
            Some(name) => Some(scalpel_model::lookup::task_named(model, name)?.get()),
        };
        // An occurrence lies on the chains of all its leaves, always at the same trie node: it
        // is counted there from the first of them (by its number among all occurrences).
        let (base, n) = model.occurrence_bases();
        let mut counted = vec![false; n];
        // Occurrences per trie node (a map keyed by every prefix cost a copy of it per leaf and
        // level: quadratic in the model's depth).
        let mut trie = Trie::default();
        let mut depth = vec![0];
        let mut starts: Vec<Option<u32>> = vec![None; chains.len()];
        let mut ends: Vec<Option<u32>> = vec![None; chains.len()];
        let mut chain = Vec::new();
        for l in 0..chains.len() {
            chains.fill(l, &mut chain);
            let start = match focus {
                None => Some(0),
                Some(f) => chain.iter().position(|r| r.ty.get() == f),
            };
            let Some(start) = start else {
                continue;
            };
            starts[l] = Some(start as u32);
            let mut node = 0;
            let last = chain.len() - 1;
            for (k, r) in chain.iter().enumerate().skip(start) {
                node = trie.child(node, r.ty.get());
                if depth.len() < trie.up.len() {
                    depth.push(k - start + 1);
                }
                // The last is the leaf itself (index = leaf id), on this chain alone.
                let first_time = k == last
                    || base
                        .get(r.ty.index())
                        .and_then(|b| counted.get_mut(b + r.index as usize))
                        .is_some_and(|c| !std::mem::replace(c, true));
                trie.occs[node] += u64::from(first_time);
            }
            ends[l] = (node != 0).then_some(node as u32);
        }
        let deepest = depth.iter().copied().max().unwrap_or(0);
        Ok(Paths {
            chains,
            starts,
            trie,
            ends,
            depth,
            deepest,
        })
    }

    /// Each trie node's ancestor at depth `d` (itself when not deeper). Nodes are made after
    /// their parents, so one pass in order does it.
    fn cut_at(&self, d: Option<usize>) -> Vec<usize> {
        let mut at: Vec<usize> = (0..self.depth.len()).collect();
        if let Some(d) = d {
            for n in 1..at.len() {
                if self.depth[n] > d {
                    at[n] = at[self.trie.up[n].0];
                }
            }
        }
        at
    }

    /// The depth of the deepest node on both paths to `a` and `b`.
    fn common_depth(&self, mut a: usize, mut b: usize) -> usize {
        while self.depth[a] > self.depth[b] {
            a = self.trie.up[a].0;
        }
        while self.depth[b] > self.depth[a] {
            b = self.trie.up[b].0;
        }
        while a != b {
            (a, b) = (self.trie.up[a].0, self.trie.up[b].0);
        }
        self.depth[a]
    }
}

/// [`model_dot`] of the given paths.
fn dot_of_paths(
    model: &Model,
    graph: &Graph,
    draw: &ModelDraw,
    paths: &Paths,
) -> (String, (usize, usize)) {
    let (trie, chains, starts) = (&paths.trie, paths.chains, &paths.starts);
    let depth = draw.depth.map(|d| d.max(1) as usize);
    // Each leaf's trie node, its path cut at the depth drawn.
    let cut = paths.cut_at(depth);
    let end_of = |l: usize| -> Option<usize> {
        paths
            .ends
            .get(l)
            .copied()
            .flatten()
            .map(|n| cut[n as usize])
    };
    let drawn_nodes: AHashSet<usize> = (0..paths.ends.len())
        .filter_map(end_of)
        .filter(|&n| trie.occs[n] >= draw.min_count)
        .collect();
    // A box is drawn only around drawn nodes: with the rare nodes left out, a model of many
    // small tasks drew hundreds of empty boxes and a blank picture.
    let mut holds_drawn = vec![false; trie.up.len()];
    for n in (1..trie.up.len()).rev() {
        if drawn_nodes.contains(&n) {
            holds_drawn[n] = true;
        }
        if holds_drawn[n] {
            holds_drawn[trie.up[n].0] = true;
        }
    }
    let id = |p: &[u32]| -> String {
        let parts: Vec<String> = p.iter().map(|t| t.to_string()).collect();
        parts.join("_")
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "// scalpel model: depth {}, task {}, nodes with at least {} occurrences",
        draw.depth.map_or("all".to_owned(), |d| d.to_string()),
        draw.task.as_deref().unwrap_or("all"),
        draw.min_count.max(1)
    );
    let _ = writeln!(out, "digraph model {{");
    // newrank: the cluster-aware ranking (the default one fails on some nested clusters,
    // "trouble in init_rank").
    let _ = writeln!(out, "  rankdir=TB; compound=true; newrank=true;");
    let _ = writeln!(out, "  node [fontname=\"Helvetica\", fontsize=10];");
    let _ = writeln!(out, "  edge [fontname=\"Helvetica\", fontsize=9];");
    // Clusters and nodes, nested by prefix: the trie in depth-first order, children by type.
    let mut open = 0usize;
    let mut stack: Vec<(usize, bool)> = trie
        .sorted_children(0)
        .into_iter()
        .rev()
        .map(|c| (c, false))
        .collect();
    while let Some((node, leaving)) = stack.pop() {
        if leaving {
            open -= 1;
            let _ = writeln!(out, "{:w$}}}", "", w = 2 * (open + 1));
            continue;
        }
        let path = trie.path(node);
        let count = trie.occs[node];
        let t = *path.last().unwrap_or(&0) as usize;
        let ty = &model.types[t];
        let indent = 2 * (open + 1);
        let kids = trie.sorted_children(node);
        if drawn_nodes.contains(&node) {
            let shape = if ty.kind == TaskKind::Leaf {
                "ellipse"
            } else {
                "box"
            };
            let ops = operations(ty, graph)
                .map(|o| format!("\n{o}"))
                .unwrap_or_default();
            let label = format!("{}{ops}\n×{count}{}", ty.name, draw.latency(t));
            let _ = writeln!(
                out,
                "{:indent$}n{} [label={}, shape={shape}];",
                "",
                id(&path),
                quote(&label)
            );
        } else if ty.kind != TaskKind::Leaf && holds_drawn[node] {
            let label = format!("{} ×{count}{}", ty.name, draw.latency(t));
            let _ = writeln!(
                out,
                "{:indent$}subgraph cluster_{} {{ label={}; style=rounded;",
                "",
                id(&path),
                quote(&label)
            );
            open += 1;
            stack.push((node, true));
        }
        let kids = kids.into_iter().filter(|&c| cut[c] == c);
        stack.extend(kids.rev().map(|c| (c, false)));
    }
    // Edges between drawn paths, counted by trie node (a string key per edge cost more than the
    // rest of the drawing), then named.
    let mut by_node: ahash::AHashMap<(usize, usize, bool, &'static str), u64> =
        ahash::AHashMap::new();
    let (mut chain_a, mut chain_b) = (Vec::new(), Vec::new());
    for e in &graph.edges {
        let (Some(na), Some(nb)) = (end_of(e.from.index()), end_of(e.to.index())) else {
            continue;
        };
        if na == nb || !drawn_nodes.contains(&na) || !drawn_nodes.contains(&nb) {
            continue;
        }
        // Within a task's box, only edges inside one occurrence of it: one request's reply
        // leaf leading to the next request's first leaf is not part of the request's shape.
        let common = paths.common_depth(na, nb);
        if common > 0 {
            let (sa, sb) = (starts[e.from.index()], starts[e.to.index()]);
            chains.fill(e.from.index(), &mut chain_a);
            chains.fill(e.to.index(), &mut chain_b);
            let at =
                |c: &[OccRef], s: Option<u32>| c.get(s.unwrap_or(0) as usize + common - 1).copied();
            if at(&chain_a, sa) != at(&chain_b, sb) {
                continue;
            }
        }
        let within = e.kind.in_thread();
        let label = if within { "" } else { e.kind.name() };
        *by_node.entry((na, nb, within, label)).or_insert(0) += 1;
    }
    let edges: BTreeMap<(String, String, bool, &'static str), u64> = by_node
        .into_iter()
        .map(|((a, b, within, label), n)| {
            ((id(&trie.path(a)), id(&trie.path(b)), within, label), n)
        })
        .collect();
    // The heaviest edges that fit the layout budget, in key order.
    let all_edges = edges.len();
    let edges: Vec<_> = edges.into_iter().collect();
    let weights: Vec<u64> = edges.iter().map(|(_, n)| *n).collect();
    let keep = budget::heaviest(&weights, budget::edge_budget(boxes(&out)));
    let n_edges = keep.len();
    let deepest = paths.deepest as u32;
    let cuts = [
        draw.depth
            .filter(|&d| d < deepest)
            .map(|d| format!("the top {d} of {deepest} levels")),
        (draw.min_count > 1).then(|| format!("nodes with {} occurrences or more", draw.min_count)),
        budget::cut("edges", n_edges, all_edges, "the heaviest by count"),
    ];
    if let Some(line) = budget::note_line(cuts.into_iter().flatten(), "model.json") {
        let _ = writeln!(out, "{line}");
    }
    for ((a, b, within, kind), n) in keep.into_iter().map(|i| edges[i].clone()) {
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
    (out, (drawn_nodes.len(), n_edges))
}
