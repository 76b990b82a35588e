//! Scalpel's trace format and the types shared by the agent and the inferencer.
//!
//! Scope: the byte layout of per-thread and per-process trace files ([`format`](mod@format)), the
//! allocation-free field encoders the agent writes with ([`wire`], [`record`]) and, with the
//! default `read` feature, a reader that turns a trace directory into typed events ([`read`]), a
//! writer for tests and tools ([`write`]), the causal graph's types ([`graph`]) and the task model's ([`task`]).
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

pub mod format;
#[cfg(feature = "read")]
pub mod graph;
#[cfg(feature = "read")]
pub mod ids;
#[cfg(feature = "read")]
pub mod read;
pub mod record;
#[cfg(feature = "read")]
pub mod task;
pub mod wire;
#[cfg(feature = "read")]
pub mod write;

#[cfg(feature = "read")]
pub use read::{read_dir, read_file, ReadError};
