//! Several graphs as one miner input: a sample of a recording too large to mine whole, from
//! which rules are learned once and then replayed on every part (see [`crate::mine_with`]).
//!
//! Where a recording is mined in windows, the choices between near-equal counts (which of two
//! pairs of a cycle goes first; whether a step nests in one task or the other) come from where
//! its threads begin and end: connections opened at the start, requests in flight when the
//! recording stops. Only the first and the last window hold those. A sample made of both
//! counts them as the whole recording would, where the first window alone counts only the
//! start.
//!
//! The sample is the recording with what lies between its parts left out. A thread of several
//! parts is one thread of the sample, and its first leaf in a later part *resumes* it
//! ([`MineLeaf::resumes`]): two runs of one loop on the thread with a resumption between them
//! count as one run (`runs::run_support`), as in the whole recording (counted apart, four
//! pipelines made eight runs, and a loop of requests found nowhere else). No edge crosses a
//! gap: joined by program order, the two pieces of a leaf cut at a window's edge made a run of
//! two leaves of one type on every thread. Only the edges between two leaves of one part are
//! kept (the miner reads no others). Leaf types are one type when the grammar would find them
//! one (`grammar::ranked_keys`: the same boundaries, and the same rank by frequency among the
//! types with those), their counts summed.

use std::borrow::Cow;
use std::hash::Hash;

use ahash::{AHashMap, AHashSet};
use scalpel_model::graph::{Edge, LeafType, LeafTypeId, NodeId, ObjId, ThreadId};

use crate::grammar::ranked_keys;
use crate::input::{MineInput, MineLeaf};

/// One part of a sample: a miner input, and what names each of its threads from one part to
/// another (a process and thread id, say), by [`ThreadId`].
pub struct SamplePart<'a, K> {
    /// The part.
    pub input: MineInput<'a>,
    /// Each thread's name, by [`ThreadId`] of the part.
    pub threads: Vec<K>,
}

impl MineInput<'_> {
    /// The inputs of `parts` as one (see the module): leaves in the order of the parts, their
    /// objects and leaf-to-leaf edges renumbered after the parts before them, a thread of
    /// several parts one thread, resumed in each part after its first.
    ///
    /// Each part is let go once it is in, so that the sample and one part are resident at once,
    /// not the sample and every part.
    pub fn joined<K: Hash + Eq + Clone>(parts: Vec<SamplePart<'_, K>>) -> MineInput<'static> {
        let mut out = MineInput {
            types: Cow::Owned(Vec::new()),
            leaves: Vec::new(),
            edges: Cow::Owned(Vec::new()),
            objects: Cow::Owned(Vec::new()),
        };
        let mut types: Vec<LeafType> = Vec::new();
        let mut type_at: AHashMap<(String, usize), LeafTypeId> = AHashMap::new();
        let mut edges: Vec<Edge> = Vec::new();
        let mut objects = Vec::new();
        let mut threads: AHashMap<K, ThreadId> = AHashMap::new();
        // The threads of the parts so far.
        let mut seen: AHashSet<ThreadId> = AHashSet::new();
        for (p, part_of) in parts.into_iter().enumerate() {
            let (part, names) = (&part_of.input, &part_of.threads);
            let ty_map: Vec<LeafTypeId> = ranked_keys(&part.types)
                .into_iter()
                .zip(part.types.iter())
                .map(|(key, t)| {
                    let at = *type_at.entry(key).or_insert_with(|| {
                        types.push(LeafType {
                            count: 0,
                            ..t.clone()
                        });
                        LeafTypeId::at(types.len() - 1)
                    });
                    types[at.index()].count += t.count;
                    at
                })
                .collect();
            let (leaf_base, obj_base) = (out.leaves.len() as u32, objects.len() as u32);
            let n = part.leaves.len() as u32;
            let thread_map: Vec<ThreadId> = names
                .iter()
                .map(|k| {
                    let next = ThreadId::at(threads.len());
                    *threads.entry(k.clone()).or_insert(next)
                })
                .collect();
            let mut firsts: AHashMap<ThreadId, u32> = AHashMap::new();
            for (i, l) in part.leaves.iter().enumerate() {
                // A thread left unnamed is the part's own (one for all such threads of it).
                let thread = thread_map
                    .get(l.thread.index())
                    .copied()
                    .unwrap_or(ThreadId::new(u32::MAX - p as u32));
                let at = leaf_base + i as u32;
                firsts.entry(thread).or_insert(at);
                out.leaves.push(MineLeaf {
                    ty: ty_map[l.ty.index()],
                    thread,
                    end_obj: l.end_obj.map(|o| ObjId::new(obj_base + o.get())),
                    resumes: false,
                    ..*l
                });
            }
            for (thread, first) in firsts {
                if seen.contains(&thread) {
                    out.leaves[first as usize].resumes = true;
                }
            }
            seen.extend(out.leaves[leaf_base as usize..].iter().map(|l| l.thread));
            edges.extend(
                part.edges
                    .iter()
                    .filter(|e| e.from.get() < n && e.to.get() < n)
                    .map(|e| Edge {
                        from: NodeId::new(leaf_base + e.from.get()),
                        to: NodeId::new(leaf_base + e.to.get()),
                        obj: e.obj.map(|o| ObjId::new(obj_base + o.get())),
                        ..*e
                    }),
            );
            objects.extend(part.objects.iter().cloned());
        }
        edges.sort_unstable_by_key(|e| (e.from, e.to, e.kind));
        out.types = Cow::Owned(types);
        out.edges = Cow::Owned(edges);
        out.objects = Cow::Owned(objects);
        out
    }
}

