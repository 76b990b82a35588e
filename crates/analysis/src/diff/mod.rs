//! Two runs compared task by task: which kind of task got slower or faster, whether beyond
//! noise, and where its extra time went (`scalpel diff`).
//!
//! Scope: the task types of two models with their rollups: the top-level types (the requests,
//! commits and jobs a reader compares) over their top-level instances, and the group, loop and
//! session types that run inside others (a statement inside a database session) over all
//! their instances; leaf types show in the cause of the types that hold them. Types are paired by name, then by structure ([`matching`](self) rules); each pair's
//! latency samples are compared with a rank test ([`mann_whitney`]); its cause is the leaf
//! and kind of time whose share of the critical path per instance moved most. Non-goals:
//! writing it (`scalpel-views`) and loading the runs. Two runs' flame graphs are put side by
//! side in [`flame`](self) (`diff_folded`).
//!
//! A change is *significant* when both runs have at least [`DiffOptions::min_count`]
//! instances, the rank test's p-value (on the medians of batches of neighbouring instances,
//! see [`batch_medians`]) is below [`DiffOptions::alpha`] divided by the number of
//! pairs tested (Bonferroni: the chance of calling any unchanged type changed stays below
//! `alpha`), and the median moved by at least [`DiffOptions::min_effect`] of the old median (a
//! thousand instances make a 1% shift "significant" in the statistical sense, and a reader
//! has no use for it) and by at least [`DiffOptions::min_shift_ns`]. The last bound is what
//! one recording cannot measure: how far a setting's latencies move from one run to the next.
//! The rank test sees only the variation inside each run; between runs, where the scheduler
//! put the threads and how deep the cores slept move every short task alike. Two recordings
//! of the replicated store at one setting moved types of 13–33 µs by 5–13 µs with every batch
//! of one run above every batch of the other (p < 10⁻⁷), while its millisecond commits moved
//! by under 10%.

mod cause;
mod flame;
mod matching;
mod ranks;

use scalpel_model::task::{Model, TaskKind, TaskType, TaskTypeId};
use serde::Serialize;

use crate::rollup::{LeavesHeld, Rollup, TypeStats};

pub use cause::{Behind, Cause, PathPart};
pub use flame::{diff_folded, FoldedDiff};
pub use matching::MatchedBy;
pub use ranks::{mann_whitney, RankTest};

use cause::composition;
use matching::{pair, Candidate};

/// How `diff` decides. `Default`: α = 0.01, a move of the median by 10% and by 20 µs, 5
/// instances a side.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DiffOptions {
    /// The family-wise false-positive rate: the chance that a diff of two runs of the same
    /// thing calls any type changed. Default 0.01.
    pub alpha: f64,
    /// The smallest move of the median, over the old median, that counts. Default 0.10.
    pub min_effect: f64,
    /// Fewer instances than this on either side are never significant. Default 5.
    pub min_count: u64,
    /// The smallest move of the median, in ns, that counts, whatever its share: about one
    /// wake-up's latency under load. Default 20,000 (20 µs).
    pub min_shift_ns: u64,
}

impl Default for DiffOptions {
    fn default() -> Self {
        DiffOptions {
            alpha: 0.01,
            min_effect: 0.10,
            min_count: 5,
            min_shift_ns: 20_000,
        }
    }
}

/// One run, as `diff` takes it.
#[derive(Clone, Copy, Debug)]
pub struct Run<'a> {
    /// Its model: its task types (a catalog without occurrences will do).
    pub model: &'a Model,
    /// The model's rollups.
    pub rollup: &'a Rollup,
    /// The leaves each type's instances hold, in the model's order
    /// ([`leaves_held`](crate::rollup::leaves_held) of a model).
    pub held: &'a [LeavesHeld],
}

/// Whether a type is in both runs or one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// In both.
    Matched,
    /// Only in the new run.
    New,
    /// Only in the old run.
    Gone,
}

/// One run's figures for a type (its top-level instances; all of them for a nested type).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Figures {
    /// The type's name in this run.
    pub name: String,
    /// Instances.
    pub count: u64,
    /// Instances per second while it ran.
    pub per_second: f64,
    /// Median latency.
    pub p50_ns: u64,
    /// 90th percentile.
    pub p90_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// Longest.
    pub max_ns: u64,
    /// Latencies added up.
    pub total_ns: u64,
    /// Bytes read and written per instance.
    pub bytes_per_instance: u64,
    /// Leaves its instances hold.
    pub leaves: u64,
    /// The critical path per instance, by kind of time.
    pub path: Vec<PathPart>,
}

