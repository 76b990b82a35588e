//! Scalpel's trace reader and the types the analysis shares: a reader that turns a trace
//! directory into typed events ([`read`]), a writer for tests and tools ([`write`](mod@write)), the causal
//! graph's types ([`graph`]), the task model's ([`task`]), typed indices into both ([`ids`]),
//! their checks ([`check`]), how both are stored on disk ([`store`]) and found by name
//! ([`lookup`]). Beside them, what every stage shares: a hash fixed by its definition ([`fnv`]), how a stage reports where it is
//! ([`progress`]), the allocator's policy ([`memory`]), lists per number laid out flat ([`lists`]), names for option enums ([`choice`]) and
//! a builder of small graphs for tests and benchmarks ([`testgraph`]).
//! The file layout and encoders live in `scalpel-format`, re-exported here as [`format`](mod@format),
//! [`wire`] and [`record`].
//!
//! Non-goals: analysis of any kind (the stage crates: `scalpel-graph`, `scalpel-mine`,
//! `scalpel-analysis`), and symbolization (`scalpel-symbols`).

// Every narrowing or sign-changing conversion of a value read from a file is spelled out:
// trace files are input, and a silent wrap or truncation there is a wrong answer, not a crash.
#![warn(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss,
    clippy::cast_lossless
)]

pub mod check;
pub mod choice;
pub mod clockfit;
mod coded;
pub mod fnv;
pub mod graph;
pub mod host;
pub mod ids;
mod leaflist;
pub mod lists;
pub mod lookup;
pub mod memory;
pub mod object;
pub mod open;
pub mod progress;
pub mod read;
pub mod store;
pub mod task;
pub mod testgraph;
pub mod text;
pub mod write;

pub use read::{read_dir, read_file, ReadError};
pub use scalpel_format::{broker, format, record, wire};
