//! The engine: a DataFusion session with the tables registered, and a runtime to run it on;
//! the session plans here and runs its plans here or on a Ballista cluster.

use std::path::Path;

use ballista::prelude::{SessionConfigExt, SessionContextExt};
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::datasource::listing::ListingTableUrl;
use datafusion::execution::options::ReadOptions;
use datafusion::execution::SessionStateBuilder;
use datafusion::prelude::{ParquetReadOptions, SessionConfig, SessionContext};
use scalpel_tables::{read_manifest, ManifestTable, TableName, Tables};

use crate::error::SqlError;
use crate::place::Place;

/// One table's files in a dataset, and how to read them.
pub(crate) struct TableFiles {
    /// The table's directory, as DataFusion reads a path.
    pub(crate) url: String,
    /// The columns its directories give (`infer_window`, `host`, `time_window`), in the
    /// directories' order.
    cols: Vec<(String, DataType)>,
    /// On a cluster, the files' schema with dictionary columns plain (see `plain_schema`).
    plain: Option<Schema>,
}

impl TableFiles {
    /// The options DataFusion reads the files with.
    pub(crate) fn options(&self) -> ParquetReadOptions<'_> {
        let mut opts = ParquetReadOptions::default();
        if !self.cols.is_empty() {
            opts = opts.table_partition_cols(self.cols.clone());
        }
        if let Some(plain) = &self.plain {
            opts = opts.schema(plain);
        }
        opts
    }
}

/// A DataFusion session holding one model's tables.
pub struct Engine {
    pub(crate) ctx: SessionContext,
    pub(crate) rt: tokio::runtime::Runtime,
    place: Place,
}

/// The dataset's directory as DataFusion reads a path: absolute, in UTF-8, with no glob
/// character (DataFusion would expand it).
pub(crate) fn table_root(dir: &Path) -> Result<String, SqlError> {
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

/// The partition columns of a table, as the dataset's directories give them: the window of
/// a trace inferred in windows, then for a partitioned table the machine and time window.
pub(crate) fn partition_cols(t: &ManifestTable, windowed: bool) -> Vec<(String, DataType)> {
    let mut cols = Vec::new();
    if windowed {
        cols.push(("infer_window".to_owned(), DataType::Int64));
    }
    if t.partitioned {
        cols.push(("host".to_owned(), DataType::Utf8));
        cols.push(("time_window".to_owned(), DataType::Int64));
    }
    cols
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
    pub(crate) fn new(place: &Place) -> Result<Engine, SqlError> {
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
                    .map_err(|e| failed_at(place, e))?
            }
        };
        // On a cluster the scheduler and the executors have it too (`scalpel-ballista`).
        ctx.register_udaf(crate::clock_fit());
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

    /// An engine on the Parquet dataset in `dir`, running its queries at `place`. A dataset of
    /// a trace's windows has an `infer_window` column in every table.
    pub fn from_dataset(dir: &Path, place: &Place) -> Result<Engine, SqlError> {
        let manifest = read_manifest(dir)?;
        let e = Engine::new(place)?;
        let root = table_root(dir)?;
        for t in &manifest.tables {
            let name = table_name(dir, t)?;
            let files =
                e.table_files(&root, name, partition_cols(t, manifest.infer_windows > 0))?;
            let opts = files.options();
            e.rt.block_on(e.ctx.register_parquet(name.name(), &files.url, opts))?;
        }
        Ok(e)
    }

    /// Where table `name` of the dataset at `root` is and how to read it.
    pub(crate) fn table_files(
        &self,
        root: &str,
        name: TableName,
        cols: Vec<(String, DataType)>,
    ) -> Result<TableFiles, SqlError> {
        let mut files = TableFiles {
            url: format!("{root}/{}/", name.name()),
            cols,
            plain: None,
        };
        if matches!(self.place, Place::Ballista { .. }) {
            files.plain = Some(self.plain_schema(&files.url, &files.options())?);
        }
        Ok(files)
    }

    /// The files' schema at `url` with every dictionary column read as its plain values.
    /// Why: Ballista 55's shuffle hands a stage's dictionary columns on as plain arrays, and
    /// the next stage, planned with the dictionary type, fails ("column types must match
    /// schema types"); the values are the same either way.
    fn plain_schema(&self, url: &str, opts: &ParquetReadOptions<'_>) -> Result<Schema, SqlError> {
        let table = ListingTableUrl::parse(url)?;
        let files = self.rt.block_on(opts.get_resolved_schema(
            &self.ctx.copied_config(),
            self.ctx.state(),
            table,
        ))?;
        let fields = files.fields().iter().map(|f| match f.data_type() {
            DataType::Dictionary(_, v) => f.as_ref().clone().with_data_type(*v.clone()),
            _ => f.as_ref().clone(),
        });
        Ok(Schema::new(fields.collect::<Vec<Field>>()).with_metadata(files.metadata().clone()))
    }

    /// Runs `sql`; returns its rows, with at least one (empty) batch that carries the columns.
    pub fn query(&self, sql: &str) -> Result<Vec<RecordBatch>, SqlError> {
        let (schema, mut batches) = self
            .rt
            .block_on(async {
                let df = self.ctx.sql(sql).await?;
                let schema = df.schema().inner().clone();
                Ok((schema, df.collect().await?))
            })
            .map_err(|e| failed_at(&self.place, e))?;
        if batches.is_empty() {
            batches.push(RecordBatch::new_empty(schema));
        }
        Ok(batches)
    }
}

/// The table a manifest's entry names.
pub(crate) fn table_name(dir: &Path, t: &ManifestTable) -> Result<TableName, SqlError> {
    t.name.parse().map_err(|_| SqlError::Dataset {
        path: dir.to_path_buf(),
        what: format!(
            "its manifest names a table {:?} this version does not know",
            t.name
        ),
    })
}

/// A failure of DataFusion's, said of the cluster when the query ran on one (the scheduler may
/// be down, or an executor unable to read a file).
fn failed_at(place: &Place, source: datafusion::error::DataFusionError) -> SqlError {
    match place {
        Place::Embedded => SqlError::Query(source),
        Place::Ballista { .. } => SqlError::Cluster {
            place: place.clone(),
            source,
        },
    }
}
