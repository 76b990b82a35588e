//! Loops of loops over one body are one loop.
//!
//! A loop is found as a run of one symbol along a thread's strong program order. When something
//! between two runs is contracted away in a later round, the runs are adjacent again and become a
//! loop whose body is the first loop: `loop: loop: loop: ap_queue_push_socket` on Apache, twenty
//! deep on nginx. To a reader that is one loop that ran a varying number of times. A kept loop
//! whose body is a kept loop (or one already collapsed into a loop) is collapsed into that inner
//! loop: its nodes take the inner loop's class, the inner loops' nodes under them are hidden, and
//! each node's iterations are the sum of theirs, so the model has one loop type over the body
//! with the distribution of iteration counts in its occurrences.

use super::canon::Classes;
use super::ix::{IxVec, NodeIx, SymIx};
use super::variants::{parents, Folds};
use super::work::{Rule, Work};

/// Collapses nested loops (see the module docs); returns whether any was collapsed.
/// `iterations[n]`, when not 0, is a collapsed node's iteration count.
pub(super) fn collapse(
    work: &Work,
    classes: &Classes,
    class: &mut IxVec<NodeIx, SymIx>,
    by_class: &mut IxVec<SymIx, Vec<NodeIx>>,
    kept: &IxVec<SymIx, bool>,
    folds: &mut Folds,
    iterations: &mut IxVec<NodeIx, u32>,
) -> bool {
    let loop_body = |c: SymIx| match &work.syms[c].rule {
        Rule::Loop { body, .. } => Some(classes.of[*body]),
        _ => None,
    };
    // Where each class went: itself, or the loop it was collapsed into.
    let mut into: IxVec<SymIx, SymIx> = work.syms.indices().collect();
    let resolve = |into: &IxVec<SymIx, SymIx>, mut c: SymIx| {
        // Bounded by the number of classes; each step goes to a class collapsed earlier.
        for _ in 0..into.len() {
            if into[c] == c {
                break;
            }
            c = into[c];
        }
        c
    };
    let mut order: Vec<SymIx> = work
        .syms
        .indices()
        .filter(|&c| kept[c] && !by_class[c].is_empty() && loop_body(c).is_some())
        .collect();
    // Inner loops first: a loop's body was made before the loop, and a class is numbered by its
    // first symbol.
    order.sort_unstable();
    let mut any = false;
    let parent = parents(work, class, kept, &folds.hidden);
    for outer in order {
        let Some(body) = loop_body(outer) else {
            continue;
        };
        let inner = resolve(&into, body);
        if inner == outer || !kept[inner] || loop_body(inner).is_none() {
            continue;
        }
        let nodes = std::mem::take(&mut by_class[outer]);
        for &n in &nodes {
            class[n] = inner;
        }
        // The inner loops' nodes directly under the outer ones: hidden, their iterations
        // summed into their parent.
        let mut sum = vec![0u32; nodes.len()];
        let index: ahash::AHashMap<NodeIx, usize> =
            nodes.iter().enumerate().map(|(i, &n)| (n, i)).collect();
        for &k in &by_class[inner] {
            let p = parent[k];
            if let Some(&i) = p.is_some().then(|| index.get(&p)).flatten() {
                folds.hidden[k] = true;
                let own = match iterations[k] {
                    0 => work.nodes[k].children,
                    x => x,
                };
                sum[i] = sum[i].saturating_add(own);
            }
        }
        for (i, &n) in nodes.iter().enumerate() {
            iterations[n] = sum[i].max(1);
        }
        let list = &mut by_class[inner];
        list.retain(|&k| !folds.hidden[k]);
        list.extend(nodes);
        list.sort_unstable();
        into[outer] = inner;
        any = true;
    }
    any
}
