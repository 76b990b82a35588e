//! Scalpel's trace reader and the types the analysis shares: a reader that turns a trace
//! directory into typed events ([`read`]), a writer for tests and tools ([`write`](mod@write)), the causal
//! graph's types ([`graph`]), the task model's ([`task`]), typed indices into both ([`ids`]),
//! their checks ([`check`]) and how both are stored on disk ([`store`]).
//! The file layout and encoders live in `scalpel-format`, re-exported here as [`format`](mod@format),
//! [`wire`] and [`record`].
//!
//! Non-goals: analysis of any kind (that is the inferencer's), and symbolization.

// Every narrowing or sign-changing conversion of a value read from a file is spelled out:
// trace files are input, and a silent wrap or truncation there is a wrong answer, not a crash.
#![warn(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss,
    clippy::cast_lossless
)]

pub mod check;
mod coded;
pub mod graph;
pub mod ids;
mod leaflist;
pub mod object;
pub mod open;
pub mod read;
pub mod store;
pub mod task;
pub mod text;
pub mod write;

pub use read::{read_dir, read_file, ReadError};
pub use scalpel_format::{broker, format, record, wire};
