//! Why a query could not be answered.

/// Why a query could not be answered.
#[derive(Debug, thiserror::Error)]
pub enum SqlError {
    /// The tables could not be built or their dataset read.
    #[error(transparent)]
    Tables(#[from] scalpel_tables::TablesError),
    /// A dataset's directory or manifest cannot be used.
    #[error("{}: {what}", path.display())]
    Dataset {
        /// The directory.
        path: std::path::PathBuf,
        /// What is wrong.
        what: String,
    },
    /// DataFusion refused the query or failed running it.
    #[error("{0}")]
    Query(#[from] datafusion::error::DataFusionError),
    /// The rows could not be formatted.
    #[error("{0}")]
    Format(#[from] datafusion::arrow::error::ArrowError),
    /// The engine's threads could not be started, or the rows not written.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}
