//! The graph stage's options, its errors and warnings, and what it returns.

use std::path::PathBuf;

use scalpel_model::graph::Graph;
use scalpel_model::read::{ReadError, RecordingLosses};
use scalpel_symbols::ModuleWarning;

use crate::filter::Filter;

/// Options of the graph stage. `Default`: lenient loading, no filters, the default skip list.
#[derive(Clone, Debug, Default)]
pub struct GraphOptions {
    /// Fail on any data loss (damaged or unreadable files, lost events) instead of warning.
    pub strict: bool,
    /// Keep only leaves matching these (one match per filter kind given).
    pub include: Vec<Filter>,
    /// Drop leaves matching any of these.
    pub exclude: Vec<Filter>,
    /// Frames that never name a leaf type.
    pub skip: scalpel_symbols::SkipList,
    /// Cut leaves at mutex and rwlock calls too (default off): for programs that hand work over
    /// under locks alone, where each critical section then becomes a leaf. Lock order still
    /// draws no edges.
    pub lock_cuts: bool,
}

/// Why the graph could not be built.
#[derive(Debug, thiserror::Error)]
pub enum GraphError {
    /// The directory could not be read at all.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// Strict mode (`GraphOptions::strict`) and the trace lost data.
    #[error("{}: the trace lost data, which strict mode refuses:\n  {}", .dir.display(), lines(.problems))]
    Strict {
        /// The trace directory.
        dir: PathBuf,
        /// Each loss, naming its file and offset.
        problems: Vec<GraphWarning>,
    },
    /// The filters (`GraphOptions::skip`) kept none of the trace's leaves.
    #[error(
        "{}: the filters keep none of its {leaves} leaf tasks (check their pid, tid, name or \
         time range against what the trace holds)",
        .dir.display()
    )]
    NothingKept {
        /// The trace directory.
        dir: PathBuf,
        /// Leaves before filtering.
        leaves: usize,
    },
    /// A `host:NAME` filter names no machine of the traces.
    #[error(
        "no machine is named {name:?}: {}",
        if .known.is_empty() {
            "the traces are of one machine, whose name no filter needs".to_string()
        } else {
            format!("the machines are {}", .known.join(", "))
        }
    )]
    UnknownHost {
        /// The name given.
        name: String,
        /// The machines' names.
        known: Vec<String>,
    },
    /// One trace directory given twice among the traces of several machines.
    #[error(
        "{}: given twice (as {} and {}): each machine's trace is given once",
        .dir.display(), .first.display(), .second.display()
    )]
    GivenTwice {
        /// The directory, resolved.
        dir: PathBuf,
        /// How it was given first.
        first: PathBuf,
        /// How it was given again.
        second: PathBuf,
    },
}

/// Data the graph stage had to do without: each names its file (and offset, if any). What is
/// valid is used all the same.
#[derive(Debug, thiserror::Error)]
pub enum GraphWarning {
    /// Damage the reader found (a truncated file, a bad record …).
    #[error(transparent)]
    Read(ReadError),
    /// Events the agent dropped while recording, as its file counts them.
    #[error("{}: {count} event(s) lost while recording", .path.display())]
    Lost {
        /// The thread file.
        path: PathBuf,
        /// Events lost.
        count: u64,
    },
    /// A module whose frames cannot be symbolized.
    #[error(transparent)]
    Module(ModuleWarning),
    /// Cutting at locks on a trace whose uncontended mutex pairs were counted, not recorded:
    /// there is no call to cut at for them. Not data loss (strict mode passes).
    #[error(
        "{}: {pairs} uncontended mutex lock+unlock pair(s) were counted, not recorded: leaves \
         are cut only at the recorded ones",
        .path.display()
    )]
    CountedLocks {
        /// The trace directory.
        path: PathBuf,
        /// Pairs counted.
        pairs: u64,
    },
    /// Threads or processes the agent could not give a file: their events are missing.
    #[error("{}: the recording lost {losses}", .path.display())]
    Unrecorded {
        /// The trace directory (its `shared.tbl` counts them).
        path: PathBuf,
        /// What was lost.
        losses: RecordingLosses,
    },
    /// Traces of several machines, one without the file that says which machine it is.
    #[error(
        "{}: no {} (a recorder older than the file made it): taken as a machine of its own",
        .path.display(), scalpel_model::format::HOST_FILE
    )]
    NoHostFile {
        /// The trace directory.
        path: PathBuf,
    },
    /// Two trace directories of one machine (one boot, one network and time namespace).
    #[error(
        "{}: recorded on the same machine as {} (one boot, the same namespaces): merged as \
         one machine, on one clock",
        .path.display(), .first.display()
    )]
    OneMachine {
        /// The later directory.
        path: PathBuf,
        /// The directory of that machine given first.
        first: PathBuf,
    },
    /// A machine that shares no connection (seen from its start on both ends) with the others.
    #[error(
        "host {host} ({}): no connection with the other machines seen from its start on both \
         ends: placed by its wall clock, with no bound",
        .path.display()
    )]
    Unaligned {
        /// The machine's name.
        host: String,
        /// Its trace directory.
        path: PathBuf,
    },
    /// The messages between two machines contradict each other.
    #[error(
        "host {host}: its messages with {with} contradict each other by {overlap_ns} ns (no \
         clock offset satisfies them all; clocks that jumped, or connections wrongly paired): \
         placed midway"
    )]
    ClocksCross {
        /// The machine placed.
        host: String,
        /// The machine it was placed against.
        with: String,
        /// By how much the tightest messages each way overlap.
        overlap_ns: u64,
    },
    /// Messages read before they were written, once the clocks are aligned.
    #[error(
        "{count} message(s) from {from} to {to} end before they begin on the aligned clocks \
         (by up to {worst_ns} ns)"
    )]
    OutOfOrder {
        /// The writing machine.
        from: String,
        /// The reading machine.
        to: String,
        /// How many.
        count: u64,
        /// The largest gap (ns).
        worst_ns: u64,
    },
}

/// Warnings one per line, indented.
pub(crate) fn lines(ws: &[GraphWarning]) -> String {
    let v: Vec<String> = ws.iter().map(ToString::to_string).collect();
    v.join("\n  ")
}

/// A built graph and what was noticed on the way.
#[derive(Debug)]
pub struct Built {
    /// The graph.
    pub graph: Graph,
    /// Data-loss and symbolization warnings (each names its file, and its offset if any).
    pub warnings: Vec<GraphWarning>,
    /// Events read.
    pub events: u64,
}