#[cfg(test)]
mod tests {
    use scalpel_model::graph::{EdgeKind, Graph, LeafTypeId, ThreadId};
    use scalpel_model::progress::Quiet;
    use scalpel_model::task::{Model, TaskKind};
    use scalpel_model::testgraph::GraphBuilder;

    use super::SamplePart;
    use crate::{mine_with, MineInput, MineOptions};

    /// A part of a sample whose threads are named as the graph names them.
    fn part(g: &Graph) -> SamplePart<'_, String> {
        SamplePart {
            input: MineInput::of(g),
            threads: g.threads.iter().map(|t| t.name.clone()).collect(),
        }
    }

    /// Threads named `names`, each `n` leaves of one type in a row joined by program order.
    fn runs(names: &[&str], n: u32) -> Graph {
        let mut b = GraphBuilder::new();
        let ty = b.leaf_type("step", None);
        for name in names {
            let th = b.thread(name);
            for i in 0..u64::from(n) {
                b.leaf(th, ty, 1_000 * i, 1_000 * i + 5);
            }
        }
        b.program_order(|_, _| Some(EdgeKind::Program));
        b.build()
    }

    fn mined(input: &MineInput<'_>) -> Model {
        mine_with(input, "graph.json", &MineOptions::default(), None, &Quiet).model
    }

    fn loops(m: &Model) -> usize {
        m.types.iter().filter(|t| t.kind == TaskKind::Loop).count()
    }

    #[test]
    fn a_sample_keeps_its_parts_apart_and_each_thread_one_thread() {
        let mut b = GraphBuilder::new();
        let (x, y) = (b.leaf_type("x", None), b.leaf_type("y", None));
        let (t0, t1) = (b.thread("a"), b.thread("b"));
        let from = b.leaf(t0, x, 0, 5);
        let to = b.leaf(t1, y, 10, 15);
        b.edge(from, to, EdgeKind::Cond);
        let first = b.build();
        // The second part lists its types the other way round, and a thread of its own.
        let mut b = GraphBuilder::new();
        let (y2, x2) = (b.leaf_type("y", None), b.leaf_type("x", None));
        let (t1, t2) = (b.thread("b"), b.thread("c"));
        let from = b.leaf(t1, y2, 100, 105);
        let to = b.leaf(t2, x2, 110, 115);
        b.leaf(t1, y2, 120, 125);
        b.edge(from, to, EdgeKind::Stream);
        let second = b.build();
        let s = MineInput::joined(vec![part(&first), part(&second)]);
        assert_eq!(s.leaves.len(), 5);
        assert_eq!(s.types.len(), 2, "{:?}", s.types);
        let ty = |i: usize| s.leaves[i].ty;
        assert_eq!((ty(0), ty(1)), (LeafTypeId::new(0), LeafTypeId::new(1)));
        assert_eq!((ty(2), ty(3), ty(4)), (ty(1), ty(1), ty(0)));
        assert_eq!(s.types[1].count, 3);
        let thread = |i: usize| s.leaves[i].thread;
        // The builder lists a graph's leaves by thread: b's two, then c's.
        assert_eq!(thread(2), thread(1), "thread b is one thread");
        assert_eq!(thread(3), thread(1));
        assert_ne!(thread(4), thread(0));
        assert_ne!(thread(4), thread(1));
        let resumes: Vec<bool> = s.leaves.iter().map(|l| l.resumes).collect();
        assert_eq!(resumes, [false, false, true, false, false]);
        let edges: Vec<(u32, u32, EdgeKind)> = s
            .edges
            .iter()
            .map(|e| (e.from.get(), e.to.get(), e.kind))
            .collect();
        assert_eq!(edges, [(0, 1, EdgeKind::Cond), (2, 4, EdgeKind::Stream)]);
    }

    /// Four threads each repeat one step: four runs, fewer than a task needs, so no loop, in
    /// the whole recording and in a sample of its two halves. Counted apart, the halves made
    /// eight runs and a loop.
    #[test]
    fn a_run_the_samples_gap_cuts_in_two_counts_once() {
        let names = ["p", "q", "r", "s"];
        let whole = runs(&names, 40);
        assert_eq!(loops(&mined(&MineInput::of(&whole))), 0);
        let (a, b) = (runs(&names, 20), runs(&names, 20));
        let sample = MineInput::joined(vec![part(&a), part(&b)]);
        assert_eq!(loops(&mined(&sample)), 0, "the gap made runs of its own");
        // The same halves with threads of their own are eight runs: a loop.
        let apart = runs(&["p2", "q2", "r2", "s2"], 20);
        let sample = MineInput::joined(vec![part(&a), part(&apart)]);
        assert_eq!(loops(&mined(&sample)), 1);
        assert_eq!(sample.leaves.iter().filter(|l| l.resumes).count(), 0);
        assert_eq!(
            sample.leaves[80].thread,
            ThreadId::new(4),
            "threads numbered in the order first seen"
        );
    }
}
