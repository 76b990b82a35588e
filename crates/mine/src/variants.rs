//! Variants: a task found with optional steps around it is that task, not a new one.
//!
//! Pair contraction wraps a task in whatever its threads happened to do next to it: PostgreSQL's
//! statement with or without a commit flush or a lock wait, Apache's request with or without
//! the worker's return to its queue or the listener's return to `epoll_wait`. Each combination
//! became a type of its own (about 190 variants of the PostgreSQL statement), and the task
//! itself held a fraction of the requests.
//!
//! A kept group `W` is looked at when every one of its nodes holds, as a direct part, a node of
//! one task `C` that stands alone at the top level at least `--min-support` times (a request,
//! not a piece of one: the paper's send, which never stands alone, is left alone):
//!
//! - **Variant.** Each node holds `C` once, and otherwise only extra steps: leaves, or groups
//!   and loops that never stand alone (pieces, not tasks) and hold no `C`, neither in this node
//!   nor, through their class, anywhere else (the fold makes the steps parts of `C`, and `C`
//!   must not hold itself: see [`super::contains`]). `W` is `C` with
//!   optional steps: its nodes become `C`'s occurrences, `C`'s node inside each is hidden, and
//!   the model records each occurrence's variant (the leaf types it adds to the core).
//! - **Coincidence.** The node also holds `C` again or a task that stands alone, and that other
//!   part shares no causal edge with the rest of `W`, only its thread's program order: a
//!   second request, or the listener's next push, beside a request. `W` is dropped, and `C` and
//!   the rest rise to its parent, each a task of its own.
//! - Otherwise `W` is a task made of tasks (the listener's push and the worker's response,
//!   joined by a hand-off; a request and its connection's lingering close) and is kept.
//!
//! Limits: the core must be one node directly under the wrapper. A request whose first step
//! differs (a statement read after a wait, or at once) is a different core, so a different
//! type; those are not variants. An extra step inside the core (a lock wait that cuts one of its
//! leaves in two) changes the core's leaves, so it is a different type too.

use super::contains::Contains;
use super::edge;
use super::input::MineLeaf;
use super::ix::{IxLists, IxVec, LeafIx, NodeIx, SymIx};
use super::work::{program_kind, weak_kind, LeafEdge, Rule, Work};

/// The folds made: which nodes are hidden (the core of a folded wrapper) and, for a folded
/// wrapper's node, the core node it holds.
pub(super) struct Folds {
    /// Per node: a core whose wrapper took its place.
    pub hidden: IxVec<NodeIx, bool>,
    /// Per node: the core node it holds, when it is a folded wrapper; else [`NodeIx::NONE`].
    pub core_of: IxVec<NodeIx, NodeIx>,
    /// Per class: whether it was folded, as a wrapper, into the task it holds.
    pub folded: IxVec<SymIx, bool>,
    /// Per class: whether it was looked at as a wrapper and found a task made of tasks (its
    /// other part also stands alone and shares a causal edge with the core: see the module).
    pub composite: IxVec<SymIx, bool>,
    /// Per class: whether it must not be folded (a replayed grammar's choice: see
    /// `tree::build`).
    pub barred: IxVec<SymIx, bool>,
}

/// Kept, visible nodes' nearest kept, visible ancestors.
pub(super) fn parents(
    work: &Work,
    class: &IxVec<NodeIx, SymIx>,
    kept: &IxVec<SymIx, bool>,
    hidden: &IxVec<NodeIx, bool>,
) -> IxVec<NodeIx, NodeIx> {
    let visible = |n: NodeIx| kept[class[n]] && !hidden[n];
    work.nodes
        .indices()
        .map(|n| {
            if !visible(n) {
                return NodeIx::NONE;
            }
            let mut p = work.nodes[n].parent;
            while p.is_some() && !visible(p) {
                p = work.nodes[p].parent;
            }
            p
        })
        .collect()
}

/// Children lists from parent pointers, in node order, in one array (a map of vectors cost a
/// quarter of the miner's time at 10^7 leaves).
pub(super) fn children(parent: &IxVec<NodeIx, NodeIx>) -> IxLists<NodeIx, NodeIx> {
    let pairs = parent
        .iter_enumerated()
        .filter(|&(_, &p)| p.is_some())
        .map(|(c, &p)| (p, c));
    IxLists::new(parent.len(), pairs)
}

impl Folds {
    /// No folds yet, for `n` nodes and `n_syms` classes.
    pub(super) fn new(n: usize, n_syms: usize) -> Folds {
        Folds {
            hidden: IxVec::from_elem(false, n),
            core_of: IxVec::from_elem(NodeIx::NONE, n),
            folded: IxVec::from_elem(false, n_syms),
            composite: IxVec::from_elem(false, n_syms),
            barred: IxVec::from_elem(false, n_syms),
        }
    }
}

/// Leaf-level causal edges (neither kind of program order), both directions, by leaf. Taken
/// from the leaf edges before mining (the miner drops the edges its nodes swallow).
pub(super) struct Causal(IxLists<LeafIx, LeafIx>);

