//! Differential flame graphs: the folded stacks of two runs side by side, per instance of a
//! task type when one is chosen (`scalpel flame --diff`).
//!
//! A whole run's stacks are compared as they are: a longer or busier run is wider everywhere,
//! as a reader comparing two profiles of one length expects. A task type's stacks are divided
//! by its number of instances in each run, so that the graph shows one request's time before
//! and after, whatever the two runs' loads were; that is the comparison a reader of a
//! request's latency wants, and the one a process-wide profiler cannot make.

use std::collections::BTreeMap;

use crate::rollup::Folded;

/// Two runs' folded stacks: stack → (old, new) nanoseconds, in stack order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FoldedDiff {
    /// Stack → (old, new) nanoseconds (per instance when [`FoldedDiff::per_instance`]).
    pub stacks: BTreeMap<String, (u64, u64)>,
    /// The task type's instances in the old and the new run, when the stacks are per instance.
    pub per_instance: Option<(u64, u64)>,
}

impl FoldedDiff {
    /// All the time of each run in it: (old, new).
    pub fn totals_ns(&self) -> (u64, u64) {
        self.stacks
            .values()
            .fold((0, 0), |(a, b), &(o, n)| (a + o, b + n))
    }
}

/// The stacks of `old` and `new` together. With `instances` (the task type's instance counts
/// in the old and new runs), each run's time is divided by its count, rounded to the nearest
/// nanosecond; a count of 0 is taken as 1.
pub fn diff_folded(old: &Folded, new: &Folded, instances: Option<(u64, u64)>) -> FoldedDiff {
    let (co, cn) = instances.map_or((1, 1), |(o, n)| (o.max(1), n.max(1)));
    let per = |ns: u64, count: u64| (ns + count / 2) / count;
    let mut stacks: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for (s, &ns) in &old.stacks {
        stacks.entry(s.clone()).or_default().0 = per(ns, co);
    }
    for (s, &ns) in &new.stacks {
        stacks.entry(s.clone()).or_default().1 = per(ns, cn);
    }
    FoldedDiff {
        stacks,
        per_instance: instances,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folded(rows: &[(&str, u64)]) -> Folded {
        let mut f = Folded::default();
        for &(s, ns) in rows {
            f.stacks.insert(s.to_owned(), ns);
        }
        f
    }

    #[test]
    fn stacks_of_either_run_are_kept_and_divided_by_their_own_run_count() {
        let old = folded(&[
            ("p;commit;sleep [sleep]", 2_000_000),
            ("p;commit;fsync [io]", 400),
        ]);
        let new = folded(&[("p;commit;fsync [io]", 900), ("p;commit;write [write]", 30)]);
        let d = diff_folded(&old, &new, Some((10, 3)));
        let rows: Vec<_> = d.stacks.iter().map(|(s, &v)| (s.as_str(), v)).collect();
        assert_eq!(
            rows,
            [
                ("p;commit;fsync [io]", (40, 300)),
                ("p;commit;sleep [sleep]", (200_000, 0)),
                ("p;commit;write [write]", (0, 10)),
            ]
        );
        assert_eq!(d.totals_ns(), (200_040, 310));
        // A whole run is compared as it is.
        let whole = diff_folded(&old, &new, None);
        assert_eq!(whole.totals_ns(), (2_000_400, 930));
    }
}
