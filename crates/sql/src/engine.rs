//! The engine: a DataFusion session with the tables registered, and a runtime to run it on;
//! the session plans here and runs its plans here or on a Ballista cluster.

use std::path::Path;

use ballista::prelude::{SessionConfigExt, SessionContextExt};
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::execution::SessionStateBuilder;
use datafusion::prelude::{ParquetReadOptions, SessionConfig, SessionContext};
use scalpel_tables::{read_manifest, TableName, Tables};

use crate::error::SqlError;
use crate::place::Place;

/// A DataFusion session holding one model's tables.
pub struct Engine {
    ctx: SessionContext,
    rt: tokio::runtime::Runtime,
    place: Place,
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

/// A runtime for the session's work here (planning, reading, and for a cluster the client's
/// calls).
fn runtime() -> Result<tokio::runtime::Runtime, SqlError> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads.min(4))
        .thread_name("scalpel-sql")
        .enable_all()
        .build()?)
}

impl Engine {
    fn new(place: &Place) -> Result<Engine, SqlError> {
        let rt = runtime()?;
        let ctx = match place {
            // Why one partition: with several, rows of a query without ORDER BY, and sketches
            // such as approx_percentile_cont, depend on which thread finished first; output
            // must be the same from one run to the next. The runtime's threads still do the
            // I/O.
            Place::Embedded => SessionContext::new_with_config(
                SessionConfig::new()
                    .with_target_partitions(1)
                    .with_information_schema(true),
            ),
            // A cluster spreads a plan's partitions over its executors, so it keeps Ballista's
            // own partitioning; rows come in a fixed order only under ORDER BY.
            Place::Ballista { host, port } => {
                let state = SessionStateBuilder::new()
                    .with_config(SessionConfig::new_with_ballista())
                    .with_default_features()
                    .build();
                let url = format!("df://{host}:{port}");
                rt.block_on(SessionContext::remote_with_state(&url, state))
                    .map_err(|source| SqlError::Cluster {
                        place: place.clone(),
                        source,
                    })?
            }
        };
        Ok(Engine {
            ctx,
            rt,
            place: place.clone(),
        })
    }

    /// An engine on tables built in memory, embedded (a cluster's executors read files).
    pub fn from_tables(tables: &Tables) -> Result<Engine, SqlError> {
        let e = Engine::new(&Place::Embedded)?;
        for t in &tables.tables {
            let batch = t.with_partition_columns(&tables.hosts)?;
            e.ctx.register_batch(t.name.name(), batch)?;
        }
        Ok(e)
    }

    /// An engine on the Parquet dataset in `dir`, running its queries at `place`.
    pub fn from_dataset(dir: &Path, place: &Place) -> Result<Engine, SqlError> {
        let manifest = read_manifest(dir)?;
        let e = Engine::new(place)?;
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
            e.rt.block_on(e.ctx.register_parquet(name.name(), &url, opts.clone()))?;
            if matches!(place, Place::Ballista { .. }) {
                e.register_plain(name.name(), &url, opts)?;
            }
        }
        Ok(e)
    }

    /// Registers table `name` again with its dictionary columns read as plain values.
    /// Why: Ballista 55's shuffle hands a stage's dictionary columns on as plain arrays, and
    /// the next stage, planned with the dictionary type, fails ("column types must match
    /// schema types"); the values are the same either way.
    fn register_plain(
        &self,
        name: &str,
        url: &str,
        opts: ParquetReadOptions<'_>,
    ) -> Result<(), SqlError> {
        let provider = self.rt.block_on(self.ctx.table_provider(name))?;
        let schema = provider.schema();
        let files = schema.fields().len() - opts.table_partition_cols.len();
        let plain = Schema::new(
            schema.fields()[..files]
                .iter()
                .map(|f| match f.data_type() {
                    DataType::Dictionary(_, v) => f.as_ref().clone().with_data_type(*v.clone()),
                    _ => f.as_ref().clone(),
                })
                .collect::<Vec<Field>>(),
        )
        .with_metadata(schema.metadata().clone());
        if plain.fields().iter().eq(&schema.fields()[..files]) {
            return Ok(());
        }
        self.ctx.deregister_table(name)?;
        let opts = opts.schema(&plain);
        self.rt
            .block_on(self.ctx.register_parquet(name, url, opts))?;
        Ok(())
    }

    /// Runs `sql`; returns its rows, with at least one (empty) batch that carries the columns.
    pub fn query(&self, sql: &str) -> Result<Vec<RecordBatch>, SqlError> {
        let (schema, batches) = self
            .rt
            .block_on(async {
                let df = self.ctx.sql(sql).await?;
                let schema = df.schema().inner().clone();
                Ok((schema, df.collect().await?))
            })
            .map_err(|e| self.failed(e))?;
        let mut batches = batches;
        if batches.is_empty() {
            batches.push(RecordBatch::new_empty(schema));
        }
        Ok(batches)
    }

    /// Where the queries run.
    pub fn place(&self) -> &Place {
        &self.place
    }

    /// A failure of DataFusion's, said of the cluster when the query ran on one (the
    /// scheduler may be down, or an executor unable to read a file).
    fn failed(&self, source: datafusion::error::DataFusionError) -> SqlError {
        match self.place {
            Place::Embedded => SqlError::Query(source),
            Place::Ballista { .. } => SqlError::Cluster {
                place: self.place.clone(),
                source,
            },
        }
    }
}
