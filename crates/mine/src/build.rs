//! The model from the kept tree: type ids, levels, occurrences, children and the edges
//! between them.

use ahash::{AHashMap, AHashSet};
use scalpel_model::graph::{EdgeKind, LeafTypeId};
use scalpel_model::task::{
    ChildRef, LeafList, OccRef, Occurrence, TaskKind, TaskType, TaskTypeId, TypeEdge, Variant,
};

use super::input::MineInput;
use super::ix::{IxLists, IxVec, LeafIx, NodeIx, SymIx};
use super::tree::Tree;
use super::work::{Rule, Work};

/// "No type": a class with no type of its own, or the host of an edge between top-level types
/// (the largest id, so such edges sort last).
const NO_TYPE: TaskTypeId = TaskTypeId::new(u32::MAX);

/// Types and top-level edges, unnamed (names come after).
pub(super) struct Built {
    pub types: Vec<TaskType>,
    pub top_edges: Vec<TypeEdge>,
    /// The occurrence each leaf is directly part of.
    pub leaf_parent: Vec<Option<OccRef>>,
}

/// Longest-path levels of the kept classes.
fn levels(work: &Work, tree: &Tree) -> IxVec<SymIx, u32> {
    let mut pairs: Vec<(SymIx, SymIx)> = work
        .nodes
        .indices()
        .filter(|&n| tree.is_kept(n) && tree.kept_parent[n].is_some())
        .map(|n| {
            let p = tree.kept_parent[n];
            (tree.class[n], tree.class[p])
        })
        .collect();
    pairs.sort_unstable();
    pairs.dedup();
    // Children before parents (Kahn's order over the (child, parent) pairs): linear, and
    // with no loop to run away should the class graph not be acyclic.
    let n = work.syms.len();
    let mut level = IxVec::from_elem(0u32, n);
    let mut waiting = IxVec::from_elem(0u32, n);
    for &(_, p) in &pairs {
        waiting[p] += 1;
    }
    // Each child's parents, in the pairs' order.
    let parents = IxLists::new(n, pairs.iter().copied());
    let mut ready: Vec<SymIx> = waiting.indices().filter(|&c| waiting[c] == 0).collect();
    let mut done = 0;
    while let Some(c) = ready.pop() {
        done += 1;
        for &p in parents.of(c) {
            level[p] = level[p].max(level[c] + 1);
            waiting[p] -= 1;
            if waiting[p] == 0 {
                ready.push(p);
            }
        }
    }
    // The class graph is acyclic: a child's expansion is a strict part of its parent's, and
    // folds keep it so (see `contains`).
    debug_assert_eq!(done, n, "the task classes hold one another in a cycle");
    level
}