/// One type's change.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TypeDiff {
    /// Its name: the new run's, or the old's for a type that is gone.
    pub name: String,
    /// Leaf, group, loop or session.
    pub kind: TaskKind,
    /// A type that runs inside others, compared over all its instances (a top-level type is
    /// compared over its top-level instances).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub nested: bool,
    /// In both runs, or one.
    pub status: Status,
    /// How the pair was made.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matched_by: Option<MatchedBy>,
    /// The old run's figures.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old: Option<Figures>,
    /// The new run's figures.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new: Option<Figures>,
    /// New total time minus old (instances × latency).
    pub total_change_ns: i64,
    /// The rank test of the new latencies against the old.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub test: Option<RankTest>,
    /// Changed beyond noise (see the module's note).
    pub significant: bool,
    /// A nested type one of whose parent types (or theirs) changed beyond noise in the new
    /// run: its change is part of theirs.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub within_changed: bool,
    /// Where the change went, for a matched type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cause: Option<Cause>,
}

/// What one run had and how much of it was matched.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RunShare {
    /// Top-level types.
    pub types: u64,
    /// Of which matched.
    pub matched_types: u64,
    /// Leaves held by top-level instances.
    pub leaves: u64,
    /// Of which in matched types.
    pub matched_leaves: u64,
}

/// Two runs compared.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Diff {
    /// The types that changed: those changed beyond noise first, then those no changed parent
    /// type holds (top-level ones, and nested ones whose parents did not change) before those
    /// inside a changed one, then each by the largest change in total time (unchanged pairs
    /// are counted in `unchanged`).
    pub types: Vec<TypeDiff>,
    /// Matched pairs whose figures are all equal.
    pub unchanged: u64,
    /// Pairs tested for significance.
    pub tested: u64,
    /// The old run.
    pub old: RunShare,
    /// The new run.
    pub new: RunShare,
}

/// Compares `old` with `new`: their top-level types, then the group, loop and session types
/// that run inside others (each over all its instances).
pub fn diff(old: Run, new: Run, opts: &DiffOptions) -> Diff {
    let top = Level::pair(old, new, false);
    let nested = Level::pair(old, new, true);
    let tested = top.tested(opts) + nested.tested(opts);
    let mut out = Diff {
        types: Vec::new(),
        unchanged: 0,
        tested,
        old: share(old, &top.old, top.pairs.iter().map(|p| p.0)),
        new: share(new, &top.new, top.pairs.iter().map(|p| p.1)),
    };
    let mut new_types = Vec::new();
    for level in [top, nested] {
        level.compare(old, new, tested, opts, &mut out, &mut new_types);
    }
    mark_within_changed(&new.model.types, &mut out.types, &new_types);
    order(&mut out.types);
    out
}

/// Changed beyond noise first; then the changes no changed parent holds before those inside one
/// (a nested type's time is also its parent's, but a parent that took as long, as a connection
/// does under a client that runs for a fixed time, hides its children's change), each by the
/// largest change in total time.
fn order(rows: &mut [TypeDiff]) {
    rows.sort_by(|a, b| {
        (b.significant.cmp(&a.significant))
            .then(a.within_changed.cmp(&b.within_changed))
            .then(
                b.total_change_ns
                    .unsigned_abs()
                    .cmp(&a.total_change_ns.unsigned_abs()),
            )
            .then(a.name.cmp(&b.name))
    });
}

/// One level's types in both runs and their pairs.
struct Level<'a> {
    nested: bool,
    old: Vec<&'a TypeStats>,
    new: Vec<&'a TypeStats>,
    pairs: Vec<(usize, usize, MatchedBy)>,
}

impl<'a> Level<'a> {
    fn pair(old: Run<'a>, new: Run<'a>, nested: bool) -> Self {
        let (oc, nc) = (candidates(old, nested), candidates(new, nested));
        Level {
            nested,
            pairs: pair(&oc.0, &nc.0),
            old: oc.1,
            new: nc.1,
        }
    }

