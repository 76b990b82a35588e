//! The wait-for graph of a trace inferred in windows, built one window at a time.
//!
//! Each window's graph is weighed as a whole trace's is (its thread groups, waits and
//! cascades), and its edges are added up by node: a thread group is the node its threads are
//! in (see [`super::roles`]), a pseudo-thread what it is. The knots are then found once, on the sums, and a second pass
//! over the windows replays each window's direct waits to measure the waiting each knot
//! explains. What differs from the whole trace's graph: a chain of waits is followed within its
//! window (a wait that began in the window before is a wait on whoever its window shows), a
//! group's threads are those its name gathers in any window, and a thread's id is its place
//! among the recording's threads in order of first appearance (each window numbers its own).

use ahash::AHashMap;
use scalpel_model::graph::{Graph, ThreadId};

use super::cascade;
use super::finish::{assemble, Sums, Totals};
use super::knots::{self, Found};
use super::roles::{Role, Roles};
use super::{groups, waits, Pseudo, WaitFor, WaitForOptions, WaitNode};

/// A node of the summed graph: a thread group by key, or a pseudo-thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Node {
    Group(u32),
    Pseudo(Pseudo),
}

/// The first pass: every window's edges added up by node.
#[derive(Default)]
pub struct WindowsWaitFor {
    opts: WaitForOptions,
    task: Option<String>,
    /// The thread groups of every window, joined into nodes.
    roles: Roles,
    /// Waiting on each pseudo-thread's behalf (direct waits only).
    pseudo_waited: AHashMap<Pseudo, u64>,
    /// Edges by node, a group by the part it was added to (joined into its node at the end).
    edges: AHashMap<(Node, Node), Sums>,
    totals: Totals,
    /// The earliest leaf start and the latest leaf end of every window.
    first: u64,
    last: u64,
}

impl WindowsWaitFor {
    /// An empty sum, with `opts` (its `task` aside: each window names its own type of the
    /// task `task` names).
    pub fn new(opts: WaitForOptions, task: Option<String>) -> Self {
        WindowsWaitFor {
            opts,
            task,
            first: u64::MAX,
            ..WindowsWaitFor::default()
        }
    }

    /// Adds one window's graph (`keep`: the leaves whose direct waits count, all when `None`).
    pub fn add(&mut self, g: &Graph, keep: Option<&[bool]>) {
        let grouping = groups::group_threads(g, self.opts.groups);
        let timelines = waits::timelines(g, keep);
        let built = cascade::weigh(g, &grouping, &timelines, &self.opts);
        let nodes: Vec<Node> = built
            .nodes
            .iter()
            .map(|n| match n.pseudo {
                Some(p) => {
                    *self.pseudo_waited.entry(p).or_insert(0) += n.waited_ns;
                    Node::Pseudo(p)
                }
                None => Node::Group(self.roles.add(g, n)),
            })
            .collect();
        for ((f, t), sums) in built.sums() {
            let key = (nodes[f as usize], nodes[t as usize]);
            self.edges.entry(key).or_default().add(sums);
        }
        self.totals.total_wait_ns += built.total_wait_ns;
        self.totals.steps += built.steps;
        self.totals.cut |= built.cut;
        for l in &g.leaves {
            self.first = self.first.min(l.start_ns);
            self.last = self.last.max(l.end_ns + l.block_ns);
        }
    }

    /// Ends the first pass: joins the groups into nodes and finds the knots of the sums. Each
    /// window is then given to [`WindowsKnots::explain`], in any order, and the graph taken
    /// with [`WindowsKnots::finish`].
    pub fn knots(self) -> WindowsKnots {
        let (roles, part_index) = self.roles.finish();
        let groups = roles.len();
        let index = |n: Node| match n {
            Node::Group(part) => part_index[part as usize],
            Node::Pseudo(p) => (groups + p as usize) as u32,
        };
        let mut summed: AHashMap<(u32, u32), Sums> = AHashMap::new();
        for (&(f, t), s) in &self.edges {
            summed
                .entry((index(f), index(t)))
                .or_default()
                .add(s.clone());
        }
        let mut edges: Vec<((u32, u32), Sums)> =
            summed.into_iter().filter(|(_, s)| s.weight() > 0).collect();
        edges.sort_unstable_by_key(|e| e.0);
        let weights: Vec<(u32, u32, u64)> = edges
            .iter()
            .map(|&((f, t), ref s)| (f, t, s.weight()))
            .collect();
        let found = knots::find(
            &weights,
            groups + Pseudo::ALL.len(),
            groups,
            self.totals.total_wait_ns,
            &self.opts,
        );
        let explained = vec![0.0; found.knots.len()];
        WindowsKnots {
            sum: self,
            roles,
            part_index,
            edges,
            found,
            explained,
        }
    }
}

/// The second pass: the knots found on the sums, and the waiting each explains so far.
pub struct WindowsKnots {
    sum: WindowsWaitFor,
    /// The summed thread groups, and each part's index among them.
    roles: Vec<Role>,
    part_index: Vec<u32>,
    edges: Vec<((u32, u32), Sums)>,
    found: Found,
    explained: Vec<f64>,
}

impl WindowsKnots {
    /// Adds the waiting of one window (with the same `keep` as in the first pass) that each
    /// knot explains. Only the window's groups and waits are needed: its edges are summed
    /// already.
    pub fn explain(&mut self, g: &Graph, keep: Option<&[bool]>) {
        let grouping = groups::group_threads(g, self.sum.opts.groups);
        let timelines = waits::timelines(g, keep);
        let groups = self.roles.len();
        // The summed node of each of the window's nodes (`u32::MAX`: one no window added).
        let nodes: Vec<u32> = grouping
            .groups
            .iter()
            .map(|gr| {
                self.sum
                    .roles
                    .node(g, gr)
                    .map_or(u32::MAX, |part| self.part_index[part as usize])
            })
            .chain(Pseudo::ALL.iter().map(|&p| (groups + p as usize) as u32))
            .collect();
        // The knots in the window's node ids (a member the window lacks is left out).
        let local: Vec<Vec<u32>> = self
            .found
            .knots
            .iter()
            .map(|members| {
                (0..nodes.len() as u32)
                    .filter(|&l| members.contains(&nodes[l as usize]))
                    .collect()
            })
            .collect();
        let found = Found {
            knots: local,
            ..Found::default()
        };
        let got = cascade::explain(&grouping, &timelines, &found, &self.sum.opts);
        for (e, x) in self.explained.iter_mut().zip(got) {
            *e += x;
        }
    }

    /// The wait-for graph of every window.
    pub fn finish(self) -> WaitFor {
        let sum = self.sum;
        let mut nodes: Vec<WaitNode> = self
            .roles
            .into_iter()
            .map(|r| WaitNode {
                name: match r.threads.len() {
                    0 | 1 => r.name,
                    n => format!("{} ×{n}", r.name),
                },
                pseudo: None,
                threads: r.threads.iter().map(|&t| ThreadId::new(t)).collect(),
                waited_ns: r.waited_ns,
            })
            .collect();
        nodes.extend(Pseudo::ALL.iter().map(|&p| WaitNode {
            name: p.name().to_owned(),
            pseudo: Some(p),
            threads: Vec::new(),
            waited_ns: sum.pseudo_waited.get(&p).copied().unwrap_or(0),
        }));
        let totals = Totals {
            span_ns: sum.last.saturating_sub(sum.first.min(sum.last)),
            ..sum.totals
        };
        assemble(
            nodes,
            self.edges,
            (self.found, self.explained),
            totals,
            sum.task,
        )
    }
}
