//! Scalpel's analyses over a causal graph and its task model: where the time and the bytes
//! went ([`rollup`]: latency, critical paths, blocked time, bandwidth, the top-down view, the
//! folded stacks a flame graph draws) and who waited on whom ([`waitfor`]: the wait-for graph
//! and its knots).
//!
//! Scope: numbers computed from a [`Graph`](scalpel_model::graph::Graph) and a
//! [`Model`](scalpel_model::task::Model) alone; the crate reads neither traces nor files.
//! Non-goals: building the graph (`scalpel-graph`), mining the model (`scalpel-mine`) and
//! writing anything a person reads (`scalpel-views`).

pub mod diff;
pub mod rollup;
pub mod waitfor;
