//! Scalpel's analysis library: recording a program under the agent, inspecting the trace, and
//! the pipeline that turns a trace into a task model and its views.
//!
//! The modules follow the pipeline (see `docs/ARCHITECTURE.md`), each importing only those
//! before it: [`record`] runs a program under the agent; [`symbols`], [`progress`] and
//! [`memory`] (the allocator's policy) serve the stages; the stages [`graph`] (leaf tasks and causal edges), [`mine`] (the task hierarchy)
//! and [`rollup`] (where time and bytes went) compute; [`views`] write what people and tools
//! read; [`inspect`] shows a trace as recorded (`dump`, `summary`); and [`pipeline`] is the one
//! driver that runs the stages for every subcommand (`scripts/check-modules.py` checks the
//! order).

pub mod choice;
pub mod graph;
pub mod inspect;
pub mod memory;
pub mod mine;
pub mod pipeline;
pub mod progress;
pub mod record;
pub mod rollup;
pub mod symbols;
pub mod testgraph;
pub mod views;
pub mod waitfor;

pub use pipeline::{Pipeline, PipelineError, PipelineOptions};
