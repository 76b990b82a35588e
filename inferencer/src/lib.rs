//! Scalpel's analysis library: the pieces behind the `scalpel` command (recording a program
//! under the agent, dumping and summarizing trace directories).

mod child;
mod dump;
pub mod graph;
mod memory;
pub mod mine;
mod naming;
mod record;
mod render;
pub mod rollup;
mod stackopts;
mod stacks;
mod summary;
mod symbolize;

pub use child::{signal_name, Outcome, SpawnError};
pub use dump::{dump, parse_op, DumpError, DumpOptions, DumpStats};
pub use memory::keep_freed_memory;
pub use naming::{naming_frame, SkipList, DEFAULT_SKIP_FUNCTIONS, DEFAULT_SKIP_MODULES};
pub use record::{
    find_agent, ld_preload, prepare_dir, record, RecordError, RecordOptions, Recording, AGENT_FILE,
    DEFAULT_DIR,
};
pub use render::{event_line, object_text, seconds, thread_heading, Identities};
pub use stackopts::{parse_depth, StackCache, StackMode, StackOptions, MAX_STACK_DEPTH};
pub use stacks::{map_at, write_stack};
pub use summary::{human_bytes, Summary};
pub use symbolize::{Frame, Missing, Symbolizer};
