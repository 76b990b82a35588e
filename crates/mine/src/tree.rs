//! From the derivation to the task tree: which classes are kept as task types (inlining those
//! used only inside one parent) and each kept node's kept parent.
//!
//! Pair contraction builds every task two parts at a time, so most rules are intermediate
//! steps. A group class is inlined when every one of its nodes sits inside a kept node of one
//! single other class, one per parent node: it is then just a piece of that parent. What is left
//! are the leaf types, the loops, the top-level tasks and the groups that recur in several
//! places or several times per parent: the meaningful n-ary tasks. Inlining runs to a fixpoint,
//! since inlining a parent can make a child's parents all alike. A node that stands alone only
//! because the edge of a window of the trace cut its occurrence (a request whose start is in
//! the window before, see [`edge`]) does not count: in the whole trace it has its parent.
//!
//! A rule a replayed grammar brings (see `grammar`) is kept, folded or inlined as the tree of
//! the run that learned it decided ([`Choice`]), not by where its occurrences stand here: that
//! turns on a few odd occurrences (requests a recording's end cut, standing beside whole ones),
//! which a window in the middle of a trace does not hold, and every such window kept fewer
//! levels of a request than the model of the whole trace. A task made of tasks there is not
//! folded here either: a window that holds none of the listener's pushes the recording's end
//! left alone folded Apache's request into the worker's part of it (a variant, the push an
//! optional step), where the run that learned the rules had found the request a task of two
//! tasks. A task the learning run never looked at as a wrapper (the task it holds stood alone
//! too rarely there) may still be folded here, on this graph's evidence.
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
use super::input::MineLeaf;
use super::ix::{IxVec, LeafIx, NodeIx, SymIx};
use super::work::{program_kind, weak_kind, LeafEdge, Rule, Work};
use super::{edge, loops, same, variants};

/// What the tree made of a class, from the least structure to the most.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Choice {
    /// A piece of its one parent (or dropped: a coincidence of tasks, see [`variants`]).
    Inlined,
    /// A wrapper folded into the task it holds, as a variant of it (see [`variants`]).
    Folded,
    /// A task type.
    Kept,
    /// A task type made of tasks: looked at as a wrapper of one, and not folded because its
    /// other part also stands alone and shares a causal edge with it (see [`variants`]).
    Composite,
}

/// A replayed rule: its symbol here, its symbol where it was learned, and what the learning
/// run's tree made of its class.
pub(crate) type Replayed = (SymIx, SymIx, Choice);

/// The kept tree.
pub(super) struct Tree {
    /// Class of each node.
    pub class: IxVec<NodeIx, SymIx>,
    /// Whether each class is a task type.
    pub kept: IxVec<SymIx, bool>,
    /// For each node of the tree: its nearest ancestor in the tree, or [`NodeIx::NONE`].
    pub kept_parent: IxVec<NodeIx, NodeIx>,
    /// Per node: a task's node whose wrapper became that task's occurrence in its place (see
    /// [`super::variants`]); not a node of the tree.
    pub hidden: IxVec<NodeIx, bool>,
    /// Per node: when it is a wrapper folded into the task it holds, that task's node.
    pub core_of: IxVec<NodeIx, NodeIx>,
    /// Per node: a collapsed loop's iterations (see [`super::loops`]); 0 for the others.
    pub iterations: IxVec<NodeIx, u32>,
    /// Per class: whether it was folded, as a wrapper, into the task it holds.
    pub folded: IxVec<SymIx, bool>,
    /// Per class: whether it is a task made of tasks (see [`Choice::Composite`]).
    pub composite: IxVec<SymIx, bool>,
}

impl Tree {
    /// What the tree made of class `c`.
    pub(super) fn choice(&self, c: SymIx) -> Choice {
        if self.folded[c] {
            Choice::Folded
        } else if !self.kept[c] {
            Choice::Inlined
        } else if self.composite[c] {
            Choice::Composite
        } else {
            Choice::Kept
        }
    }

