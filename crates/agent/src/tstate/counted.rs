//! Uncontended mutex pairs counted instead of recorded (`SCALPEL_LOCKS=count`).
//!
//! Why: on a server most hooked calls are locks that nobody waits for (memcached's worker takes
//! about ten per request), and recording each one with its time, sequence number and stack is
//! what the agent costs there. In this mode a `pthread_mutex_lock` that finds a countable mutex
//! free reads no clock, takes no sequence number and walks no stack: the thread notes the mutex
//! as held and adds one to its count for that mutex; the unlock, when the lock word shows no
//! waiter, passes through. The counts are kept in the thread file's header and go out as
//! `mutex_counted` events, per mutex, every 256 records of the thread, before its exit or exec,
//! when 16 mutexes have counts, and at process exit (the exiting thread's): per thread and
//! mutex, not per leaf. Those a thread has not written out when it is killed, or when another
//! thread ends the process, the reader takes from the header.
//!
//! What stays recorded: every acquisition that waited (the real lock ran), every unlock that
//! found a waiter (the contention analysis names the holder by it), condition waits and their
//! mutexes' every section (a mutex ever waited on with a condition variable is the queue
//! analysis's), and robust, priority and process-shared mutexes. What is lost: the uncontended
//! sections' times, order and stacks, so `--cut-at-locks` cannot cut at them. A waiter that
//! starts waiting between the holder's look at the lock word and its unlock is the one case
//! where a contended acquisition has no recorded release before it.

use core::sync::atomic::{AtomicU64, Ordering};

use scalpel_format::format::{hdr, ObjKind, Op};
use scalpel_format::record::RawEvent;

use super::{Ctx, ThreadState};
use crate::event::Obj;
use crate::global::{self, Config};

/// Mutexes ever waited on with a condition variable, one bit per address hash. A collision
/// only makes another mutex recorded in full.
static COND_MUTEXES: [AtomicU64; 64] = [const { AtomicU64::new(0) }; 64];

/// The word and bit of a mutex in [`COND_MUTEXES`].
#[inline]
fn cond_bit(key: u64) -> (usize, u64) {
    let h = (key >> 3).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 52;
    ((h >> 6) as usize, 1 << (h & 63))
}

/// Marks the mutex of a condition wait: its sections are recorded from now on.
#[inline]
fn mark_cond_mutex(key: u64) {
    let (w, b) = cond_bit(key);
    // Read first: the bit is set once and then only read, so its line stays shared.
    if COND_MUTEXES[w].load(Ordering::Relaxed) & b == 0 {
        COND_MUTEXES[w].fetch_or(b, Ordering::Relaxed);
    }
}

/// Whether a mutex was ever waited on with a condition variable.
#[inline]
fn is_cond_mutex(key: u64) -> bool {
    let (w, b) = cond_bit(key);
    COND_MUTEXES[w].load(Ordering::Relaxed) & b != 0
}

/// Counted locks a thread may hold at once; a deeper one is recorded.
const HELD: usize = 8;
/// Distinct mutexes counted between two writes of the counts; one more writes them out.
const COUNTS: usize = hdr::COUNT_SLOTS;

/// A thread's counted locks, and the size of its counts table. Valid when zeroed.
///
/// The counts themselves are in the thread file's header (`hdr::COUNT_KEYS`), where the reader
/// finds those not yet written out if the thread never gets to write them: killed, or still
/// running when another thread ends the process.
#[derive(Clone, Copy)]
pub(super) struct Counted {
    /// The counted locks this thread holds, innermost last.
    held: [u64; HELD],
    n_held: u8,
    /// Entries of the counts table in use (the header's state word says the same).
    n: u8,
    /// The counts table's generation: how many times it was written out.
    gen: u32,
}

impl Counted {
    /// Whether counts wait to be written.
    #[inline]
    pub(super) fn pending(&self) -> bool {
        self.n != 0
    }

    /// Forgets the innermost counted lock of `key`; false when there is none.
    #[inline]
    fn forget(&mut self, key: u64) -> bool {
        let n = usize::from(self.n_held);
        let Some(i) = self.held[..n].iter().rposition(|&k| k == key) else {
            return false;
        };
        self.held.copy_within(i + 1..n, i);
        self.n_held -= 1;
        true
    }
}

