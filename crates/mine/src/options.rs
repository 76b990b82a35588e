//! The miner's options, its warnings, and what it returns.

use scalpel_model::task::Model;

use crate::names::NameOverrides;

/// The default `--min-support`: a pattern must occur at least this many times (as
/// non-overlapping occurrences) to become a task. Low enough for short test runs (a few
/// requests per thread), high enough that a thread pool's start-up does not make patterns of
/// every coincidence.
pub const DEFAULT_MIN_SUPPORT: u32 = 5;

/// Options of the miner. `Default`: [`DEFAULT_MIN_SUPPORT`], no overrides.
#[derive(Clone, Debug)]
pub struct MineOptions {
    /// Fewest non-overlapping occurrences a pattern needs (at least 2).
    pub min_support: u32,
    /// Name overrides.
    pub names: NameOverrides,
}

impl Default for MineOptions {
    fn default() -> Self {
        MineOptions {
            min_support: DEFAULT_MIN_SUPPORT,
            names: NameOverrides::default(),
        }
    }
}

/// What mining had to work around.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MineWarning {
    /// Leaf-level edges that closed cycles were left out.
    #[error(
        "{0} causal edges closed cycles (clock or matching trouble) and were left out of mining"
    )]
    CyclesBroken(u64),
    /// The names file renames a name no task has.
    #[error("the names file renames {0:?}, which no task is called")]
    UnusedName(String),
    /// Pairs that would have joined one more repetition of a leaf type onto a chain of them
    /// were left out (see `run::MAX_CHAIN`).
    #[error(
        "{0} rule(s) that would have made a chain of more than sixteen repetitions of one task, \
         one a round, were left out (a run whose repetitions have different partners, in a \
         recording cut while it was going on): those repetitions stay outside the chain"
    )]
    ChainsStopped(u64),
}

/// The model and what the user should hear about.
#[derive(Debug)]
pub struct Mined {
    /// The model.
    pub model: Model,
    /// The rules the run made, in order: replayed on another graph (part of this one, or
    /// another recording of the program) by [`mine_with`](crate::mine_with).
    pub grammar: crate::Grammar,
    /// Of the grammar given to [`mine_with`](crate::mine_with), the rules that contracted
    /// something here (0 without one).
    pub replayed: usize,
    /// Where the classes the replayed grammar inlined stand here (empty without one): merged
    /// over the parts of a trace, see [`crate::Grammar::keep_apart`].
    pub places: crate::Places,
    /// What the user should hear about (cycles broken, names not used).
    pub warnings: Vec<MineWarning>,
}