impl Causal {
    /// From the (from, to, kind index) leaf edges.
    pub(super) fn new(n: usize, edges: &[LeafEdge]) -> Causal {
        let (prog, weak) = (program_kind(), weak_kind());
        let list = edges
            .iter()
            .filter(move |&&(_, _, k)| k != prog && k != weak)
            .flat_map(|&(a, b, _)| [(a, b), (b, a)]);
        Causal(IxLists::new(n, list))
    }

    pub(super) fn of(&self, leaf: LeafIx) -> &[LeafIx] {
        self.0.of(leaf)
    }

    /// Which of `parts` (nodes) are joined to another of them by a causal edge.
    fn joined(&self, work: &Work, parts: &[NodeIx]) -> Vec<bool> {
        let mut part_of: ahash::AHashMap<LeafIx, usize> = ahash::AHashMap::new();
        for (i, &p) in parts.iter().enumerate() {
            for l in work.leaves_of(p) {
                part_of.insert(l, i);
            }
        }
        let mut joined = vec![false; parts.len()];
        for (i, &p) in parts.iter().enumerate() {
            for l in work.leaves_of(p) {
                for &m in self.of(l) {
                    if let Some(&j) = part_of.get(&m) {
                        if j != i {
                            joined[i] = true;
                            joined[j] = true;
                        }
                    }
                }
            }
        }
        joined
    }
}

/// What [`Fold::apply`] changes of [`Folds`]: hidden, core_of, folded.
pub(super) type FoldsMut<'a> = (
    &'a mut IxVec<NodeIx, bool>,
    &'a mut IxVec<NodeIx, NodeIx>,
    &'a mut IxVec<SymIx, bool>,
);

/// A wrapper class and the task class its nodes hold once each.
pub(super) struct Fold {
    /// The wrapper: its nodes become occurrences of `core`.
    pub wrapper: SymIx,
    /// The task it is a variant of.
    pub core: SymIx,
}

impl Fold {
    /// Makes every node of the wrapper an occurrence of the core, hiding the core's node inside
    /// it (`cores[i]`: the core node under the wrapper's `i`-th node). `class` and `by_class`
    /// are updated: the wrapper's nodes take the core's class, and the hidden nodes leave its
    /// list.
    pub(super) fn apply(
        &self,
        cores: &[NodeIx],
        class: &mut IxVec<NodeIx, SymIx>,
        by_class: &mut IxVec<SymIx, Vec<NodeIx>>,
        (hidden, core_of, folded): FoldsMut<'_>,
    ) {
        folded[self.wrapper] = true;
        let moved = std::mem::take(&mut by_class[self.wrapper]);
        for (&x, &k) in moved.iter().zip(cores) {
            hidden[k] = true;
            core_of[x] = k;
            class[x] = self.core;
        }
        let list = &mut by_class[self.core];
        list.retain(|&n| !hidden[n]);
        list.extend(moved);
        list.sort_unstable();
    }
}

/// Per class: how many of its kept, visible nodes stand at the top level (`parent`: see
/// [`parents`]), less what a window's edge left of occurrences (see `edge`; `windowed`: whether
/// `leaves` hold a cut piece at all). Those stand alone only in this window: a listener's accept
/// and push, whose worker takes the request in the next window, do not make the request the
/// listener's part with optional steps. The run to the edge goes over loose leaves and over the
/// class's other standalone occurrences: a listener that accepted several requests before the
/// edge left each of them so.
fn standalone(
    work: &Work,
    class: &IxVec<NodeIx, SymIx>,
    visible: impl Fn(NodeIx) -> bool,
    parent: &IxVec<NodeIx, NodeIx>,
    (leaves, windowed): (&[MineLeaf], bool),
) -> IxVec<SymIx, u64> {
    // The outermost visible node holding leaf `l`, if any.
    let top = |l: LeafIx| {
        let (mut p, mut top) = (NodeIx::new(l.index()), NodeIx::NONE);
        while p.is_some() {
            if visible(p) {
                top = p;
            }
            p = work.nodes[p].parent;
        }
        top
    };
    let mut standalone = IxVec::from_elem(0u64, work.syms.len());
    for (n, &p) in parent.iter_enumerated() {
        let c = class[n];
        if p.is_some() || !visible(n) {
            continue;
        }
        let loose = |l: LeafIx| {
            let t = top(l);
            t.is_none() || class[t] == c
        };
        if !(windowed && edge::remnant(work, leaves, loose, n)) {
            standalone[c] += 1;
        }
    }
    standalone
}

