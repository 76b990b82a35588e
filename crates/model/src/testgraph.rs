//! Causal graphs built by hand, for unit tests, golden files and benchmarks: threads of leaves
//! with the edges between them, numbered the way the graph stage numbers a real trace.
//!
//! Non-goals: realism beyond what a test states (boundaries carry no stacks, leaf types are
//! named by hand).

use crate::format::Op;
use crate::graph::{
    BoundaryInfo, Edge, EdgeKind, Graph, Leaf, LeafId, LeafType, LeafTypeId, NodeId, OpName,
    ProcessId, ThreadId, ThreadInfo,
};

/// A leaf by its thread and its index on that thread (the order it was added in).
pub type At = (ThreadId, u32);

/// Builds a [`Graph`]: leaf types, then leaves thread by thread in any interleaving, then edges
/// between them; [`build`](GraphBuilder::build) numbers the leaves thread-major as the graph
/// stage does, counts each type's leaves, and sorts and deduplicates the edges.
#[derive(Debug, Default)]
pub struct GraphBuilder {
    types: Vec<LeafType>,
    threads: Vec<String>,
    /// Per thread, its leaves so far.
    counts: Vec<u32>,
    /// Every leaf, in the order added.
    leaves: Vec<Leaf>,
    edges: Vec<(At, At, EdgeKind)>,
}

impl GraphBuilder {
    /// An empty graph.
    pub fn new() -> GraphBuilder {
        GraphBuilder::default()
    }

    /// Adds a leaf type named `name` (also its ending function), ending in `end` if given.
    pub fn leaf_type(&mut self, name: &str, end: Option<Op>) -> LeafTypeId {
        let boundary = |op: Option<Op>, function: Option<String>| BoundaryInfo {
            op: op.map(OpName::from),
            function,
            frames: Vec::new(),
            code_key: 0,
        };
        self.types.push(LeafType {
            name: name.to_owned(),
            start: boundary(None, None),
            end: boundary(end, Some(name.to_owned())),
            count: 0,
        });
        LeafTypeId::at(self.types.len() - 1)
    }

    /// Adds a thread named `name` (pid 1, tid 1 + its index).
    pub fn thread(&mut self, name: &str) -> ThreadId {
        self.threads.push(name.to_owned());
        self.counts.push(0);
        ThreadId::at(self.threads.len() - 1)
    }

    /// Adds `leaf` at the end of `thread` (its `thread` field is set to it).
    pub fn push(&mut self, thread: ThreadId, mut leaf: Leaf) -> At {
        leaf.thread = thread;
        self.leaves.push(leaf);
        let n = &mut self.counts[thread.index()];
        *n += 1;
        (thread, *n - 1)
    }

    /// Adds a leaf of type `ty` over `start..end` ns at the end of `thread`.
    pub fn leaf(&mut self, thread: ThreadId, ty: LeafTypeId, start: u64, end: u64) -> At {
        self.push(thread, Leaf::new(thread, ty, start, end))
    }

    /// Adds an edge.
    pub fn edge(&mut self, from: At, to: At, kind: EdgeKind) {
        self.edges.push((from, to, kind));
    }

    /// Joins each pair of consecutive leaves on a thread with the program-order edge `kind`
    /// gives it (none for `None`).
    pub fn program_order(&mut self, kind: impl Fn(At, At) -> Option<EdgeKind>) {
        for (th, &n) in self.counts.iter().enumerate() {
            for i in 1..n {
                let (a, b) = ((ThreadId::at(th), i - 1), (ThreadId::at(th), i));
                if let Some(k) = kind(a, b) {
                    self.edges.push((a, b, k));
                }
            }
        }
    }

    /// The leaf id `at` will have, once every leaf has been added.
    pub fn id(&self, at: At) -> u32 {
        self.counts[..at.0.index()].iter().sum::<u32>() + at.1
    }

    /// The graph.
    pub fn build(self) -> Graph {
        let GraphBuilder {
            mut types,
            threads,
            counts,
            mut leaves,
            edges,
        } = self;
        let mut base = Vec::with_capacity(counts.len());
        let mut next = 0u32;
        for &n in &counts {
            base.push(next);
            next += n;
        }
        // Each leaf's place, thread-major, then the leaves permuted in place (a graph of 10^7
        // leaves is built without a second copy of them).
        let mut seen = vec![0u32; counts.len()];
        let mut dest: Vec<u32> = leaves
            .iter()
            .map(|l| {
                let t = l.thread.index();
                seen[t] += 1;
                base[t] + seen[t] - 1
            })
            .collect();
        for i in 0..dest.len() {
            while dest[i] as usize != i {
                let d = dest[i] as usize;
                leaves.swap(i, d);
                dest.swap(i, d);
            }
        }
        for l in &leaves {
            types[l.ty.index()].count += 1;
        }
        let infos = threads
            .into_iter()
            .enumerate()
            .map(|(i, name)| ThreadInfo {
                process: ProcessId::new(0),
                pid: 1,
                tid: 1 + u32::try_from(i).expect("a test graph has few threads"),
                name,
                first_leaf: LeafId::new(base[i]),
                leaves: counts[i],
            })
            .collect();
        let id = |(t, i): At| NodeId::new(base[t.index()] + i);
        let mut edges: Vec<Edge> = edges
            .into_iter()
            .map(|(a, b, kind)| Edge {
                from: id(a),
                to: id(b),
                kind,
                obj: None,
            })
            .collect();
        edges.sort_unstable();
        edges.dedup();
        Graph::new(infos, types, leaves, edges)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leaves_are_numbered_thread_major_whatever_order_they_came_in() {
        let mut b = GraphBuilder::new();
        let ty = b.leaf_type("x", Some(Op::Write));
        let (t0, t1) = (b.thread("a"), b.thread("b"));
        let x = b.leaf(t1, ty, 0, 1);
        let y = b.leaf(t0, ty, 2, 3);
        let z = b.leaf(t1, ty, 4, 5);
        b.edge(y, z, EdgeKind::Stream);
        b.program_order(|_, _| Some(EdgeKind::Program));
        assert_eq!((b.id(x), b.id(y), b.id(z)), (1, 0, 2));
        let g = b.build();
        let starts: Vec<u64> = g.leaves.iter().map(|l| l.start_ns).collect();
        assert_eq!(starts, [2, 0, 4]);
        assert_eq!(g.types[0].count, 3);
        assert_eq!(
            (g.threads[1].first_leaf, g.threads[1].leaves),
            (LeafId::new(1), 2)
        );
        let edges: Vec<_> = g
            .edges
            .iter()
            .map(|e| (e.from.get(), e.to.get(), e.kind))
            .collect();
        assert_eq!(edges, [(0, 2, EdgeKind::Stream), (1, 2, EdgeKind::Program)]);
    }
}
