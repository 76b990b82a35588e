//! The wait-for graph of a trace inferred in windows, built one window at a time.
//!
//! Each window's graph is weighed as a whole trace's is (its thread groups, waits and
//! cascades), and its edges are added up by node: a thread group is the node of the window
//! before that holds most of its threads, or else of its name without the thread count
//! (`nginx: worker` whether a window saw three of its threads or four; a thread is in the node
//! it was first in); a pseudo-thread is what it is. The knots are then found once, on the sums, and a second pass
//! over the windows replays each window's direct waits to measure the waiting each knot
//! explains. What differs from the whole trace's graph: a chain of waits is followed within its
//! window (a wait that began in the window before is a wait on whoever its window shows), a
//! group's threads are those its name gathers in any window, and a thread's id is its place
//! among the recording's threads in order of first appearance (each window numbers its own).

use ahash::AHashMap;
use scalpel_model::graph::{Graph, ThreadId};

use super::cascade::{self, Built};
use super::finish::{assemble, Sums, Totals};
use super::knots::{self, Found};
use super::{groups, waits, Pseudo, WaitFor, WaitForOptions, WaitNode};

/// A node of the summed graph: a thread group by key, or a pseudo-thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Node {
    Group(u32),
    Pseudo(Pseudo),
}

/// A group's name without its ` ×N` thread count: what names one role in every window.
fn group_key(name: &str) -> &str {
    match name.rsplit_once(" ×") {
        Some((key, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => key,
        _ => name,
    }
}

/// A group key without the ` #k` that told it from a group of the same name in its window.
fn unnumbered(key: &str) -> &str {
    match key.rsplit_once(" #") {
        Some((base, k)) if !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()) => base,
        _ => key,
    }
}

/// The summed groups' names, in node order: each key without its window's ` #k`, numbered
/// again among the summed groups as one trace's are (the second of a name `#2`, and so on),
/// since which `#k` a role took depended on the window.
fn renumbered<'k>(keys: impl Iterator<Item = &'k str>) -> Vec<String> {
    let mut used: AHashMap<&str, usize> = AHashMap::new();
    keys.map(|key| {
        let base = unnumbered(key);
        let k = used.entry(base).or_insert(0);
        *k += 1;
        match *k {
            1 => base.to_owned(),
            k => format!("{base} #{k}"),
        }
    })
    .collect()
}

/// The first pass: every window's edges added up by node.
#[derive(Default)]
pub struct WindowsWaitFor {
    opts: WaitForOptions,
    task: Option<String>,
    /// Thread groups by key, in order of first appearance, with their threads' summed ids.
    groups: Vec<(String, Vec<u32>, u64)>,
    group_of: AHashMap<String, u32>,
    /// Each thread (by process and thread id), numbered in order of first appearance.
    thread_ids: AHashMap<(u32, u32), u32>,
    /// Each thread's node: the first it was in.
    thread_group: AHashMap<(u32, u32), u32>,
    /// Waiting on each pseudo-thread's behalf (direct waits only).
    pseudo_waited: AHashMap<Pseudo, u64>,
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

