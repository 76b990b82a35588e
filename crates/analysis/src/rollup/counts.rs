//! What the top-down view counts of a trace besides its tasks: processes, threads and leaves,
//! of one graph or of a trace's windows added up ([`super::WindowsRollup`]).

use scalpel_model::graph::{Graph, HostInfo};

/// What the view counts of the trace besides its tasks: its processes, threads and leaves.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TraceCounts {
    /// Processes with leaves.
    pub processes: usize,
    /// Threads with leaves.
    pub threads: usize,
    /// Processes recorded, with leaves or not.
    pub processes_recorded: usize,
    /// Threads recorded, with leaves or not.
    pub threads_recorded: usize,
    /// Leaf instances.
    pub leaves: usize,
    /// The machines, when the traces were of several.
    pub hosts: Vec<HostInfo>,
    /// The time windows added up (0: a trace inferred whole).
    pub windows: usize,
}

impl TraceCounts {
    /// The counts of `graph`.
    pub fn of(graph: &Graph) -> TraceCounts {
        // Threads and processes that `--include`/`--exclude` emptied stay listed in the graph.
        let live: Vec<&scalpel_model::graph::ThreadInfo> =
            graph.threads.iter().filter(|t| t.leaves > 0).collect();
        let mut processes: Vec<_> = live.iter().map(|t| t.process).collect();
        processes.sort_unstable();
        processes.dedup();
        TraceCounts {
            processes: processes.len(),
            threads: live.len(),
            processes_recorded: graph.processes.len(),
            threads_recorded: graph.threads.len(),
            leaves: graph.leaves.len(),
            hosts: graph.hosts.clone(),
            windows: 0,
        }
    }
}
