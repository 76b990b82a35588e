//! Inspecting a trace directory as recorded, before any inference: `scalpel dump` (events, one
//! line each, with their stacks) and `scalpel summary` (counts, losses, sizes).

mod clockfit;
mod dump;
mod events;
mod merged;
mod stacks;
mod streamed;
mod summary;

pub use dump::{dump, parse_op, DumpError, DumpOptions, DumpStats};
pub use events::{event_line, object_text, thread_heading, Identities};
pub use stacks::{map_at, write_stack};
pub use streamed::DumpDir;
pub use summary::Summary;
