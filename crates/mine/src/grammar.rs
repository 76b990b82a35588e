//! The rules a mining run made, in the order it made them, and their replay on other leaves.
//!
//! Why: a trace too large to mine at once is mined in parts, and the parts must share their
//! task types; so must two recordings of one program that are to be compared. A grammar
//! learned on one part (or a sample, or another recording) is replayed on the others: each step
//! proposes exactly the rules that step made, on the nodes of the graph at hand, and contracts
//! their occurrences, however many there are; what the replay leaves is then mined as usual, so
//! patterns the grammar did not hold still become tasks. Leaf types are found again by their
//! names and boundaries (see [`Grammar`]); a rule over a leaf type the graph lacks is left out,
//! and so is every rule built on it. A replayed rule's class is kept as a task type, folded
//! into the task it wraps, or inlined into its parent, as the run that learned it decided
//! (`tree::build`).
//!
//! What is exact and what is not: replayed on the graph it was learned on, a grammar makes the
//! same contractions, so the model is the same (`tests/tests/grammar.rs`, every corpus case).
//! On another graph the steps keep their order, but a step's occurrences are the ones that graph
//! has: a pattern the grammar's graph held often and this one rarely is still contracted, and
//! one this graph holds more often than a rule that went first there still goes after it. How
//! much that changes is measured, not assumed (`grammar-halves`, docs/BENCHMARKS.md).

use ahash::{AHashMap, AHashSet};

use scalpel_model::graph::{LeafType, LeafTypeId};

use crate::ix::SymIx;
use crate::places::Places;
use crate::round::Phase;
use crate::tree::{Choice, Replayed};
use crate::work::Rule;

/// The rules of one mining run (see the module docs). Its leaf types are known by their names
/// (without the callers added to tell types apart) and boundaries (operation and code key at
/// each end), which another recording of the same
/// program gives them too, so a grammar applies to any graph: rules whose leaf types that
/// graph lacks are left out.
#[derive(Clone, Debug, Default)]
pub struct Grammar {
    leaf_keys: Vec<String>,
    /// Each leaf type's instances in the graph the grammar was learned on: of several types with
    /// one key, the most frequent stands for the most frequent here (see [`SymMap::new`]).
    leaf_counts: Vec<u64>,
    steps: Vec<Step>,
    /// What the task tree made of each rule's class (a task type, one found made of tasks, a
    /// variant of the task it wraps, or a piece of its parent: [`Choice`]), by the rule's
    /// symbol in the run that learned it: a replay makes the same choice (see `tree::build`).
    kept: AHashMap<SymIx, Choice>,
}

/// What identifies a leaf type from one graph to another: its boundaries and the start of its
/// name, not the callers the graph stage adds to the name (`… < caller`) when two types would
/// share it, which depend on which other types the graph has and how many leaves each holds (a
/// window without one of them names the other without a caller).
pub(crate) fn leaf_key(t: &LeafType) -> String {
    let name = t.name.split(" < ").next().unwrap_or_default();
    format!(
        "{name}|{:?}|{:x}|{:?}|{:x}",
        t.start.op, t.start.code_key, t.end.op, t.end.code_key
    )
}

/// One contraction step: the phase it ran in and the rules it added, each with the symbol the
/// run gave it.
#[derive(Clone, Debug)]
pub(crate) struct Step {
    pub phase: Phase,
    pub rules: Vec<(SymIx, Rule)>,
}

impl Grammar {
    /// An empty grammar over the leaf types `types`.
    pub(crate) fn new(types: &[LeafType]) -> Grammar {
        Grammar {
            leaf_keys: types.iter().map(leaf_key).collect(),
            leaf_counts: types.iter().map(|t| t.count).collect(),
            steps: Vec::new(),
            kept: AHashMap::new(),
        }
    }

    /// Records, for every rule, what the tree made of its class (`kept_class`).
    pub(crate) fn set_kept(&mut self, kept_class: impl Fn(SymIx) -> Choice) {
        self.kept = self
            .steps
            .iter()
            .flat_map(|s| s.rules.iter().map(|(sym, _)| (*sym, kept_class(*sym))))
            .collect();
    }

    /// Records a step (nothing when it added no rule).
    pub(crate) fn push(&mut self, phase: Phase, rules: Vec<(SymIx, Rule)>) {
        if !rules.is_empty() {
            self.steps.push(Step { phase, rules });
        }
    }

    /// The steps, in order.
    pub(crate) fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// Keeps as tasks the classes it inlined that `places` found apart over the parts of a
    /// trace the grammar was replayed on (see [`Places`]); how many it changed. Replayed again,
    /// the grammar then keeps them in every part.
    pub fn keep_apart(&mut self, places: &Places) -> usize {
        let mut changed = 0;
        for rule in places.apart() {
            if let Some(c) = self.kept.get_mut(&rule).filter(|c| **c == Choice::Inlined) {
                *c = Choice::Kept;
                changed += 1;
            }
        }
        changed
    }

