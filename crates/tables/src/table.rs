//! The tables of one graph and model, built in memory: what the dataset writes and what an
//! engine registers.

use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use scalpel_model::graph::Graph;
use scalpel_model::task::Model;

use crate::error::TablesError;
use crate::events::{self, Ctx};
use crate::graph;
use crate::model;
use crate::partition::{split, Part};

/// A table of the dataset.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TableName {
    /// The machines, with their clocks on the reference's.
    Hosts,
    /// Process incarnations.
    Processes,
    /// Threads (one trace file each).
    Threads,
    /// Synchronization objects and byte channels.
    Objects,
    /// Untraced peers of channels: edge nodes past the last leaf.
    Externals,
    /// Leaf types.
    LeafTypes,
    /// Leaf instances.
    Leaves,
    /// Causal edges between leaves and untraced peers.
    Edges,
    /// Contended lock acquisitions and calls inside leaves that took time.
    Waits,
    /// On-CPU samples.
    Samples,
    /// Transfers with peers outside the trace that another machine's trace may hold.
    PeerTransfers,
    /// Task types of the model (its leaf types first).
    TaskTypes,
    /// Which types each task type holds.
    TaskChildren,
    /// Every instance of every task type, with its latency and critical path.
    Instances,
}

scalpel_model::named!(TableName, "table" {
    Hosts => "hosts",
    Processes => "processes",
    Threads => "threads",
    Objects => "objects",
    Externals => "externals",
    LeafTypes => "leaf_types",
    Leaves => "leaves",
    Edges => "edges",
    Waits => "waits",
    Samples => "samples",
    PeerTransfers => "peer_transfers",
    TaskTypes => "task_types",
    TaskChildren => "task_children",
    Instances => "instances",
});

impl TableName {
    /// Whether its rows are split by machine and time window.
    pub fn is_partitioned(self) -> bool {
        matches!(
            self,
            TableName::Leaves
                | TableName::Edges
                | TableName::Waits
                | TableName::Samples
                | TableName::PeerTransfers
                | TableName::Instances
        )
    }

    /// Whether it is the model's (absent when only a graph was given).
    pub fn needs_model(self) -> bool {
        matches!(
            self,
            TableName::TaskTypes | TableName::TaskChildren | TableName::Instances
        )
    }
}

/// One table: its rows, and for a partitioned table each row's part.
#[derive(Clone, Debug)]
pub struct Table {
    /// Which.
    pub name: TableName,
    /// Its rows, in the order of the graph's or model's own table.
    pub batch: RecordBatch,
    /// Each row's part (machine and window), when the table is partitioned.
    parts: Option<Vec<Part>>,
}

impl Table {
    /// Its rows split by part, parts in order (one part, `None`, when it is not partitioned).
    pub fn partitions(&self) -> Result<Vec<(Option<Part>, RecordBatch)>, TablesError> {
        match &self.parts {
            None => Ok(vec![(None, self.batch.clone())]),
            Some(p) if p.is_empty() => Ok(Vec::new()),
            Some(p) => Ok(split(self.name.name(), &self.batch, p)?
                .into_iter()
                .map(|(p, b)| (Some(p), b))
                .collect()),
        }
    }

    /// Its rows with the partition columns a reader of the dataset sees (`host`, the machine's
    /// name, and `time_window`) appended, for an engine given the tables in memory; a table
    /// that is not partitioned as it is.
    pub fn with_partition_columns(&self, hosts: &[String]) -> Result<RecordBatch, TablesError> {
        let Some(parts) = &self.parts else {
            return Ok(self.batch.clone());
        };
        let host: StringArray = parts
            .iter()
            .map(|p| hosts.get(p.host as usize).map(String::as_str))
            .collect();
        let window: Int64Array = parts
            .iter()
            .map(|p| i64::try_from(p.window).unwrap_or(i64::MAX))
            .collect();
        let schema = self.batch.schema();
        let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
        fields.push(Field::new("host", DataType::Utf8, true));
        fields.push(Field::new("time_window", DataType::Int64, true));
        let mut columns: Vec<ArrayRef> = self.batch.columns().to_vec();
        columns.push(Arc::new(host));
        columns.push(Arc::new(window));
        RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).map_err(|source| {
            TablesError::Arrow {
                table: self.name.name(),
                source,
            }
        })
    }
}

/// Every table of one graph (and model).
#[derive(Clone, Debug)]
pub struct Tables {
    /// The machines' names, by host id: the partition directories' `host=`.
    pub hosts: Vec<String>,
    /// The window partitions are cut by.
    pub window_ns: u64,
    /// The tables, in [`TableName`] order.
    pub tables: Vec<Table>,
}

