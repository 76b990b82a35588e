//! Stage 2 of inference: mining the task hierarchy from the causal graph (`scalpel infer DIR`).
//!
//! A grammar-compression miner in the manner of Re-Pair and gRePair (see
//! `paper-notes/mining.md` for the algorithm and how it relates to the paper's):
//!
//! 1. every leaf is a node labelled by its leaf type (`work`);
//! 2. each round (`round`) first folds runs of one label along a thread's strong program
//!    order into loop nodes; if there are none with enough support, it contracts the most
//!    frequent pairs of adjacent nodes (keyed by both labels and every edge between them with
//!    its ports), each label in at most one pair per round, non-overlapping occurrences chosen
//!    greedily in node order; pairs joined only by weak program order are tried last;
//! 3. a round's contractions that would close a cycle are refused (`acyclic`);
//! 4. when nothing reaches `min_support`, rules whose expansions are isomorphic are merged by
//!    an exact canonical form (`canon`), rules used once inside one parent are inlined
//!    (`tree`), and the rest become the model's task types (`build`, `names`).
//!
//! Scope: the model. Non-goals: rollups (`scalpel-analysis`) and drawing (`scalpel-views`).

mod acyclic;
mod build;
mod canon;
mod canon_tree;
mod contains;
mod cross;
mod edge;
mod grammar;
mod input;
mod ix;
mod loops;
mod names;
mod options;
mod places;
mod round;
mod run;
mod runs;
mod same;
mod sample;
mod sessions;
mod tree;
mod turns;
mod variants;
mod work;

#[cfg(test)]
mod tests;

pub use canon::SEARCH_LEAVES;
pub use grammar::Grammar;
pub use input::{MineInput, MineLeaf};
pub use names::{NameOverrides, NamesError};
pub use options::{MineOptions, MineWarning, Mined, DEFAULT_MIN_SUPPORT};
pub use places::Places;
pub use run::{learn, mine, mine_input, mine_with};
pub use sample::SamplePart;

use run::pattern_kind;
