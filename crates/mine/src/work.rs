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

use scalpel_model::graph::{EdgeKind, LeafTypeId};

use super::ix::{IxVec, KindIx, LeafIx, NodeIx, Port, SymIx};

/// A leaf-level edge: from leaf, to leaf, kind.
pub(super) type LeafEdge = (LeafIx, LeafIx, KindIx);

/// An edge between two parts of a rule: kind, port in the source part, port in the target part.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) struct Link {
    pub kind: KindIx,
    /// Port in the part the edge leaves.
    pub from: Port,
    /// Port in the part the edge enters.
    pub to: Port,
}

/// An edge between two current nodes, with the ports it attaches at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct XEdge {
    pub u: NodeIx,
    pub v: NodeIx,
    pub kind: KindIx,
    pub pu: Port,
    pub pv: Port,
}

/// What a symbol stands for.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) enum Rule {
    /// A leaf type of the graph.
    Leaf(LeafTypeId),
    /// `a` then `b`, joined by `links` (from ports of `a` to ports of `b`).
    Pair {
        a: SymIx,
        b: SymIx,
        links: Vec<Link>,
    },
    /// Iterations of `body` on one thread, iteration `j` joined to `j + 1` by `links`.
    Loop { body: SymIx, links: Vec<Link> },
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
    pub sym: SymIx,
    /// The node this one was contracted into, or [`NodeIx::NONE`] while it is current.
    pub parent: NodeIx,
    /// First leaf, in port order; the node's leaves follow through [`Work::next`].
    pub head: LeafIx,
    pub tail: LeafIx,
    pub leaves: u32,
    /// Child nodes: 0 for a leaf, 2 for a pair, the iteration count for a loop.
    pub children: u32,
}

/// The whole working state.
pub(super) struct Work {
    /// Current node of each leaf.
    pub node_of: IxVec<LeafIx, NodeIx>,
    /// Port of each leaf within its current node's symbol.
    pub port: IxVec<LeafIx, Port>,
    /// Next leaf of the same node (linked list in port order).
    pub next: IxVec<LeafIx, LeafIx>,
    pub nodes: IxVec<NodeIx, Node>,
    pub syms: IxVec<SymIx, Symbol>,
    /// Leaf-level edges (from leaf, to leaf, kind index); some may lie inside one node (they
    /// are dropped whenever the edges between nodes are computed from scratch).
    pub edges: Vec<LeafEdge>,
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
    Few(Vec<LeafIx>),
    /// At least an eighth of all leaves: the edges are best computed again from scratch, and
    /// the list and the index it needs are not worth their memory.
    Many,
}

impl Moved {
    /// Notes that `leaf` moved, out of `all` leaves.
    fn push(&mut self, leaf: LeafIx, all: usize) {
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
pub(super) fn kind_index(k: EdgeKind) -> KindIx {
    KindIx::new(EdgeKind::ALL.iter().position(|&x| x == k).unwrap_or(0))
}

/// Kind index of weak program order.
pub(super) fn weak_kind() -> KindIx {
    kind_index(EdgeKind::ProgramWeak)
}

/// Kind index of (strong) program order.
pub(super) fn program_kind() -> KindIx {
    kind_index(EdgeKind::Program)
}

impl Work {
    /// One node per leaf, symbol = leaf type (leaf type `t` is symbol `t`).
    pub(super) fn new(leaf_types: &[LeafTypeId], n_types: u32, edges: Vec<LeafEdge>) -> Work {
        let n = leaf_types.len();
        Work {
            node_of: (0..n).map(NodeIx::new).collect(),
            port: IxVec::from_elem(Port::new(0), n),
            next: IxVec::from_elem(LeafIx::NONE, n),
            nodes: leaf_types
                .iter()
                .enumerate()
                .map(|(i, &t)| Node {
                    sym: SymIx::new(t.index()),
                    parent: NodeIx::NONE,
                    head: LeafIx::new(i),
                    tail: LeafIx::new(i),
                    leaves: 1,
                    children: 0,
                })
                .collect(),
            syms: (0..n_types)
                .map(|t| Symbol {
                    rule: Rule::Leaf(LeafTypeId::new(t)),
                    space: 1,
                })
                .collect(),
            edges,
            moved: Moved::Few(Vec::new()),
            leaf_types: n_types,
        }
    }

    /// Adds a symbol, refusing one whose port space would not fit in 32 bits.
    pub(super) fn add_symbol(&mut self, rule: Rule) -> Option<SymIx> {
        let space: u64 = match &rule {
            Rule::Leaf(_) => 1,
            Rule::Pair { a, b, .. } => {
                u64::from(self.syms[*a].space) + u64::from(self.syms[*b].space)
            }
            Rule::Loop { body, .. } => u64::from(self.syms[*body].space),
        };
        let space = u32::try_from(space).ok()?;
        Some(self.syms.push(Symbol { rule, space }))
    }

    /// The leaves of node `n`, in port order.
    pub(super) fn leaves_of(&self, n: NodeIx) -> LeafIter<'_> {
        let node = &self.nodes[n];
        LeafIter {
            next: &self.next,
            at: node.head,
            left: node.leaves,
        }
    }

    /// Contracts `parts` (in order) into a new node of symbol `sym`. For a pair, the second
    /// part's ports move past the first's; a loop's iterations keep their body's ports.
    pub(super) fn contract(&mut self, parts: &[NodeIx], sym: SymIx, is_loop: bool) -> NodeIx {
        let id = NodeIx::new(self.nodes.len());
        let k = parts.len();
        let mut offset = 0u32;
        let mut total = 0u32;
        for (j, &p) in parts.iter().enumerate() {
            let shift = if is_loop { 0 } else { offset };
            let node = self.nodes[p];
            let mut at = node.head;
            for _ in 0..node.leaves {
                self.node_of[at] = id;
                self.port[at] = self.port[at].shifted(shift);
                self.moved.push(at, self.node_of.len());
                at = self.next[at];
            }
            if j > 0 {
                let prev_tail = self.nodes[parts[j - 1]].tail;
                self.next[prev_tail] = node.head;
            }
            self.nodes[p].parent = id;
            offset += self.syms[node.sym].space;
            total += node.leaves;
        }
        let first = self.nodes[parts[0]];
        let last = self.nodes[parts[k - 1]];
        self.nodes.push(Node {
            sym,
            parent: NodeIx::NONE,
            head: first.head,
            tail: last.tail,
            leaves: total,
            children: k as u32,
        })
    }
}

/// Iterator over one node's leaves.
pub(super) struct LeafIter<'a> {
    next: &'a IxVec<LeafIx, LeafIx>,
    at: LeafIx,
    left: u32,
}

impl Iterator for LeafIter<'_> {
    type Item = LeafIx;
    fn next(&mut self) -> Option<LeafIx> {
        if self.left == 0 {
            return None;
        }
        let here = self.at;
        self.left -= 1;
        self.at = self.next[here];
        Some(here)
    }
}