/// Builds the types.
pub(super) fn build(graph: &MineInput<'_>, work: &Work, tree: &Tree) -> Built {
    let n_leaf_types = graph.types.len() as u32;
    let level = levels(work, tree);
    // Super classes in (level, class) order after the leaf types.
    let mut present = IxVec::from_elem(false, work.syms.len());
    for &c in &tree.class {
        present[c] = true;
    }
    let mut supers: Vec<SymIx> = (work.leaf_types as usize..work.syms.len())
        .map(SymIx::new)
        .filter(|&c| tree.kept[c] && present[c])
        .collect();
    supers.sort_unstable_by_key(|&c| (level[c], c));
    let mut type_of_class = IxVec::from_elem(NO_TYPE, work.syms.len());
    for t in 0..n_leaf_types {
        type_of_class[SymIx::from_raw(t)] = TaskTypeId::new(t);
    }
    for (i, &c) in supers.iter().enumerate() {
        type_of_class[c] = TaskTypeId::new(n_leaf_types + i as u32);
    }
    let n_types = (n_leaf_types as usize) + supers.len();
    let mut types: Vec<TaskType> = (0..n_types)
        .map(|t| {
            let (kind, leaf_type, lvl) = if t < n_leaf_types as usize {
                (TaskKind::Leaf, Some(LeafTypeId::at(t)), 0)
            } else {
                let c = supers[t - n_leaf_types as usize];
                let kind = match work.syms[c].rule {
                    Rule::Loop { .. } => TaskKind::Loop,
                    _ => TaskKind::Group,
                };
                (kind, None, level[c])
            };
            TaskType {
                name: String::new(),
                kind,
                level: lvl,
                leaf_type,
                count: 0,
                top_level: 0,
                children: Vec::new(),
                edges: Vec::new(),
                variants: Vec::new(),
                occurrences: Vec::new(),
            }
        })
        .collect();
    // Occurrences of the group and loop types, ordered by first leaf. A leaf type's
    // occurrences are its leaves (index = leaf id); only their parents are kept.
    let n_nodes = work.nodes.len();
    let n_leaves = graph.leaves.len();
    let mut occ_nodes: Vec<Vec<(LeafIx, NodeIx)>> = vec![Vec::new(); n_types];
    for n in (n_leaves..n_nodes).map(NodeIx::new) {
        if !tree.is_kept(n) {
            continue;
        }
        let t = type_of_class[tree.class[n]];
        let first = work.leaves_of(n).min().unwrap_or(LeafIx::NONE);
        occ_nodes[t.index()].push((first, n));
    }
    let none = OccRef {
        ty: NO_TYPE,
        index: 0,
    };
    let mut occ_of: IxVec<NodeIx, OccRef> = IxVec::from_elem(none, n_nodes);
    for (l, o) in occ_of.iter_mut().enumerate().take(n_leaves) {
        *o = OccRef {
            ty: TaskTypeId::new(graph.leaves[l].ty.get()),
            index: l as u32,
        };
    }
    for (t, list) in occ_nodes.iter_mut().enumerate() {
        list.sort_unstable();
        for (i, &(_, n)) in list.iter().enumerate() {
            occ_of[n] = OccRef {
                ty: TaskTypeId::at(t),
                index: i as u32,
            };
        }
    }
    let parent_of = |n: NodeIx| {
        let p = tree.kept_parent[n];
        p.is_some().then(|| occ_of[p])
    };
    let leaf_parent: Vec<Option<OccRef>> =
        (0..n_leaves).map(|l| parent_of(NodeIx::new(l))).collect();
    for (l, p) in graph.leaves.iter().zip(&leaf_parent) {
        let ty = &mut types[l.ty.index()];
        ty.count += 1;
        ty.top_level += u64::from(p.is_none());
    }
    for (t, list) in occ_nodes.iter().enumerate() {
        let ty = &mut types[t];
        if ty.kind == TaskKind::Leaf {
            continue;
        }
        ty.count = list.len() as u64;
        for &(_, n) in list {
            let parent = parent_of(n);
            ty.top_level += u64::from(parent.is_none());
            let iterations = (ty.kind == TaskKind::Loop).then(|| match tree.iterations[n] {
                0 => work.nodes[n].children,
                collapsed => collapsed,
            });
            // Listed here rather than kept per node from above: a vector per node of the miner
            // cost 12 MiB more at the peak on a 1.77M-event recording.
            let mut leaves: LeafList = work.leaves_of(n).map(LeafIx::id).collect();
            leaves.sort_unstable();
            ty.occurrences.push(Occurrence {
                leaves,
                parent,
                iterations,
                variant: None,
            });
        }
        if list.iter().any(|&(_, n)| tree.core_of[n].is_some()) {
            let (variants, of) = variants_of(graph, work, tree, list);
            ty.variants = variants;
            for (o, v) in ty.occurrences.iter_mut().zip(of) {
                o.variant = Some(v);
            }
        }
    }
    children(&mut types, work, tree, &occ_nodes, &occ_of);
    let top_edges = edges(&mut types, graph, work, tree, &occ_of);
    Built {
        types,
        top_edges,
        leaf_parent,
    }
}

/// The variants of a type with folded wrappers among its nodes (in occurrence order): each
/// node's extra leaf types (its leaves less its innermost core's), the distinct ones most
/// frequent first, and each node's variant index.
fn variants_of(
    graph: &MineInput<'_>,
    work: &Work,
    tree: &Tree,
    list: &[(LeafIx, NodeIx)],
) -> (Vec<Variant>, Vec<u32>) {
    let mut keys: Vec<Vec<(u32, u64)>> = Vec::with_capacity(list.len());
    for &(_, n) in list {
        let mut core = n;
        while tree.core_of[core].is_some() {
            core = tree.core_of[core];
        }
        let mut extra: Vec<u32> = Vec::new();
        if core != n {
            let inner: AHashSet<LeafIx> = work.leaves_of(core).collect();
            extra = work
                .leaves_of(n)
                .filter(|l| !inner.contains(l))
                .map(|l| graph.leaves[l.index()].ty.get())
                .collect();
        }
        extra.sort_unstable();
        let mut key: Vec<(u32, u64)> = Vec::new();
        for t in extra {
            match key.last_mut() {
                Some((last, c)) if *last == t => *c += 1,
                _ => key.push((t, 1)),
            }
        }
        keys.push(key);
    }
    let mut count: AHashMap<&[(u32, u64)], u64> = AHashMap::new();
    for k in &keys {
        *count.entry(k.as_slice()).or_insert(0) += 1;
    }
    let mut distinct: Vec<(&[(u32, u64)], u64)> = count.into_iter().collect();
    distinct.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let index: AHashMap<&[(u32, u64)], u32> = distinct
        .iter()
        .enumerate()
        .map(|(i, (k, _))| (*k, i as u32))
        .collect();
    let of = keys.iter().map(|k| index[k.as_slice()]).collect();
    let variants = distinct
        .iter()
        .map(|&(k, count)| Variant {
            count,
            extra: k
                .iter()
                .map(|&(t, c)| ChildRef {
                    ty: TaskTypeId::new(t),
                    count: c,
                })
                .collect(),
        })
        .collect();
    (variants, of)
}