/// The tables of one graph (and model), built one at a time on demand: a writer holds one
/// table's columns at once, not all of them.
pub struct TableSource<'g> {
    c: Ctx<'g>,
    model: Option<&'g Model>,
    hosts: Vec<String>,
}

impl<'g> TableSource<'g> {
    /// The tables of `g` and, when given, of `model` (mined from `g`), partitioned by windows
    /// of `window_ns` from the first leaf's start.
    pub fn new(g: &'g Graph, model: Option<&'g Model>, window_ns: u64) -> Self {
        let hosts: Vec<String> = if g.hosts.is_empty() {
            vec!["local".to_owned()]
        } else {
            g.hosts.iter().map(|h| h.host.clone()).collect()
        };
        TableSource {
            c: Ctx {
                g,
                origin_ns: g.leaves.iter().map(|l| l.start_ns).min().unwrap_or(0),
                window_ns: window_ns.max(1),
            },
            model,
            hosts,
        }
    }

    /// The same tables with their time windows of `window_ns` counted from `origin_ns` (a
    /// trace's first leaf, for the tables of one of its windows) rather than from this
    /// graph's first leaf.
    pub fn with_origin(mut self, origin_ns: u64, window_ns: u64) -> Self {
        self.c.origin_ns = origin_ns;
        self.c.window_ns = window_ns.max(1);
        self
    }

    /// Where time window 0 begins.
    pub fn origin_ns(&self) -> u64 {
        self.c.origin_ns
    }

    /// The machines' names, by host id.
    pub fn hosts(&self) -> &[String] {
        &self.hosts
    }

    /// The window partitions are cut by.
    pub fn window_ns(&self) -> u64 {
        self.c.window_ns
    }

    /// The most partitions a partitioned table can have: machines times the time windows from
    /// the first leaf's start to the last's.
    pub fn partitions_at_most(&self) -> u64 {
        let g = self.c.g;
        let starts = || g.leaves.iter().map(|l| l.start_ns);
        let index = |ns: u64| ns.saturating_sub(self.c.origin_ns) / self.c.window_ns;
        let (first, last) = (starts().min().unwrap_or(0), starts().max().unwrap_or(0));
        let windows = index(last) - index(first) + 1;
        windows.saturating_mul(self.hosts.len() as u64)
    }

    /// The tables there are: the model's only with a model.
    pub fn names(&self) -> Vec<TableName> {
        TableName::ALL
            .iter()
            .copied()
            .filter(|t| self.model.is_some() || !t.needs_model())
            .collect()
    }

    /// Builds table `name` (an empty table when it is the model's and there is none).
    pub fn build(&self, name: TableName) -> Result<Table, TablesError> {
        let (c, g) = (&self.c, self.c.g);
        let whole = |batch| Table {
            name,
            batch,
            parts: None,
        };
        let split = |(batch, parts): (RecordBatch, Vec<Part>)| Table {
            name,
            batch,
            parts: Some(parts),
        };
        Ok(match (name, self.model) {
            (TableName::Hosts, _) => whole(graph::hosts(g, &self.hosts)?),
            (TableName::Processes, _) => whole(graph::processes(g)?),
            (TableName::Threads, _) => whole(graph::threads(g)?),
            (TableName::Objects, _) => whole(graph::objects(g)?),
            (TableName::Externals, _) => whole(graph::externals(g)?),
            (TableName::LeafTypes, _) => whole(graph::leaf_types(g)?),
            (TableName::Leaves, m) => split(events::leaves(c, m)?),
            (TableName::Edges, _) => split(events::edges(c)?),
            (TableName::Waits, _) => split(events::waits(c)?),
            (TableName::Samples, _) => split(events::samples(c)?),
            (TableName::PeerTransfers, _) => split(crate::peers::peer_transfers(c)?),
            (TableName::TaskTypes, Some(m)) => whole(model::task_types(m)?),
            (TableName::TaskChildren, Some(m)) => whole(model::task_children(m)?),
            (TableName::Instances, Some(m)) => split(model::instances(c, m)?),
            (TableName::TaskTypes | TableName::TaskChildren | TableName::Instances, None) => {
                return Err(TablesError::NoModel(name.name()))
            }
        })
    }
}

/// Builds every table of `g` and, when given, of `model` (see [`TableSource`]).
pub fn build_tables(
    g: &Graph,
    model: Option<&Model>,
    window_ns: u64,
) -> Result<Tables, TablesError> {
    let src = TableSource::new(g, model, window_ns);
    Ok(Tables {
        hosts: src.hosts.clone(),
        window_ns: src.window_ns(),
        tables: src
            .names()
            .into_iter()
            .map(|n| src.build(n))
            .collect::<Result<_, _>>()?,
    })
}
