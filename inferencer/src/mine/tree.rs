//! From the derivation to the task tree: which classes are kept as task types (inlining those
//! used only inside one parent) and each kept node's kept parent.
//!
//! Pair contraction builds every task two parts at a time, so most rules are intermediate
//! steps. A group class is inlined when every one of its nodes sits inside a kept node of one
//! single other class, one per parent node: it is then just a piece of that parent. What is left
//! are the leaf types, the loops, the top-level tasks and the groups that recur in several
//! places or several times per parent: the meaningful n-ary tasks. Inlining runs to a fixpoint,
//! since inlining a parent can make a child's parents all alike.
//!
//! One exception: a group paired with a task that recurs under different parents is kept. When
//! a task is a shared part followed (or preceded) by the rest, the rest is what tells it apart:
//! the Scalpel paper's local commit and remote ack both follow the same worker task (receive a
//! packet, dispatch it to the pool) and are tasks of their own, not pieces of "worker task and
//! then whatever came next".

use ahash::AHashSet;

use super::canon::Classes;
use super::work::{Rule, Work, NONE};

/// The kept tree.
pub struct Tree {
    /// Class of each node.
    pub class: Vec<u32>,
    /// Whether each class is a task type.
    pub kept: Vec<bool>,
    /// For each node whose class is kept: its nearest kept ancestor, or [`NONE`].
    pub kept_parent: Vec<u32>,
}

impl Tree {
    /// Whether node `n` is a node of the tree.
    pub fn is_kept(&self, n: u32) -> bool {
        self.kept[self.class[n as usize] as usize]
    }
}

fn nearest_kept(work: &Work, class: &[u32], kept: &[bool], n: u32) -> u32 {
    let mut p = work.nodes[n as usize].parent;
    while p != NONE && !kept[class[p as usize] as usize] {
        p = work.nodes[p as usize].parent;
    }
    p
}

/// Decides the kept classes.
pub fn build(work: &Work, classes: &Classes) -> Tree {
    let class: Vec<u32> = work
        .nodes
        .iter()
        .map(|n| classes.of[n.sym as usize])
        .collect();
    let n_syms = work.syms.len();
    let mut kept = vec![true; n_syms];
    let mut by_class: Vec<Vec<u32>> = vec![Vec::new(); n_syms];
    for (i, &c) in class.iter().enumerate() {
        by_class[c as usize].push(i as u32);
    }
    let groups: Vec<u32> = (0..n_syms as u32)
        .filter(|&c| {
            !by_class[c as usize].is_empty()
                && matches!(work.syms[c as usize].rule, Rule::Pair { .. })
        })
        .collect();
    // The two children of each pair node.
    let mut kids = vec![[NONE; 2]; work.nodes.len()];
    for (i, n) in work.nodes.iter().enumerate() {
        if n.parent != NONE {
            let k = &mut kids[n.parent as usize];
            let slot = usize::from(k[0] != NONE);
            k[slot] = i as u32;
        }
    }
    loop {
        let mut changed = false;
        // Whether a kept class's nodes sit under kept parents of two or more classes (top
        // level counting as one), memoized for this pass.
        let mut shared: Vec<Option<bool>> = vec![None; n_syms];
        let mut is_shared = |c: u32, kept: &[bool]| -> bool {
            *shared[c as usize].get_or_insert_with(|| {
                let mut first = None;
                by_class[c as usize].iter().any(|&n| {
                    let p = nearest_kept(work, &class, kept, n);
                    let pc = if p == NONE { NONE } else { class[p as usize] };
                    *first.get_or_insert(pc) != pc
                })
            })
        };
        for &c in &groups {
            if !kept[c as usize] {
                continue;
            }
            let beside_shared = by_class[c as usize].iter().all(|&n| {
                let p = work.nodes[n as usize].parent;
                if p == NONE
                    || !matches!(
                        work.syms[work.nodes[p as usize].sym as usize].rule,
                        Rule::Pair { .. }
                    )
                {
                    return false;
                }
                let k = kids[p as usize];
                let sib = if k[0] == n { k[1] } else { k[0] };
                sib != NONE && {
                    let sc = class[sib as usize];
                    sc != c && kept[sc as usize] && is_shared(sc, &kept)
                }
            });
            if beside_shared {
                continue;
            }
            let mut parent_class = NONE;
            let mut seen = AHashSet::new();
            let inline = by_class[c as usize].iter().all(|&n| {
                let p = nearest_kept(work, &class, &kept, n);
                if p == NONE || !seen.insert(p) {
                    return false;
                }
                let pc = class[p as usize];
                if parent_class == NONE {
                    parent_class = pc;
                }
                pc == parent_class
                    && pc != c
                    && !matches!(work.syms[pc as usize].rule, Rule::Loop { .. })
            });
            if inline {
                kept[c as usize] = false;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    let kept_parent = (0..work.nodes.len() as u32)
        .map(|n| {
            if kept[class[n as usize] as usize] {
                nearest_kept(work, &class, &kept, n)
            } else {
                NONE
            }
        })
        .collect();
    Tree {
        class,
        kept,
        kept_parent,
    }
}
