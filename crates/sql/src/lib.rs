//! SQL on Scalpel's tables, with DataFusion embedded.
//!
//! Scope: an [`Engine`] that holds every table of one model under its name (`leaves`,
//! `instances`, …, see `scalpel-tables`), either from the tables built in memory or from the
//! Parquet dataset `scalpel_tables::write_dataset` wrote, with the same columns either way
//! (partitioned tables carry `host` and `time_window`; every table of a dataset of a trace's
//! windows, `infer_window`), or from several machines' datasets as one (`fleet`); running a
//! query; and writing its rows
//! as a text table, CSV or JSON Lines ([`write_rows`]). A dataset's queries run in this
//! process or, given its scheduler ([`Place`]), on a Ballista cluster whose executors share
//! this machine's file system. Besides DataFusion's functions, queries have one of ours: the
//! fit of two machines' clocks from their messages ([`clock_fit`]).
//!
//! Non-goals: a query language of our own, and a distributed engine of our own: a cluster is
//! Ballista's, planned by DataFusion here.

mod clockfit;
mod engine;
mod error;
mod fleet;
mod place;
mod rows;

pub use clockfit::{clock_fit, CLOCK_FIT};
pub use engine::Engine;
pub use error::SqlError;
pub use place::Place;
pub use rows::{write_rows, RowFormat};

/// A query's rows, as Arrow holds them.
pub use datafusion::arrow::array::RecordBatch as Batch;
