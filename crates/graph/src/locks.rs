//! Mutex and rwlock ordering as contention data: per lock, how often it was taken and waited
//! for, and per contended acquisition who waited, who held it and for how long. Never edges:
//! which of two threads gets a lock first is the scheduler's choice, not a cause.

use scalpel_model::graph::{LeafId, LockInfo, LockWait, ObjId};

use rayon::prelude::*;

use super::event::NO_OBJ;
use super::leaves::{LockAcquire, LockAgg, LockRelease};

/// An acquisition that waited at least this long counts as contended. An uncontended lock
/// returns in tens of nanoseconds; a contended one sleeps in the kernel for microseconds.
pub(super) const CONTENDED_NS: u64 = 1_000;

/// Contention per lock and the contended acquisitions, from the lock releases, the long
/// acquisitions and every thread's acquisition totals. A contended acquisition's holder is the
/// lock's last release before it (in sequence order; a release of the same sequence number
/// comes after).
pub(super) fn contention(
    mut releases: Vec<LockRelease>,
    mut acquires: Vec<LockAcquire>,
    mut aggs: Vec<(u32, LockAgg)>,
) -> (Vec<LockInfo>, Vec<LockWait>) {
    aggs.retain(|a| a.0 != NO_OBJ);
    aggs.sort_unstable_by_key(|a| a.0);
    let mut infos: Vec<LockInfo> = Vec::new();
    for (obj, a) in aggs {
        let obj = ObjId::new(obj);
        match infos.last_mut() {
            Some(i) if i.obj == obj => {
                i.acquisitions = i.acquisitions.saturating_add(a.count);
                i.wait_ns = i.wait_ns.saturating_add(a.wait);
                i.max_wait_ns = i.max_wait_ns.max(a.max);
            }
            _ => infos.push(LockInfo {
                obj,
                acquisitions: a.count,
                contended: 0,
                wait_ns: a.wait,
                max_wait_ns: a.max,
            }),
        }
    }
    releases.retain(|k| k.obj != NO_OBJ);
    releases.par_sort_unstable_by_key(|k| (k.obj, k.seq, k.leaf));
    acquires.retain(|k| k.obj != NO_OBJ && k.dur >= CONTENDED_NS);
    acquires.par_sort_unstable_by_key(|k| (k.obj, k.seq, k.leaf));
    let mut waits = Vec::with_capacity(acquires.len());
    for group in acquires.chunk_by(|a, b| a.obj == b.obj) {
        let obj = group[0].obj;
        let lo = releases.partition_point(|r| r.obj < obj);
        let hi = lo + releases[lo..].partition_point(|r| r.obj == obj);
        let lock = &releases[lo..hi];
        for k in group {
            let before = lock.partition_point(|r| r.seq < k.seq);
            waits.push(LockWait {
                obj: ObjId::new(obj),
                waiter: LeafId::new(k.leaf),
                holder: before.checked_sub(1).map(|i| LeafId::new(lock[i].leaf)),
                wait_ns: k.dur,
            });
        }
        if let Ok(i) = infos.binary_search_by_key(&ObjId::new(obj), |i| i.obj) {
            infos[i].contended = group.len() as u64;
        }
    }
    (infos, waits)
}
