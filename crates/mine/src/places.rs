//! Where the classes a replayed grammar inlines stand in each part of a trace, merged over the
//! parts.
//!
//! A class the learning run inlined (every occurrence of it sat inside a node of one parent
//! class, one per node) is a piece of that parent wherever the grammar is replayed
//! (`tree::build`'s `forced`). The learning run of a trace mined in windows is a sample, the
//! first and the last window: an occurrence under another parent that only a window in the
//! middle holds (Apache: nine requests whose listener's push had a rare stack, all within one
//! second) keeps the class a task of its own in the model of the whole trace, and in no window.
//! So each window reports, for every class it was told to inline, whether its occurrences there
//! could be inlined and into which of the grammar's rules ([`Places`]); the reports of all
//! windows are merged, and a class found apart over all of them (under two parents, under a
//! parent the grammar does not hold beside one it does, twice in one parent) is a task, as the
//! whole trace would find it: the caller replays the grammar again with that choice
//! ([`crate::Grammar::keep_apart`]). A class only ever found under one parent stays inlined.
//! Which parents a class stands under in the whole trace is the union of where it stands in
//! the parts, so the merge is exact where every part keeps the same parents. An occurrence
//! standing alone is not counted: what a window's edges leave alone is more than the cut
//! pieces `edge` finds (a worker's return to its pool after a request the window before
//! began), and counting them kept a step the whole model never makes a class.

use std::collections::BTreeMap;

use ahash::{AHashMap, AHashSet};

use crate::canon::Classes;
use crate::ix::{NodeIx, SymIx};
use crate::tree::{self, Choice, Replayed, Tree};
use crate::work::{Rule, Work};

/// Where a replayed class's occurrences stand in the parts looked at so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    /// Each in a node of one parent class, a rule of the grammar (by its symbol where it was
    /// learned), one per parent node.
    Under(SymIx),
    /// Each in a node of one parent class the grammar does not hold (a rule this part mined
    /// after the replay), one per parent node.
    Local,
    /// Anywhere else: under two parent classes, twice in one parent node, inside a loop.
    Apart,
}

impl Place {
    fn merge(self, other: Place) -> Place {
        match (self, other) {
            (Place::Under(a), Place::Under(b)) if a == b => self,
            (Place::Local, Place::Local) => Place::Local,
            _ => Place::Apart,
        }
    }
}

/// For each class a replayed grammar inlined, by its rule's symbol where the grammar was
/// learned: where its occurrences stand (see the module). Merged over the parts of a trace.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Places {
    by_rule: BTreeMap<SymIx, Place>,
}

impl Places {
    /// Adds what another part reported.
    pub fn merge(&mut self, other: &Places) {
        for (&rule, &place) in &other.by_rule {
            let p = self.by_rule.entry(rule).or_insert(place);
            *p = p.merge(place);
        }
    }

    /// The learned rules whose class stands apart over the parts merged (see the module).
    pub(crate) fn apart(&self) -> impl Iterator<Item = SymIx> + '_ {
        let apart = |(&r, &p): (&SymIx, &Place)| (p == Place::Apart).then_some(r);
        self.by_rule.iter().filter_map(apart)
    }
}

/// Where the classes `replayed` inlined stand in `tree` (see the module).
pub(crate) fn places(
    work: &Work,
    (classes, tree): (&Classes, &Tree),
    replayed: &[Replayed],
) -> Places {
    // The learned rule of each class here (the first, where several are one class).
    let mut learned_of: AHashMap<SymIx, SymIx> = AHashMap::new();
    for &(here, learned, _) in replayed {
        let l = learned_of.entry(classes.of[here]).or_insert(learned);
        *l = (*l).min(learned);
    }
    let mut nodes: AHashMap<SymIx, Vec<NodeIx>> = replayed
        .iter()
        .filter(|r| r.2 == Choice::Inlined)
        .map(|&(here, _, _)| (classes.of[here], Vec::new()))
        .collect();
    let mut out = Places::default();
    if nodes.is_empty() {
        return out;
    }
    for (n, c) in tree.class.iter_enumerated() {
        if let Some(v) = nodes.get_mut(c) {
            v.push(n);
        }
    }
    for (c, ns) in &nodes {
        let place = class_place(work, tree, (*c, ns), &learned_of);
        if let (Some(place), Some(&rule)) = (place, learned_of.get(c)) {
            out.by_rule.insert(rule, place);
        }
    }
    out
}

/// Where class `c`'s nodes `ns` stand; `None` when none has a parent.
fn class_place(
    work: &Work,
    tree: &Tree,
    (c, ns): (SymIx, &[NodeIx]),
    learned_of: &AHashMap<SymIx, SymIx>,
) -> Option<Place> {
    let mut seen = AHashSet::new();
    let mut parent = None;
    for &n in ns {
        let p = tree::nearest_kept_of(work, tree, n);
        if p.is_none() {
            continue;
        }
        if !seen.insert(p) {
            return Some(Place::Apart);
        }
        let pc = tree.class[p];
        let in_loop = matches!(work.syms[pc].rule, Rule::Loop { .. });
        if pc == c || in_loop || *parent.get_or_insert(pc) != pc {
            return Some(Place::Apart);
        }
    }
    parent.map(|pc| {
        learned_of
            .get(&pc)
            .map_or(Place::Local, |&r| Place::Under(r))
    })
}
