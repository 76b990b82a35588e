//! Mutex and rwlock ordering as contention data: per lock, how often it was taken and waited
//! for, and per contended acquisition who waited, who held it and for how long. Never edges:
//! which of two threads gets a lock first is the scheduler's choice, not a cause.

use scalpel_model::graph::{LeafId, LockInfo, LockWait, ObjId};

use rayon::prelude::*;

use super::event::NO_OBJ;
use super::leaves::{LockAgg, LockEv};

/// An acquisition that waited at least this long counts as contended. An uncontended lock
/// returns in tens of nanoseconds; a contended one sleeps in the kernel for microseconds.
pub(super) const CONTENDED_NS: u64 = 1_000;

/// Contention per lock and the contended acquisitions, from the kept lock events (releases and
/// long acquisitions) and every thread's acquisition totals.
pub(super) fn contention(
    mut locks: Vec<LockEv>,
    mut aggs: Vec<(u32, LockAgg)>,
) -> (Vec<LockInfo>, Vec<LockWait>) {
    aggs.retain(|a| a.0 != NO_OBJ);
    aggs.sort_unstable_by_key(|a| a.0);
    let mut infos: Vec<LockInfo> = Vec::new();
    for (obj, a) in aggs {
        let obj = ObjId::new(obj);
        match infos.last_mut() {
            Some(i) if i.obj == obj => {
                i.acquisitions += a.count;
                i.wait_ns += a.wait;
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
    locks.retain(|k| k.obj != NO_OBJ);
    locks.par_sort_unstable_by_key(|k| (k.obj, k.seq, !k.acquire, k.leaf));
    let mut waits = Vec::new();
    for group in locks.chunk_by(|a, b| a.obj == b.obj) {
        let obj = ObjId::new(group[0].obj);
        let mut holder: Option<LeafId> = None;
        let mut contended = 0;
        for k in group {
            if !k.acquire {
                holder = Some(LeafId(k.leaf));
            } else if k.dur >= CONTENDED_NS {
                contended += 1;
                waits.push(LockWait {
                    obj,
                    waiter: LeafId(k.leaf),
                    holder,
                    wait_ns: k.dur,
                });
            }
        }
        if let Ok(i) = infos.binary_search_by_key(&obj, |i| i.obj) {
            infos[i].contended = contended;
        }
    }
    (infos, waits)
}
