//! Where a type's extra time went: its critical path's composition in both runs, and the
//! leaf, kind of time and call whose share of the path changed the most.
//!
//! Per instance, not in total: a type that ran twice as often with the same latency did not get
//! slower, and its path per instance says so. Contributors are matched between the runs by the
//! leaf type's name (and the name of the path leaf it was queued behind, if any). The rollup
//! keeps a type's [`CONTRIBUTORS`] largest contributors; one missing from a run counts as 0
//! there when that run's list is shorter than that, and as the smallest listed otherwise (it
//! can be no larger, so a gain is never made up from a contributor cut off the list).

use ahash::AHashMap;
use scalpel_model::graph::LeafTypeId;
use scalpel_model::task::Model;
use serde::Serialize;

use crate::rollup::{Blame, BlockKind, TypeStats, CONTRIBUTORS};

/// Mean time per instance on the critical path in one kind of time.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PathPart {
    /// `running` or a blocking kind.
    pub what: &'static str,
    /// Mean per instance.
    pub ns: u64,
}

/// The critical path's composition per instance: running first, then the kinds with time, in
/// kind order.
pub(super) fn composition(s: &TypeStats) -> Vec<PathPart> {
    let per = |ns: u64| ns / s.count.max(1);
    let mut parts = vec![PathPart {
        what: "running",
        ns: per(s.running_ns),
    }];
    parts.extend(
        BlockKind::ALL
            .iter()
            .filter(|k| s.blocked[k.index()] > 0)
            .map(|k| PathPart {
                what: k.name(),
                ns: per(s.blocked[k.index()]),
            }),
    );
    parts
}

/// The leaf and call whose time on the path changed the most.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Cause {
    /// `running` or a blocking kind (`sleep`, `io`, `lock` …).
    pub what: &'static str,
    /// The leaf type that spent the time.
    pub leaf: String,
    /// Set when the leaf's thread spent it while a path leaf of this type sat queued for it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub while_queued: Option<String>,
    /// The call that blocked, for a blocking kind the trace names a call for.
    pub call: Option<String>,
    /// The function that made it.
    pub function: Option<String>,
    /// Its call stack, innermost first.
    pub stack: Vec<String>,
    /// Mean per instance in the old run.
    pub old_ns: u64,
    /// Mean per instance in the new run.
    pub new_ns: u64,
    /// Its change over the change of the whole critical path per instance (0.91: 91% of the
    /// path's change is here; 0 when the path did not change).
    pub share_change: f64,
    /// For a wait that another thread ended (a lock's release, a wake-up), what that thread's
    /// leaf spent its own blocked time on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub behind: Option<Behind>,
}

/// What the thread at the other end of a wait was blocked on: for a lock, the holder; for a
/// wake-up, the waker. A commit that waits for the log's lock while another commit flushes
/// the log waits, in the end, for the flush: the lock wait is the symptom and the flush the
/// cause, and a reader should see both.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Behind {
    /// The leaf type that held the lock or woke the wait.
    pub leaf: String,
    /// The kind of its largest blocked time, other than waiting the way the waiter did.
    pub what: &'static str,
    /// The call that blocked.
    pub call: String,
    /// The function that made it.
    pub function: Option<String>,
    /// Its call stack, innermost first.
    pub stack: Vec<String>,
    /// Mean time per call.
    pub mean_ns: u64,
}

/// What the peer of `row` (the lock's holder or the waker) was blocked on most, other than
/// waits of `row`'s own kind and call (a holder that queued for the same lock first says
/// nothing new). Rows of a leaf type come largest first.
fn behind(name: impl Fn(LeafTypeId) -> String, blame: &[Blame], row: &Blame) -> Option<Behind> {
    let peer = row.peer?;
    let top = blame
        .iter()
        .filter(|b| b.leaf_type == peer && !(b.kind == row.kind && b.call == row.call))
        .max_by(|a, b| a.total_ns.cmp(&b.total_ns).then(b.call.cmp(&a.call)))?;
    Some(Behind {
        leaf: name(peer),
        what: top.kind.name(),
        call: top.call.clone(),
        function: top.function.clone(),
        stack: top.stack.clone(),
        mean_ns: top.total_ns / top.count.max(1),
    })
}

/// One run's type, for the cause's search.
pub(super) struct Side<'a> {
    pub model: &'a Model,
    pub stats: &'a TypeStats,
    pub blame: &'a [Blame],
}

/// The name of leaf type `t` (leaf types are the model's first types, in the graph's order).
fn leaf_name(model: &Model, t: LeafTypeId) -> String {
    model
        .types
        .get(t.index())
        .map_or_else(|| "?".to_owned(), |ty| ty.name.clone())
}

/// A contributor's key across runs: leaf type name, kind (`None`: running), queued-behind name.
type Key<'a> = (&'a str, Option<BlockKind>, Option<&'a str>);