    /// Pairs with enough instances on both sides to be tested.
    fn tested(&self, opts: &DiffOptions) -> u64 {
        let enough = |s: &TypeStats| s.count >= opts.min_count;
        self.pairs
            .iter()
            .filter(|&&(o, n, _)| enough(self.old[o]) && enough(self.new[n]))
            .count() as u64
    }

    /// Adds this level's changed, gone and new types to `out`, and each row's type in the new
    /// run (none for a gone type) to `new_types`.
    fn compare(
        self,
        old: Run,
        new: Run,
        tested: u64,
        opts: &DiffOptions,
        out: &mut Diff,
        new_types: &mut Vec<Option<TaskTypeId>>,
    ) {
        let (mut old_done, mut new_done) =
            (vec![false; self.old.len()], vec![false; self.new.len()]);
        for &(o, n, by) in &self.pairs {
            old_done[o] = true;
            new_done[n] = true;
            let d = matched(
                (old, self.old[o]),
                (new, self.new[n]),
                (by, self.nested),
                tested,
                opts,
            );
            if d.old == d.new && d.test.is_some_and(|t| t.p_value >= 1.0) {
                out.unchanged += 1;
            } else {
                out.types.push(d);
                new_types.push(Some(self.new[n].ty));
            }
        }
        let gone = self.old.iter().zip(&old_done).filter(|(_, &done)| !done);
        for (&s, _) in gone {
            out.types.push(alone(old, s, Status::Gone, self.nested));
            new_types.push(None);
        }
        let added = self.new.iter().zip(&new_done).filter(|(_, &done)| !done);
        for (&s, _) in added {
            out.types.push(alone(new, s, Status::New, self.nested));
            new_types.push(Some(s.ty));
        }
    }
}

/// Marks the nested rows whose type, in the new run, has a parent type (or a parent's parent)
/// that changed beyond noise. `new_types[i]` is row `i`'s type in the new run.
fn mark_within_changed(
    types: &[TaskType],
    rows: &mut [TypeDiff],
    new_types: &[Option<TaskTypeId>],
) {
    let changed: std::collections::HashSet<TaskTypeId> = rows
        .iter()
        .zip(new_types)
        .filter(|(r, _)| r.significant)
        .filter_map(|(_, t)| *t)
        .collect();
    for (row, ty) in rows.iter_mut().zip(new_types) {
        row.within_changed =
            row.nested && ty.is_some_and(|t| has_changed_ancestor(types, t, &changed));
    }
}

/// Whether a type above `ty` (through its occurrences' parents, transitively) is in `changed`.
/// Iterative, each type visited once: the hierarchy's depth is the input's.
fn has_changed_ancestor(
    types: &[TaskType],
    ty: TaskTypeId,
    changed: &std::collections::HashSet<TaskTypeId>,
) -> bool {
    let mut seen = std::collections::HashSet::from([ty]);
    let mut stack = vec![ty];
    while let Some(t) = stack.pop() {
        let Some(tt) = types.get(t.index()) else {
            continue;
        };
        for p in tt.occurrences.iter().filter_map(|o| o.parent).map(|p| p.ty) {
            if changed.contains(&p) {
                return true;
            }
            if seen.insert(p) {
                stack.push(p);
            }
        }
    }
    false
}

/// A run's match candidates and their stats: its top-level types (their top-level instances),
/// or, `nested`, its group, loop and session types that have instances inside others (all
/// their instances). Leaf types are compared through the types that hold them (the cause).
fn candidates<'a>(run: Run<'a>, nested: bool) -> (Vec<Candidate<'a>>, Vec<&'a TypeStats>) {
    let stats: &[TypeStats] = if nested {
        &run.rollup.types
    } else {
        &run.rollup.top_level
    };
    stats
        .iter()
        .filter(|s| {
            let Some(t) = run.model.types.get(s.ty.index()) else {
                return false;
            };
            !nested || (t.kind != TaskKind::Leaf && t.top_level < t.count && s.count > 0)
        })
        .map(|s| {
            let leaves = leaves_held(run, s, nested);
            (Candidate::of(run.model, s.ty.index(), s.count, leaves), s)
        })
        .unzip()
}

