//! The miner's working graph: leaves grouped into nodes, the symbols (rules) nodes carry, and
//! contraction of a pair or a run into a new node.
//!
//! Every leaf belongs to exactly one current (top) node and has a *port*: its position in the
//! port space of that node's symbol. Ports are what make a pair's key exact: two occurrences of
//! the same key are joined by the same edges at the same positions, so their expansions are
//! isomorphic by construction. A pair's ports are its first part's followed by its second's; a
//! loop's are its body's, whatever the iteration: loops of different lengths share one symbol,
//! and an edge into a loop says which step of the body it reaches, not which iteration (else a
//! task would split by how often its loop ran).

use scalpel_model::graph::EdgeKind;

/// "No node" / "no leaf" in the index arrays.
pub(super) const NONE: u32 = u32::MAX;

/// An edge between two parts of a rule: kind, port in the source part, port in the target part.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) struct Link {
    /// Index into [`EdgeKind::ALL`].
    pub kind: u8,
    /// Port in the part the edge leaves.
    pub from: u32,
    /// Port in the part the edge enters.
    pub to: u32,
}

/// An edge between two current nodes, with the ports it attaches at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct XEdge {
    pub u: u32,
    pub v: u32,
    pub kind: u8,
    pub pu: u32,
    pub pv: u32,
}

/// What a symbol stands for.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) enum Rule {
    /// A leaf type of the graph.
    Leaf(u32),
    /// `a` then `b`, joined by `links` (from ports of `a` to ports of `b`).
    Pair { a: u32, b: u32, links: Vec<Link> },
    /// Iterations of `body` on one thread, iteration `j` joined to `j + 1` by `links`.
    Loop { body: u32, links: Vec<Link> },
}

/// A symbol and the size of its port space.
#[derive(Clone, Debug)]
pub(super) struct Symbol {
    pub rule: Rule,
    pub space: u32,
}

/// A node: a leaf, or a contraction of older nodes (which keep their records, with `parent`
/// set, so the derivation of every occurrence survives).
#[derive(Clone, Copy, Debug)]
pub(super) struct Node {
    pub sym: u32,
    /// The node this one was contracted into, or [`NONE`] while it is current.
    pub parent: u32,
    /// First leaf, in port order; the node's leaves follow through [`Work::next`].
    pub head: u32,
    pub tail: u32,
    pub leaves: u32,
    /// Child nodes: 0 for a leaf, 2 for a pair, the iteration count for a loop.
    pub children: u32,
}

/// The whole working state.
pub(super) struct Work {
    /// Current node of each leaf.
    pub node_of: Vec<u32>,
    /// Port of each leaf within its current node's symbol.
    pub port: Vec<u32>,
    /// Next leaf of the same node (linked list in port order).
    pub next: Vec<u32>,
    pub nodes: Vec<Node>,
    pub syms: Vec<Symbol>,
    /// Leaf-level edges (from leaf, to leaf, kind index); some may lie inside one node (they
    /// are dropped whenever the edges between nodes are computed from scratch).
    pub edges: Vec<(u32, u32, u8)>,
    /// Leaves whose node or port changed since the edges between nodes were last computed
    /// ([`super::cross::CrossEdges`]), or [`Moved::Many`] once they are an eighth of all.
    pub moved: Moved,
    /// Symbols of the leaf types: leaf type `t` is symbol `t`.
    pub leaf_types: u32,
}

/// The leaves moved by contractions since the edges between nodes were last computed.
#[derive(Debug)]
pub(super) enum Moved {
    /// These (a leaf may repeat).
    Few(Vec<u32>),
    /// At least an eighth of all leaves: the edges are best computed again from scratch, and
    /// the list and the index it needs are not worth their memory.
    Many,
}

impl Moved {
    /// Notes that `leaf` moved, out of `all` leaves.
    fn push(&mut self, leaf: u32, all: usize) {
        if let Moved::Few(v) = self {
            if v.len() < all / 8 {
                v.push(leaf);
            } else {
                *self = Moved::Many;
            }
        }
    }
}

