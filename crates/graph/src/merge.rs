//! Cuts that turned out to be waits: a leaf ends at a call whose only causal edges were found to
//! be waits, not causes (room in a bounded queue, a service's answer to several requests, a call
//! into that service), so the call is a wait inside one leaf, as a lock's is, and the two leaves
//! around it become one.
//!
//! Why: a wait that happens only sometimes (the producer found the queue full, or not; the
//! request had to wait for the log, or not) made two leaf sequences for one kind of work, and
//! then two task types. Merged, the work is one leaf from the same start to the same end
//! whatever waited inside it, and the wait is its lock time, with a row in the graph's lock
//! waits that names the leaf it waited for.
//!
//! The pass runs once every edge and every lock wait is known; it renumbers the leaves and every
//! table that names one, and gives a merged leaf the type of its first leaf's start and its
//! last leaf's end (the same type as a leaf that ran from that start to that end uncut).

use ahash::AHashMap;
use scalpel_model::graph::{Edge, Graph, LeafFile, LeafId, LeafType, LeafTypeId, NodeId};

use crate::edges::ExtEdge;

/// A leaf type's boundaries, as a key: start op and frames, end op and frames.
type BoundaryKey = (Option<String>, Vec<String>, Option<String>, Vec<String>);

fn key_of(t: &LeafType) -> BoundaryKey {
    (
        t.start.op.map(|o| o.name()),
        t.start.frames.clone(),
        t.end.op.map(|o| o.name()),
        t.end.frames.clone(),
    )
}

/// Merges each leaf in `uncut` with the next leaf of its thread (the call between them is a
/// wait inside the merged leaf). `weak[i]` (the program edge out of leaf `i` is weak) is
/// renumbered with the leaves. Returns whether anything was merged.
pub(super) fn merge_cuts(
    g: &mut Graph,
    edges: &mut Vec<Edge>,
    ext: &mut [ExtEdge],
    weak: &mut Vec<bool>,
    uncut: &[u32],
) -> bool {
    let n = g.leaves.len();
    // absorbed[i]: leaf i joins the leaf before it.
    let mut absorbed = vec![false; n];
    for &u in uncut {
        let (u, v) = (u as usize, u as usize + 1);
        if v < n && g.leaves[u].thread == g.leaves[v].thread {
            absorbed[v] = true;
        }
    }
    if !absorbed.iter().any(|&a| a) {
        return false;
    }
    // Leaf 0 is never absorbed (no leaf before it), so `next` is at least 1 when one is.
    let mut new_id = vec![0u32; n];
    let mut next = 0u32;
    for (id, &a) in new_id.iter_mut().zip(&absorbed) {
        if a {
            *id = next.saturating_sub(1);
        } else {
            *id = next;
            next += 1;
        }
    }
    let map = |l: usize| new_id.get(l).copied().unwrap_or(l as u32);
    merge_leaves(g, &absorbed);
    for t in &mut g.threads {
        let range = t.first_leaf.index()..t.first_leaf.index() + t.leaves as usize;
        t.leaves = range.clone().filter(|&i| !absorbed[i]).count() as u32;
        // A thread's first leaf is never absorbed (it has no leaf before it on the thread).
        t.first_leaf = LeafId::new(new_id.get(range.start).copied().unwrap_or(next));
    }
    // The program edge between merged leaves is gone; every other edge follows its leaves.
    edges.retain_mut(|e| {
        let (f, t) = (map(e.from.index()), map(e.to.index()));
        e.from = NodeId::new(f);
        e.to = NodeId::new(t);
        f != t
    });
    for x in ext.iter_mut() {
        x.0 = map(x.0 as usize);
    }
    *weak = merge_weak(weak, &absorbed);
    for lw in &mut g.lock_waits {
        lw.waiter = LeafId::new(map(lw.waiter.index()));
        lw.holder = lw.holder.map(|h| LeafId::new(map(h.index())));
    }
    for iw in &mut g.inner_waits {
        iw.leaf = LeafId::new(map(iw.leaf.index()));
    }
    for p in &mut g.peer_transfers {
        p.leaf = LeafId::new(map(p.leaf.index()));
    }
    merge_files(&mut g.leaf_files, map);
    true
}

/// The weak flags of the merged leaves: a merged leaf's program edge out is its last leaf's.
fn merge_weak(weak: &[bool], absorbed: &[bool]) -> Vec<bool> {
    let mut w: Vec<bool> = Vec::with_capacity(absorbed.len());
    for (i, &a) in absorbed.iter().enumerate() {
        let out = weak.get(i).copied().unwrap_or(false);
        match w.last_mut() {
            Some(last) if a => *last = out,
            _ => w.push(out),
        }
    }
    w
}