    /// The window's weighed graph, with the direct waits of the leaves `keep` marks (all when
    /// `None`).
    fn weigh<'g>(&self, g: &'g Graph, keep: Option<&[bool]>) -> Weighed<'g> {
        let grouping = groups::group_threads(g, self.opts.groups);
        let timelines = waits::timelines(g, keep);
        let built = cascade::weigh(g, &grouping, &timelines, &self.opts);
        Weighed {
            grouping,
            timelines,
            built,
        }
    }

    /// The summed graph's node of each of a window's nodes: a thread group is the node that
    /// already holds most of its threads (a role whose name in this window took another `#k`),
    /// else the node of its key; `Group(u32::MAX)` when neither exists.
    fn nodes_of(&self, g: &Graph, built: &Built<'_>) -> Vec<Node> {
        built
            .nodes
            .iter()
            .map(|n| match n.pseudo {
                Some(p) => Node::Pseudo(p),
                None => Node::Group(self.group_of_threads(g, n).unwrap_or_else(|| {
                    self.group_of
                        .get(group_key(&n.name))
                        .copied()
                        .unwrap_or(u32::MAX)
                })),
            })
            .collect()
    }

    /// The node that holds most of `n`'s threads (ties: the earliest), if any does.
    fn group_of_threads(&self, g: &Graph, n: &WaitNode) -> Option<u32> {
        let mut votes: Vec<(u32, usize)> = Vec::new();
        for t in &n.threads {
            let info = &g.threads[t.index()];
            let Some(&group) = self.thread_group.get(&(info.pid, info.tid)) else {
                continue;
            };
            match votes.iter_mut().find(|v| v.0 == group) {
                Some(v) => v.1 += 1,
                None => votes.push((group, 1)),
            }
        }
        votes
            .into_iter()
            .max_by_key(|&(group, count)| (count, std::cmp::Reverse(group)))
            .map(|(group, _)| group)
    }

    /// Adds one window's graph (`keep`: the leaves whose direct waits count, all when `None`).
    pub fn add(&mut self, g: &Graph, keep: Option<&[bool]>) {
        let w = self.weigh(g, keep);
        let mut nodes = self.nodes_of(g, &w.built);
        for (local, n) in w.built.nodes.iter().enumerate() {
            let group = match nodes[local] {
                Node::Pseudo(p) => {
                    *self.pseudo_waited.entry(p).or_insert(0) += n.waited_ns;
                    continue;
                }
                Node::Group(u32::MAX) => {
                    let k = self.groups.len() as u32;
                    let key = group_key(&n.name).to_owned();
                    self.group_of.insert(key.clone(), k);
                    self.groups.push((key, Vec::new(), 0));
                    nodes[local] = Node::Group(k);
                    k
                }
                Node::Group(k) => k,
            };
            self.groups[group as usize].2 += n.waited_ns;
            for t in &n.threads {
                let info = &g.threads[t.index()];
                let next = self.thread_ids.len() as u32;
                let id = *self.thread_ids.entry((info.pid, info.tid)).or_insert(next);
                self.thread_group
                    .entry((info.pid, info.tid))
                    .or_insert(group);
                let threads = &mut self.groups[group as usize].1;
                if !threads.contains(&id) {
                    threads.push(id);
                }
            }
        }
        for ((f, t), sums) in w.built.sums() {
            let key = (nodes[f as usize], nodes[t as usize]);
            self.edges.entry(key).or_default().add(sums);
        }
        self.totals.total_wait_ns += w.built.total_wait_ns;
        self.totals.steps += w.built.steps;
        self.totals.cut |= w.built.cut;
        for l in &g.leaves {
            self.first = self.first.min(l.start_ns);
            self.last = self.last.max(l.end_ns + l.block_ns);
        }
    }

    /// The summed graph's node index of `n`: thread groups first, then [`Pseudo::ALL`].
    fn index(&self, n: Node) -> u32 {
        match n {
            Node::Group(k) => k,
            Node::Pseudo(p) => (self.groups.len() + p as usize) as u32,
        }
    }

    /// Ends the first pass: finds the knots of the sums. Each window is then given to
    /// [`WindowsKnots::explain`], in any order, and the graph taken with
    /// [`WindowsKnots::finish`].
    pub fn knots(self) -> WindowsKnots {
        let mut edges: Vec<((u32, u32), Sums)> = self
            .edges
            .iter()
            .map(|(&(f, t), s)| ((self.index(f), self.index(t)), s.clone()))
            .filter(|(_, s)| s.weight() > 0)
            .collect();
        edges.sort_unstable_by_key(|e| e.0);
        let weights: Vec<(u32, u32, u64)> = edges
            .iter()
            .map(|&((f, t), ref s)| (f, t, s.weight()))
            .collect();
        let nodes = self.groups.len() + Pseudo::ALL.len();
        let found = knots::find(
            &weights,
            nodes,
            self.groups.len(),
            self.totals.total_wait_ns,
            &self.opts,
        );
        let explained = vec![0.0; found.knots.len()];
        WindowsKnots {
            sum: self,
            edges,
            found,
            explained,
        }
    }
}

/// One window's weighed graph, and what weighing it read.
struct Weighed<'g> {
    grouping: groups::Grouping,
    timelines: Vec<waits::Timeline>,
    built: Built<'g>,
}

/// The second pass: the knots found on the sums, and the waiting each explains so far.
pub struct WindowsKnots {
    sum: WindowsWaitFor,
    edges: Vec<((u32, u32), Sums)>,
    found: Found,
    explained: Vec<f64>,
}

impl WindowsKnots {
    /// Adds the waiting of one window (with the same `keep` as in the first pass) that each
    /// knot explains.
    pub fn explain(&mut self, g: &Graph, keep: Option<&[bool]>) {
        let w = self.sum.weigh(g, keep);
        let nodes = self.sum.nodes_of(g, &w.built);
        // The knots in the window's node ids (a member the window lacks is left out).
        let local: Vec<Vec<u32>> = self
            .found
            .knots
            .iter()
            .map(|members| {
                (0..nodes.len() as u32)
                    .filter(|&l| members.contains(&self.sum.index(nodes[l as usize])))
                    .collect()
            })
            .collect();
        let found = Found {
            knots: local,
            ..Found::default()
        };
        let got = cascade::explain(&w.grouping, &w.timelines, &w.built, &found, &self.sum.opts);
        for (e, x) in self.explained.iter_mut().zip(got) {
            *e += x;
        }
    }

    /// The wait-for graph of every window.
    pub fn finish(self) -> WaitFor {
        let sum = self.sum;
        let names = renumbered(sum.groups.iter().map(|g| g.0.as_str()));
        let mut nodes: Vec<WaitNode> = sum
            .groups
            .iter()
            .zip(names)
            .map(|((_, threads, waited), key)| WaitNode {
                name: match threads.len() {
                    0 | 1 => key,
                    n => format!("{key} ×{n}"),
                },
                pseudo: None,
                threads: threads.iter().map(|&t| ThreadId::new(t)).collect(),
                waited_ns: *waited,
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

#[cfg(test)]
mod tests {
    use super::{group_key, renumbered};

    #[test]
    fn summed_groups_are_numbered_again_in_node_order() {
        let keys = ["pool (read) #3", "pool (read)", "main", "pool (read) #2"];
        assert_eq!(
            renumbered(keys.into_iter()),
            ["pool (read)", "pool (read) #2", "main", "pool (read) #3"]
        );
    }

    #[test]
    fn a_groups_key_is_its_name_without_the_thread_count() {
        assert_eq!(group_key("nginx: worker ×4"), "nginx: worker");
        assert_eq!(group_key("nginx: worker"), "nginx: worker");
        assert_eq!(group_key("pool ×x"), "pool ×x");
        assert_eq!(group_key("a ×2 b"), "a ×2 b");
    }
}
