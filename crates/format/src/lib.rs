//! Scalpel's trace format: the byte layout of per-thread and per-process trace files
//! ([`format`](mod@format)) and the allocation-free encoders the agent writes records with
//! ([`wire`], [`record`]).
//!
//! Scope: what the agent and the reader must agree on, and nothing else, so that the agent
//! (which links this crate into every process it records) carries no dependency at all.
//! Non-goals: reading traces, and the types the analysis builds (both in `scalpel-model`).

// Every narrowing or sign-changing conversion is spelled out: a silent wrap or truncation of a
// field is a wrong trace, not a crash.
#![warn(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss,
    clippy::cast_lossless
)]

pub mod broker;
pub mod format;
pub mod record;
pub mod wire;
