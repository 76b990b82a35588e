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
//!
//! The other way round, a group that only wraps a recurring task in steps with no edges of their
//! own (a thread's return to its queue) is that task in one context: it becomes a variant of the
//! task, the steps its optional ones (see [`fold_contexts`]).

use ahash::AHashSet;

use super::canon::Classes;
use super::work::{program_kind, weak_kind, Rule, Work, NONE};
use super::{loops, variants};

/// The kept tree.
pub(super) struct Tree {
    /// Class of each node.
    pub class: Vec<u32>,
    /// Whether each class is a task type.
    pub kept: Vec<bool>,
    /// For each node of the tree: its nearest ancestor in the tree, or [`NONE`].
    pub kept_parent: Vec<u32>,
    /// Per node: a task's node whose wrapper became that task's occurrence in its place (see
    /// [`super::variants`]); not a node of the tree.
    pub hidden: Vec<bool>,
    /// Per node: when it is a wrapper folded into the task it holds, that task's node.
    pub core_of: Vec<u32>,
    /// Per node: a collapsed loop's iterations (see [`super::loops`]); 0 for the others.
    pub iterations: Vec<u32>,
}

impl Tree {
    /// Whether node `n` is a node of the tree.
    pub(super) fn is_kept(&self, n: u32) -> bool {
        self.kept[self.class[n as usize] as usize] && !self.hidden[n as usize]
    }
}

/// The nearest ancestor of `n` that is a node of the tree (its class kept, not hidden by a fold).
fn nearest_kept(work: &Work, class: &[u32], kept: &[bool], hidden: &[bool], n: u32) -> u32 {
    let mut p = work.nodes[n as usize].parent;
    while p != NONE && (!kept[class[p as usize] as usize] || hidden[p as usize]) {
        p = work.nodes[p as usize].parent;
    }
    p
}

/// Whether class `c`'s nodes sit under kept parents of two or more classes (top level counting
/// as one).
fn under_several(
    work: &Work,
    class: &[u32],
    kept: &[bool],
    hidden: &[bool],
    nodes: &[u32],
) -> bool {
    let mut first = None;
    nodes.iter().any(|&n| {
        let p = nearest_kept(work, class, kept, hidden, n);
        let pc = if p == NONE { NONE } else { class[p as usize] };
        *first.get_or_insert(pc) != pc
    })
}

/// How many of class `c`'s `nodes` sit elsewhere than directly under a node of class `w` (under
/// another kept parent, or at the top level).
fn stands_elsewhere(
    work: &Work,
    class: &[u32],
    kept: &[bool],
    hidden: &[bool],
    nodes: &[u32],
    w: u32,
) -> u32 {
    nodes
        .iter()
        .filter(|&&n| {
            let p = nearest_kept(work, class, kept, hidden, n);
            p == NONE || class[p as usize] != w
        })
        .count() as u32
}

/// Per leaf: whether it touches nothing but its own thread's program order (no causal edge in
/// or out). Given (from, to, kind index) leaf edges.
pub(super) fn local_leaves(n_leaves: usize, edges: &[(u32, u32, u8)]) -> Vec<bool> {
    let (prog, weak) = (program_kind(), weak_kind());
    let mut local = vec![true; n_leaves];
    for &(a, b, k) in edges {
        if k != weak && k != prog {
            local[a as usize] = false;
            local[b as usize] = false;
        }
    }
    local
}

/// What [`fold_contexts`] needs besides the tree: which leaves are context, and how often a
/// task must stand elsewhere.
#[derive(Clone, Copy)]
struct ContextRule<'a> {
    /// Per leaf: no edge but program order (see [`local_leaves`]).
    local: &'a [bool],
    /// The miner's `--min-support`.
    min_support: u32,
}

/// The tree as [`fold_contexts`] changes it.
struct TreeState<'a> {
    class: &'a mut [u32],
    by_class: &'a mut [Vec<u32>],
    kept: &'a mut [bool],
    folds: &'a mut variants::Folds,
}