/// Index of an edge kind in [`EdgeKind::ALL`].
pub(super) fn kind_index(k: EdgeKind) -> u8 {
    EdgeKind::ALL.iter().position(|&x| x == k).unwrap_or(0) as u8
}

/// Kind index of weak program order.
pub(super) fn weak_kind() -> u8 {
    kind_index(EdgeKind::ProgramWeak)
}

/// Kind index of (strong) program order.
pub(super) fn program_kind() -> u8 {
    kind_index(EdgeKind::Program)
}

impl Work {
    /// One node per leaf, symbol = leaf type.
    pub(super) fn new(leaf_types: &[u32], n_types: u32, edges: Vec<(u32, u32, u8)>) -> Work {
        let n = leaf_types.len() as u32;
        Work {
            node_of: (0..n).collect(),
            port: vec![0; n as usize],
            next: vec![NONE; n as usize],
            nodes: leaf_types
                .iter()
                .enumerate()
                .map(|(i, &t)| Node {
                    sym: t,
                    parent: NONE,
                    head: i as u32,
                    tail: i as u32,
                    leaves: 1,
                    children: 0,
                })
                .collect(),
            syms: (0..n_types)
                .map(|t| Symbol {
                    rule: Rule::Leaf(t),
                    space: 1,
                })
                .collect(),
            edges,
            moved: Moved::Few(Vec::new()),
            leaf_types: n_types,
        }
    }

    /// Adds a symbol, refusing one whose port space would not fit in 32 bits.
    pub(super) fn add_symbol(&mut self, rule: Rule) -> Option<u32> {
        let space: u64 = match &rule {
            Rule::Leaf(_) => 1,
            Rule::Pair { a, b, .. } => {
                u64::from(self.syms[*a as usize].space) + u64::from(self.syms[*b as usize].space)
            }
            Rule::Loop { body, .. } => u64::from(self.syms[*body as usize].space),
        };
        let space = u32::try_from(space).ok()?;
        self.syms.push(Symbol { rule, space });
        Some(self.syms.len() as u32 - 1)
    }

    /// The leaves of node `n`, in port order.
    pub(super) fn leaves_of(&self, n: u32) -> LeafIter<'_> {
        let node = &self.nodes[n as usize];
        LeafIter {
            next: &self.next,
            at: node.head,
            left: node.leaves,
        }
    }

    /// Contracts `parts` (in order) into a new node of symbol `sym`. For a pair, the second
    /// part's ports move past the first's; a loop's iterations keep their body's ports.
    pub(super) fn contract(&mut self, parts: &[u32], sym: u32, is_loop: bool) -> u32 {
        let id = self.nodes.len() as u32;
        let k = parts.len();
        let mut offset = 0u32;
        let mut total = 0u32;
        for (j, &p) in parts.iter().enumerate() {
            let shift = if is_loop { 0 } else { offset };
            let node = self.nodes[p as usize];
            let mut at = node.head;
            for _ in 0..node.leaves {
                self.node_of[at as usize] = id;
                self.port[at as usize] += shift;
                self.moved.push(at, self.node_of.len());
                at = self.next[at as usize];
            }
            if j > 0 {
                let prev_tail = self.nodes[parts[j - 1] as usize].tail;
                self.next[prev_tail as usize] = node.head;
            }
            self.nodes[p as usize].parent = id;
            offset += self.syms[node.sym as usize].space;
            total += node.leaves;
        }
        let first = self.nodes[parts[0] as usize];
        let last = self.nodes[parts[k - 1] as usize];
        self.nodes.push(Node {
            sym,
            parent: NONE,
            head: first.head,
            tail: last.tail,
            leaves: total,
            children: k as u32,
        });
        id
    }
}

/// Iterator over one node's leaves.
pub(super) struct LeafIter<'a> {
    next: &'a [u32],
    at: u32,
    left: u32,
}

impl Iterator for LeafIter<'_> {
    type Item = u32;
    fn next(&mut self) -> Option<u32> {
        if self.left == 0 {
            return None;
        }
        let here = self.at;
        self.left -= 1;
        self.at = self.next[here as usize];
        Some(here)
    }
}