/// How much of a run the pairs (by candidate index) cover.
fn share(run: Run, c: &[&TypeStats], paired: impl Iterator<Item = usize>) -> RunShare {
    let leaves: Vec<u64> = c.iter().map(|s| leaves_held(run, s, false)).collect();
    let mut r = RunShare {
        types: c.len() as u64,
        leaves: leaves.iter().sum(),
        ..RunShare::default()
    };
    for i in paired {
        r.matched_types += 1;
        r.matched_leaves += leaves[i];
    }
    r
}

/// Leaves held by a type's instances: its top-level ones, or all of them for a nested type.
fn leaves_held(run: Run, s: &TypeStats, nested: bool) -> u64 {
    let h = run.held.get(s.ty.index()).copied().unwrap_or_default();
    if nested {
        h.all
    } else {
        h.top_level
    }
}

fn figures(run: Run, s: &TypeStats, nested: bool) -> Figures {
    Figures {
        name: run.model.types[s.ty.index()].name.clone(),
        count: s.count,
        per_second: s.per_second,
        p50_ns: s.latency.p50_ns,
        p90_ns: s.latency.p90_ns,
        p99_ns: s.latency.p99_ns,
        max_ns: s.latency.max_ns,
        total_ns: s.total_ns,
        bytes_per_instance: (s.bytes_in + s.bytes_out) / s.count.max(1),
        leaves: leaves_held(run, s, nested),
        path: composition(s),
    }
}

fn matched(
    (old, os): (Run, &TypeStats),
    (new, ns): (Run, &TypeStats),
    (by, nested): (MatchedBy, bool),
    tested: u64,
    opts: &DiffOptions,
) -> TypeDiff {
    let test = mann_whitney(
        &batch_medians(&ns.by_start_ns),
        &batch_medians(&os.by_start_ns),
    );
    let enough = os.count >= opts.min_count && ns.count >= opts.min_count;
    let moved = ns.latency.p50_ns.abs_diff(os.latency.p50_ns) as f64;
    let significant = enough
        && test.is_some_and(|t| t.p_value < opts.alpha / tested.max(1) as f64)
        && moved >= opts.min_effect * os.latency.p50_ns as f64
        && moved >= opts.min_shift_ns as f64;
    let (of, nf) = (figures(old, os, nested), figures(new, ns, nested));
    TypeDiff {
        name: nf.name.clone(),
        kind: new.model.types[ns.ty.index()].kind,
        nested,
        status: Status::Matched,
        matched_by: Some(by),
        total_change_ns: ns.total_ns as i64 - os.total_ns as i64,
        test,
        significant,
        within_changed: false,
        cause: cause::cause(&side(old, os), &side(new, ns)),
        old: Some(of),
        new: Some(nf),
    }
}

/// Batches the rank test compares, at most: each run's instances in order of start are cut into
/// this many runs of neighbours, and the test compares the batches' medians.
pub const BATCHES: usize = 20;

/// The medians of `by_start` cut into at most [`BATCHES`] batches of neighbours (one
/// instance each when there are no more than that), sorted.
///
/// Why batches: instances that ran at the same time share their fate (a flow-control stall or
/// a flush delays every commit queued behind it), so a run's instances are far from
/// independent draws and a test that takes them as such calls two recordings of one setting
/// different (a 13% move of the median, p = 8·10⁻⁵ over 400 commits). Medians of batches of
/// neighbours are nearly independent: the test then asks whether the new run's stretches of
/// time tend to be slower than the old run's, which is the question.
pub fn batch_medians(by_start: &[u64]) -> Vec<u64> {
    let size = by_start.len().div_ceil(BATCHES).max(1);
    let mut out: Vec<u64> = by_start
        .chunks(size)
        .map(|c| {
            let mut c = c.to_vec();
            c.sort_unstable();
            c[(c.len() - 1) / 2]
        })
        .collect();
    out.sort_unstable();
    out
}

fn side<'a>(run: Run<'a>, stats: &'a TypeStats) -> cause::Side<'a> {
    cause::Side {
        model: run.model,
        stats,
        blame: &run.rollup.blame,
    }
}

