//! The hierarchical task model: the types the miner builds and `model.json` serializes.
//!
//! Every task type is a leaf type of the causal graph, a *group* (a repeated subgraph whose
//! occurrences were each collapsed into one super-node) or a *loop* (one type repeated on a
//! thread, with the iteration count per occurrence). Occurrences are sets of leaf instances
//! (ids into `graph.json`'s `leaves`), and each names the occurrence it is part of, so the
//! instance tree can be walked both ways. A leaf type's occurrences are its leaves themselves
//! (an occurrence reference `{type, index}` to a leaf type has the leaf id as index). Types are ordered leaf types first (type `t` is the
//! graph's leaf type `t`), then by level.

use serde::{Deserialize, Serialize};

use crate::graph::{EdgeKind, LeafTypeId};
pub use crate::ids::TaskTypeId;
pub use crate::leaflist::LeafList;

/// Version tag of the model JSON. Bumped on any incompatible change.
pub const MODEL_SCHEMA: &str = "scalpel-model/1";

crate::ids::index_by!(TaskTypeId => TaskType);

/// What a task type is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskKind {
    /// A leaf type of the causal graph.
    Leaf,
    /// A repeated subgraph of other tasks.
    Group,
    /// One task repeated on a thread.
    Loop,
    /// What one connection did: its requests (and whatever else touched only it), in order.
    Session,
}

/// A child type of a task type, and how often it occurs in it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChildRef {
    /// The child type.
    #[serde(rename = "type")]
    pub ty: TaskTypeId,
    /// Occurrences of the child inside occurrences of the parent, over all of them.
    pub count: u64,
}

/// Edges between two child types (or two top-level types), added up over occurrences.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TypeEdge {
    /// Source type.
    pub from: TaskTypeId,
    /// Target type.
    pub to: TaskTypeId,
    /// Edge kind.
    pub kind: EdgeKind,
    /// Leaf-level edges of this kind between the two.
    pub count: u64,
}

/// Where an occurrence sits: the type and index of the occurrence that contains it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct OccRef {
    /// The type.
    #[serde(rename = "type")]
    pub ty: TaskTypeId,
    /// Index into that type's `occurrences` (for a leaf type, the leaf's id).
    pub index: u32,
}

/// One occurrence of a task type.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Occurrence {
    /// Its leaf instances, ascending.
    pub leaves: LeafList,
    /// The occurrence it is part of; `None` at the top level.
    pub parent: Option<OccRef>,
    /// For a loop: its iterations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iterations: Option<u32>,
    /// For a type with variants: the index of this occurrence's in [`TaskType::variants`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<u32>,
}

/// One variant of a task type: its core plus optional steps (a lock wait, an extra read, the
/// thread's return to its queue) that some occurrences have.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Variant {
    /// Occurrences of this variant.
    pub count: u64,
    /// The extra steps, as leaf types (a task type of kind leaf) with how many of each one
    /// occurrence has; empty for the core alone.
    pub extra: Vec<ChildRef>,
}

/// A task type.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskType {
    /// Display name (the leaf's function; for a group, its first and dominant leaves).
    pub name: String,
    /// What it is.
    pub kind: TaskKind,
    /// 0 for a leaf type, else one more than its highest child.
    pub level: u32,
    /// For a leaf type, its index in `graph.json`'s `types`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leaf_type: Option<LeafTypeId>,
    /// Number of occurrences.
    pub count: u64,
    /// How many of them are at the top level (part of no other task).
    pub top_level: u64,
    /// Child types, by first appearance in the canonical order of the first occurrence.
    pub children: Vec<ChildRef>,
    /// Edges between its children, over all its occurrences.
    pub edges: Vec<TypeEdge>,
    /// Variants, most frequent first, when some occurrences add optional steps to the core
    /// (see `paper-notes/mining.md`); empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub variants: Vec<Variant>,
    /// Occurrences, ordered by their first leaf. Empty for a leaf type: its occurrences are
    /// its leaves (occurrence index = leaf id), whose parents are in [`Model::leaf_parent`].
    /// Absent from `model.json` (they are in `model.bin`).
    #[serde(default)]
    pub occurrences: Vec<Occurrence>,
}

impl TaskType {
    /// This type with no occurrences (everything else cloned).
    pub fn without_occurrences(&self) -> TaskType {
        TaskType {
            name: self.name.clone(),
            kind: self.kind,
            level: self.level,
            leaf_type: self.leaf_type,
            count: self.count,
            top_level: self.top_level,
            children: self.children.clone(),
            edges: self.edges.clone(),
            variants: self.variants.clone(),
            occurrences: Vec::new(),
        }
    }
}

/// Settings the model was mined with.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MiningInfo {
    /// Fewest non-overlapping occurrences a pattern needs.
    pub min_support: u32,
    /// Rounds of contraction run.
    pub rounds: u32,
    /// Rules (pair and loop symbols) made before merging and inlining.
    pub rules: u32,
    /// Leaf-level edges dropped because they closed a cycle.
    pub cycle_edges_dropped: u64,
}

/// The whole model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Model {
    /// [`MODEL_SCHEMA`].
    pub schema: String,
    /// The causal graph file the leaf ids refer to, relative to the model file.
    pub graph: String,
    /// Leaf instances in the graph.
    pub leaves: u64,
    /// How mining went.
    pub mining: MiningInfo,
    /// Task types.
    pub types: Vec<TaskType>,
    /// Edges between top-level occurrences, by type.
    pub top_edges: Vec<TypeEdge>,
    /// For each leaf (by id): the occurrence it is directly part of, or `None` when it is
    /// part of no task.
    pub leaf_parent: Vec<Option<OccRef>>,
}

/// The outermost of `start` and the occurrences above it (`parent` first) that is not in a
/// session: what stands alone, or one of a session's tasks. The walk is bounded by the number of
/// types (each step goes a level up), so a damaged hierarchy cannot loop.
pub fn outermost_outside_session(
    types: &[TaskType],
    start: OccRef,
    parent: Option<OccRef>,
) -> OccRef {
    let mut r = start;
    let mut up = parent;
    for _ in 0..=types.len() {
        let Some(p) = up else { break };
        let Some(ty) = types.get(p.ty.index()) else {
            break;
        };
        if ty.kind == TaskKind::Session {
            break;
        }
        r = p;
        up = ty.occurrences.get(p.index as usize).and_then(|o| o.parent);
    }
    r
}

impl Model {
    /// A model of `types` alone, holding `leaves` leaves: no occurrences, no leaf parents and
    /// no top-level edges; what the windows of a trace add up to, for the analyses that read
    /// only the catalog of types.
    pub fn of_types(types: Vec<TaskType>, leaves: u64) -> Model {
        Model {
            schema: MODEL_SCHEMA.to_owned(),
            graph: String::new(),
            leaves,
            mining: MiningInfo {
                min_support: 0,
                rounds: 0,
                rules: 0,
                cycle_edges_dropped: 0,
            },
            types,
            top_edges: Vec::new(),
            leaf_parent: Vec::new(),
        }
    }

    /// Each type's first number when all occurrences are numbered in one sequence (type by type,
    /// then by index), and how many there are in all: for arrays indexed by occurrence.
    pub fn occurrence_bases(&self) -> (Vec<usize>, usize) {
        let mut base = Vec::with_capacity(self.types.len());
        let mut n = 0usize;
        for ty in &self.types {
            base.push(n);
            n += ty.occurrences.len();
        }
        (base, n)
    }
}