/// Folds the kept groups that are only context around a task into that task, as variants of
/// it: every node of one holds one kept group class (the task) and otherwise leaves with no
/// edge but program order (see [`local_leaves`]), and that task also stands elsewhere, at least
/// `min_support` times (one stray occurrence is no other place: with it, nginx's request,
/// 19,967 reads each joined to its offload, was taken apart into the offload and 19,967 lone
/// reads). A wrapper whose nodes hold the task twice (two requests and the steps between them)
/// is dropped instead: the tasks and the steps rise to its parent. Returns whether anything
/// changed.
///
/// Why: a thread's last step before it goes back for work varies with timing. An Apache
/// request (accept, push, read, write) was followed by the listener's return to `epoll_wait` or
/// by its next push, and by the worker's return to its queue, a lingering-close read or
/// nothing (the next connection was already queued); pair contraction wrapped the request in
/// every such combination, so that no wrapper was more than 40% of the requests and the
/// request itself, 89% of them, was never a top-level task. A wrapper that adds only such
/// steps, with no edge of their own but program order, to a task found elsewhere too is that
/// task in one context: its steps are the task's optional steps, done by a thread that was
/// finishing it, and belong to it (left at the top level, each such step was a type of its
/// own beside the request). A wrapper that adds work with edges of its own (the paper's local
/// commit: a mutation and an RPC around a send) is left to [`variants::fold`].
fn fold_contexts(work: &Work, rule: ContextRule<'_>, groups: &[u32], tree: TreeState<'_>) -> bool {
    let ContextRule { local, min_support } = rule;
    let TreeState {
        class,
        by_class,
        kept,
        folds,
    } = tree;
    let is_group = |c: u32| matches!(work.syms[c as usize].rule, Rule::Pair { .. });
    let is_leaf = |c: u32| matches!(work.syms[c as usize].rule, Rule::Leaf(_));
    // The kept nodes directly under each kept node, in node order, as offsets into one array
    // (a map of vectors cost a quarter of the miner's time at 10^7 leaves): those under node
    // `p` are `kids[start[p]..start[p + 1]]`.
    let parent = variants::parents(work, class, kept, &folds.hidden);
    let (start, kids) = variants::children(&parent);
    let under = |n: u32| &kids[start[n as usize] as usize..start[n as usize + 1] as usize];
    let context = |n: u32, class: &[u32]| {
        is_leaf(class[n as usize]) && work.leaves_of(n).all(|l| local[l as usize])
    };
    // Classes changed in this pass: a wrapper of a wrapper waits for the next one.
    let mut touched = vec![false; work.syms.len()];
    let mut changed = false;
    for &w in groups {
        if !kept[w as usize] || touched[w as usize] {
            continue;
        }
        let mut core = None;
        let mut cores = Vec::with_capacity(by_class[w as usize].len());
        let mut once = true;
        let only_context = by_class[w as usize].iter().all(|&n| {
            let kids = under(n);
            let Some(&t) = kids.iter().find(|&&k| is_group(class[k as usize])) else {
                return false;
            };
            let tc = class[t as usize];
            once &= kids.iter().filter(|&&k| class[k as usize] == tc).count() == 1;
            cores.push(t);
            *core.get_or_insert(tc) == tc
                && kids
                    .iter()
                    .all(|&k| class[k as usize] == tc || context(k, class))
        });
        let Some(core) = core.filter(|&c| only_context && !touched[c as usize]) else {
            continue;
        };
        let elsewhere = stands_elsewhere(
            work,
            class,
            kept,
            &folds.hidden,
            &by_class[core as usize],
            w,
        );
        if elsewhere < min_support {
            continue;
        }
        touched[w as usize] = true;
        touched[core as usize] = true;
        changed = true;
        if once {
            let fold = variants::Fold { wrapper: w, core };
            fold.apply(
                &cores,
                class,
                by_class,
                &mut folds.hidden,
                &mut folds.core_of,
            );
        } else {
            kept[w as usize] = false;
        }
    }
    changed
}

/// Decides the kept classes. `local[l]`: leaf `l` has no edge but program order (see
/// [`local_leaves`]).
pub(super) fn build(
    work: &Work,
    classes: &Classes,
    local: &[bool],
    causal: &variants::Causal,
    min_support: u32,
) -> Tree {
    let mut class: Vec<u32> = work
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
    let mut folds = variants::Folds::new(work.nodes.len());
    let mut iterations = vec![0u32; work.nodes.len()];
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
                under_several(work, &class, kept, &folds.hidden, &by_class[c as usize])
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
                let p = nearest_kept(work, &class, &kept, &folds.hidden, n);
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
            let tree = TreeState {
                class: &mut class,
                by_class: &mut by_class,
                kept: &mut kept,
                folds: &mut folds,
            };
            changed = fold_contexts(work, ContextRule { local, min_support }, &groups, tree);
        }
        if !changed {
            changed = variants::fold(
                work,
                &mut class,
                &mut by_class,
                &mut kept,
                causal,
                min_support,
                &mut folds,
            );
        }
        if !changed {
            changed = loops::collapse(
                work,
                classes,
                &mut class,
                &mut by_class,
                &kept,
                &mut folds,
                &mut iterations,
            );
        }
        if !changed {
            break;
        }
    }
    let kept_parent = variants::parents(work, &class, &kept, &folds.hidden);
    Tree {
        class,
        kept,
        kept_parent,
        hidden: folds.hidden,
        core_of: folds.core_of,
        iterations,
    }
}
