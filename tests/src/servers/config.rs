//! A server's checks, as `scripts/servers/<server>.toml` states them: each table names one
//! figure and the bound it must reach; a table left out is not checked.

use std::path::Path;

use serde::Deserialize;

/// Every check of one server.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Checks {
    /// One request, one task (see [`request_figures`](super::request_figures)).
    pub requests: Option<RequestRule>,
    /// A task found by the roles of its leaves (see [`role_task`](super::role_task)).
    pub role_task: Option<RoleTask>,
    /// Work offloaded to a pool that reports back on an eventfd (see [`offload_figures`](super::offload_figures)).
    pub offloads: Option<Offloads>,
    /// Connection hand-offs that land on the receiving thread's notification read.
    pub handoffs: Option<Handoffs>,
    /// Storage waits whose stacks hold a function (a database's log flush).
    pub storage_waits: Option<StorageWaits>,
    /// Processes that named themselves (`setproctitle`).
    pub titles: Option<Titles>,
    /// Sleeps in one function, woken by a signal: lock time inside their task, or a waker.
    pub sleeps: Option<Sleeps>,
    /// Edges the type graph must have (the `typeedges` module).
    #[serde(default)]
    pub type_edges: Vec<TypeEdge>,
    /// Leaves a type needs for its edges to count (the drawing's `--min-count`).
    #[serde(default)]
    pub type_edge_min_count: u64,
    /// `top`'s figures equal the tables guide's SQL for them (see [`crate::sqltop`]).
    #[serde(default)]
    pub top_equals_sql: bool,
}

/// An edge between leaf types, by what their labels contain.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TypeEdge {
    /// Contained in the source's label (`START → END`, or `external source KIND`).
    pub from: String,
    /// Contained in the target's label (empty: any).
    pub to: String,
    /// The edge's kind; any when left out.
    pub kind: Option<String>,
}

/// Which leaf marks a request, what a request task must span, and the bounds.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestRule {
    /// The operation the marker leaf ends at (the response's write).
    pub marker_op: String,
    /// A function among the marker's end frames, when the operation alone is not enough.
    pub marker_frame: Option<String>,
    /// The channel kind of the marker's object (`tcp`); left out, any object.
    pub channel: Option<String>,
    /// The marker tells another thread that its work is done: it runs on a thread its process
    /// started (not the first), and other threads, never its own, wait on its object (a
    /// worker's signal to the thread that feeds it, where the worker also signals a condition
    /// of its own).
    #[serde(default)]
    pub completion: bool,
    /// Operations most of a request task's occurrences hold a leaf ending at.
    #[serde(default)]
    pub needs: Vec<String>,
    /// How many task types count as the request task (1 unless set): the types holding the
    /// most markers, one per occurrence. More than one only where a server runs one kind of
    /// request through two code paths that no rule can tell are one (see the server's toml).
    #[serde(default = "one")]
    pub request_types: usize,
    /// Least share of the requests the request task holds.
    pub min_share: f64,
    /// Least share of its occurrences that are top-level or under a session.
    pub min_top: f64,
    /// Most task types that cover 95% of the leaves.
    pub max_types: usize,
    /// Least share of its occurrences directly inside a session.
    pub min_in_session: Option<f64>,
}

fn one() -> usize {
    1
}

/// One role of a leaf: the operation it ends at and a function among its end frames.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Role {
    pub name: String,
    pub end_op: String,
    pub frame: String,
}

/// A task type holding a leaf of every role, the most frequent such type.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoleTask {
    pub roles: Vec<Role>,
    /// Least share of the requests its occurrences stand for.
    pub min_share: f64,
    /// Whether it must be the most frequent top-level group, at the top level for at least
    /// half the requests.
    #[serde(default)]
    pub top: bool,
}

/// Bounds on the offloads.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Offloads {
    /// Least share of the eventfd completions that reach a leaf of another thread.
    pub min_reached: f64,
    /// Least share of the offloads one task type holds.
    pub min_held: f64,
}

/// Bounds on the hand-offs.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Handoffs {
    /// Least share of the hand-off edges that land on a notification read.
    pub min_landed: f64,
}

/// Storage waits (`fsync`, `fdatasync`, `sync_file_range`) with a function in their stacks.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StorageWaits {
    pub frame: String,
}

/// Titles some process must have taken.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Titles {
    pub want: Vec<String>,
}

/// Sleeps in a function (a lock wait woken through a latch).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sleeps {
    pub frame: String,
    /// Least share of the sleeps that stay inside their task as lock time.
    pub min_inside: f64,
    /// Least share of the sleeps that cut their task whose next leaf has a waker.
    pub min_woken: f64,
}

/// Why the checks could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: {source}")]
    Parse {
        path: String,
        source: toml::de::Error,
    },
}

impl Checks {
    /// Reads a server's checks.
    pub fn read(path: &Path) -> Result<Checks, ConfigError> {
        let p = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: p.clone(),
            source,
        })?;
        toml::from_str(&text).map_err(|source| ConfigError::Parse { path: p, source })
    }
}
