//! Where a row goes in the dataset: its machine and its time window, as Hive-style directory
//! names (`host=web1/time_window=3/`) that DataFusion, DuckDB, pyarrow and Spark read as
//! columns.

use std::collections::BTreeMap;

use arrow_array::{RecordBatch, UInt32Array};

use crate::error::TablesError;

/// The default time window: a minute of the trace.
pub const DEFAULT_WINDOW_NS: u64 = 60_000_000_000;

/// One partition of a table: the rows of one machine in one time window.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Part {
    /// The machine's index in [`crate::Tables::hosts`].
    pub host: u32,
    /// The window: whole windows since the trace's first leaf began.
    pub window: u64,
}

/// Splits `batch` by the part of each of its rows, parts in order, rows in their order.
pub(crate) fn split(
    table: &'static str,
    batch: &RecordBatch,
    parts: &[Part],
) -> Result<Vec<(Part, RecordBatch)>, TablesError> {
    let mut rows: BTreeMap<Part, Vec<u32>> = BTreeMap::new();
    for (i, p) in parts.iter().enumerate() {
        rows.entry(*p).or_default().push(i as u32);
    }
    if rows.len() == 1 {
        return Ok(vec![(parts[0], batch.clone())]);
    }
    rows.into_iter()
        .map(|(p, idx)| {
            arrow_select::take::take_record_batch(batch, &UInt32Array::from(idx))
                .map(|b| (p, b))
                .map_err(|source| TablesError::Arrow { table, source })
        })
        .collect()
}
