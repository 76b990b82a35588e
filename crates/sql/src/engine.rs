//! The engine: a DataFusion session with the tables registered, and a runtime to run it on.

use std::path::Path;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::DataType;
use datafusion::prelude::{ParquetReadOptions, SessionConfig, SessionContext};
use scalpel_tables::{read_manifest, Tables};

use crate::error::SqlError;

/// A DataFusion session holding one model's tables.
pub struct Engine {
    ctx: SessionContext,
    rt: tokio::runtime::Runtime,
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
            .worker_threads(threads)
            .thread_name("scalpel-sql")
            .build()?;
        // Why: output is deterministic only when a query says its order; a session that
        // keeps the scan order of files and rows at least keeps small results stable.
        let config = SessionConfig::new()
            .with_target_partitions(threads)
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
        for t in &manifest.tables {
            let mut opts = ParquetReadOptions::default();
            if t.partitioned {
                opts = opts.table_partition_cols(partition_cols());
            }
            let path = dir.join(&t.name);
            let url = format!("{}/", path.display());
            e.rt.block_on(e.ctx.register_parquet(&t.name, &url, opts))?;
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
