//! Grammars learned on part of a recording and replayed on the whole (`scalpel_mine::Grammar`):
//! how far the model differs from mining the whole alone.

use std::fmt;
use std::path::Path;

use scalpel_graph::{build_graph, Filter, GraphError, GraphOptions};
use scalpel_mine::{mine, mine_with, MineInput, MineOptions};
use scalpel_model::graph::Graph;
use scalpel_model::progress::Quiet;
use scalpel_model::task::{Model, OccRef};

/// The model mining `g` gives when `grammar` is replayed first.
pub fn replay(g: &Graph, grammar: &scalpel_mine::Grammar) -> Model {
    replayed(g, grammar).model
}

/// What mining `g` gives when `grammar` is replayed first.
pub fn replayed(g: &Graph, grammar: &scalpel_mine::Grammar) -> scalpel_mine::Mined {
    let opts = MineOptions::default();
    mine_with(
        &MineInput::of(g),
        "graph.json",
        &opts,
        Some(grammar),
        &Quiet,
    )
}

/// Each leaf's top-level occurrence (`None` for a leaf in no group).
fn tops(model: &Model) -> Vec<Option<OccRef>> {
    model
        .leaf_parent
        .iter()
        .map(|p| {
            let mut at = (*p)?;
            while let Some(up) = model.types[at.ty.index()].occurrences[at.index as usize].parent {
                at = up;
            }
            Some(at)
        })
        .collect()
}

/// Leaves whose top-level task differs between two models of one graph: by name, and by
/// which leaves it holds (the same split of the leaves into tasks, whatever their names).
pub fn differ(a: &Model, b: &Model) -> (usize, usize) {
    let (ta, tb) = (tops(a), tops(b));
    let name = |m: &Model, o: Option<OccRef>| o.map(|o| m.types[o.ty.index()].name.clone());
    let named = ta
        .iter()
        .zip(&tb)
        .filter(|(x, y)| name(a, **x) != name(b, **y))
        .count();
    // A leaf's task as its first leaf (itself when it is in none).
    let first = |m: &Model, t: &[Option<OccRef>]| -> Vec<u32> {
        t.iter()
            .enumerate()
            .map(|(l, o)| match o {
                Some(o) => m.types[o.ty.index()].occurrences[o.index as usize].leaves[0].get(),
                None => l as u32,
            })
            .collect()
    };
    let (fa, fb) = (first(a, &ta), first(b, &tb));
    let split = fa.iter().zip(&fb).filter(|(x, y)| x != y).count();
    (named, split)
}

/// A grammar learned on a recording's first half, replayed on the whole, against mining the
/// whole alone.
#[derive(Debug)]
pub struct Halves {
    /// Leaves of the whole.
    pub leaves: usize,
    /// Leaves of the first half.
    pub sample: usize,
    /// Rules learned on the first half.
    pub rules: usize,
    /// Leaves whose top-level type has another name.
    pub named: usize,
    /// Leaves whose top-level task holds other leaves.
    pub split: usize,
}

impl fmt::Display for Halves {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} leaves ({} in the first half, {} rules learned there): {} under a top-level type of another name, {} in another top-level task",
            self.leaves, self.sample, self.rules, self.named, self.split
        )
    }
}

/// [`Halves`] of the trace in `dir`; `None` when it has no leaves or its first half none.
pub fn halves(dir: &Path) -> Result<Option<Halves>, GraphError> {
    let whole = build_graph(dir, &GraphOptions::default())?.graph;
    let Some(start) = whole.leaves.iter().map(|l| l.start_ns).min() else {
        return Ok(None);
    };
    let end = whole.leaves.iter().map(|l| l.end_ns).max().unwrap_or(start);
    let opts = GraphOptions {
        include: vec![Filter::Time(
            None,
            Some(end.saturating_sub(start) as f64 / 2e9),
        )],
        ..GraphOptions::default()
    };
    let sample = match build_graph(dir, &opts) {
        Ok(b) => b.graph,
        Err(GraphError::NothingKept { .. }) => return Ok(None),
        Err(e) => return Err(e),
    };
    let learned = mine(&sample, "graph.json", &MineOptions::default(), &Quiet);
    let alone = mine(&whole, "graph.json", &MineOptions::default(), &Quiet).model;
    let (named, split) = differ(&alone, &replay(&whole, &learned.grammar));
    Ok(Some(Halves {
        leaves: whole.leaves.len(),
        sample: sample.leaves.len(),
        rules: learned.grammar.rules(),
        named,
        split,
    }))
}

/// A grammar learned on the whole of one recording, replayed on another (of the same program),
/// against mining the other alone.
#[derive(Debug)]
pub struct Across {
    /// Leaves of the recording labelled.
    pub leaves: usize,
    /// Rules learned on the first recording.
    pub rules: usize,
    /// Of those, the rules that contracted something in the other.
    pub replayed: usize,
    /// Leaves whose top-level type has another name.
    pub named: usize,
    /// Leaves whose top-level task holds other leaves.
    pub split: usize,
}

impl fmt::Display for Across {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} leaves ({} rules learned on the other recording, {} of them found here): {} under a top-level type of another name, {} in another top-level task",
            self.leaves, self.rules, self.replayed, self.named, self.split
        )
    }
}

/// [`Across`] of a grammar learned on the trace in `from`, replayed on the trace in `to`.
pub fn across(from: &Path, to: &Path) -> Result<Across, GraphError> {
    let learned_on = build_graph(from, &GraphOptions::default())?.graph;
    let learned = mine(&learned_on, "graph.json", &MineOptions::default(), &Quiet);
    let g = build_graph(to, &GraphOptions::default())?.graph;
    let alone = mine(&g, "graph.json", &MineOptions::default(), &Quiet).model;
    let labelled = replayed(&g, &learned.grammar);
    let (named, split) = differ(&alone, &labelled.model);
    Ok(Across {
        leaves: g.leaves.len(),
        rules: learned.grammar.rules(),
        replayed: labelled.replayed,
        named,
        split,
    })
}
