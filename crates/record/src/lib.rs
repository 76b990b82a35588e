//! `scalpel record`: prepares the trace directory, finds the agent and runs a command under it.
//!
//! Scope: the recorder's side of a recording (the directory, the broker thread that makes
//! every file the agent writes, the child and its limits). Non-goals: the agent itself
//! (`scalpel-agent`) and reading what it wrote (`scalpel-model`'s reader).

mod broker;
mod child;
mod limits;
mod made;
mod options;
mod run;
mod stackopts;
mod table;
mod tracedir;

pub use broker::BrokerReport;
pub use child::{signal_name, Outcome, SpawnError};
pub use options::{LockMode, RecordError, RecordOptions, AGENT_FILE, DEFAULT_DIR};
pub use run::{find_agent, ld_preload, record, Recording};
pub use stackopts::{
    parse_depth, StackCache, StackMode, StackOptError, StackOptions, MAX_STACK_DEPTH,
};
pub use tracedir::{prepare_dir, TraceRoot};
