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
//! pipelines made eight runs, and a loop of requests found nowhere else). A thread goes on in a
//! later part where its cycle goes on, and the edges the gap cut are made again from the
//! leaves the skipped ones stand for ([`seam`]); where no such place is found, no edge crosses
//! the gap (joined by program order as they are, the two pieces of a leaf cut at a window's
//! edge made a run of two leaves of one type on every thread). Otherwise only the edges
//! between two leaves of one part are kept (the miner reads no others). Leaf types are one type when the grammar would find them
//! one (`grammar::ranked_keys`: the same boundaries, and the same rank by frequency among the
//! types with those), their counts summed.

use std::borrow::Cow;
use std::hash::Hash;

use ahash::AHashMap;
use scalpel_model::graph::{Edge, LeafType, LeafTypeId, NodeId, ObjId, ThreadId};

use crate::grammar::ranked_keys;
use crate::input::{MineInput, MineLeaf};
use seam::{seams, PartLeaf, Tail, MATCH};

mod seam;

/// A thread's leaves kept of one part, as far as its tail needs them: the last [`MATCH`] (or
/// up to twice as many), and when the last started. Why not all: a part of a long recording
/// keeps millions, and only its end is matched after the gap.
#[derive(Default)]
struct Kept {
    last: Vec<(u32, LeafTypeId)>,
    last_start: u64,
    any: bool,
}

impl Kept {
    /// Keeps `leaf`, started at `start`; whether it is the thread's first of the part.
    fn push(&mut self, leaf: (u32, LeafTypeId), start: u64) -> bool {
        if self.last.len() == 2 * MATCH {
            self.last.drain(..MATCH);
        }
        self.last.push(leaf);
        self.last_start = start;
        !std::mem::replace(&mut self.any, true)
    }
}

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
        // Each thread's end in the parts so far, and when the last leaf of them ended.
        let mut tails: AHashMap<ThreadId, Tail> = AHashMap::new();
        let mut frontier = 0u64;
        for (p, part_of) in parts.into_iter().enumerate() {
            let (part, names) = (&part_of.input, &part_of.threads);
            let ty_map = map_types(&part.types, &mut types, &mut type_at);
            let obj_base = objects.len() as u32;
            let thread_map: Vec<ThreadId> = names
                .iter()
                .map(|k| {
                    let next = ThreadId::at(threads.len());
                    *threads.entry(k.clone()).or_insert(next)
                })
                .collect();
            // Each leaf's thread and type in the sample. A thread left unnamed is the part's
            // own (one for all such threads of it).
            let mapped: Vec<PartLeaf> = part
                .leaves
                .iter()
                .map(|l| {
                    let thread = thread_map.get(l.thread.index()).copied();
                    let own = ThreadId::new(u32::MAX - p as u32);
                    (thread.unwrap_or(own), ty_map[l.ty.index()], l.start_ns)
                })
                .collect();
            let seams = seams(&mapped, &tails, frontier);
            // Where each leaf kept is in the sample (`u32::MAX`: skipped before its seam).
            let mut at = vec![u32::MAX; part.leaves.len()];
            let mut kept: AHashMap<ThreadId, Kept> = AHashMap::new();
            for (i, l) in part.leaves.iter().enumerate() {
                let (thread, ty, start) = mapped[i];
                if seams.skips(thread, i as u32) {
                    continue;
                }
                at[i] = out.leaves.len() as u32;
                let k = kept.entry(thread).or_default();
                let first = k.push((at[i], ty), start);
                frontier = frontier.max(l.end_ns);
                out.leaves.push(MineLeaf {
                    ty,
                    thread,
                    end_obj: l.end_obj.map(|o| ObjId::new(obj_base + o.get())),
                    resumes: tails.contains_key(&thread) && first,
                    ..*l
                });
            }
            // A leaf before the gap whose edge of a kind was not cut (its partner came before
            // the gap too) takes none of that kind from a stand-in: one write, one read.
            let had = seams.kinds_had(&edges);
            edges.extend(part.edges.iter().filter_map(|e| {
                let (from, to) = (e.from.get(), e.to.get());
                let to = *at.get(to as usize).filter(|&&t| t != u32::MAX)?;
                let from = match at.get(from as usize) {
                    Some(&f) if f != u32::MAX => f,
                    Some(_) => seams
                        .stand_in(from)
                        .filter(|&f| !had.contains(&(f, e.kind)))?,
                    None => return None,
                };
                Some(Edge {
                    from: NodeId::new(from),
                    to: NodeId::new(to),
                    obj: e.obj.map(|o| ObjId::new(obj_base + o.get())),
                    ..*e
                })
            }));
            for (thread, k) in kept {
                let tail = Tail::after(tails.remove(&thread), &k.last, k.last_start);
                tails.extend(tail.map(|t| (thread, t)));
            }
            objects.extend(part.objects.iter().cloned());
        }
        edges.sort_unstable_by_key(|e| (e.from, e.to, e.kind));
        // A leaf before the gap may get an edge it had in its own part again from a stand-in.
        edges.dedup_by_key(|e| (e.from, e.to, e.kind));
        out.types = Cow::Owned(types);
        out.edges = Cow::Owned(edges);
        out.objects = Cow::Owned(objects);
        out
    }
}

