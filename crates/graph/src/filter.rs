//! `--include` and `--exclude`: keeping the leaves of some machines, processes, threads or a
//! time window.
//!
//! Filters apply after matching, so an edge is found the same way whatever is kept; an edge
//! survives when both its ends do.

use std::str::FromStr;

use scalpel_model::graph::{Edge, Graph, Leaf, LeafId};

/// One filter, parsed from `pid:N`, `tid:N`, `process:NAME`, `thread:NAME`, `host:NAME` or
/// `time:A..B`.
#[derive(Clone, Debug, PartialEq)]
pub enum Filter {
    /// A process id.
    Pid(u32),
    /// A thread id.
    Tid(u32),
    /// Processes whose executable's file name contains this.
    Process(String),
    /// Threads whose name contains this.
    Thread(String),
    /// Leaves overlapping this window, in seconds from the trace's first leaf (either end open).
    Time(Option<f64>, Option<f64>),
    /// The machine of this name, in a graph of several (its name in `Graph::hosts`).
    Host(String),
}

/// A filter that does not parse.
#[derive(Debug, thiserror::Error)]
#[error("bad filter {text:?}: {why} (expected pid:N, tid:N, process:NAME, thread:NAME, host:NAME or time:A..B in seconds)")]
pub struct FilterError {
    text: String,
    why: String,
}

impl FromStr for Filter {
    type Err = FilterError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = |why: &str| FilterError {
            text: s.to_string(),
            why: why.to_string(),
        };
        let (kind, value) = s.split_once(':').ok_or_else(|| err("no ':'"))?;
        let num = |v: &str| v.parse::<u32>().map_err(|_| err("not a number"));
        let secs = |v: &str| -> Result<Option<f64>, FilterError> {
            if v.is_empty() {
                return Ok(None);
            }
            match v.parse::<f64>() {
                Ok(x) if x.is_finite() && x >= 0.0 => Ok(Some(x)),
                _ => Err(err("times are seconds, 0 or more")),
            }
        };
        match kind {
            "pid" => Ok(Filter::Pid(num(value)?)),
            "tid" => Ok(Filter::Tid(num(value)?)),
            "process" if !value.is_empty() => Ok(Filter::Process(value.to_string())),
            "thread" if !value.is_empty() => Ok(Filter::Thread(value.to_string())),
            "host" if !value.is_empty() => Ok(Filter::Host(value.to_string())),
            "process" | "thread" | "host" => Err(err("empty name")),
            "time" => {
                let (a, b) = value.split_once("..").ok_or_else(|| err("no '..'"))?;
                let (a, b) = (secs(a)?, secs(b)?);
                if let (Some(a), Some(b)) = (a, b) {
                    if a > b {
                        return Err(err("the window ends before it starts"));
                    }
                }
                Ok(Filter::Time(a, b))
            }
            _ => Err(err("unknown kind")),
        }
    }
}

impl Filter {
    fn category(&self) -> u8 {
        match self {
            Filter::Pid(_) => 0,
            Filter::Tid(_) => 1,
            Filter::Process(_) => 2,
            Filter::Thread(_) => 3,
            Filter::Time(..) => 4,
            Filter::Host(_) => 5,
        }
    }

    fn matches(&self, g: &Graph, l: &Leaf, t0: u64) -> bool {
        let t = &g.threads[l.thread.index()];
        match self {
            Filter::Pid(p) => t.pid == *p,
            // A graph of one machine lists none: every leaf is on "its" machine, whatever the
            // name (the trace does not say it).
            Filter::Host(n) => {
                g.processes[t.process.index()].host.index() < g.hosts.len()
                    && g.hosts[g.processes[t.process.index()].host.index()].host == *n
            }
            Filter::Tid(x) => t.tid == *x,
            Filter::Thread(n) => t.name.contains(n.as_str()),
            Filter::Process(n) => g.processes[t.process.index()]
                .exe
                .as_deref()
                .is_some_and(|e| {
                    std::path::Path::new(e)
                        .file_name()
                        .is_some_and(|f| f.to_string_lossy().contains(n.as_str()))
                }),
            Filter::Time(a, b) => {
                let at = |s: f64| t0.saturating_add((s * 1e9) as u64);
                let after = match a {
                    Some(a) => l.end_ns + l.block_ns >= at(*a),
                    None => true,
                };
                let before = match b {
                    Some(b) => l.start_ns <= at(*b),
                    None => true,
                };
                after && before
            }
        }
    }
}

/// The first `host:NAME` filter that names no machine of `g`.
pub(super) fn unknown_host<'f>(g: &Graph, filters: &'f [Filter]) -> Option<&'f str> {
    filters.iter().find_map(|f| match f {
        Filter::Host(n) if !g.hosts.iter().any(|h| h.host == *n) => Some(n.as_str()),
        _ => None,
    })
}

