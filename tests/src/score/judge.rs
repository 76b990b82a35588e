//! Which occurrences of a model type match which true instances, and the scores and misses
//! that follow from it.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use ahash::{AHashMap, AHashSet};
use scalpel_model::graph::{Graph, LeafId};
use scalpel_model::task::{Model, TaskType};

use super::{leaves_of, TruthTask, TypeScore};

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
    let truth = Truth::new(graph, tasks, composed, nested);
    let mut out = Vec::new();
    for (ty, members) in truth.types(tasks) {
        let of = truth.of_type(members);
        let mut best = TypeScore {
            truth: ty.to_owned(),
            instances: of.members.len(),
            model_type: None,
            occurrences: 0,
            precision: 0.0,
            recall: 0.0,
        };
        let (mut best_f1, mut best_size) = (0.0, usize::MAX);
        for (mt, mty) in model.types.iter().enumerate() {
            let occs = truth.occurrences(mty);
            let (good, matched) = truth.matched(&of, &occs);
            if good == 0 {
                continue;
            }
            let p = good as f64 / occs.len() as f64;
            let r = matched.iter().filter(|&&m| m).count() as f64 / of.members.len() as f64;
            let f1 = 2.0 * p * r / (p + r);
            let size = mty
                .occurrences
                .iter()
                .map(|o| o.leaves.len())
                .sum::<usize>();
            if f1 > best_f1 || (f1 == best_f1 && size < best_size) {
                (best_f1, best_size) = (f1, size);
                best = TypeScore {
                    truth: ty.to_owned(),
                    instances: of.members.len(),
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

/// For work on a miss: every instance of the true type `ty` that no occurrence of model type
/// `mt` matches, with its leaves (index, thread, type, and the calls and times that bound it),
/// the leaves around the first on its thread, and the occurrences of `mt` that hold any of
/// them (their leaves, those of this instance marked `*`).
pub fn misses(
    model: &Model,
    graph: &Graph,
    tasks: &[TruthTask],
    composed: &[(&str, &[&str])],
    nested: &[(&str, &str)],
    ty: &str,
    mt: usize,
) -> String {
    let truth = Truth::new(graph, tasks, composed, nested);
    let Some(members) = truth.types(tasks).remove(ty) else {
        return format!("no true type {ty}\n");
    };
    let Some(mty) = model.types.get(mt) else {
        return format!("no model type {mt}\n");
    };
    let of = truth.of_type(members);
    let occs = truth.occurrences(mty);
    let (_, matched) = truth.matched(&of, &occs);
    let mut s = String::new();
    for (_, &i) in of.members.iter().enumerate().filter(|(k, _)| !matched[*k]) {
        let t = &tasks[i];
        let own: AHashSet<u32> = truth.held[i].iter().copied().collect();
        let _ = writeln!(s, "{ty} {} ({} leaves):", t.id, own.len());
        for &l in &truth.held[i] {
            let _ = writeln!(s, "  leaf {}", describe(graph, l as usize));
        }
        // The leaves around, on the instance's first thread, for a truth span a clock
        // disagreement put into the leaf beside its own.
        if let Some(&l) = truth.held[i].first() {
            let th = &graph.threads[graph.leaves[l as usize].thread.index()];
            let (first, n) = (th.first_leaf.get() as usize, th.leaves as usize);
            for near in (l as usize).saturating_sub(2).max(first)..(l as usize + 3).min(first + n) {
                let _ = writeln!(s, "    near {}", describe(graph, near));
            }
        }
        for (o, leaves) in occs.iter().enumerate() {
            if leaves.iter().any(|l| own.contains(&l.get())) {
                let list: Vec<String> = leaves
                    .iter()
                    .map(|l| {
                        let mark = if own.contains(&l.get()) { "*" } else { "" };
                        format!("{}{mark}", l.get())
                    })
                    .collect();
                let _ = writeln!(s, "  in occurrence {o}: {}", list.join(" "));
            }
        }
    }
    s
}

/// A leaf's index, thread, type and the calls and times that bound it.
fn describe(graph: &Graph, l: usize) -> String {
    let leaf = &graph.leaves[l];
    let op = |o: Option<scalpel_model::graph::OpName>| o.map_or("-".to_owned(), |o| o.name());
    format!(
        "{l} tid {} {}: {} at {} to {} at {}",
        graph.threads[leaf.thread.index()].tid,
        graph.types[leaf.ty.index()].name,
        op(leaf.start_op),
        leaf.start_ns,
        op(leaf.end_op),
        leaf.end_ns
    )
}

/// The true instances, indexed for matching.
struct Truth {
    /// Each instance's leaves, in `tasks` order.
    held: Vec<Vec<u32>>,
    /// Every instance holding each leaf.
    holders: AHashMap<u32, Vec<usize>>,
    kin: Vec<Kin>,
    /// A leaf type's occurrences: its leaves, one by one.
    by_type: Vec<Vec<Vec<LeafId>>>,
}

/// The instances of one true type.
struct OfType {
    /// Indices into the tasks.
    members: Vec<usize>,
    /// The member (index into `members`) holding each leaf.
    owner: AHashMap<u32, usize>,
    /// Each member's direct leaves.
    direct: Vec<Vec<u32>>,
}

impl Truth {
    fn new(
        graph: &Graph,
        tasks: &[TruthTask],
        composed: &[(&str, &[&str])],
        nested: &[(&str, &str)],
    ) -> Truth {
        let held = leaves_of(graph, tasks, composed);
        let mut holders: AHashMap<u32, Vec<usize>> = AHashMap::new();
        for (i, h) in held.iter().enumerate() {
            for &l in h {
                holders.entry(l).or_default().push(i);
            }
        }
        let mut by_type: Vec<Vec<Vec<LeafId>>> = vec![Vec::new(); graph.types.len()];
        for (l, leaf) in graph.leaves.iter().enumerate() {
            if let Some(v) = by_type.get_mut(leaf.ty.index()) {
                v.push(vec![LeafId::at(l)]);
            }
        }
        Truth {
            held,
            holders,
            kin: kinship(tasks, nested),
            by_type,
        }
    }

    /// The instances of each true type, by name.
    fn types<'t>(&self, tasks: &'t [TruthTask]) -> BTreeMap<&'t str, Vec<usize>> {
        let mut types: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for (i, t) in tasks.iter().enumerate() {
            types.entry(t.ty.as_str()).or_default().push(i);
        }
        types
    }

    fn of_type(&self, members: Vec<usize>) -> OfType {
        let mut owner = AHashMap::new();
        let mut direct = Vec::with_capacity(members.len());
        for (k, &i) in members.iter().enumerate() {
            for &l in &self.held[i] {
                owner.insert(l, k);
            }
            let below: AHashSet<u32> = self.kin[i]
                .desc
                .iter()
                .flat_map(|&d| self.held[d].iter().copied())
                .collect();
            direct.push(
                self.held[i]
                    .iter()
                    .copied()
                    .filter(|l| !below.contains(l))
                    .collect(),
            );
        }
        OfType {
            members,
            owner,
            direct,
        }
    }

    /// A model type's occurrences as leaf lists (a leaf type's are its leaves).
    fn occurrences<'m>(&'m self, mty: &'m TaskType) -> Vec<&'m [LeafId]> {
        match mty.leaf_type {
            Some(lt) => self
                .by_type
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
        }
    }

    /// How many of `occs` match a member of `of`, and which members one matches.
    fn matched(&self, of: &OfType, occs: &[&[LeafId]]) -> (usize, Vec<bool>) {
        let mut matched = vec![false; of.members.len()];
        let mut good = 0;
        for k in occs.iter().filter_map(|o| self.matches(of, o)) {
            good += 1;
            matched[k] = true;
        }
        (good, matched)
    }

    /// The member an occurrence matches: it holds leaves of that member only (of this type),
    /// all of its direct leaves, and no leaf of another instance that is not its kin.
    fn matches(&self, of: &OfType, leaves: &[LeafId]) -> Option<usize> {
        let mut hit: Option<usize> = None;
        for l in leaves {
            if let Some(&k) = of.owner.get(&l.get()) {
                match hit {
                    None => hit = Some(k),
                    Some(h) if h != k => return None,
                    _ => {}
                }
            }
        }
        let k = hit?;
        let i = of.members[k];
        let fits = |l: u32| {
            self.held[i].binary_search(&l).is_ok()
                || self
                    .holders
                    .get(&l)
                    .into_iter()
                    .flatten()
                    .all(|&h| self.kin[i].related(h))
        };
        let all = of.direct[k]
            .iter()
            .all(|&l| leaves.binary_search(&LeafId::new(l)).is_ok());
        let only = leaves.iter().all(|&l| fits(l.get()));
        (all && only && !of.direct[k].is_empty()).then_some(k)
    }
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