/// The sample's leaf type for each of `part`'s: one type per key the grammar finds types by
/// (see the module), added to `types` when new, with the part's counts added.
fn map_types(
    part: &[LeafType],
    types: &mut Vec<LeafType>,
    type_at: &mut AHashMap<(String, usize), LeafTypeId>,
) -> Vec<LeafTypeId> {
    ranked_keys(part)
        .into_iter()
        .zip(part.iter())
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
        .collect()
}

#[cfg(test)]
mod tests {
    use scalpel_model::graph::{EdgeKind, Graph, LeafTypeId, ThreadId};
    use scalpel_model::progress::Quiet;
    use scalpel_model::task::{Model, TaskKind};
    use scalpel_model::testgraph::GraphBuilder;

    use super::SamplePart;
    use crate::{mine_with, MineInput, MineOptions};

    #[test]
    fn a_thread_keeps_the_end_of_its_leaves_and_knows_its_first() {
        let mut k = super::Kept::default();
        let ty = LeafTypeId::new(3);
        let firsts: Vec<bool> = (0..50u32).map(|i| k.push((i, ty), u64::from(i))).collect();
        assert_eq!(firsts.iter().filter(|&&f| f).count(), 1);
        assert!(firsts[0]);
        assert!(k.last.len() >= super::MATCH && k.last.len() <= 2 * super::MATCH);
        let ends: Vec<u32> = k
            .last
            .iter()
            .rev()
            .take(super::MATCH)
            .map(|l| l.0)
            .collect();
        assert_eq!(ends, (42..50).rev().collect::<Vec<u32>>());
        assert_eq!(k.last_start, 49);
    }

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

    /// One thread `name` of `n` leaves whose types alternate between `types`, the first
    /// `types[0]`, joined by program order.
    fn cycle(name: &str, types: [u32; 2], n: u64) -> Graph {
        let mut b = GraphBuilder::new();
        let ids = [b.leaf_type("L0", None), b.leaf_type("L1", None)];
        let th = b.thread(name);
        for i in 0..n {
            let ty = ids[types[(i % 2) as usize] as usize];
            b.leaf(th, ty, 1_000 * i, 1_000 * i + 5);
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
        // The second part lists its types the other way round, and a thread of its own. Thread
        // b has no y before its last leaf there, so no place to go on where it left off: it is
        // kept whole and resumed.
        let mut b = GraphBuilder::new();
        let (y2, x2) = (b.leaf_type("y", None), b.leaf_type("x", None));
        let (t1, t2) = (b.thread("b"), b.thread("c"));
        let from = b.leaf(t1, x2, 100, 105);
        let to = b.leaf(t2, y2, 110, 115);
        b.leaf(t1, x2, 120, 125);
        b.edge(from, to, EdgeKind::Stream);
        let second = b.build();
        let s = MineInput::joined(vec![part(&first), part(&second)]);
        assert_eq!(s.leaves.len(), 5);
        assert_eq!(s.types.len(), 2, "{:?}", s.types);
        let ty = |i: usize| s.leaves[i].ty;
        assert_eq!((ty(0), ty(1)), (LeafTypeId::new(0), LeafTypeId::new(1)));
        assert_eq!((ty(2), ty(3), ty(4)), (ty(0), ty(0), ty(1)));
        assert_eq!(s.types[0].count, 3);
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

    /// A thread alternates L1, L0, L1, … from its first leaf to its last: cut into (L1, L0)
    /// pairs, one more than (L0, L1). A sample whose first part ends on an L1 and whose last
    /// part begins on an L0 counted both cuts alike, and the tie went by the rules' order to
    /// (L0, L1). Gone on from where the first part left off, the sample counts as the whole
    /// run does, and its rules label the whole run as mining it whole does.
    #[test]
    fn a_cycle_the_samples_gap_cuts_is_cut_as_the_whole_run_cuts_it() {
        let whole = cycle("p", [1, 0], 80);
        let (a, b) = (cycle("p", [1, 0], 19), cycle("p", [0, 1], 21));
        let sample = MineInput::joined(vec![part(&a), part(&b)]);
        assert_eq!(
            sample.leaves.len(),
            19 + 21 - 8,
            "b goes on after L0 L1 … L1"
        );
        let resumes: Vec<usize> = (0..sample.leaves.len())
            .filter(|&i| sample.leaves[i].resumes)
            .collect();
        assert_eq!(resumes, [19]);
        let join = sample.edges.iter().find(|e| e.from.get() == 18).unwrap();
        assert_eq!((join.to.get(), join.kind), (19, EdgeKind::Program));
        assert_eq!(sample.leaves[19].ty, sample.leaves[17].ty);
        let quiet = Quiet;
        let opts = MineOptions::default();
        let grammar = crate::learn(&sample, &opts, &quiet);
        let input = MineInput::of(&whole);
        let replayed = mine_with(&input, "graph.json", &opts, Some(&grammar), &quiet).model;
        assert_eq!(replayed, mined(&input));
    }
}
