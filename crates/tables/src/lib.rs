//! Scalpel's stored tables as Apache Arrow record batches, and as a Parquet dataset that
//! DataFusion, DuckDB, pyarrow or Spark read as it is.
//!
//! Scope: one typed Arrow table per kind of row the graph and model hold (leaves, edges,
//! objects, task types, task instances with their latencies and critical-path composition,
//! waits, samples, machines …; [`TableName`] lists them and `docs/guide/tables.md` documents
//! every column), built from a [`Graph`](scalpel_model::graph::Graph) and its
//! [`Model`](scalpel_model::task::Model), one at a time ([`TableSource`]) or all at once
//! ([`build_tables`]); and their Parquet form, one
//! directory per table partitioned Hive-style by machine and time window ([`write_dataset`],
//! [`read_manifest`]). Ids are the indices the JSON export uses, so they join as foreign keys;
//! times are nanoseconds on the reference machine's `CLOCK_MONOTONIC`; names are
//! dictionary-encoded.
//!
//! A trace inferred in windows is one dataset of windows ([`DatasetWriter`]), each window's
//! rows under an `infer_window` partition, its ids its own.
//!
//! Non-goals: a query engine (`scalpel-sql` embeds DataFusion on these tables), reading the
//! dataset back into a graph, and appending to a dataset once written (it is written whole,
//! from one model or from one trace's windows).

mod batch;
mod dataset;
mod error;
mod events;
mod files;
mod graph;
mod manifest;
mod model;
mod partition;
mod peers;
mod table;
#[cfg(test)]
mod tests;

pub use dataset::{write_dataset, DatasetWriter, MAX_PARTITIONS};
pub use error::TablesError;
pub use manifest::{read_manifest, Manifest, ManifestTable};
pub use partition::{Part, DEFAULT_WINDOW_NS};
pub use table::{build_tables, Table, TableName, TableSource, Tables};
