//! Scalpel's driver: the one [`pipeline`] that runs the stages for every subcommand, and
//! [`inspect`], which shows a trace as recorded (`dump`, `summary`). The `scalpel` command is
//! this crate's binary.
//!
//! The stages are crates of their own, and Cargo's dependency graph is the layering (see
//! `docs/ARCHITECTURE.md`): `scalpel-record` runs a program under the agent; `scalpel-graph`
//! (leaf tasks and causal edges), `scalpel-mine` (the task hierarchy) and `scalpel-analysis`
//! (where time and bytes went, who waited on whom) compute over `scalpel-model`'s types;
//! `scalpel-views` writes what people and tools read.

pub mod inspect;
pub mod pipeline;

pub use pipeline::{Pipeline, PipelineError, PipelineOptions};
