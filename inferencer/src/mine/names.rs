//! Readable task names, and the user's overrides from a TOML file.
//!
//! A leaf type keeps the graph's name (the function that reached its ending sync point). A group
//! is named by its first leaf (the earliest in its first occurrence) and its dominant leaf type
//! (the most running time over all its occurrences): `recv_packet → do_work`, or one name when
//! they are the same. A loop is `loop: BODY`. Names that come out equal (leaf types included) get
//! `#2`, `#3` in type order, so a name picks one type. An override file maps generated names to the user's:
//!
//! ```toml
//! [names]
//! "recv_packet → do_work" = "WorkerTask"
//! ```

use std::path::{Path, PathBuf};

use ahash::{AHashMap, AHashSet};
use scalpel_model::graph::{Graph, LeafTypeId};
use scalpel_model::task::{TaskKind, TaskType};

/// The name override file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum NamesError {
    /// Unreadable.
    #[error("cannot read the names file {}: {source}", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Not the expected TOML.
    #[error("{}: expected a [names] table of \"generated name\" = \"new name\": {message}", .path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parser's complaint.
        message: String,
    },
}

/// Overrides: generated name → the user's name.
#[derive(Clone, Debug, Default)]
pub struct NameOverrides(pub Vec<(String, String)>);

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct NamesFile {
    names: std::collections::BTreeMap<String, String>,
}

impl NameOverrides {
    /// Reads a names file.
    pub fn load(path: &Path) -> Result<NameOverrides, NamesError> {
        let text = std::fs::read_to_string(path).map_err(|source| NamesError::Read {
            path: path.to_owned(),
            source,
        })?;
        let f: NamesFile = toml::from_str(&text).map_err(|e| NamesError::Parse {
            path: path.to_owned(),
            message: e.to_string(),
        })?;
        Ok(NameOverrides(f.names.into_iter().collect()))
    }
}

/// Names every type; returns the overrides that matched no type.
pub(super) fn name_types(
    types: &mut [TaskType],
    graph: &Graph,
    overrides: &NameOverrides,
) -> Vec<String> {
    let leaf_name = |t: LeafTypeId| -> String {
        graph
            .types
            .get(t.index())
            .map_or_else(|| format!("type {t}"), |ty| ty.name.clone())
    };
    for i in 0..types.len() {
        let name = match types[i].kind {
            TaskKind::Leaf => leaf_name(types[i].leaf_type.unwrap_or(LeafTypeId::at(i))),
            TaskKind::Loop => {
                let body = types[i].children.first().map(|c| c.ty.index());
                match body {
                    Some(b) if b < i => format!("loop: {}", types[b].name),
                    _ => "loop".to_owned(),
                }
            }
            TaskKind::Group => group_name(&types[i], graph, &leaf_name),
        };
        types[i].name = name;
    }
    // Disambiguate, in type order (leaf types first), so that every name picks one type.
    let mut seen: AHashMap<String, u32> = AHashMap::new();
    for ty in types.iter_mut() {
        let n = seen.entry(ty.name.clone()).or_insert(0);
        *n += 1;
        if *n > 1 {
            ty.name = format!("{} #{n}", ty.name);
        }
    }
    let mut used = AHashSet::new();
    for ty in types.iter_mut() {
        if let Some((from, to)) = overrides.0.iter().find(|(from, _)| *from == ty.name) {
            used.insert(from.clone());
            ty.name = to.clone();
        }
    }
    overrides
        .0
        .iter()
        .filter(|(from, _)| !used.contains(from))
        .map(|(from, _)| from.clone())
        .collect()
}

fn group_name(ty: &TaskType, graph: &Graph, leaf_name: &dyn Fn(LeafTypeId) -> String) -> String {
    let Some(first_occ) = ty.occurrences.first() else {
        return "task".to_owned();
    };
    let first = first_occ
        .leaves
        .iter()
        .filter_map(|&l| graph.leaves.get(l.index()).map(|x| (x.start_ns, l, x.ty)))
        .min()
        .map(|x| x.2);
    let mut time: AHashMap<LeafTypeId, u64> = AHashMap::new();
    for occ in &ty.occurrences {
        for &l in &occ.leaves {
            if let Some(x) = graph.leaves.get(l.index()) {
                *time.entry(x.ty).or_insert(0) += x.end_ns.saturating_sub(x.start_ns);
            }
        }
    }
    let dominant = time
        .into_iter()
        .max_by(|a, b| a.1.cmp(&b.1).then_with(|| b.0.cmp(&a.0)))
        .map(|x| x.0);
    match (first, dominant) {
        (Some(f), Some(d)) if f != d && leaf_name(f) != leaf_name(d) => {
            format!("{} → {}", leaf_name(f), leaf_name(d))
        }
        (Some(f), _) => leaf_name(f),
        _ => "task".to_owned(),
    }
}