    /// Whether node `n` is a node of the tree.
    pub(super) fn is_kept(&self, n: NodeIx) -> bool {
        self.kept[self.class[n]] && !self.hidden[n]
    }

    fn kept_state(&self) -> Kept<'_> {
        Kept {
            class: &self.class,
            kept: &self.kept,
            hidden: &self.hidden,
        }
    }
}

/// What decides whether a node is a node of the tree: its class, whether that is kept, and
/// whether a fold hid the node.
#[derive(Clone, Copy)]
struct Kept<'a> {
    class: &'a IxVec<NodeIx, SymIx>,
    kept: &'a IxVec<SymIx, bool>,
    hidden: &'a IxVec<NodeIx, bool>,
}

/// The nearest ancestor of `n` that is a node of the tree (its class kept, not hidden by a fold).
fn nearest_kept(work: &Work, tree: Kept<'_>, n: NodeIx) -> NodeIx {
    let Kept {
        class,
        kept,
        hidden,
    } = tree;
    let mut p = work.nodes[n].parent;
    while p.is_some() && (!kept[class[p]] || hidden[p]) {
        p = work.nodes[p].parent;
    }
    p
}

/// The nearest ancestor of `n` that is a node of the finished `tree`.
pub(crate) fn nearest_kept_of(work: &Work, tree: &Tree, n: NodeIx) -> NodeIx {
    nearest_kept(work, tree.kept_state(), n)
}

/// Whether class `c`'s nodes sit under kept parents of two or more classes (top level counting
/// as one).
fn under_several(work: &Work, tree: Kept<'_>, nodes: &[NodeIx], leaves: &[MineLeaf]) -> bool {
    let mut first = None;
    nodes.iter().any(|&n| {
        let p = nearest_kept(work, tree, n);
        if p.is_none() && remnant(work, tree, leaves, n) {
            return false;
        }
        let pc = if p.is_none() {
            SymIx::NONE
        } else {
            tree.class[p]
        };
        *first.get_or_insert(pc) != pc
    })
}

/// Whether node `n`, standing alone, is what a window's edge left of an occurrence (see
/// [`edge`]).
fn remnant(work: &Work, tree: Kept<'_>, leaves: &[MineLeaf], n: NodeIx) -> bool {
    let alone = |l: LeafIx| nearest_kept(work, tree, NodeIx::new(l.index())).is_none();
    edge::remnant(work, leaves, alone, n)
}

/// How many of class `c`'s `nodes` sit elsewhere than directly under a node of class `w` (under
/// another kept parent, or at the top level).
fn stands_elsewhere(work: &Work, tree: Kept<'_>, nodes: &[NodeIx], w: SymIx) -> u32 {
    nodes
        .iter()
        .filter(|&&n| {
            let p = nearest_kept(work, tree, n);
            p.is_none() || tree.class[p] != w
        })
        .count() as u32
}

/// Per leaf: whether it touches nothing but its own thread's program order (no causal edge in
/// or out). Given (from, to, kind index) leaf edges.
pub(super) fn local_leaves(n_leaves: usize, edges: &[LeafEdge]) -> IxVec<LeafIx, bool> {
    let (prog, weak) = (program_kind(), weak_kind());
    let mut local = IxVec::from_elem(true, n_leaves);
    for &(a, b, k) in edges {
        if k != weak && k != prog {
            local[a] = false;
            local[b] = false;
        }
    }
    local
}

/// What [`fold_contexts`] needs besides the tree: which leaves are context, and how often a
/// task must stand elsewhere.
#[derive(Clone, Copy)]
struct ContextRule<'a> {
    /// Per leaf: no edge but program order (see [`local_leaves`]).
    local: &'a IxVec<LeafIx, bool>,
    /// The miner's `--min-support`.
    min_support: u32,
}

