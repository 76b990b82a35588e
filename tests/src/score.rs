//! Scoring an inferred task model against a sample's ground truth (samples/TRUTH.md).
//!
//! A true instance stands for the leaves it ran in: those of its thread that overlap its span,
//! or, for a type composed of others (given by the test), the union of its parts' leaves. An
//! occurrence of a model type *matches* an instance when, of all the leaves that belong to some
//! true instance, it holds exactly the instance's: all of them, and none of any other instance
//! that is not a part of it. For each true type the model type with the best F1 is reported
//! (on a tie, the one with the smaller occurrences): precision = matching occurrences /
//! occurrences, recall = matched instances / instances.

use std::collections::BTreeMap;
use std::path::Path;

use ahash::AHashMap;
use scalpel_model::graph::Graph;
use scalpel_model::task::Model;

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

/// Runs `scalpel infer DIR -o OUT EXTRA…` and loads what it wrote, failing with its stderr.
pub fn infer_model(dir: &Path, out: &Path, extra: &[&str]) -> (Model, Graph) {
    let o = std::process::Command::new(crate::scalpel())
        .arg("infer")
        .arg(dir)
        .arg("-o")
        .arg(out)
        .args(extra)
        .output()
        .expect("scalpel runs");
    assert!(
        o.status.success(),
        "scalpel infer failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    load_model(out)
}

/// Reads `model.json` and `graph.json` from an output directory.
pub fn load_model(out: &Path) -> (Model, Graph) {
    let read =
        |f: &str| std::fs::read_to_string(out.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
    (
        serde_json::from_str(&read("model.json")).expect("model.json has the schema"),
        serde_json::from_str(&read("graph.json")).expect("graph.json has the schema"),
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
    let mut by_thread: AHashMap<(u32, u32), (u32, u32)> = AHashMap::new();
    for t in &graph.threads {
        by_thread.insert((t.pid, t.tid), (t.first_leaf, t.leaves));
    }
    let own = |t: &TruthTask| -> Vec<u32> {
        let Some(&(first, n)) = by_thread.get(&(t.pid, t.tid)) else {
            return Vec::new();
        };
        (first..first + n)
            .filter(|&l| {
                let x = &graph.leaves[l as usize];
                x.start_ns < t.end_ns && t.start_ns < x.end_ns
            })
            .collect()
    };
    let mut out: BTreeMap<String, Vec<Vec<u32>>> = BTreeMap::new();
    let mut parts: AHashMap<(&str, i64), Vec<u32>> = AHashMap::new();
    for (parent, kids) in composed {
        for t in tasks.iter().filter(|t| kids.contains(&t.ty.as_str())) {
            parts.entry((parent, t.parent)).or_default().extend(own(t));
        }
    }
    for t in tasks {
        let mut l = if composed.iter().any(|(p, _)| *p == t.ty) {
            parts.remove(&(t.ty.as_str(), t.id)).unwrap_or_default()
        } else {
            own(t)
        };
        l.sort_unstable();
        l.dedup();
        out.entry(t.ty.clone()).or_default().push(l);
    }
    out
}

/// Scores every true type against every model type, keeping the best.
pub fn score(
    model: &Model,
    graph: &Graph,
    tasks: &[TruthTask],
    composed: &[(&str, &[&str])],
) -> Vec<TypeScore> {
    let inst = instance_leaves(graph, tasks, composed);
    // A leaf type's occurrences are its leaves.
    let mut by_type: Vec<Vec<Vec<u32>>> = vec![Vec::new(); graph.types.len()];
    for (l, leaf) in graph.leaves.iter().enumerate() {
        if let Some(v) = by_type.get_mut(leaf.ty as usize) {
            v.push(vec![l as u32]);
        }
    }
    let owned: ahash::AHashSet<u32> = inst.values().flatten().flatten().copied().collect();
    let mut out = Vec::new();
    for (ty, instances) in inst {
        let mut owner: AHashMap<u32, usize> = AHashMap::new();
        for (i, ls) in instances.iter().enumerate() {
            for &l in ls {
                owner.insert(l, i);
            }
        }
        let mut best = TypeScore {
            truth: ty.clone(),
            instances: instances.len(),
            model_type: None,
            occurrences: 0,
            precision: 0.0,
            recall: 0.0,
        };
        let mut best_f1 = 0.0;
        let mut best_size = usize::MAX;
        for (mt, mty) in model.types.iter().enumerate() {
            let mut matched = vec![false; instances.len()];
            let mut good = 0usize;
            let occs: Vec<&Vec<u32>> = match mty.leaf_type {
                Some(lt) => by_type.get(lt as usize).into_iter().flatten().collect(),
                None => mty.occurrences.iter().map(|o| &o.leaves).collect(),
            };
            for leaves in occs.iter().copied() {
                let mut hit: Option<usize> = None;
                let mut clean = true;
                for l in leaves {
                    if let Some(&i) = owner.get(l) {
                        match hit {
                            None => hit = Some(i),
                            Some(h) if h != i => clean = false,
                            _ => {}
                        }
                    }
                }
                let Some(i) = hit.filter(|_| clean) else {
                    continue;
                };
                let all = instances[i].iter().all(|l| leaves.binary_search(l).is_ok());
                let only = leaves
                    .iter()
                    .filter(|l| owned.contains(l))
                    .all(|l| instances[i].binary_search(l).is_ok());
                if all && only && !instances[i].is_empty() {
                    good += 1;
                    matched[i] = true;
                }
            }
            if good == 0 {
                continue;
            }
            let p = good as f64 / occs.len() as f64;
            let r = matched.iter().filter(|&&m| m).count() as f64 / instances.len() as f64;
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
                    truth: ty.clone(),
                    instances: instances.len(),
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