fn alone(run: Run, s: &TypeStats, status: Status, nested: bool) -> TypeDiff {
    let f = figures(run, s, nested);
    let total = s.total_ns as i64;
    TypeDiff {
        name: f.name.clone(),
        kind: run.model.types[s.ty.index()].kind,
        nested,
        status,
        matched_by: None,
        total_change_ns: if status == Status::Gone {
            -total
        } else {
            total
        },
        test: None,
        significant: false,
        within_changed: false,
        cause: None,
        old: (status == Status::Gone).then(|| f.clone()),
        new: (status == Status::New).then_some(f),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use scalpel_model::task::{OccRef, Occurrence};

    /// A type whose occurrences sit in the given parents' first occurrences.
    fn ty(name: &str, parents: &[u32]) -> TaskType {
        TaskType {
            name: name.into(),
            kind: TaskKind::Group,
            level: 1,
            leaf_type: None,
            count: 1,
            top_level: 0,
            children: Vec::new(),
            edges: Vec::new(),
            variants: Vec::new(),
            occurrences: parents
                .iter()
                .map(|&p| Occurrence {
                    leaves: Vec::new().into(),
                    parent: Some(OccRef {
                        ty: TaskTypeId::at(p as usize),
                        index: 0,
                    }),
                    iterations: None,
                    variant: None,
                })
                .collect(),
        }
    }

    fn row(name: &str, nested: bool, significant: bool, total_change_ns: i64) -> TypeDiff {
        TypeDiff {
            name: name.into(),
            kind: TaskKind::Group,
            nested,
            status: Status::Matched,
            matched_by: None,
            old: None,
            new: None,
            total_change_ns,
            test: None,
            significant,
            within_changed: false,
            cause: None,
        }
    }

    /// PostgreSQL under a client that runs for a fixed time: each connection (a session type)
    /// takes as long with the change as without, and the statements inside it got 86% faster,
    /// 26 s in all. A small top-level type that moved by noise must not come before them;
    /// a type inside the changed statements comes after.
    #[test]
    fn a_change_no_changed_parent_holds_leads_whatever_its_level() {
        // 0 session, 1 statement (in 0), 2 a step of the statement (in 1), 3 a top-level type.
        let types = vec![
            ty("session", &[]),
            ty("statement", &[0]),
            ty("step", &[1]),
            ty("init", &[]),
        ];
        let mut rows = vec![
            row("init", false, true, 59_000_000),
            row("step", true, true, -1_000_000_000),
            row("statement", true, true, -26_000_000_000),
            row("session", false, false, 0),
        ];
        let new_types: Vec<Option<TaskTypeId>> =
            [3, 2, 1, 0].map(|t| Some(TaskTypeId::at(t))).to_vec();
        mark_within_changed(&types, &mut rows, &new_types);
        let within: Vec<bool> = rows.iter().map(|r| r.within_changed).collect();
        assert_eq!(within, [false, true, false, false]);
        order(&mut rows);
        let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["statement", "init", "step", "session"]);
    }

    #[test]
    fn batches_are_neighbours_and_their_medians_sorted() {
        // 40 instances: 20 batches of two; a batch's median is its lower middle.
        let by_start: Vec<u64> = (0..40).rev().collect();
        let m = batch_medians(&by_start);
        assert_eq!(m.len(), BATCHES);
        assert_eq!(m[0], 0);
        assert_eq!(m[19], 38);
        // No more instances than batches: each instance is its own.
        assert_eq!(batch_medians(&[5, 1, 3]), [1, 3, 5]);
        assert!(batch_medians(&[]).is_empty());
    }

    /// A stall delays a stretch of neighbours: one or two slow batches, not many slow samples.
    /// Two runs of one setting whose stalls differ in length and time look different to a
    /// test on every instance, and not to the test on batches.
    #[test]
    fn a_stall_is_a_few_batches_not_many_samples() {
        let run = |at: usize, len: usize| -> Vec<u64> {
            (0..400u64)
                .map(|i| {
                    if (at..at + len).contains(&(i as usize)) {
                        200
                    } else {
                        50 + i % 7
                    }
                })
                .collect()
        };
        let (a, b) = (run(0, 40), run(250, 120));
        let sorted = |v: &[u64]| {
            let mut v = v.to_vec();
            v.sort_unstable();
            v
        };
        let every = mann_whitney(&sorted(&b), &sorted(&a)).unwrap();
        assert!(every.p_value < 0.001, "{every:?}");
        let batched = mann_whitney(&batch_medians(&b), &batch_medians(&a)).unwrap();
        assert!(batched.p_value > 0.05, "{batched:?}");
    }
}