/// The tree as [`fold_contexts`] changes it.
struct TreeState<'a> {
    class: &'a mut IxVec<NodeIx, SymIx>,
    by_class: &'a mut IxVec<SymIx, Vec<NodeIx>>,
    kept: &'a mut IxVec<SymIx, bool>,
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
fn fold_contexts(
    work: &Work,
    rule: ContextRule<'_>,
    groups: &[SymIx],
    tree: TreeState<'_>,
) -> bool {
    let ContextRule { local, min_support } = rule;
    let TreeState {
        class,
        by_class,
        kept,
        folds,
    } = tree;
    let is_group = |c: SymIx| matches!(work.syms[c].rule, Rule::Pair { .. });
    let is_leaf = |c: SymIx| matches!(work.syms[c].rule, Rule::Leaf(_));
    // The kept nodes directly under each kept node, in node order, as offsets into one array
    // (a map of vectors cost a quarter of the miner's time at 10^7 leaves): those under node
    // `p` are `kids.of(p)`.
    let parent = variants::parents(work, class, kept, &folds.hidden);
    let kids = variants::children(&parent);
    let under = |n: NodeIx| kids.of(n);
    let context = |n: NodeIx, class: &IxVec<NodeIx, SymIx>| {
        is_leaf(class[n]) && work.leaves_of(n).all(|l| local[l])
    };
    // Classes changed in this pass: a wrapper of a wrapper waits for the next one.
    let mut touched = IxVec::from_elem(false, work.syms.len());
    let mut changed = false;
    for &w in groups {
        if !kept[w] || touched[w] || folds.barred[w] {
            continue;
        }
        let mut core = None;
        let mut cores = Vec::with_capacity(by_class[w].len());
        let mut once = true;
        let only_context = by_class[w].iter().all(|&n| {
            let kids = under(n);
            let Some(&t) = kids.iter().find(|&&k| is_group(class[k])) else {
                return false;
            };
            let tc = class[t];
            once &= kids.iter().filter(|&&k| class[k] == tc).count() == 1;
            cores.push(t);
            *core.get_or_insert(tc) == tc
                && kids.iter().all(|&k| class[k] == tc || context(k, class))
        });
        let Some(core) = core.filter(|&c| only_context && !touched[c]) else {
            continue;
        };
        let tree = Kept {
            class,
            kept,
            hidden: &folds.hidden,
        };
        let elsewhere = stands_elsewhere(work, tree, &by_class[core], w);
        if elsewhere < min_support {
            continue;
        }
        touched[w] = true;
        touched[core] = true;
        changed = true;
        if once {
            let fold = variants::Fold { wrapper: w, core };
            fold.apply(
                &cores,
                class,
                by_class,
                (&mut folds.hidden, &mut folds.core_of, &mut folds.folded),
            );
        } else {
            kept[w] = false;
        }
    }
    changed
}

