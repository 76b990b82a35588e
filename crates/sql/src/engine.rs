//! The engine: a DataFusion session with the tables registered, and a runtime to run it on.

use std::path::Path;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::DataType;
use datafusion::prelude::{ParquetReadOptions, SessionConfig, SessionContext};
use scalpel_tables::{read_manifest, TableName, Tables};

use crate::error::SqlError;

/// A DataFusion session holding one model's tables.
pub struct Engine {
    ctx: SessionContext,
    rt: tokio::runtime::Runtime,
}

/// The dataset's directory as DataFusion reads a path: absolute, in UTF-8, with no glob
/// character (DataFusion would expand it).
fn table_root(dir: &Path) -> Result<String, SqlError> {
    let bad = |what: &str| SqlError::Dataset {
        path: dir.to_path_buf(),
        what: what.to_owned(),
    };
    let abs = dir.canonicalize().map_err(|e| bad(&e.to_string()))?;
    let s = abs
        .to_str()
        .ok_or_else(|| bad("its path is not UTF-8, which DataFusion needs"))?;
    if s.contains(['*', '?', '[', ']', '{', '}']) {
        return Err(bad(
            "its path holds a glob character (*?[]{}), which DataFusion would expand",
        ));
    }
    Ok(s.trim_end_matches('/').to_owned())
}

/// The partition columns, as the dataset's directories give them.
fn partition_cols() -> Vec<(String, DataType)> {
    vec![
        ("host".to_owned(), DataType::Utf8),
        ("time_window".to_owned(), DataType::Int64),
    ]
}

impl Engine {
    fn new() -> Result<Engine, SqlError> {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads.min(4))
            .thread_name("scalpel-sql")
            .build()?;
        // Why one partition: with several, rows of a query without ORDER BY, and sketches
        // such as approx_percentile_cont, depend on which thread finished first; output must
        // be the same from one run to the next. The runtime's threads still do the I/O.
        let config = SessionConfig::new()
            .with_target_partitions(1)
            .with_information_schema(true);
        Ok(Engine {
            ctx: SessionContext::new_with_config(config),
            rt,
        })
    }

    /// An engine on tables built in memory.
    pub fn from_tables(tables: &Tables) -> Result<Engine, SqlError> {
        let e = Engine::new()?;
        for t in &tables.tables {
            let batch = t.with_partition_columns(&tables.hosts)?;
            e.ctx.register_batch(t.name.name(), batch)?;
        }
        Ok(e)
    }

    /// An engine on the Parquet dataset in `dir`.
    pub fn from_dataset(dir: &Path) -> Result<Engine, SqlError> {
        let manifest = read_manifest(dir)?;
        let e = Engine::new()?;
        let root = table_root(dir)?;
        for t in &manifest.tables {
            let name: TableName = t.name.parse().map_err(|_| SqlError::Dataset {
                path: dir.to_path_buf(),
                what: format!(
                    "its manifest names a table {:?} this version does not know",
                    t.name
                ),
            })?;
            let mut opts = ParquetReadOptions::default();
            if t.partitioned {
                opts = opts.table_partition_cols(partition_cols());
            }
            let url = format!("{root}/{}/", name.name());
            e.rt.block_on(e.ctx.register_parquet(name.name(), &url, opts))?;
        }
        Ok(e)
    }

    /// Runs `sql`; returns its rows, with at least one (empty) batch that carries the columns.
    pub fn query(&self, sql: &str) -> Result<Vec<RecordBatch>, SqlError> {
        self.rt.block_on(async {
            let df = self.ctx.sql(sql).await?;
            let schema = df.schema().inner().clone();
            let mut batches = df.collect().await?;
            if batches.is_empty() {
                batches.push(RecordBatch::new_empty(schema));
            }
            Ok(batches)
        })
    }
}
