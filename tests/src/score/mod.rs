//! Scoring an inferred task model against a sample's ground truth (samples/TRUTH.md).
//!
//! A true instance stands for the leaves it ran in: those of its thread that overlap its span
//! (but a leaf it reaches into by no more than [`CLOCK_NOISE_NS`] at an end, when it overlaps
//! others: the span began after, or ended before, the sync call between them), or, for a type
//! composed of others (given by the test), the union of its parts' leaves. An
//! occurrence of a model type *matches* an instance when, of all the leaves that belong to some
//! true instance, it holds exactly the instance's: all of them, and none of any other instance
//! that is not a part of it. With [`score_nested`], instances nested in it (by `parent`) may be
//! held or not, and so may its ancestors' leaves: what it must hold are its own leaves outside
//! its nested instances. For each true type the model type with the best F1 is reported (on a
//! tie, the one with the smaller occurrences): precision = matching occurrences / occurrences,
//! recall = matched instances / instances.

mod judge;

use std::collections::BTreeMap;
use std::path::Path;

use ahash::AHashMap;
use scalpel_model::graph::Graph;
use scalpel_model::task::Model;

pub use judge::{misses, score, score_nested};

/// How far truth times and trace times may disagree: trace times are the agent's counter
/// mapped to CLOCK_MONOTONIC through calibration points, off by tens of nanoseconds (a
/// generated pool's truth marks, taken 100 ns after a sync call returned in the median, were up
/// to 22 ns *before* its return in trace time).
pub const CLOCK_NOISE_NS: u64 = 200;

/// One true task instance.
#[derive(Clone, Debug)]
pub struct TruthTask {
    pub ty: String,
    pub id: i64,
    pub parent: i64,
    pub pid: u32,
    pub tid: u32,
    pub start_ns: u64,
    pub end_ns: u64,
}

/// Reads the task lines of a truth file.
pub fn load_tasks(path: &Path) -> Vec<TruthTask> {
    let text = std::fs::read_to_string(path).expect("truth file");
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| {
            Some(TruthTask {
                ty: v.get("type")?.as_str()?.to_owned(),
                id: v["id"].as_i64()?,
                parent: v["parent"].as_i64()?,
                pid: v["pid"].as_u64()? as u32,
                tid: v["tid"].as_u64()? as u32,
                start_ns: v["start_ns"].as_u64()?,
                end_ns: v["end_ns"].as_u64()?,
            })
        })
        .collect()
}

/// Runs `scalpel infer DIR -o OUT EXTRA…` and returns what it did.
pub fn infer_output(dir: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    std::process::Command::new(crate::scalpel())
        .arg("infer")
        .arg(dir)
        .arg("-o")
        .arg(out)
        .args(extra)
        .output()
        .expect("scalpel runs")
}

/// Runs `scalpel infer DIR -o OUT EXTRA…` and loads what it wrote, failing with its stderr.
pub fn infer_model(dir: &Path, out: &Path, extra: &[&str]) -> (Model, Graph) {
    let o = infer_output(dir, out, extra);
    assert!(
        o.status.success(),
        "scalpel infer failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    load_model(out)
}

/// Reads `model.json` and `graph.json` (with their binary tables) from an output directory.
pub fn load_model(out: &Path) -> (Model, Graph) {
    (
        scalpel_model::store::read_model(&out.join("model.json")).unwrap_or_else(|e| panic!("{e}")),
        scalpel_model::store::read_graph(&out.join("graph.json")).unwrap_or_else(|e| panic!("{e}")),
    )
}

/// How one true type was recovered.
#[derive(Clone, Debug)]
pub struct TypeScore {
    pub truth: String,
    pub instances: usize,
    /// The best model type (index and name), if any occurrence matched.
    pub model_type: Option<(u32, String)>,
    pub occurrences: usize,
    pub precision: f64,
    pub recall: f64,
}

/// The leaves of each true instance (sorted), per true type.
pub fn instance_leaves(
    graph: &Graph,
    tasks: &[TruthTask],
    composed: &[(&str, &[&str])],
) -> BTreeMap<String, Vec<Vec<u32>>> {
    let mut out: BTreeMap<String, Vec<Vec<u32>>> = BTreeMap::new();
    for (t, l) in tasks.iter().zip(leaves_of(graph, tasks, composed)) {
        out.entry(t.ty.clone()).or_default().push(l);
    }
    out
}

/// The leaves of each true instance (sorted), in `tasks` order.
pub(crate) fn leaves_of(
    graph: &Graph,
    tasks: &[TruthTask],
    composed: &[(&str, &[&str])],
) -> Vec<Vec<u32>> {
    let mut by_thread: AHashMap<(u32, u32), (u32, u32)> = AHashMap::new();
    for t in &graph.threads {
        by_thread.insert((t.pid, t.tid), (t.first_leaf.get(), t.leaves));
    }
    let own = |t: &TruthTask| -> Vec<u32> {
        let Some(&(first, n)) = by_thread.get(&(t.pid, t.tid)) else {
            return Vec::new();
        };
        let overlap = |l: u32| {
            let x = &graph.leaves[l as usize];
            x.end_ns
                .min(t.end_ns)
                .saturating_sub(x.start_ns.max(t.start_ns))
        };
        let mut held: Vec<u32> = (first..first + n)
            .filter(|&l| {
                let x = &graph.leaves[l as usize];
                x.start_ns < t.end_ns && t.start_ns < x.end_ns
            })
            .collect();
        // A span begins after a sync call returned and ends before one is entered; a leaf it
        // reaches into by no more than the clocks' disagreement, at either end, is the leaf on
        // the other side of that call.
        if held.len() > 1 && held.first().is_some_and(|&l| overlap(l) <= CLOCK_NOISE_NS) {
            held.remove(0);
        }
        if held.len() > 1 && held.last().is_some_and(|&l| overlap(l) <= CLOCK_NOISE_NS) {
            held.pop();
        }
        held
    };
    let mut parts: AHashMap<(&str, i64), Vec<u32>> = AHashMap::new();
    for (parent, kids) in composed {
        for t in tasks.iter().filter(|t| kids.contains(&t.ty.as_str())) {
            parts.entry((parent, t.parent)).or_default().extend(own(t));
        }
    }
    tasks
        .iter()
        .map(|t| {
            let mut l = if composed.iter().any(|(p, _)| *p == t.ty) {
                parts.remove(&(t.ty.as_str(), t.id)).unwrap_or_default()
            } else {
                own(t)
            };
            l.sort_unstable();
            l.dedup();
            l
        })
        .collect()
}

/// A table of scores for test output.
pub fn report(scores: &[TypeScore]) -> String {
    let mut s = String::new();
    for t in scores {
        let (id, name) = t
            .model_type
            .clone()
            .map_or(("-".to_owned(), "(none)".to_owned()), |(i, n)| {
                (i.to_string(), n)
            });
        s.push_str(&format!(
            "{:12} {:5} instances → type {id:>3} {name:50} {:5} occurrences  P {:.4}  R {:.4}\n",
            t.truth, t.instances, t.occurrences, t.precision, t.recall
        ));
    }
    s
}
