//! The hierarchy as an indented tree (`model-tree.txt`, and what `scalpel infer` prints).

use std::io::{self, Write};

use scalpel_model::task::{Model, TaskKind, TaskType};

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
    let tree = Tree {
        model,
        iterations: model.types.iter().map(iteration_range).collect(),
    };
    for t in top {
        let ty = &model.types[t];
        writeln!(w, "{} ×{} (top level: {})", ty.name, ty.count, ty.top_level)?;
        tree.children(w, t, 1, &mut vec![t])?;
    }
    let loose: u64 = model
        .types
        .iter()
        .filter(|t| t.kind == TaskKind::Leaf)
        .map(|t| t.top_level)
        .sum();
    writeln!(w, "unclustered leaves: {loose}")
}

/// Up to this many variants of a type are listed; the rest are counted.
const VARIANTS_SHOWN: usize = 4;

/// A type's variants, one line each: `variant 41%: + write_log, read_log` (`core alone` for the
/// core with nothing added).
fn variants(w: &mut impl Write, model: &Model, t: usize, indent: usize) -> io::Result<()> {
    let ty = &model.types[t];
    for v in ty.variants.iter().take(VARIANTS_SHOWN) {
        let share = 100.0 * v.count as f64 / ty.count.max(1) as f64;
        let what = if v.extra.is_empty() {
            "core alone".to_owned()
        } else {
            let steps: Vec<String> = v
                .extra
                .iter()
                .map(|c| {
                    let name = model
                        .types
                        .get(c.ty.index())
                        .map_or("?", |x| x.name.as_str());
                    if c.count > 1 {
                        format!("{name} ×{}", c.count)
                    } else {
                        name.to_owned()
                    }
                })
                .collect();
            format!("+ {}", steps.join(", "))
        };
        writeln!(
            w,
            "{:w$}variant {share:.1}% ({}): {what}",
            "",
            v.count,
            w = indent * 2
        )?;
    }
    if ty.variants.len() > VARIANTS_SHOWN {
        let rest: u64 = ty.variants[VARIANTS_SHOWN..].iter().map(|v| v.count).sum();
        writeln!(
            w,
            "{:w$}{} more variants ({rest} occurrences)",
            "",
            ty.variants.len() - VARIANTS_SHOWN,
            w = indent * 2
        )?;
    }
    Ok(())
}

/// A loop's fewest, most and median iterations, over its occurrences.
fn iteration_range(ty: &TaskType) -> Option<(u32, u32, u32)> {
    let mut v: Vec<u32> = ty.occurrences.iter().filter_map(|o| o.iterations).collect();
    v.sort_unstable();
    Some((*v.first()?, *v.last()?, v[(v.len() - 1) / 2]))
}

/// The model, and what is worked out once per type although the tree may show a type under
/// many parents (a loop of a million occurrences under a hundred of them was sorted a hundred
/// times: 7.8 s of a 10M-event `infer`).
struct Tree<'m> {
    model: &'m Model,
    /// Per type, [`iteration_range`].
    iterations: Vec<Option<(u32, u32, u32)>>,
}

impl Tree<'_> {
    fn children(
        &self,
        w: &mut impl Write,
        t: usize,
        indent: usize,
        path: &mut Vec<usize>,
    ) -> io::Result<()> {
        let model = self.model;
        let ty = &model.types[t];
        variants(w, model, t, indent)?;
        // A loop's iteration counts: `iterations 1–14, median 3`.
        if let Some((least, most, median)) = self.iterations[t] {
            writeln!(
                w,
                "{:w$}iterations {least}–{most}, median {median}",
                "",
                w = indent * 2
            )?;
        }
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
                self.children(w, c.ty.index(), indent + 1, path)?;
                path.pop();
            }
        }
        Ok(())
    }
}

/// Lines of the tree `scalpel infer` prints; the whole tree is in `model-tree.txt`.
pub const TREE_HEAD_LINES: usize = 40;

/// The top of the tree: its first `max_lines` lines, then one saying how many more are in
/// `file` (nginx's tree was 49,757 lines: a terminal shows its last screen, not its top).
pub fn write_tree_head(
    w: &mut impl Write,
    model: &Model,
    max_lines: usize,
    file: &str,
) -> io::Result<()> {
    let mut head = Head {
        inner: w,
        left: max_lines,
        cut: 0,
    };
    write_tree(&mut head, model)?;
    if head.cut > 0 {
        writeln!(
            head.inner,
            "… {} more line{} in {file}",
            head.cut,
            if head.cut == 1 { "" } else { "s" }
        )?;
    }
    Ok(())
}

/// Passes on whole lines while `left` lasts, and counts the lines it drops.
struct Head<'a, W: Write> {
    inner: &'a mut W,
    left: usize,
    cut: usize,
}

impl<W: Write> Write for Head<'_, W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut rest = buf;
        while !rest.is_empty() {
            let end = rest
                .iter()
                .position(|&b| b == b'\n')
                .map_or(rest.len(), |i| i + 1);
            let (line, after) = rest.split_at(end);
            if self.left > 0 {
                self.inner.write_all(line)?;
            }
            if line.ends_with(b"\n") {
                if self.left > 0 {
                    self.left -= 1;
                } else {
                    self.cut += 1;
                }
            }
            rest = after;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_head_keeps_whole_lines_and_counts_the_rest() {
        let mut out = Vec::new();
        let mut head = Head {
            inner: &mut out,
            left: 2,
            cut: 0,
        };
        head.write_all(b"one\ntw").unwrap();
        head.write_all(b"o\nthree\nfour\n").unwrap();
        assert_eq!(head.cut, 2);
        assert_eq!(out, b"one\ntwo\n");
    }
}