    /// How many rules it holds.
    pub fn rules(&self) -> usize {
        self.steps.iter().map(|s| s.rules.len()).sum()
    }
}

/// The symbols of a replay: the learned run's symbol → this run's. A leaf type is this
/// graph's type of the same key; where several types share a key (types the graph tells apart by
/// what came before them, such as a thread's first wait and its later ones), they are paired by
/// rank of frequency, the most frequent with the most frequent, and one left without a partner
/// maps to none. A rule's symbol is known once its step has been applied here.
pub(crate) struct SymMap {
    leaves: Vec<Option<SymIx>>,
    rules: AHashMap<SymIx, SymIx>,
}

/// Leaf types (by index) grouped by key, each group most frequent first (then by index).
fn by_key(types: impl Iterator<Item = (String, u64)>) -> AHashMap<String, Vec<usize>> {
    let mut groups: AHashMap<String, Vec<(u64, usize)>> = AHashMap::new();
    for (i, (key, count)) in types.enumerate() {
        groups.entry(key).or_default().push((count, i));
    }
    groups
        .into_iter()
        .map(|(k, mut v)| {
            v.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
            (k, v.into_iter().map(|(_, i)| i).collect())
        })
        .collect()
}

/// Each of `types` as the grammar finds it in another graph: its key, and its rank among the
/// types of that key by frequency (see [`SymMap::new`]).
pub(crate) fn ranked_keys(types: &[LeafType]) -> Vec<(String, usize)> {
    let mut out = vec![(String::new(), 0); types.len()];
    for (key, ranked) in by_key(types.iter().map(|t| (leaf_key(t), t.count))) {
        for (rank, i) in ranked.into_iter().enumerate() {
            out[i] = (key.clone(), rank);
        }
    }
    out
}

impl SymMap {
    /// The map from `g`'s leaf types to `types`, this graph's.
    pub(crate) fn new(g: &Grammar, types: &[LeafType]) -> SymMap {
        let here = by_key(types.iter().map(|t| (leaf_key(t), t.count)));
        let learned = by_key(
            g.leaf_keys
                .iter()
                .cloned()
                .zip(g.leaf_counts.iter().copied()),
        );
        let mut leaves = vec![None; g.leaf_keys.len()];
        for (key, ranked) in &learned {
            let Some(ours) = here.get(key) else { continue };
            for (&l, &h) in ranked.iter().zip(ours) {
                leaves[l] = Some(SymIx::new(h));
            }
        }
        SymMap {
            leaves,
            rules: AHashMap::new(),
        }
    }

    fn get(&self, s: SymIx) -> Option<SymIx> {
        match self.leaves.get(s.index()) {
            Some(&leaf) => leaf,
            None => self.rules.get(&s).copied(),
        }
    }

    /// A learned rule in this run's symbols, when every symbol it names exists here.
    fn rule(&self, r: &Rule) -> Option<Rule> {
        Some(match r {
            Rule::Leaf(t) => Rule::Leaf(LeafTypeId::at(self.get(SymIx::new(t.index()))?.index())),
            Rule::Pair { a, b, links } => Rule::Pair {
                a: self.get(*a)?,
                b: self.get(*b)?,
                links: links.clone(),
            },
            Rule::Loop { body, links } => Rule::Loop {
                body: self.get(*body)?,
                links: links.clone(),
            },
        })
    }

    /// The step's rules in this run's symbols: the only candidates of its replay.
    pub(crate) fn translate(&self, step: &Step) -> AHashSet<Rule> {
        step.rules
            .iter()
            .filter_map(|(_, r)| self.rule(r))
            .collect()
    }

    /// After the replay: for each rule replayed, its symbol here, its symbol in `g` and what
    /// `g`'s tree made of it.
    pub(crate) fn kept(&self, g: &Grammar) -> Vec<Replayed> {
        let mut v: Vec<Replayed> = self
            .rules
            .iter()
            .filter_map(|(learned, here)| Some((*here, *learned, *g.kept.get(learned)?)))
            .collect();
        v.sort_unstable();
        v
    }

    /// After the step's replay: the symbols this run gave the rules it added.
    pub(crate) fn learn(&mut self, step: &Step, added: &[(SymIx, Rule)]) {
        let by_rule: AHashMap<&Rule, SymIx> = added.iter().map(|(s, r)| (r, *s)).collect();
        for (learned, r) in &step.rules {
            if let Some(&here) = self.rule(r).as_ref().and_then(|r| by_rule.get(r)) {
                self.rules.insert(*learned, here);
            }
        }
    }
}