/// Folds each absorbed leaf into the one before it and retypes the merged leaves.
fn merge_leaves(g: &mut Graph, absorbed: &[bool]) {
    let mut index: AHashMap<BoundaryKey, u32> = g
        .types
        .iter()
        .enumerate()
        .map(|(i, t)| (key_of(t), i as u32))
        .collect();
    let old = std::mem::take(&mut g.leaves);
    let old_cpu = std::mem::take(&mut g.leaf_cpu_ns);
    for (i, l) in old.into_iter().enumerate() {
        let cpu = old_cpu.get(i).copied().flatten();
        if !absorbed[i] {
            g.leaves.push(l);
            if !old_cpu.is_empty() {
                g.leaf_cpu_ns.push(cpu);
            }
            continue;
        }
        let Some(m) = g.leaves.last_mut() else {
            continue;
        };
        // The call between them is a wait inside the merged leaf, counted as lock time.
        m.lock_ns = m
            .lock_ns
            .saturating_add(m.block_ns)
            .saturating_add(l.lock_ns);
        m.end_ns = l.end_ns;
        m.block_ns = l.block_ns;
        m.end_op = l.end_op;
        m.end_obj = l.end_obj;
        m.end_event = l.end_event;
        m.bytes_in = m.bytes_in.saturating_add(l.bytes_in);
        m.bytes_out = m.bytes_out.saturating_add(l.bytes_out);
        m.sleep_ns = m.sleep_ns.saturating_add(l.sleep_ns);
        m.other_ns = m.other_ns.saturating_add(l.other_ns);
        // The merged leaf runs from its first leaf's start (the type it has so far) to the
        // absorbed leaf's end.
        let start = g.types[m.ty.index()].start.clone();
        let end = &g.types[l.ty.index()];
        let merged = LeafType {
            name: end.name.clone(),
            start,
            end: end.end.clone(),
            count: 0,
        };
        let next = g.types.len() as u32;
        let id = *index.entry(key_of(&merged)).or_insert_with(|| {
            g.types.push(merged);
            next
        });
        m.ty = LeafTypeId::new(id);
        if let Some(c) = g.leaf_cpu_ns.last_mut() {
            *c = match (*c, cpu) {
                (Some(a), Some(b)) => Some(a.saturating_add(b)),
                _ => None,
            };
        }
    }
    for t in &mut g.types {
        t.count = 0;
    }
    for l in &g.leaves {
        g.types[l.ty.index()].count += 1;
    }
}

/// Renumbers the file bytes' leaves, adding up those of leaves that became one.
fn merge_files(files: &mut Vec<LeafFile>, map: impl Fn(usize) -> u32) {
    let mut out: Vec<LeafFile> = Vec::with_capacity(files.len());
    for f in files.drain(..) {
        let leaf = LeafId::new(map(f.leaf.index()));
        match out.last_mut() {
            Some(last) if last.leaf == leaf => {
                last.bytes_in = last.bytes_in.saturating_add(f.bytes_in);
                last.bytes_out = last.bytes_out.saturating_add(f.bytes_out);
            }
            _ => out.push(LeafFile { leaf, ..f }),
        }
    }
    *files = out;
}

#[cfg(test)]
mod tests {
    use super::*;
    use scalpel_model::graph::{EdgeKind, LockWait, ObjId};
    use scalpel_model::testgraph::GraphBuilder;

    /// Thread a: leaves 0, 1, 2 (1 ends at a wait for 3's thread); thread b: leaf 3. Merging 0
    /// into 1's cut renumbers every table and keeps what crossed the merged call.
    #[test]
    fn a_merged_cut_renumbers_every_table() {
        let mut b = GraphBuilder::new();
        let (t0, t1) = (b.leaf_type("x", None), b.leaf_type("y", None));
        let (a, c) = (b.thread("a"), b.thread("b"));
        let l: Vec<_> = [(a, t0, 0), (a, t1, 10), (a, t0, 20), (c, t1, 5)]
            .iter()
            .map(|&(th, ty, at)| b.leaf(th, ty, at, at + 5))
            .collect();
        let mut g = b.build();
        g.lock_waits.push(LockWait {
            obj: ObjId::new(0),
            waiter: LeafId::new(0),
            holder: Some(LeafId::new(3)),
            wait_ns: 5,
        });
        let edge = |f: u32, t: u32, kind| Edge {
            from: NodeId::new(f),
            to: NodeId::new(t),
            kind,
            obj: None,
        };
        let mut edges = vec![
            edge(0, 1, EdgeKind::Program),
            edge(1, 2, EdgeKind::ProgramWeak),
            edge(1, 3, EdgeKind::Cond),
        ];
        let mut ext = vec![(2, true, 0)];
        let mut weak = vec![false, true, false, false];
        assert_eq!(l.len(), 4);
        assert!(merge_cuts(&mut g, &mut edges, &mut ext, &mut weak, &[0]));
        assert_eq!(g.leaves.len(), 3);
        assert_eq!((g.threads[0].leaves, g.threads[1].first_leaf.get()), (2, 2));
        assert_eq!((g.leaves[0].start_ns, g.leaves[0].end_ns), (0, 15));
        assert_eq!(
            g.leaves[0].lock_ns, 0,
            "no time was blocked at the merged call"
        );
        assert_eq!(
            edges,
            vec![
                edge(0, 1, EdgeKind::ProgramWeak),
                edge(0, 2, EdgeKind::Cond)
            ]
        );
        assert_eq!(ext, vec![(1, true, 0)]);
        assert_eq!(weak, vec![true, false, false]);
        assert_eq!(g.lock_waits[0].holder, Some(LeafId::new(2)));
        // The merged leaf runs from x's start to y's end: a type of its own, counted once.
        assert_eq!(g.types.iter().map(|t| t.count).sum::<u64>(), 3);
    }
}
