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

use std::collections::BTreeMap;
use std::path::Path;

use ahash::AHashMap;
use scalpel_model::graph::{Graph, LeafId};
use scalpel_model::task::Model;

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
fn leaves_of(graph: &Graph, tasks: &[TruthTask], composed: &[(&str, &[&str])]) -> Vec<Vec<u32>> {
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

/// Scores every true type against every model type, keeping the best.
pub fn score(
    model: &Model,
    graph: &Graph,
    tasks: &[TruthTask],
    composed: &[(&str, &[&str])],
) -> Vec<TypeScore> {
    score_nested(model, graph, tasks, composed, &[])
}

/// [`score`] for a sample whose types nest: `nested` lists (child type, parent type), where a
/// child's `parent` is the id of an instance of the parent type. An instance's *direct* leaves
/// are its own less its descendants'. An occurrence then matches an instance when it holds all
/// of the instance's direct leaves, and each other leaf it holds that belongs to a true
/// instance belongs only to the instance's ancestors and descendants: a connection may hold
/// the calls made on it, and a call the glue of its connection that lies between two calls.
pub fn score_nested(
    model: &Model,
    graph: &Graph,
    tasks: &[TruthTask],
    composed: &[(&str, &[&str])],
    nested: &[(&str, &str)],
) -> Vec<TypeScore> {
    let held = leaves_of(graph, tasks, composed);
    let kin = kinship(tasks, nested);
    // Every true instance holding each leaf.
    let mut holders: AHashMap<u32, Vec<usize>> = AHashMap::new();
    for (i, h) in held.iter().enumerate() {
        for &l in h {
            holders.entry(l).or_default().push(i);
        }
    }
    // A leaf type's occurrences are its leaves.
    let mut by_type: Vec<Vec<Vec<LeafId>>> = vec![Vec::new(); graph.types.len()];
    for (l, leaf) in graph.leaves.iter().enumerate() {
        if let Some(v) = by_type.get_mut(leaf.ty.index()) {
            v.push(vec![LeafId::at(l)]);
        }
    }
    let mut types: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, t) in tasks.iter().enumerate() {
        types.entry(t.ty.as_str()).or_default().push(i);
    }
    let mut out = Vec::new();
    for (ty, members) in types {
        // Instance (index into `members`) by its own leaves, and its direct leaves.
        let mut owner: AHashMap<u32, usize> = AHashMap::new();
        let mut direct: Vec<Vec<u32>> = Vec::with_capacity(members.len());
        for (k, &i) in members.iter().enumerate() {
            for &l in &held[i] {
                owner.insert(l, k);
            }
            let below: ahash::AHashSet<u32> = kin[i]
                .desc
                .iter()
                .flat_map(|&d| held[d].iter().copied())
                .collect();
            direct.push(
                held[i]
                    .iter()
                    .copied()
                    .filter(|l| !below.contains(l))
                    .collect(),
            );
        }
        let fits = |i: usize, l: u32| {
            held[i].binary_search(&l).is_ok()
                || holders
                    .get(&l)
                    .into_iter()
                    .flatten()
                    .all(|&h| kin[i].related(h))
        };
        let mut best = TypeScore {
            truth: ty.to_owned(),
            instances: members.len(),
            model_type: None,
            occurrences: 0,
            precision: 0.0,
            recall: 0.0,
        };
        let mut best_f1 = 0.0;
        let mut best_size = usize::MAX;
        for (mt, mty) in model.types.iter().enumerate() {
            let mut matched = vec![false; members.len()];
            let mut good = 0usize;
            let occs: Vec<&[LeafId]> = match mty.leaf_type {
                Some(lt) => by_type
                    .get(lt.index())
                    .into_iter()
                    .flatten()
                    .map(Vec::as_slice)
                    .collect(),
                None => mty
                    .occurrences
                    .iter()
                    .map(|o| o.leaves.as_slice())
                    .collect(),
            };
            for leaves in occs.iter().copied() {
                let mut hit: Option<usize> = None;
                let mut clean = true;
                for l in leaves {
                    if let Some(&k) = owner.get(&l.get()) {
                        match hit {
                            None => hit = Some(k),
                            Some(h) if h != k => clean = false,
                            _ => {}
                        }
                    }
                }
                let Some(k) = hit.filter(|_| clean) else {
                    continue;
                };
                let i = members[k];
                let all = direct[k]
                    .iter()
                    .all(|&l| leaves.binary_search(&LeafId::new(l)).is_ok());
                let only = leaves.iter().all(|&l| fits(i, l.get()));
                if all && only && !direct[k].is_empty() {
                    good += 1;
                    matched[k] = true;
                }
            }
            if good == 0 {
                continue;
            }
            let p = good as f64 / occs.len() as f64;
            let r = matched.iter().filter(|&&m| m).count() as f64 / members.len() as f64;
            let f1 = 2.0 * p * r / (p + r);
            let size = mty
                .occurrences
                .iter()
                .map(|o| o.leaves.len())
                .sum::<usize>();
            if f1 > best_f1 || (f1 == best_f1 && size < best_size) {
                best_f1 = f1;
                best_size = size;
                best = TypeScore {
                    truth: ty.to_owned(),
                    instances: members.len(),
                    model_type: Some((mt as u32, mty.name.clone())),
                    occurrences: occs.len(),
                    precision: p,
                    recall: r,
                };
            }
        }
        out.push(best);
    }
    out
}

/// An instance's ancestors and descendants (indices into the tasks).
#[derive(Default)]
struct Kin {
    anc: Vec<usize>,
    desc: Vec<usize>,
}

impl Kin {
    fn related(&self, other: usize) -> bool {
        self.anc.contains(&other) || self.desc.contains(&other)
    }
}

/// Ancestors and descendants of every instance under the `nested` (child, parent) types.
fn kinship(tasks: &[TruthTask], nested: &[(&str, &str)]) -> Vec<Kin> {
    let index: AHashMap<(&str, i64), usize> = tasks
        .iter()
        .enumerate()
        .map(|(i, t)| ((t.ty.as_str(), t.id), i))
        .collect();
    let parent = |i: usize| -> Option<usize> {
        let t = &tasks[i];
        let (_, pty) = nested.iter().find(|(c, _)| *c == t.ty)?;
        index.get(&(*pty, t.parent)).copied().filter(|&p| p != i)
    };
    let mut kin: Vec<Kin> = (0..tasks.len()).map(|_| Kin::default()).collect();
    for i in 0..tasks.len() {
        let mut at = i;
        // Bounded, so that a cycle in a broken truth file cannot hang the test.
        for _ in 0..nested.len() {
            let Some(p) = parent(at) else { break };
            kin[i].anc.push(p);
            kin[p].desc.push(i);
            at = p;
        }
    }
    kin
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
