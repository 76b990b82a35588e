//! The model's golden rows: what the miner made of a case's graph, as plain text lines, one per
//! row, in id order within each kind of row.
//!
//! Structure only: how mining went (rounds, rules, cycle edges dropped), each task type's kind,
//! level, counts, children, edges and variants, every occurrence with its leaves, parent,
//! iterations and variant, the top-level edges, and each leaf's parent occurrence. Task names
//! are left out: they come from frame names, which are text for people.

use std::fmt::Write;

use scalpel_model::graph::LeafId;
use scalpel_model::task::{Model, OccRef, TypeEdge};

fn occ(r: Option<OccRef>) -> String {
    r.map_or_else(|| "-".into(), |r| format!("K{}#{}", r.ty.index(), r.index))
}

/// Leaf ids as ranges: `L3,L5-L9`.
pub fn leaf_ranges(ids: &[LeafId]) -> String {
    let mut s = String::new();
    let mut i = 0;
    while i < ids.len() {
        let mut j = i;
        while j + 1 < ids.len() && ids[j + 1].index() == ids[j].index() + 1 {
            j += 1;
        }
        if !s.is_empty() {
            s.push(',');
        }
        let _ = write!(s, "L{}", ids[i].index());
        if j > i {
            let _ = write!(s, "-L{}", ids[j].index());
        }
        i = j + 1;
    }
    s
}

fn edge(s: &mut String, what: &str, e: &TypeEdge) {
    let _ = writeln!(
        s,
        "{what} K{} -> K{} {} x{}",
        e.from.index(),
        e.to.index(),
        e.kind.name(),
        e.count
    );
}

/// The rows of the model.
pub fn model_rows(m: &Model) -> String {
    let mut s = String::new();
    let i = &m.mining;
    let _ = writeln!(
        s,
        "mining leaves {} min_support {} rounds {} rules {} cycle_edges_dropped {}",
        m.leaves, i.min_support, i.rounds, i.rules, i.cycle_edges_dropped
    );
    for (k, t) in m.types.iter().enumerate() {
        let kind = format!("{:?}", t.kind).to_lowercase();
        let leaf = t
            .leaf_type
            .map_or_else(String::new, |l| format!(" leaf_type T{}", l.index()));
        let _ = writeln!(
            s,
            "task K{k} {kind} level {}{leaf} count {} top {}",
            t.level, t.count, t.top_level
        );
        for c in &t.children {
            let _ = writeln!(s, "child K{k} K{} x{}", c.ty.index(), c.count);
        }
        for e in &t.edges {
            edge(&mut s, &format!("edge K{k}:"), e);
        }
        for (v, var) in t.variants.iter().enumerate() {
            let extra: Vec<String> = var
                .extra
                .iter()
                .map(|c| format!("K{}x{}", c.ty.index(), c.count))
                .collect();
            let _ = writeln!(
                s,
                "variant K{k}/{v} count {} extra {}",
                var.count,
                extra.join(",")
            );
        }
        for (o, oc) in t.occurrences.iter().enumerate() {
            let _ = write!(
                s,
                "occ K{k}#{o} {} parent {}",
                leaf_ranges(oc.leaves.as_slice()),
                occ(oc.parent)
            );
            if let Some(n) = oc.iterations {
                let _ = write!(s, " iterations {n}");
            }
            if let Some(v) = oc.variant {
                let _ = write!(s, " variant {v}");
            }
            s.push('\n');
        }
    }
    for e in &m.top_edges {
        edge(&mut s, "top", e);
    }
    for (l, p) in m.leaf_parent.iter().enumerate() {
        let _ = writeln!(s, "parent L{l} {}", occ(*p));
    }
    s
}
