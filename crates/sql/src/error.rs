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
    /// Where queries should run is not understood.
    #[error("{given:?}: {what}")]
    Place {
        /// What was given.
        given: String,
        /// What is wrong with it.
        what: String,
    },
    /// The Ballista cluster could not be reached, or failed running the query.
    #[error("the Ballista cluster at {place}: {source}")]
    Cluster {
        /// The cluster.
        place: crate::Place,
        /// What DataFusion or Ballista said.
        source: datafusion::error::DataFusionError,
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
