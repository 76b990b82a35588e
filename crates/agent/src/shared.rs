//! The counters every traced process of one recording shares: per-object sequence numbers and
//! per-stream byte offsets, in a file of the trace directory mapped `MAP_SHARED`.
//!
//! Sharing one table across processes is what makes a pipe written by a forked child and read by
//! its parent, or the two ends of a loopback TCP connection, number their events on one scale.
//! Sequence slots are hashed without keys: two objects that collide share a counter, which only
//! leaves gaps in each object's numbers (order is still exact). Stream slots are keyed, because
//! two streams sharing an offset counter would make offsets wrong.

use core::sync::atomic::{AtomicU64, Ordering};

use scalpel_format::format::shared_loss;

use crate::sys;

/// Number of sequence slots (power of two).
const SEQ_SLOTS: usize = 1 << 14;
/// Number of stream slots (power of two).
const STREAM_SLOTS: usize = 1 << 14;
/// How far a stream key probes before giving up.
const MAX_PROBE: usize = 64;

/// One sequence counter on its own cache line, so unrelated objects never share a line.
#[repr(C, align(64))]
struct SeqSlot {
    next: AtomicU64,
    _pad: [u64; 7],
}

/// Sequence number and byte counters of one stream direction, on one cache line so that an
/// event touches a single line of the table.
#[repr(C, align(32))]
pub(crate) struct StreamSlot {
    key: AtomicU64,
    seq: AtomicU64,
    sent: AtomicU64,
    received: AtomicU64,
}

impl StreamSlot {
    /// Takes the next sequence number of the stream.
    #[inline]
    pub(crate) fn next_seq(&self) -> u64 {
        self.seq.fetch_add(1, Ordering::AcqRel) + 1
    }

    /// Reserves `n` sent bytes; returns the offset of the first.
    #[inline]
    pub(crate) fn sent(&self, n: u64) -> u64 {
        self.sent.fetch_add(n, Ordering::AcqRel)
    }

    /// Reserves `n` received bytes; returns the offset of the first.
    #[inline]
    pub(crate) fn received(&self, n: u64) -> u64 {
        self.received.fetch_add(n, Ordering::AcqRel)
    }
}

/// The table's layout in the shared file.
#[repr(C)]
pub(crate) struct Table {
    seq: [SeqSlot; SEQ_SLOTS],
    streams: [StreamSlot; STREAM_SLOTS],
    /// Losses no thread file can hold (indices in `format::shared_loss`).
    losses: [AtomicU64; shared_loss::COUNT],
}

// The readers find the loss counters where the format says they are.
const _: () = assert!(core::mem::offset_of!(Table, losses) as u64 == shared_loss::OFFSET);

/// Size of the shared file.
pub(crate) const TABLE_SIZE: usize = core::mem::size_of::<Table>();

/// Maps the table from `fd`, or null when it cannot be mapped: a process without the shared
/// table records nothing (private numbers would not agree with the other processes', and its
/// losses would be counted nowhere) and says so to the recorder (`setup`).
pub(crate) fn map(fd: i32) -> *const Table {
    if fd < 0 {
        return core::ptr::null();
    }
    // The recorder reserves the table's pages before any process runs. Blocks are reserved here
    // only if it is short (a store into a page without backing store would raise SIGBUS); a
    // reservation the host's file size limit forbids is refused (`sys::fallocate`).
    // SAFETY: zeroed is a valid stat.
    let mut st: libc::stat = unsafe { core::mem::zeroed() };
    let sized = sys::fstat(fd, &mut st) == 0 && st.st_size as u64 >= TABLE_SIZE as u64;
    if !sized && sys::fallocate(fd, 0, TABLE_SIZE as u64) != 0 {
        return core::ptr::null();
    }
    let r = sys::mmap(
        0,
        TABLE_SIZE,
        libc::PROT_READ | libc::PROT_WRITE,
        libc::MAP_SHARED,
        fd,
        0,
    );
    if r < 0 {
        return core::ptr::null();
    }
    r as *const Table
}

#[inline]
fn mix(kind: u8, key: u64) -> u64 {
    let mut h = key ^ (u64::from(kind) << 56) ^ 0x9e37_79b9_7f4a_7c15;
    h ^= h >> 31;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^= h >> 29;
    h
}

impl Table {
    /// Counts one loss of kind `which` (a `format::shared_loss` index).
    #[inline]
    pub(crate) fn count_loss(&self, which: usize) {
        if let Some(c) = self.losses.get(which) {
            c.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Takes the next `n` sequence numbers of an object (`n` ≥ 1); returns the first. Numbers
    /// start at 1. Readers only order by them, so one reserved and never used is harmless.
    #[inline]
    pub(crate) fn next_seqs(&self, kind: u8, key: u64, n: u64) -> u64 {
        let slot = &self.seq[(mix(kind, key) as usize) & (SEQ_SLOTS - 1)];
        slot.next.fetch_add(n, Ordering::AcqRel) + 1
    }

    /// The counters of a stream, claiming a slot on first use; None when the table is full.
    #[inline]
    pub(crate) fn stream(&self, key: u64) -> Option<&StreamSlot> {
        let key = key | 1; // 0 marks an empty slot
        let start = mix(0xff, key) as usize;
        for i in 0..MAX_PROBE {
            let s = &self.streams[(start + i) & (STREAM_SLOTS - 1)];
            let cur = s.key.load(Ordering::Acquire);
            if cur == key {
                return Some(s);
            }
            if cur == 0 {
                match s
                    .key
                    .compare_exchange(0, key, Ordering::AcqRel, Ordering::Acquire)
                {
                    Ok(_) => return Some(s),
                    Err(other) if other == key => return Some(s),
                    Err(_) => continue,
                }
            }
        }
        None
    }
}
