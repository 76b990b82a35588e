//! The leaves each task type's instances hold: what `diff` weighs a type by when it says how
//! much of a run the matched types cover. Counted from a model's occurrences, or added up over
//! the windows of a trace ([`super::WindowsRollup`]), whose catalog keeps no occurrences.

use scalpel_model::task::{Model, TaskKind};

/// Leaves held by one type's instances.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LeavesHeld {
    /// By its top-level instances (in no other task).
    pub top_level: u64,
    /// By all of them.
    pub all: u64,
}

impl LeavesHeld {
    /// Adds `other`'s.
    pub fn add(&mut self, other: LeavesHeld) {
        self.top_level += other.top_level;
        self.all += other.all;
    }
}

/// Per type of `model`, in its order, the leaves its instances hold (a leaf type's instance is
/// one leaf).
pub fn leaves_held(model: &Model) -> Vec<LeavesHeld> {
    model
        .types
        .iter()
        .map(|t| {
            if t.kind == TaskKind::Leaf {
                return LeavesHeld {
                    top_level: t.top_level,
                    all: t.count,
                };
            }
            let mut h = LeavesHeld::default();
            for o in &t.occurrences {
                let n = o.leaves.as_slice().len() as u64;
                h.all += n;
                if o.parent.is_none() {
                    h.top_level += n;
                }
            }
            h
        })
        .collect()
}