/// Per-instance contributor times of one side, by name, with the leaf type they came from.
fn contributions<'a>(s: &Side<'a>) -> AHashMap<Key<'a>, (u64, LeafTypeId)> {
    let name = |t: LeafTypeId| {
        s.model
            .types
            .get(t.index())
            .map_or("?", |ty| ty.name.as_str())
    };
    let n = s.stats.count.max(1);
    let mut out: AHashMap<Key, (u64, LeafTypeId)> = AHashMap::new();
    for c in &s.stats.contributors {
        let key = (name(c.leaf_type), c.kind, c.while_queued.map(name));
        let e = out.entry(key).or_insert((0, c.leaf_type));
        e.0 += c.ns / n;
    }
    out
}

/// What a contributor missing from a side's list may have been (see the module's note).
fn floor_of(s: &Side) -> u64 {
    if s.stats.contributors.len() < CONTRIBUTORS {
        0
    } else {
        let n = s.stats.count.max(1);
        s.stats
            .contributors
            .iter()
            .map(|c| c.ns / n)
            .min()
            .unwrap_or(0)
    }
}

/// The cause of the change from `old` to `new`: the contributor whose time per instance moved
/// most in the direction the critical path moved (the largest move either way when the path
/// did not). `None` when neither side has contributors.
pub(super) fn cause(old: &Side, new: &Side) -> Option<Cause> {
    let per = |s: &Side| (s.stats.critical_ns / s.stats.count.max(1)) as i128;
    let path_change = per(new) - per(old);
    let (a, b) = (contributions(old), contributions(new));
    let (fa, fb) = (floor_of(old), floor_of(new));
    let mut keys: Vec<&Key> = a.keys().chain(b.keys()).collect();
    keys.sort_unstable();
    keys.dedup();
    let moved = |k: &Key| {
        let o = a.get(k).map_or(fa, |x| x.0);
        let n = b.get(k).map_or(fb, |x| x.0);
        (o, n, n as i128 - o as i128)
    };
    let score = |d: i128| {
        if path_change == 0 {
            d.abs()
        } else {
            d * path_change.signum()
        }
    };
    // Ties go to the first key in sorted order: the same input gives the same cause.
    let best = keys
        .into_iter()
        .max_by(|x, y| score(moved(x).2).cmp(&score(moved(y).2)).then(y.cmp(x)))?;
    let (old_ns, new_ns, d) = moved(best);
    // The call and stack from the run where the time was larger.
    let (side, leaf) = match (b.get(best), a.get(best)) {
        (Some(&(_, t)), _) if d >= 0 => (new, t),
        (_, Some(&(_, t))) => (old, t),
        (Some(&(_, t)), None) => (new, t),
        (None, None) => unreachable!("every key came from one of the two sides"),
    };
    let blame = best.1.and_then(|k| {
        side.blame
            .iter()
            .find(|row| row.leaf_type == leaf && row.kind == k)
    });
    Some(Cause {
        what: best.1.map_or("running", BlockKind::name),
        leaf: best.0.to_owned(),
        while_queued: best.2.map(str::to_owned),
        call: blame.map(|r| r.call.clone()),
        function: blame.and_then(|r| r.function.clone()),
        stack: blame.map(|r| r.stack.clone()).unwrap_or_default(),
        old_ns,
        new_ns,
        share_change: if path_change == 0 {
            0.0
        } else {
            d as f64 / path_change as f64
        },
        behind: blame.and_then(|r| behind(|t| leaf_name(side.model, t), side.blame, r)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(leaf: u32, kind: BlockKind, call: &str, peer: Option<u32>, total_ns: u64) -> Blame {
        Blame {
            leaf_type: LeafTypeId::new(leaf),
            kind,
            call: call.to_owned(),
            function: Some(format!("{call}_caller")),
            stack: vec![format!("{call}_caller"), "commit".to_owned()],
            object: "-".to_owned(),
            peer: peer.map(LeafTypeId::new),
            count: 4,
            total_ns,
            max_ns: total_ns,
        }
    }

    #[test]
    fn behind_a_lock_wait_is_what_its_holder_was_blocked_on_besides_the_same_lock() {
        // Leaf 0 waits for the log's lock, held by leaf 1; leaf 1 queued for that lock too,
        // longer than it flushed, and flushed with fdatasync.
        let wait = row(0, BlockKind::Lock, "sem_wait", Some(1), 900);
        let blame = [
            wait.clone(),
            row(1, BlockKind::Lock, "sem_wait", Some(1), 5_000),
            row(1, BlockKind::Io, "fdatasync", None, 4_000),
            row(1, BlockKind::Write, "send", None, 100),
            row(2, BlockKind::Io, "fsync", None, 9_000),
        ];
        let b = behind(|t| format!("leaf {}", t.index()), &blame, &wait).unwrap();
        assert_eq!(
            (b.leaf.as_str(), b.what, b.call.as_str()),
            ("leaf 1", "io", "fdatasync")
        );
        assert_eq!(b.mean_ns, 1_000);
        assert_eq!(b.function.as_deref(), Some("fdatasync_caller"));
        // A wait nobody ended (a sleep) has nothing behind it.
        let sleep = row(0, BlockKind::Sleep, "nanosleep", None, 100);
        assert!(behind(|_| String::new(), &blame, &sleep).is_none());
    }
}