/// Child types of every type, in order of first appearance in its first occurrence.
fn children(
    types: &mut [TaskType],
    work: &Work,
    tree: &Tree,
    occ_nodes: &[Vec<(LeafIx, NodeIx)>],
    occ_of: &IxVec<NodeIx, OccRef>,
) {
    // Kept children of each kept node, as linked lists in node order.
    let n = work.nodes.len();
    let none = IxVec::from_elem(NodeIx::NONE, n);
    let (mut first, mut last, mut next) = (none.clone(), none.clone(), none);
    for c in work.nodes.indices() {
        let p = tree.kept_parent[c];
        if p.is_none() || !tree.is_kept(c) {
            continue;
        }
        if first[p].is_none() {
            first[p] = c;
        } else {
            next[last[p]] = c;
        }
        last[p] = c;
    }
    for (t, list) in occ_nodes.iter().enumerate() {
        let mut order: Vec<u32> = Vec::new();
        let mut count: AHashMap<u32, u64> = AHashMap::new();
        for (k, &(_, node)) in list.iter().enumerate() {
            let mut ch: Vec<(LeafIx, u32)> = Vec::new();
            let mut c = first[node];
            while c.is_some() {
                ch.push((work.nodes[c].head, occ_of[c].ty.get()));
                c = next[c];
            }
            if k == 0 {
                // First appearance: by position of each child's first leaf in port order.
                let pos: AHashMap<LeafIx, usize> = work
                    .leaves_of(node)
                    .enumerate()
                    .map(|(i, l)| (l, i))
                    .collect();
                ch.sort_unstable_by_key(|&(head, ty)| (pos.get(&head).copied(), ty));
            }
            for (_, ty) in ch {
                let c = count.entry(ty).or_insert(0);
                if *c == 0 && !order.contains(&ty) {
                    order.push(ty);
                }
                *c += 1;
            }
        }
        types[t].children = order
            .into_iter()
            .map(|ty| ChildRef {
                ty: TaskTypeId::new(ty),
                count: count[&ty],
            })
            .collect();
    }
}

/// Leaf-level edges, each counted at the lowest task containing both ends (between the two
/// children holding them), or between top-level types.
fn edges(
    types: &mut [TaskType],
    graph: &MineInput<'_>,
    work: &Work,
    tree: &Tree,
    occ_of: &IxVec<NodeIx, OccRef>,
) -> Vec<TypeEdge> {
    let mut depth = IxVec::from_elem(0u32, work.nodes.len());
    for i in work.nodes.indices().rev() {
        let p = tree.kept_parent[i];
        if p.is_some() && tree.is_kept(i) {
            depth[i] = depth[p] + 1;
        }
    }
    let mut at: AHashMap<(TaskTypeId, TaskTypeId, TaskTypeId, EdgeKind), u64> = AHashMap::new();
    let n_leaves = graph.leaves.len() as u32;
    for e in graph.edges.iter() {
        if e.from.get() >= n_leaves || e.to.get() >= n_leaves || e.from == e.to {
            continue;
        }
        let node = |l| NodeIx::of_leaf(LeafIx::of_node(l));
        let (mut a, mut b) = (node(e.from), node(e.to));
        while depth[a] > depth[b] {
            a = tree.kept_parent[a];
        }
        while depth[b] > depth[a] {
            b = tree.kept_parent[b];
        }
        while tree.kept_parent[a] != tree.kept_parent[b] {
            a = tree.kept_parent[a];
            b = tree.kept_parent[b];
        }
        if a == b {
            continue;
        }
        let p = tree.kept_parent[a];
        let host = if p.is_none() { NO_TYPE } else { occ_of[p].ty };
        let key = (host, occ_of[a].ty, occ_of[b].ty, e.kind);
        *at.entry(key).or_insert(0) += 1;
    }
    let mut list: Vec<_> = at.into_iter().collect();
    list.sort_unstable();
    let mut top = Vec::new();
    for ((host, from, to, kind), count) in list {
        let edge = TypeEdge {
            from,
            to,
            kind,
            count,
        };
        if host == NO_TYPE {
            top.push(edge);
        } else {
            types[host.index()].edges.push(edge);
        }
    }
    top
}
