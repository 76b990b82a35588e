//! Mutex and rwlock ordering as contention data: per lock, how often it was taken and waited
//! for, and per contended acquisition who waited, who held it and for how long. Never edges:
//! which of two threads gets a lock first is the scheduler's choice, not a cause.

use scalpel_model::graph::{LockInfo, LockWait};

use super::leaves::LockEv;
use super::sink::NO_OBJ;

/// An acquisition that waited at least this long counts as contended. An uncontended lock
/// returns in tens of nanoseconds; a contended one sleeps in the kernel for microseconds.
pub const CONTENDED_NS: u64 = 1_000;

/// Contention per lock and the contended acquisitions, from every lock event.
pub fn contention(mut locks: Vec<LockEv>) -> (Vec<LockInfo>, Vec<LockWait>) {
    locks.retain(|k| k.obj != NO_OBJ);
    locks.sort_unstable_by_key(|k| (k.obj, k.seq, !k.acquire, k.leaf));
    let mut infos = Vec::new();
    let mut waits = Vec::new();
    for group in locks.chunk_by(|a, b| a.obj == b.obj) {
        let obj = group[0].obj;
        let mut info = LockInfo {
            obj,
            acquisitions: 0,
            contended: 0,
            wait_ns: 0,
            max_wait_ns: 0,
        };
        let mut holder: Option<u32> = None;
        for k in group {
            if !k.acquire {
                holder = Some(k.leaf);
                continue;
            }
            info.acquisitions += 1;
            info.wait_ns += k.dur;
            info.max_wait_ns = info.max_wait_ns.max(k.dur);
            if k.dur >= CONTENDED_NS {
                info.contended += 1;
                waits.push(LockWait {
                    obj,
                    waiter: k.leaf,
                    holder,
                    wait_ns: k.dur,
                });
            }
        }
        infos.push(info);
    }
    (infos, waits)
}