/// Folds wrappers into the tasks they hold (see the module docs). `class` and `by_class` are
/// updated: a folded wrapper's nodes take its task's class, and its core's node leaves the
/// class's list. Returns whether anything was folded.
pub(super) fn fold(
    work: &Work,
    class: &mut IxVec<NodeIx, SymIx>,
    by_class: &mut IxVec<SymIx, Vec<NodeIx>>,
    kept: &mut IxVec<SymIx, bool>,
    causal: &Causal,
    (min_support, leaves): (u32, &[MineLeaf]),
    folds: &mut Folds,
) -> bool {
    let n_nodes = work.nodes.len();
    let Folds {
        hidden,
        core_of,
        folded,
        composite,
        barred,
    } = folds;
    let mut any = false;
    let is_group = |c: SymIx| matches!(work.syms[c].rule, Rule::Pair { .. });
    let is_leaf = |c: SymIx| matches!(work.syms[c].rule, Rule::Leaf(_));
    // A trace read whole has no cut piece, so no remnant to look for.
    let windowed = leaves.iter().any(|l| l.cut);
    // Each pass folds what it can on the tree as it stood; a wrapper of a wrapper folds in the
    // next pass, once its inner wrapper has become the task. Bounded by the tree's depth.
    for _ in 0..n_nodes.max(1) {
        let parent = parents(work, class, kept, hidden);
        let kids = children(&parent);
        let under = |n: NodeIx| kids.of(n);
        let mut graph = Contains::of_tree(class, &parent);
        let standalone = standalone(
            work,
            class,
            |n| kept[class[n]] && !hidden[n],
            &parent,
            (leaves, windowed),
        );
        // Whether the subtree of kept node `n` holds a node of class `c`.
        let holds = |n: NodeIx, c: SymIx, class: &IxVec<NodeIx, SymIx>| {
            let mut stack = vec![n];
            while let Some(x) = stack.pop() {
                if class[x] == c {
                    return true;
                }
                stack.extend_from_slice(under(x));
            }
            false
        };
        let mut changed = false;
        // Classes changed in this pass: a wrapper with such a child waits for the next pass,
        // when the tree shows the change.
        let mut touched = IxVec::from_elem(false, work.syms.len());
        for w in work.syms.indices() {
            let nodes = &by_class[w];
            if nodes.is_empty() || !kept[w] || !is_group(w) || barred[w] {
                continue;
            }
            if under(nodes[0]).iter().any(|&k| touched[class[k]]) {
                continue;
            }
            // The core: the group child that stands alone most often, in the first node.
            let Some(core) = under(nodes[0])
                .iter()
                .map(|&k| class[k])
                .filter(|&c| c != w && is_group(c))
                .max_by_key(|&c| (standalone[c], std::cmp::Reverse(c)))
            else {
                continue;
            };
            if standalone[core] < u64::from(min_support) {
                continue;
            }
            // Per node: its core child, and whether the rest are extra steps (else the node
            // holds the core again, or a task that also stands alone). Those others decide
            // between a coincidence and a task of two parts: a second request or the next
            // push beside a request shares no causal edge with the rest of the wrapper (only
            // its thread's program order), while a task made of two tasks that also stand
            // alone (the listener's push and the worker's response) is joined by a hand-off.
            let mut cores = Vec::with_capacity(nodes.len());
            let mut variant = true;
            let mut others: Vec<usize> = Vec::new();
            // Whether a step's class holds the core, per class: asked once per class, not once
            // per node (a wrapper can have 10^5 nodes with the same steps).
            let mut class_holds: ahash::AHashMap<SymIx, bool> = ahash::AHashMap::new();
            let holds_core = nodes.iter().enumerate().all(|(i, &x)| {
                let mut found = NodeIx::NONE;
                for (j, &k) in under(x).iter().enumerate() {
                    let c = class[k];
                    if c == core {
                        if found.is_some() {
                            variant = false;
                            if i == 0 {
                                others.push(j);
                            }
                        }
                        found = k;
                    } else if !is_leaf(c)
                        && (standalone[c] > 0
                            || *class_holds.entry(c).or_insert_with(|| graph.holds(c, core))
                            || holds(k, core, class))
                    {
                        variant = false;
                        if i == 0 {
                            others.push(j);
                        }
                    }
                }
                cores.push(found);
                found.is_some()
            });
            if !holds_core {
                continue;
            }
            if !variant {
                let joined = causal.joined(work, under(nodes[0]));
                if others.iter().any(|&j| joined[j]) {
                    composite[w] = true;
                    continue;
                }
            }
            touched[w] = true;
            touched[core] = true;
            changed = true;
            if !variant {
                // A coincidence: the task and the rest each rise to the wrapper's parent.
                kept[w] = false;
                continue;
            }
            let moved = by_class[w].clone();
            for (&x, &k) in moved.iter().zip(&cores) {
                for &e in under(x).iter().filter(|&&e| e != k) {
                    graph.add(core, class[e]);
                }
                if parent[x].is_some() {
                    graph.add(class[parent[x]], core);
                }
            }
            let fold = Fold { wrapper: w, core };
            fold.apply(&cores, class, by_class, (hidden, core_of, folded));
        }
        if !changed {
            break;
        }
        any = true;
    }
    any
}
