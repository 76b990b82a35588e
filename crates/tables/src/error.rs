//! Why a table could not be built, written or read.

use std::io;
use std::path::PathBuf;

/// Why a table could not be built, written or read.
#[derive(Debug, thiserror::Error)]
pub enum TablesError {
    /// A column did not fit its table (a bug: every column is built to the table's length).
    #[error("table {table}: {source}")]
    Arrow {
        /// The table.
        table: &'static str,
        /// What Arrow said.
        source: arrow_schema::ArrowError,
    },
    /// A table of the model was asked for, and there is no model.
    #[error("the {0} table is the model's, and only a graph was given")]
    NoModel(&'static str),
    /// A file or directory could not be created, written or read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What the system said.
        source: io::Error,
    },
    /// Parquet could not encode a table's rows.
    #[error("{}: {source}", path.display())]
    Parquet {
        /// The file being written.
        path: PathBuf,
        /// What the encoder said.
        source: parquet::errors::ParquetError,
    },
    /// The output directory holds something other than an earlier dataset.
    #[error(
        "{}: not empty and not a Scalpel table dataset (no scalpel-tables.json); nothing was \
         written",
        path.display()
    )]
    NotADataset {
        /// The directory.
        path: PathBuf,
    },
    /// The dataset's export did not finish.
    #[error("{}: the export that wrote this dataset did not finish; export again", path.display())]
    Incomplete {
        /// The manifest.
        path: PathBuf,
    },
    /// The window would cut a table into too many partitions.
    #[error(
        "the time window would cut a table into as many as {partitions} partitions (at most \
         {most}): choose a wider window"
    )]
    TooManyPartitions {
        /// How many it could be.
        partitions: u64,
        /// The most allowed.
        most: u64,
    },
    /// A dataset's manifest could not be read.
    #[error("{}: {what}", path.display())]
    Manifest {
        /// The manifest file.
        path: PathBuf,
        /// What was wrong, with the offset where the JSON broke.
        what: String,
    },
    /// A second model was given to a dataset of one.
    #[error("a dataset of one model takes one; a trace's windows make a dataset of windows")]
    OneModel,
    /// A window of a trace names other machines than the first window.
    #[error(
        "window {window} holds the machines {these}, the first window {first}: the windows \
         are not one trace's"
    )]
    OtherMachines {
        /// The window, from 0.
        window: u32,
        /// The first window's machines.
        first: String,
        /// This window's.
        these: String,
    },
}
