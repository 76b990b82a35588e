//! Stage 1 of inference: a trace directory turned into leaf tasks and the causal graph between
//! them (`scalpel infer DIR --stage graph`).
//!
//! Files are decoded in parallel and each is cut into leaves on the thread that decoded it
//! (`sink`, `leaves`), so memory holds leaves and the cuts the matchers need rather than
//! events. The pieces are then numbered trace-wide (`assemble`), notification edges are
//! matched per object (`notify`, `streams`), mutex order becomes contention data
//! (`locks`), and program order joins each thread's leaves (`weak` marks where it is weak).
//!
//! Scope: the instance graph. Non-goals: the hierarchy (the miner reads this graph), rollups,
//! and drawing (`scalpel-views`). The phases and their order are in `build`.

mod assemble;
mod build;
mod calls;
mod carry;
mod completions;
mod condlocks;
mod edges;
mod event;
mod eventfd;
mod eventloop;
mod filter;
mod futexlocks;
mod hosts;
mod jobconns;
mod latches;
mod leaves;
mod local;
mod locks;
mod merge;
mod naming;
mod notify;
mod options;
mod outbound;
mod peeled;
mod peers;
mod perobj;
mod queues;
mod read;
mod ready;
mod releases;
mod replies;
mod replycalls;
mod retype;
mod room;
mod service;
mod signals;
mod sink;
mod skipped;
mod streamorder;
mod streams;
mod types;
mod waits;
mod weak;

pub use build::{
    build_graph, build_graph_of, build_graph_window, build_read_window, read_graph_window,
    WindowRead,
};
pub use carry::{PassCarry, ReadCarry, WindowCarry};
pub use filter::{Filter, FilterError};
pub use options::{Built, GraphError, GraphOptions, GraphWarning};
