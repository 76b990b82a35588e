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
//! count as one run ([`run_support`]), as in the whole recording (counted apart, four pipelines
//! made eight runs, and a loop of requests found nowhere else). No edge crosses a gap: joined
//! by program order, the two pieces of a leaf cut at a window's edge made a run of two leaves
//! of one type on every thread. Only the edges between two leaves of one part are kept (the
//! miner reads no others). Leaf types are one type when the grammar
//! would find them one (`grammar::ranked_keys`: the same boundaries, and the same rank by
//! frequency among the types with those), their counts summed.

use std::borrow::Cow;

use std::hash::Hash;

use ahash::{AHashMap, AHashSet};
use scalpel_model::graph::{Edge, LeafType, LeafTypeId, NodeId, ObjId, ThreadId};

use crate::grammar::ranked_keys;
use crate::input::{MineInput, MineLeaf};
use crate::ix::{LeafIx, NodeIx};
use crate::work::Work;

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

/// The leaves that resume their thread after a gap of a sample (none outside samples).
pub(crate) fn resumptions(leaves: &[MineLeaf]) -> Vec<LeafIx> {
    leaves
        .iter()
        .enumerate()
        .filter(|(_, l)| l.resumes)
        .map(|(i, _)| LeafIx::new(i))
        .collect()
}

/// How many runs of one loop `runs` (each a run of nodes along one thread) are in the
/// recording: two runs on one thread with a part's resumption between them (see
/// [`MineLeaf::resumes`]) may be one run the sample's gap cut in two, and count as one. Runs
/// the gap did not cut are as many as in the whole recording; so is the loop's support.
pub(crate) fn run_support(
    runs: &[Vec<NodeIx>],
    work: &Work,
    (leaves, resumes): (&[MineLeaf], &[LeafIx]),
) -> u32 {
    if resumes.is_empty() {
        return runs.len() as u32;
    }
    let head = |n: NodeIx| work.nodes[n].head;
    let mut spans: Vec<(ThreadId, LeafIx, LeafIx)> = runs
        .iter()
        .filter_map(|r| {
            let (a, b) = (head(*r.first()?), head(*r.last()?));
            Some((leaves[a.index()].thread, a, b))
        })
        .collect();
    spans.sort_unstable();
    let mut n = spans.len() as u32;
    for w in spans.windows(2) {
        let ((t, _, end), (u, start, _)) = (w[0], w[1]);
        let between = |r: &LeafIx| *r > end && *r <= start && leaves[r.index()].thread == t;
        if t == u && resumes.iter().any(between) {
            n -= 1;
        }
    }
    n
}
