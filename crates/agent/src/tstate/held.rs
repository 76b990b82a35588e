//! An uncontended mutex lock kept back for the unlock that may follow it: both then go into
//! one HELD record (`scalpel_format::record::HeldPair`), half the bytes of two events and one
//! encoding instead of two. The lock is written alone as soon as anything else of the thread
//! is, or when a hook other than the mutex unlock is entered (`Ctx::commit_held`).

use scalpel_format::format::{ObjKind, Op};
use scalpel_format::record::{HeldPair, RawEvent};

use super::ThreadState;
use crate::event::{Ev, Obj};
use crate::global::Config;

/// An uncontended lock recorded but not yet written (see `Ctx::emit_held`): the unlock that
/// may follow writes both as one HELD record. Valid when zeroed (`on` false).
#[derive(Clone, Copy)]
pub(super) struct HeldLock {
    pub(super) on: bool,
    op: u8,
    /// The object's table slot.
    slot: u32,
    /// The lock's clock reading and sequence number.
    t0: u64,
    seq: u64,
    /// The lock record's fields, its deltas against the bases before it (`stack` 0 for none:
    /// stack ids start at 1).
    obj: u64,
    dt: u64,
    seq_delta: i64,
    stack: u64,
}

impl HeldLock {
    /// The lock record.
    #[inline]
    fn raw(&self) -> RawEvent {
        RawEvent {
            op: self.op,
            dt: self.dt,
            obj: Some(self.obj),
            seq_delta: Some(self.seq_delta),
            result: Some(0),
            stack: (self.stack != 0).then_some(self.stack),
            ..RawEvent::default()
        }
    }
}

impl ThreadState {
    /// The unlock's sequence number reserved with the kept-back lock, when that lock is of the
    /// object `(kind, key)` (see `Ctx::unlock_seq`).
    #[inline]
    pub(super) fn reserved_unlock_seq(&self, kind: ObjKind, key: u64) -> Option<u64> {
        self.holds_back(kind, key).then_some(self.held.seq + 1)
    }

    /// Whether a lock is kept back and is of the object `(kind, key)`. Nothing was written
    /// since the lock, so its table slot still names its object.
    #[inline(always)]
    fn holds_back(&self, kind: ObjKind, key: u64) -> bool {
        self.held.on
            && self
                .objects
                .get(self.held.slot as usize)
                .is_some_and(|s| s.key == key && s.kind == kind.code())
    }

    /// Keeps back an uncontended lock (result 0, no duration, a sequence number) for the
    /// unlock that may follow; false when `ev` is not one (or CPU times are on: the HELD record
    /// has no room for them), and the caller writes it as usual.
    #[inline]
    pub(super) fn hold(&mut self, cfg: &Config, ev: &Ev<'_>) -> bool {
        let Some((o, Some(seq))) = ev.obj else {
            return false;
        };
        if cfg.cpu_time || ev.t1 != ev.t0 || ev.result != Some(0) {
            return false;
        }
        self.hold_at(cfg, ev.op, &o, ev.t0, seq);
        true
    }

    /// [`ThreadState::hold`] of an uncontended lock `op` of `o` at `t0` with sequence number
    /// `seq`, CPU times off.
    #[inline(always)]
    pub(super) fn hold_at(&mut self, cfg: &Config, op: Op, o: &Obj<'_>, t0: u64, seq: u64) {
        let stack = self.stack(cfg, t0);
        let Some(slot) = self.intern(o) else {
            self.file.drop_event();
            return;
        };
        let s = &self.objects[slot];
        self.held = HeldLock {
            on: true,
            op: op as u8,
            slot: slot as u32,
            t0,
            seq,
            obj: u64::from(s.idx),
            dt: t0.saturating_sub(self.last_ticks),
            seq_delta: seq as i64 - s.last_seq as i64,
            stack: stack.unwrap_or(0),
        };
    }

    /// Writes the lock kept back and `ev`, its unlock, as one HELD record; false, with nothing
    /// written, when `ev` is not that unlock (another object, a failure, or no sequence number
    /// after the lock's).
    #[inline]
    pub(super) fn write_pair(&mut self, cfg: &Config, ev: &Ev<'_>) -> bool {
        let Some((o, Some(seq))) = ev.obj else {
            return false;
        };
        ev.result == Some(0) && self.write_pair_at(cfg, o.kind, o.key, seq, ev.t0)
    }

    /// The successful unlock, at `t0`, of the mutex `key` whose lock is kept back, straight from
    /// its hook (see `Ctx::unlock_kept`): what `write` does for it, without the event. False,
    /// with nothing written, when the lock kept back is not that mutex's.
    #[inline(always)]
    pub(super) fn unlock_pair(&mut self, cfg: &Config, key: u64, t0: u64) -> bool {
        if !self.holds_back(ObjKind::Mutex, key) {
            return false;
        }
        self.since_calib += 1;
        if self.counted.pending() {
            self.counts_due(Op::MutexUnlock, t0);
        }
        // The number its lock reserved (see `Ctx::unlock_seq`).
        let seq = self.held.seq + 1;
        self.write_pair_at(cfg, ObjKind::Mutex, key, seq, t0)
    }

    /// [`ThreadState::write_pair`] of an unlock of `(kind, key)` with sequence number `seq` at
    /// `t0` that succeeded.
    #[inline(always)]
    fn write_pair_at(&mut self, cfg: &Config, kind: ObjKind, key: u64, seq: u64, t0: u64) -> bool {
        let h = self.held;
        // Nothing was written since the lock, so its slot still names its object.
        let s = &self.objects[h.slot as usize];
        if s.key != key || s.kind != kind.code() || seq <= h.seq {
            return false;
        }
        let unlock_stack = self.stack(cfg, t0);
        let pair = HeldPair {
            op: h.op,
            dt: h.dt,
            hold: t0.saturating_sub(self.last_ticks.max(h.t0)),
            obj: h.obj,
            seq_delta: h.seq_delta,
            unlock_seq_delta: seq - h.seq,
            lock_stack: (h.stack != 0).then_some(h.stack),
            unlock_stack,
        };
        self.held.on = false;
        if self.file.held(&pair) {
            self.last_ticks = self.last_ticks.max(h.t0).max(t0);
            self.objects[h.slot as usize].last_seq = seq;
        }
        self.after_write(cfg, t0);
        true
    }

    /// Writes the lock kept back by `Ctx::emit_held`, if any, as an EVENT record. Out of line:
    /// the common case is its unlock coming next.
    #[inline(never)]
    pub(super) fn write_held(&mut self) {
        if !self.held.on {
            return;
        }
        let h = self.held;
        self.held.on = false;
        // Its table slot still names its object: the table is reset only while interning an
        // event's object, and every event but its own unlock writes it first.
        if self.file.event(&h.raw()) {
            self.last_ticks = self.last_ticks.max(h.t0);
            self.objects[h.slot as usize].last_seq = h.seq;
        }
    }
}
