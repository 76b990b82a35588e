//! What a drawing can hold: Graphviz's layout time grows steeply with edges and nested boxes, and
//! a reader takes in a few dozen boxes, not hundreds. Every drawing decides what to draw from
//! these limits before Graphviz runs, keeping the heaviest nodes and edges, and says in the
//! picture what it left out.
//!
//! The limits come from timing `dot` on real models (`scripts/bench-draw.sh` prints the figures;
//! `docs/BENCHMARKS.md` keeps them): an nginx model of 41 nodes in 33 boxes took 0.04 s with its
//! 100 heaviest edges, 2.7 s with 250 and 7.2 s with all 339.

use super::graphviz::quote;

/// The most nodes a drawing holds.
pub const MAX_NODES: usize = 80;
/// The most edges a drawing holds.
pub const MAX_EDGES: usize = 160;
/// The most edges times boxes (clusters, plus one) a drawing holds: layout time grows with both
/// at once.
pub const MAX_COST: usize = 4_000;

/// The most edges a drawing with `boxes` clusters holds.
pub fn edge_budget(boxes: usize) -> usize {
    MAX_EDGES.min(MAX_COST / (boxes + 1)).max(1)
}

/// The indices of the `max` heaviest of `weights` (ties to the lower index), in index order.
pub fn heaviest(weights: &[u64], max: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..weights.len()).collect();
    if weights.len() > max {
        order.sort_by(|&a, &b| weights[b].cmp(&weights[a]).then(a.cmp(&b)));
        order.truncate(max);
        order.sort_unstable();
    }
    order
}

/// `160 of 402 edges (the heaviest by count)` when fewer than all were drawn.
pub fn cut(what: &str, drawn: usize, all: usize, how: &str) -> Option<String> {
    (drawn < all).then(|| format!("{drawn} of {all} {what} ({how})"))
}

/// The DOT statement that writes what a drawing left out at the top of the picture: `drawn: 80
/// of 120 leaf types (…), 160 of 402 edges (…); graph.json has everything`. `None` when nothing
/// was left out.
pub fn note_line(cuts: impl IntoIterator<Item = String>, everything_in: &str) -> Option<String> {
    let cuts: Vec<String> = cuts.into_iter().collect();
    (!cuts.is_empty()).then(|| {
        let note = format!("drawn: {}; {everything_in} has everything", cuts.join(", "));
        format!(
            "  label={}; labelloc=t; labeljust=l; fontname=\"Helvetica\"; fontsize=11;",
            quote(&note)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_heaviest_are_kept_in_their_order() {
        assert_eq!(heaviest(&[5, 1, 9, 5, 0], 3), vec![0, 2, 3]);
        assert_eq!(heaviest(&[1, 2], 5), vec![0, 1]);
    }

    #[test]
    fn boxes_shrink_the_edge_budget() {
        assert_eq!(edge_budget(0), MAX_EDGES);
        assert_eq!(edge_budget(39), MAX_COST / 40);
    }

    #[test]
    fn a_note_names_only_what_was_cut() {
        assert_eq!(cut("nodes", 3, 3, "x"), None);
        assert_eq!(note_line(cut("nodes", 3, 3, "x"), "f"), None);
        let line = note_line(
            [cut("nodes", 3, 3, "x"), cut("edges", 2, 9, "the heaviest")]
                .into_iter()
                .flatten(),
            "m.json",
        );
        assert_eq!(
            line.as_deref(),
            Some("  label=\"drawn: 2 of 9 edges (the heaviest); m.json has everything\"; labelloc=t; labeljust=l; fontname=\"Helvetica\"; fontsize=11;")
        );
    }
}
