//! Finding a task by name (`--task`, `--expand`), and the names closest to one that matched
//! nothing, for the error that says so.

use crate::task::{Model, TaskKind, TaskType, TaskTypeId};

/// How many of the closest names an error lists.
const CLOSEST: usize = 8;

/// A name that matched no task type, with the names closest to it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("no task named {name:?}; the closest names: {}", quoted(.closest))]
pub struct NoSuchTask {
    /// The name given.
    pub name: String,
    /// Up to 8 task names, the closest first.
    pub closest: Vec<String>,
}

fn quoted(names: &[String]) -> String {
    let q: Vec<String> = names.iter().map(|n| format!("{n:?}")).collect();
    q.join(", ")
}

/// The type (task or leaf) named exactly `name`, or an error listing the closest names.
pub fn task_named(model: &Model, name: &str) -> Result<TaskTypeId, NoSuchTask> {
    type_named(&model.types, name)
}

/// The type of `types` named exactly `name` (see [`task_named`]): for a catalog of types that
/// is not one model's, such as the windows of one trace added up.
pub fn type_named(types: &[TaskType], name: &str) -> Result<TaskTypeId, NoSuchTask> {
    types
        .iter()
        .position(|t| t.name == name)
        .and_then(|i| u32::try_from(i).ok())
        .map(TaskTypeId::new)
        .ok_or_else(|| NoSuchTask {
            name: name.to_owned(),
            closest: closest_names(types, name, CLOSEST),
        })
}

/// Up to `k` task (not leaf) names of `types` closest to `name`: names that contain it (or that
/// it contains) first, then by edit distance, ties by name.
pub fn closest_names(types: &[TaskType], name: &str, k: usize) -> Vec<String> {
    let want = name.to_lowercase();
    let mut scored: Vec<(bool, usize, &str)> = types
        .iter()
        .filter(|t| t.kind != TaskKind::Leaf)
        .map(|t| {
            let have = t.name.to_lowercase();
            let inside = have.contains(&want) || want.contains(&have);
            (!inside, edit_distance(&want, &have), t.name.as_str())
        })
        .collect();
    scored.sort_unstable();
    scored.dedup_by(|a, b| a.2 == b.2);
    scored.into_iter().take(k).map(|s| s.2.to_owned()).collect()
}

/// Levenshtein distance over characters, two rows at a time.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut row = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let swap = prev[j] + usize::from(ca != cb);
            row[j + 1] = swap.min(prev[j + 1] + 1).min(row[j] + 1);
        }
        std::mem::swap(&mut prev, &mut row);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance_counts_single_changes() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("same", "same"), 0);
    }
}