impl ThreadState {
    /// Before the record of `ev`, with counts pending: they go out every 256th record, before
    /// the thread's exit or exec (and when their table fills, and at process exit): often
    /// enough that a crash loses few, rarely enough to cost nothing. Out of line: the default
    /// mode never gets here, and the record path stays small.
    #[inline(never)]
    pub(super) fn counts_due(&mut self, op: Op, ticks: u64) {
        if self.since_calib & 255 == 0 || matches!(op, Op::ThreadExit | Op::Exec) {
            self.write_counts(ticks);
        }
    }

    /// Writes the counts as `mutex_counted` events at `ticks` (the time of the record that
    /// follows them, or now when the table is full), each with the table's generation, then
    /// empties the table and moves to the next generation. Killed half way, the thread leaves
    /// the table as it was, and the reader takes from it only the mutexes whose event of this
    /// generation is not in the file.
    #[inline(never)]
    pub(super) fn write_counts(&mut self, ticks: u64) {
        let Counted { n, gen, .. } = self.counted;
        for i in 0..usize::from(n) {
            let (key, count) = self.file.count_entry(i);
            let Some(slot) = self.intern(&Obj::key(ObjKind::Mutex, key)) else {
                self.file.drop_event();
                continue;
            };
            let raw = RawEvent {
                op: Op::MutexCounted as u8,
                dt: ticks.saturating_sub(self.last_ticks),
                obj: Some(u64::from(self.objects[slot].idx)),
                aux: Some(count),
                aux2: Some(u64::from(gen)),
                ..RawEvent::default()
            };
            if self.file.event(&raw) {
                self.last_ticks = self.last_ticks.max(ticks);
            }
        }
        let gen = gen.wrapping_add(1);
        self.file.count_state(gen, 0);
        self.counted.n = 0;
        self.counted.gen = gen;
    }

    /// Adds one pair of the mutex `key` to the counts, writing them out first when full.
    #[inline]
    fn add_count(&mut self, cfg: &Config, key: u64) {
        let n = usize::from(self.counted.n);
        if let Some(i) = self.file.count_find(n, key) {
            self.file.count_bump(i);
            return;
        }
        if n == COUNTS {
            self.write_counts(global::now(cfg));
        }
        let n = usize::from(self.counted.n);
        self.file.count_put(n, key, self.counted.gen);
        self.counted.n += 1;
    }
}

impl Ctx {
    /// Counts an uncontended lock of the countable mutex `key` and notes it held, for its
    /// unlock; false when it must be recorded (the mode is off, the mutex is a condition's, or
    /// too many are held). Counted here, not at the unlock, so that the counts stay exact
    /// whichever of a recursive mutex's nested unlocks finds which entry.
    #[inline]
    pub(crate) fn count_lock(&self, key: u64) -> bool {
        if !self.cfg.count_locks || is_cond_mutex(key) {
            return false;
        }
        self.with_state(|st| {
            // Without a header there is no table to count in.
            if !st.file.has_header() {
                return false;
            }
            let c = &mut st.counted;
            let n = usize::from(c.n_held);
            if n == HELD {
                return false;
            }
            c.held[n] = key;
            c.n_held += 1;
            st.add_count(self.cfg, key);
            true
        })
        .unwrap_or(false)
    }

    /// At an unlock of `key`: if its lock was counted, forgets it; true then.
    #[inline]
    pub(crate) fn count_unlock(&self, key: u64) -> bool {
        self.cfg.count_locks
            && self
                .with_state(|st| st.counted.forget(key))
                .unwrap_or(false)
    }

    /// At a condition wait with the mutex `key`: marks it, and forgets a counted lock of it
    /// (the wait's release and re-acquisition are recorded, and so is the unlock after them).
    #[inline]
    pub(crate) fn cond_wait_on(&self, key: u64) {
        if self.cfg.count_locks {
            mark_cond_mutex(key);
            self.count_unlock(key);
        }
    }
}
