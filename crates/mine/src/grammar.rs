//! The rules a mining run made, in the order it made them, and their replay on other leaves.
//!
//! Why: a trace too large to mine at once is mined in parts, and the parts must share their
//! task types. A grammar learned on one part (or on a sample) is replayed on the others: each
//! step proposes exactly the rules that step made, on the nodes of the graph at hand, and
//! contracts their occurrences, however many there are; what the replay leaves is then mined as
//! usual, so patterns the sample did not hold still become tasks.
//!
//! What is exact and what is not: replayed on the graph it was learned on, a grammar makes the
//! same contractions, so the model is the same (the test
//! `a_grammar_replayed_on_its_own_graph_gives_the_same_model`). On another graph the steps keep
//! their order, but a step's occurrences are the ones that graph has: a pattern the sample held
//! often and the other graph rarely is still contracted, and one the other graph holds more
//! often than a rule that went first in the sample still goes after it. How much that changes
//! is measured, not assumed (`tests/tests/grammar.rs`).

use ahash::{AHashMap, AHashSet};

use crate::ix::SymIx;
use crate::round::Phase;
use crate::work::Rule;

/// The rules of one mining run (see the module docs). Leaf types are the graph's type numbers,
/// so a grammar applies to graphs with the same table of leaf types (parts of one graph).
#[derive(Clone, Debug, Default)]
pub struct Grammar {
    leaf_types: u32,
    steps: Vec<Step>,
}

/// One contraction step: the phase it ran in and the rules it added, each with the symbol the
/// run gave it.
#[derive(Clone, Debug)]
pub(crate) struct Step {
    pub phase: Phase,
    pub rules: Vec<(SymIx, Rule)>,
}

impl Grammar {
    /// An empty grammar for graphs of `leaf_types` leaf types.
    pub(crate) fn new(leaf_types: u32) -> Grammar {
        Grammar {
            leaf_types,
            steps: Vec::new(),
        }
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

    /// Whether it was learned on a graph of `leaf_types` leaf types.
    pub(crate) fn fits(&self, leaf_types: u32) -> bool {
        self.leaf_types == leaf_types
    }

    /// How many rules it holds.
    pub fn rules(&self) -> usize {
        self.steps.iter().map(|s| s.rules.len()).sum()
    }
}

/// The symbols of a replay: the learned run's symbol → this run's. Leaf types keep their
/// numbers; a rule's symbol is known once its step has been applied here.
pub(crate) struct SymMap {
    leaf_types: u32,
    rules: AHashMap<SymIx, SymIx>,
}

impl SymMap {
    pub(crate) fn new(g: &Grammar) -> SymMap {
        SymMap {
            leaf_types: g.leaf_types,
            rules: AHashMap::new(),
        }
    }

    fn get(&self, s: SymIx) -> Option<SymIx> {
        if (s.index() as u64) < u64::from(self.leaf_types) {
            Some(s)
        } else {
            self.rules.get(&s).copied()
        }
    }

    /// A learned rule in this run's symbols, when every symbol it names exists here.
    fn rule(&self, r: &Rule) -> Option<Rule> {
        Some(match r {
            Rule::Leaf(t) => Rule::Leaf(*t),
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
