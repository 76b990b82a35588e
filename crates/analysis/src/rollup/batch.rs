//! Instances evaluated and folded on every worker thread at once: a type's instances are split
//! into one contiguous part per thread, each part folded on its own, and the parts' folds handed
//! back in order for the caller to merge.
//!
//! Why: evaluating instances (their critical paths) and folding them into their type's figures
//! is nearly all of the rollups' time. Each evaluation reads the graph alone, and every fold is
//! a sum, a count, a minimum or a list sorted at the end, so parts merged in order give what one
//! fold over all the instances gives, whatever the number of threads: the rollups are the same
//! byte for byte with one thread or many. Nothing is held per instance (`fold`'s docs say why
//! that matters).

use rayon::prelude::*;
use scalpel_model::graph::{Graph, LeafId};

use super::instance::{Evaluator, Instance};
use super::leaf::GraphIndex;

/// The most evaluators: each holds a mark per leaf of the graph (4 bytes), so their memory grows
/// with their number.
const MAX_EVALUATORS: usize = 8;

/// Fewest instances worth a part of their own: below, splitting costs more than it saves.
const MIN_PART: usize = 64;

/// One [`Evaluator`] per worker thread of the pool this is made in (at most
/// [`MAX_EVALUATORS`]).
pub(super) struct Evaluators<'a> {
    each: Vec<Evaluator<'a>>,
}

impl<'a> Evaluators<'a> {
    /// Evaluators for `g` in the current rayon pool.
    pub(super) fn new(g: &'a Graph, idx: &'a GraphIndex) -> Self {
        let n = rayon::current_num_threads().clamp(1, MAX_EVALUATORS);
        Evaluators {
            each: (0..n).map(|_| Evaluator::new(g, idx)).collect(),
        }
    }

    /// Evaluates the instance of every item (its leaves given by `leaves`, ascending) and folds
    /// each into the fold of its part (made by `init`) with `add`, which is given the item's
    /// index; the parts' folds in the items' order.
    pub(super) fn fold<T: Sync, F: Send>(
        &mut self,
        items: &[T],
        leaves: impl Fn(&T) -> &[LeafId] + Sync,
        init: impl Fn() -> F + Sync,
        add: impl Fn(&mut F, usize, &T, &Instance) + Sync,
    ) -> Vec<F> {
        let part = items.len().div_ceil(self.each.len()).max(MIN_PART).max(1);
        let run = |e: &mut Evaluator<'a>, (p, xs): (usize, &[T])| {
            let mut f = init();
            for (i, x) in xs.iter().enumerate() {
                add(&mut f, p * part + i, x, &e.eval(leaves(x)));
            }
            f
        };
        if items.len() <= part {
            return vec![run(&mut self.each[0], (0, items))];
        }
        self.each
            .par_iter_mut()
            .zip(items.par_chunks(part).enumerate())
            .map(|(e, xs)| run(e, xs))
            .collect()
    }
}
