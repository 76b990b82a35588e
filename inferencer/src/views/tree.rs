//! The hierarchy as an indented tree (`model-tree.txt`, and what `scalpel infer` prints).

use std::io::{self, Write};

use scalpel_model::task::{Model, TaskKind};

/// The hierarchy as an indented tree: top-level types by count, each with its children.
pub fn write_tree(w: &mut impl Write, model: &Model) -> io::Result<()> {
    let supers = model
        .types
        .iter()
        .filter(|t| t.kind != TaskKind::Leaf)
        .count();
    writeln!(
        w,
        "task model: {} leaves, {} leaf types, {} task types, {} rounds (min support {})",
        model.leaves,
        model.types.len() - supers,
        supers,
        model.mining.rounds,
        model.mining.min_support
    )?;
    let mut top: Vec<usize> = (0..model.types.len())
        .filter(|&t| model.types[t].top_level > 0 && model.types[t].kind != TaskKind::Leaf)
        .collect();
    top.sort_by_key(|&t| (std::cmp::Reverse(model.types[t].top_level), t));
    for t in top {
        let ty = &model.types[t];
        writeln!(w, "{} ×{} (top level: {})", ty.name, ty.count, ty.top_level)?;
        children(w, model, t, 1, &mut vec![t])?;
    }
    let loose: u64 = model
        .types
        .iter()
        .filter(|t| t.kind == TaskKind::Leaf)
        .map(|t| t.top_level)
        .sum();
    writeln!(w, "unclustered leaves: {loose}")
}

fn children(
    w: &mut impl Write,
    model: &Model,
    t: usize,
    indent: usize,
    path: &mut Vec<usize>,
) -> io::Result<()> {
    let ty = &model.types[t];
    for c in &ty.children {
        let child = &model.types[c.ty.index()];
        let per = c.count as f64 / ty.count.max(1) as f64;
        writeln!(
            w,
            "{:w$}{} ×{:.3} per occurrence ({} in all)",
            "",
            child.name,
            per,
            c.count,
            w = indent * 2
        )?;
        if !path.contains(&(c.ty.index())) {
            path.push(c.ty.index());
            children(w, model, c.ty.index(), indent + 1, path)?;
            path.pop();
        }
    }
    Ok(())
}
