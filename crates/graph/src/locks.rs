//! Mutex and rwlock ordering as contention data: per lock, how often it was taken and waited
//! for, and per contended acquisition who waited, who held it and for how long. Never edges:
//! which of two threads gets a lock first is the scheduler's choice, not a cause.

use scalpel_model::graph::{LeafId, LockInfo, LockWait, ObjId};

use rayon::prelude::*;

use super::event::NO_OBJ;
use super::leaves::{LockAcquire, LockAgg};
use super::releases::LockReleases;

/// An acquisition that waited at least this long counts as contended. An uncontended lock
/// returns in tens of nanoseconds; a contended one sleeps in the kernel for microseconds.
pub(super) const CONTENDED_NS: u64 = 1_000;

/// Contention per lock and the contended acquisitions, from the lock releases, the long
/// acquisitions and every thread's acquisition totals. A contended acquisition's holder is the
/// lock's last release before it (in sequence order; a release of the same sequence number
/// comes after).
pub(super) fn contention(
    mut releases: Vec<(u32, u32, LockReleases)>,
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
    releases.retain(|k| k.0 != NO_OBJ);
    releases.sort_unstable_by_key(|k| (k.0, k.1));
    acquires.retain(|k| k.obj != NO_OBJ && k.dur >= CONTENDED_NS);
    acquires.par_sort_unstable_by_key(|k| (k.obj, k.seq, k.leaf));
    let mut waits = Vec::with_capacity(acquires.len());
    for group in acquires.chunk_by(|a, b| a.obj == b.obj) {
        let obj = group[0].obj;
        let lock = lock_releases(&releases, obj);
        for k in group {
            let before = lock.partition_point(|r| r.0 < k.seq);
            waits.push(LockWait {
                obj: ObjId::new(obj),
                waiter: LeafId::new(k.leaf),
                holder: before.checked_sub(1).map(|i| LeafId::new(lock[i].1)),
                wait_ns: k.dur,
            });
        }
        if let Ok(i) = infos.binary_search_by_key(&ObjId::new(obj), |i| i.obj) {
            infos[i].contended = group.len() as u64;
        }
    }
    (infos, waits)
}

/// Lock `obj`'s releases by every thread (`releases` sorted by lock), as (sequence number,
/// leaf) in sequence order.
fn lock_releases(releases: &[(u32, u32, LockReleases)], obj: u32) -> Vec<(u64, u32)> {
    let lo = releases.partition_point(|r| r.0 < obj);
    let hi = lo + releases[lo..].partition_point(|r| r.0 == obj);
    let mut lock: Vec<(u64, u32)> = releases[lo..hi]
        .iter()
        .flat_map(|(_, base, r)| r.decode(*base))
        .collect();
    lock.sort_unstable();
    lock
}
