//! SQL on Scalpel's tables, with DataFusion embedded.
//!
//! Scope: an [`Engine`] that holds every table of one model under its name (`leaves`,
//! `instances`, …, see `scalpel-tables`), either from the tables built in memory or from the
//! Parquet dataset `scalpel_tables::write_dataset` wrote, with the same columns either way
//! (partitioned tables carry `host` and `time_window`); running a query; and writing its rows
//! as a text table, CSV or JSON Lines ([`write_rows`]).
//!
//! Non-goals: a query language of our own, and running anywhere but in this process.

mod engine;
mod error;
mod rows;

pub use engine::Engine;
pub use error::SqlError;
pub use rows::{write_rows, RowFormat};

/// A query's rows, as Arrow holds them.
pub use datafusion::arrow::array::RecordBatch as Batch;