/// Drops the leaves the filters reject and renumbers what is left. Returns the external edges
/// that survive.
pub(super) fn apply(
    g: &mut Graph,
    edges: &mut Vec<Edge>,
    ext: Vec<(u32, bool, u32)>,
    include: &[Filter],
    exclude: &[Filter],
) -> Vec<(u32, bool, u32)> {
    if include.is_empty() && exclude.is_empty() {
        return ext;
    }
    let t0 = g.leaves.iter().map(|l| l.start_ns).min().unwrap_or(0);
    let keep: Vec<bool> = g
        .leaves
        .iter()
        .map(|l| {
            let included = (0..6u8).all(|c| {
                let mut of = include.iter().filter(|f| f.category() == c).peekable();
                of.peek().is_none() || of.any(|f| f.matches(g, l, t0))
            });
            included && !exclude.iter().any(|f| f.matches(g, l, t0))
        })
        .collect();
    // Samples go with the leaves they fell in (before the leaves are renumbered).
    let samples = std::mem::take(&mut g.samples);
    g.samples = samples
        .into_iter()
        .filter(|s| {
            g.leaf_at(s.thread, s.at_ns)
                .is_some_and(|l| keep[l.index()])
        })
        .collect();
    let mut new_id = vec![u32::MAX; keep.len()];
    let mut n = 0u32;
    for (i, k) in keep.iter().enumerate() {
        if *k {
            new_id[i] = n;
            n += 1;
        }
    }
    for t in &mut g.threads {
        let range = t.first_leaf.index()..t.first_leaf.index() + t.leaves as usize;
        let kept = keep[range.clone()].iter().filter(|k| **k).count() as u32;
        t.first_leaf = LeafId::new(
            range
                .map(|i| new_id[i])
                .find(|&i| i != u32::MAX)
                .unwrap_or(n),
        );
        t.leaves = kept;
    }
    let mut i = 0;
    g.leaves.retain(|_| {
        i += 1;
        keep[i - 1]
    });
    let mut i = 0;
    g.leaf_cpu_ns.retain(|_| {
        i += 1;
        keep[i - 1]
    });
    let map = |x: LeafId| {
        new_id
            .get(x.index())
            .copied()
            .filter(|&v| v != u32::MAX)
            .map(LeafId::new)
    };
    renumber(&mut g.leaf_files, map, |f| &mut f.leaf);
    edges.retain_mut(
        |e| match (map(LeafId::new(e.from.get())), map(LeafId::new(e.to.get()))) {
            (Some(f), Some(t)) => {
                e.from = f.into();
                e.to = t.into();
                true
            }
            _ => false,
        },
    );
    g.lock_waits.retain_mut(|w| match map(w.waiter) {
        Some(x) => {
            w.waiter = x;
            w.holder = w.holder.and_then(map);
            true
        }
        None => false,
    });
    renumber(&mut g.inner_waits, map, |w| &mut w.leaf);
    renumber(&mut g.peer_transfers, map, |p| &mut p.leaf);
    for ty in &mut g.types {
        ty.count = 0;
    }
    for l in &g.leaves {
        g.types[l.ty.index()].count += 1;
    }
    ext.into_iter()
        .filter_map(|(l, s, o)| map(LeafId::new(l)).map(|l| (l.get(), s, o)))
        .collect()
}

/// Keeps the items of `v` whose leaf is kept, with the leaf renumbered.
fn renumber<T>(
    v: &mut Vec<T>,
    map: impl Fn(LeafId) -> Option<LeafId>,
    leaf: fn(&mut T) -> &mut LeafId,
) {
    v.retain_mut(|x| match map(*leaf(x)) {
        Some(n) => {
            *leaf(x) = n;
            true
        }
        None => false,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use scalpel_model::graph::{
        BoundaryInfo, LeafFile, LeafType, LeafTypeId, ProcessId, ThreadId, ThreadInfo,
    };

    fn thread(tid: u32, name: &str, first_leaf: u32) -> ThreadInfo {
        ThreadInfo {
            process: ProcessId::new(0),
            pid: 1,
            tid,
            name: name.to_owned(),
            first_leaf: LeafId::new(first_leaf),
            leaves: 2,
        }
    }

    /// The side tables of the leaves follow them: file bytes of a dropped leaf go, those of a
    /// kept one are renumbered with it.
    #[test]
    fn leaf_files_follow_their_leaves() {
        let leaves = (0..4).map(|i| {
            Leaf::new(
                ThreadId::new(i / 2),
                LeafTypeId::new(0),
                10 * i as u64,
                10 * i as u64 + 5,
            )
        });
        let none = BoundaryInfo {
            op: None,
            function: None,
            frames: Vec::new(),
            code_key: 0,
        };
        let ty = LeafType {
            name: "t".to_owned(),
            start: none.clone(),
            end: none,
            count: 4,
        };
        let mut g = Graph::new(
            vec![thread(1, "a", 0), thread(2, "b", 2)],
            vec![ty],
            leaves.collect(),
            Vec::new(),
        );
        let file = |leaf, bytes_in| LeafFile {
            leaf: LeafId::new(leaf),
            bytes_in,
            bytes_out: 0,
        };
        g.leaf_files = vec![file(1, 7), file(3, 9)];
        let exclude = ["thread:a".parse().unwrap()];
        apply(&mut g, &mut Vec::new(), Vec::new(), &[], &exclude);
        assert_eq!(g.leaves.len(), 2);
        assert_eq!(g.leaf_files, vec![file(1, 9)]);
        assert_eq!(
            (g.leaf_file(LeafId::new(0)), g.leaf_file(LeafId::new(1))),
            ((0, 0), (9, 0))
        );
    }
}