/// Decides the kept classes. `local[l]`: leaf `l` has no edge but program order (see
/// [`local_leaves`]); `leaves`: the graph's leaves as the miner has them; `forced`: rules of a
/// replayed grammar with whether the tree that learned them kept them (see below).
pub(super) fn build(
    work: &Work,
    classes: &Classes,
    (local, leaves): (&IxVec<LeafIx, bool>, &[MineLeaf]),
    causal: &variants::Causal,
    min_support: u32,
    forced: &[Replayed],
) -> Tree {
    let mut class: IxVec<NodeIx, SymIx> = work.nodes.iter().map(|n| classes.of[n.sym]).collect();
    let n_syms = work.syms.len();
    let mut kept = IxVec::from_elem(true, n_syms);
    // Whether a class is inlined turns on where its few odd occurrences stand (a request the
    // recording's end cut, beside whole ones), which a part of a trace may not hold: a rule a
    // replayed grammar brings is kept, folded or inlined as where it was learned.
    let mut fixed: IxVec<SymIx, Option<Choice>> = IxVec::from_elem(None, n_syms);
    for &(s, _, k) in forced {
        let c = classes.of[s];
        fixed[c] = Some(fixed[c].map_or(k, |f| f.max(k)));
    }
    let mut folds = variants::Folds::new(work.nodes.len(), n_syms);
    for (c, f) in fixed.iter_enumerated() {
        match f {
            Some(Choice::Inlined) => kept[c] = false,
            Some(Choice::Composite) => folds.barred[c] = true,
            Some(Choice::Kept | Choice::Folded) | None => {}
        }
    }
    let mut by_class: IxVec<SymIx, Vec<NodeIx>> = IxVec::from_elem(Vec::new(), n_syms);
    for (i, &c) in class.iter_enumerated() {
        by_class[c].push(i);
    }
    let mut iterations = IxVec::from_elem(0u32, work.nodes.len());
    let groups: Vec<SymIx> = work
        .syms
        .indices()
        .filter(|&c| !by_class[c].is_empty() && matches!(work.syms[c].rule, Rule::Pair { .. }))
        .collect();
    // The two children of each pair node.
    let mut kids = IxVec::from_elem([NodeIx::NONE; 2], work.nodes.len());
    for (i, n) in work.nodes.iter_enumerated() {
        if n.parent.is_some() {
            let k = &mut kids[n.parent];
            let slot = usize::from(k[0].is_some());
            k[slot] = i;
        }
    }
    loop {
        let mut changed = false;
        // Whether a kept class's nodes sit under kept parents of two or more classes (top
        // level counting as one), memoized for this pass.
        let mut shared: IxVec<SymIx, Option<bool>> = IxVec::from_elem(None, n_syms);
        let mut is_shared = |c: SymIx, kept: &IxVec<SymIx, bool>| -> bool {
            *shared[c].get_or_insert_with(|| {
                let tree = Kept {
                    class: &class,
                    kept,
                    hidden: &folds.hidden,
                };
                under_several(work, tree, &by_class[c], leaves)
            })
        };
        for &c in &groups {
            if !kept[c] || fixed[c].is_some() {
                continue;
            }
            let beside_shared = by_class[c].iter().all(|&n| {
                let p = work.nodes[n].parent;
                if p.is_none() || !matches!(work.syms[work.nodes[p].sym].rule, Rule::Pair { .. }) {
                    return false;
                }
                let k = kids[p];
                let sib = if k[0] == n { k[1] } else { k[0] };
                sib.is_some() && {
                    let sc = class[sib];
                    sc != c && kept[sc] && is_shared(sc, &kept)
                }
            });
            if beside_shared {
                continue;
            }
            let mut parent_class = SymIx::NONE;
            let mut seen = AHashSet::new();
            let inline = by_class[c].iter().all(|&n| {
                let tree = Kept {
                    class: &class,
                    kept: &kept,
                    hidden: &folds.hidden,
                };
                let p = nearest_kept(work, tree, n);
                // What a window's edge left of an occurrence stands alone only there.
                if p.is_none() && remnant(work, tree, leaves, n) {
                    return true;
                }
                if p.is_none() || !seen.insert(p) {
                    return false;
                }
                let pc = class[p];
                if parent_class.is_none() {
                    parent_class = pc;
                }
                pc == parent_class && pc != c && !matches!(work.syms[pc].rule, Rule::Loop { .. })
            });
            if inline && parent_class.is_some() {
                kept[c] = false;
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
                (min_support, leaves),
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
    let folded = (&folds.hidden, &folds.core_of);
    same::merge_equal(
        work,
        causal,
        &kept,
        &kept_parent,
        folded,
        &by_class,
        &mut class,
    );
    Tree {
        class,
        kept,
        kept_parent,
        hidden: folds.hidden,
        core_of: folds.core_of,
        iterations,
        folded: folds.folded,
        composite: folds.composite,
    }
}
