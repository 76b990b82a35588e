//! Field-level encoding of records shared by the agent (no allocation) and the reader.

use crate::format::{field, field2, rec, Op};
use crate::wire::{Dec, DecError, Enc};

/// The fields of one event as stored, before any per-file context (object table, clock) is
/// applied. `None` fields are absent from the record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RawEvent {
    /// Operation code, see [`crate::format::Op`].
    pub op: u8,
    /// Clock ticks since the previous event of this file (the first: since the header's clock0).
    pub dt: u64,
    /// Clock ticks spent inside the real call.
    pub dur: u64,
    /// Per-file object index.
    pub obj: Option<u64>,
    /// Sequence number delta against the previous event on the same object in this file.
    pub seq_delta: Option<i64>,
    /// The call's result, negative errno on failure.
    pub result: Option<i64>,
    /// File descriptor.
    pub fd: Option<u64>,
    /// Stream byte offset.
    pub offset: Option<u64>,
    /// First auxiliary value.
    pub aux: Option<u64>,
    /// Second auxiliary value.
    pub aux2: Option<u64>,
    /// Stack id.
    pub stack: Option<u64>,
    /// Thread CPU time since the previous event that carried one, ns (second mask).
    pub cpu: Option<u64>,
}

/// Upper bound of an encoded event record, kind and length included: kind, length, op, two
/// masks and 11 varints of at most 10 bytes.
pub const MAX_EVENT_RECORD: usize = 2 + 3 + 11 * 10;

impl RawEvent {
    /// Encodes the payload (without kind and length).
    #[inline]
    pub fn encode_payload(&self, e: &mut Enc<'_>) {
        let mut mask = 0u8;
        let opt = |m: &mut u8, bit: u8, present: bool| {
            if present {
                *m |= bit
            }
        };
        opt(&mut mask, field::OBJ, self.obj.is_some());
        opt(&mut mask, field::SEQ, self.seq_delta.is_some());
        opt(&mut mask, field::RESULT, self.result.is_some());
        opt(&mut mask, field::FD, self.fd.is_some());
        opt(&mut mask, field::OFFSET, self.offset.is_some());
        opt(&mut mask, field::AUX, self.aux.is_some());
        opt(&mut mask, field::AUX2, self.aux2.is_some());
        opt(&mut mask, field::STACK, self.stack.is_some());
        e.u8(self.op);
        e.u8(mask);
        e.varint(self.dt);
        e.varint(self.dur);
        if let Some(v) = self.obj {
            e.varint(v)
        }
        if let Some(v) = self.seq_delta {
            e.ivarint(v)
        }
        if let Some(v) = self.result {
            e.ivarint(v)
        }
        if let Some(v) = self.fd {
            e.varint(v)
        }
        if let Some(v) = self.offset {
            e.varint(v)
        }
        if let Some(v) = self.aux {
            e.varint(v)
        }
        if let Some(v) = self.aux2 {
            e.varint(v)
        }
        if let Some(v) = self.stack {
            e.varint(v)
        }
        if let Some(v) = self.cpu {
            e.u8(field2::CPU);
            e.varint(v);
        }
    }

    /// Encodes the whole record (kind, length, payload). The payload of an event is always under
    /// 128 bytes (at most 113), so its length takes one byte, written after the payload is known.
    #[inline]
    pub fn encode_record(&self, e: &mut Enc<'_>) {
        e.u8(rec::EVENT);
        let at = e.len();
        e.u8(0);
        self.encode_payload(e);
        let n = e.len() - at - 1;
        debug_assert!(n < 128);
        e.patch(at, n.to_le_bytes()[0]);
    }

    /// Encodes the whole record into `out` and returns its length: the same bytes as
    /// [`RawEvent::encode_record`], written without per-byte bounds checks because `out` is sized
    /// for the largest event. This is the agent's hot path.
    #[inline]
    pub fn encode_fast(&self, out: &mut [u8; MAX_EVENT_RECORD]) -> usize {
        self.encode_fast_as(rec::EVENT, out)
    }

    /// [`RawEvent::encode_fast`] with another record kind that shares the EVENT payload
    /// ([`rec::HELD`]). Always inlined, as [`RawEvent::encode_fast`] was before it: a call
    /// would make the caller store every field for it.
    #[inline(always)]
    pub fn encode_fast_as(&self, kind: u8, out: &mut [u8; MAX_EVENT_RECORD]) -> usize {
        let p = out.as_mut_ptr();
        let mut mask = 0u8;
        // SAFETY: at most 5 fixed bytes and 11 varints of at most 10 bytes each are written, and
        // MAX_EVENT_RECORD is 115 bytes, so every write is inside `out`.
        unsafe {
            *p = kind;
            *p.add(2) = self.op;
            let mut at = 4;
            at += put_varint(p.add(at), self.dt);
            at += put_varint(p.add(at), self.dur);
            macro_rules! opt {
                ($bit:expr, $v:expr) => {
                    if let Some(v) = $v {
                        mask |= $bit;
                        at += put_varint(p.add(at), v);
                    }
                };
            }
            opt!(field::OBJ, self.obj);
            opt!(field::SEQ, self.seq_delta.map(crate::wire::zigzag));
            opt!(field::RESULT, self.result.map(crate::wire::zigzag));
            opt!(field::FD, self.fd);
            opt!(field::OFFSET, self.offset);
            opt!(field::AUX, self.aux);
            opt!(field::AUX2, self.aux2);
            opt!(field::STACK, self.stack);
            if let Some(v) = self.cpu {
                *p.add(at) = field2::CPU;
                at += 1;
                at += put_varint(p.add(at), v);
            }
            *p.add(3) = mask;
            // Payloads stay under 128 bytes, so the length is a single varint byte.
            *p.add(1) = (at - 2).to_le_bytes()[0];
            at
        }
    }

    /// Decodes a payload. Fields of the second mask that this reader does not know, and bytes
    /// after them (fields added by later versions), are ignored.
    pub fn decode_payload(d: &mut Dec<'_>) -> Result<RawEvent, DecError> {
        let op = d.u8()?;
        let mask = d.u8()?;
        let dt = d.varint()?;
        let dur = d.varint()?;
        let mut get = |bit: u8| -> Result<Option<u64>, DecError> {
            if mask & bit != 0 {
                d.varint().map(Some)
            } else {
                Ok(None)
            }
        };
        let obj = get(field::OBJ)?;
        let seq_delta = get(field::SEQ)?.map(crate::wire::unzigzag);
        let result = get(field::RESULT)?.map(crate::wire::unzigzag);
        let fd = get(field::FD)?;
        let offset = get(field::OFFSET)?;
        let aux = get(field::AUX)?;
        let aux2 = get(field::AUX2)?;
        let stack = get(field::STACK)?;
        let mut cpu = None;
        if d.remaining() > 0 {
            let mask2 = d.u8()?;
            if mask2 & field2::CPU != 0 {
                cpu = Some(d.varint()?);
            }
        }
        Ok(RawEvent {
            op,
            dt,
            dur,
            obj,
            seq_delta,
            result,
            fd,
            offset,
            aux,
            aux2,
            stack,
            cpu,
        })
    }
}

/// An uncontended mutex acquisition and the unlock that followed it, as one [`rec::HELD`]
/// record holds them. Deltas count as they would for the two events written one after the
/// other.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HeldPair {
    /// The acquisition's operation code: [`Op::MutexLock`] or [`Op::MutexTrylock`].
    pub op: u8,
    /// Clock ticks from the previous event of the file to the acquisition.
    pub dt: u64,
    /// Clock ticks from the acquisition to the unlock.
    pub hold: u64,
    /// Per-file object index of the mutex.
    pub obj: u64,
    /// The acquisition's sequence number minus the object's previous one in this file.
    pub seq_delta: i64,
    /// The unlock's sequence number minus the acquisition's (at least 1).
    pub unlock_seq_delta: u64,
    /// The acquisition's stack id.
    pub lock_stack: Option<u64>,
    /// The unlock's stack id.
    pub unlock_stack: Option<u64>,
}

impl HeldPair {
    /// The record's payload as the event fields it shares with EVENT.
    pub fn raw(&self) -> RawEvent {
        RawEvent {
            op: self.op,
            dt: self.dt,
            dur: self.hold,
            obj: Some(self.obj),
            seq_delta: Some(self.seq_delta),
            aux: Some(self.unlock_seq_delta),
            aux2: self.unlock_stack,
            stack: self.lock_stack,
            ..RawEvent::default()
        }
    }

    /// Encodes the whole HELD record into `out` and returns its length: the same bytes as
    /// `self.raw().encode_fast_as(rec::HELD, out)`, without building the event first. The
    /// agent's hot path for an uncontended lock and its unlock. Always inlined, as
    /// [`RawEvent::encode_fast_as`] is.
    #[inline(always)]
    pub fn encode_fast(&self, out: &mut [u8; MAX_EVENT_RECORD]) -> usize {
        let p = out.as_mut_ptr();
        let mut mask = field::OBJ | field::SEQ | field::AUX;
        // SAFETY: 4 fixed bytes and at most 8 varints of at most 10 bytes each are written, and
        // MAX_EVENT_RECORD is 115 bytes, so every write is inside `out`.
        unsafe {
            *p = rec::HELD;
            *p.add(2) = self.op;
            let mut at = 4;
            at += put_varint(p.add(at), self.dt);
            at += put_varint(p.add(at), self.hold);
            at += put_varint(p.add(at), self.obj);
            at += put_varint(p.add(at), crate::wire::zigzag(self.seq_delta));
            at += put_varint(p.add(at), self.unlock_seq_delta);
            if let Some(v) = self.unlock_stack {
                mask |= field::AUX2;
                at += put_varint(p.add(at), v);
            }
            if let Some(v) = self.lock_stack {
                mask |= field::STACK;
                at += put_varint(p.add(at), v);
            }
            *p.add(3) = mask;
            *p.add(1) = (at - 2).to_le_bytes()[0];
            at
        }
    }
}

impl RawEvent {
    /// The two events a [`rec::HELD`] payload stands for: the acquisition, then the unlock.
    /// None when the payload is not one the agent writes (an operation other than
    /// `mutex_lock` or `mutex_trylock`, or no object, sequence or unlock sequence delta of at
    /// least 1).
    pub fn split_held(&self) -> Option<(RawEvent, RawEvent)> {
        let held_op = matches!(Op::from_u8(self.op), Some(Op::MutexLock | Op::MutexTrylock));
        let seq = self
            .aux
            .and_then(|d| i64::try_from(d).ok())
            .filter(|&d| d >= 1)?;
        if !held_op || self.obj.is_none() || self.seq_delta.is_none() {
            return None;
        }
        let lock = RawEvent {
            dur: 0,
            result: Some(0),
            aux: None,
            aux2: None,
            ..*self
        };
        let unlock = RawEvent {
            op: Op::MutexUnlock as u8,
            dt: self.dur,
            dur: 0,
            obj: self.obj,
            seq_delta: Some(seq),
            result: Some(0),
            stack: self.aux2,
            ..RawEvent::default()
        };
        Some((lock, unlock))
    }
}

/// Writes a record with a length prefix: kind, varint length, then what `body` writes. The body is
/// first written into `scratch` to learn its length.
pub fn encode_with_len(
    e: &mut Enc<'_>,
    kind: u8,
    scratch: &mut [u8],
    body: impl FnOnce(&mut Enc<'_>),
) {
    let mut p = Enc::new(scratch);
    body(&mut p);
    if !p.ok() {
        // Refuse the whole record rather than write a wrong length.
        e.bytes(&[]);
        return;
    }
    let n = p.len();
    e.u8(kind);
    e.varint(n as u64);
    e.bytes(&scratch[..n]);
}

/// A 64-bit mix (FNV-1a followed by a finalizer) used for object keys that both ends of a channel
/// compute independently: it must never change between versions.
pub fn stable_hash(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for &b in p.iter() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        // Separator, so that ("ab","c") and ("a","bc") differ.
        h ^= 0xff;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h
}

/// Writes `v` as a LEB128 varint at `p`; returns the bytes written (at most 10).
///
/// # Safety
/// `p` must be valid for writing 10 bytes.
#[inline(always)]
unsafe fn put_varint(p: *mut u8, mut v: u64) -> usize {
    // Most fields fit one or two bytes (clock deltas of microseconds, table indexes, results):
    // written without the loop's per-byte branch.
    if v < 0x80 {
        // SAFETY: the caller's 10 bytes.
        unsafe { *p = v.to_le_bytes()[0] };
        return 1;
    }
    if v < 0x4000 {
        // SAFETY: the caller's 10 bytes.
        unsafe {
            *p = v.to_le_bytes()[0] | 0x80;
            *p.add(1) = (v >> 7).to_le_bytes()[0];
        }
        return 2;
    }
    let mut i = 0;
    while v >= 0x80 {
        // SAFETY: i < 9 here, inside the caller's 10 bytes.
        unsafe { *p.add(i) = v.to_le_bytes()[0] | 0x80 };
        v >>= 7;
        i += 1;
    }
    // SAFETY: i <= 9.
    unsafe { *p.add(i) = v.to_le_bytes()[0] };
    i + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair() -> HeldPair {
        HeldPair {
            op: Op::MutexLock as u8,
            dt: 1234,
            hold: 88,
            obj: 3,
            seq_delta: -7,
            unlock_seq_delta: 2,
            lock_stack: Some(9),
            unlock_stack: Some(300),
        }
    }

    #[test]
    fn a_held_record_gives_back_the_lock_and_the_unlock() {
        for p in [
            pair(),
            HeldPair {
                lock_stack: None,
                unlock_stack: None,
                ..pair()
            },
            HeldPair {
                op: Op::MutexTrylock as u8,
                dt: u64::MAX,
                hold: 1 << 40,
                ..pair()
            },
        ] {
            let mut fast = [0u8; MAX_EVENT_RECORD];
            let n = p.encode_fast(&mut fast);
            let mut slow = [0u8; MAX_EVENT_RECORD];
            let m = p.raw().encode_fast_as(rec::HELD, &mut slow);
            assert_eq!(fast[..n], slow[..m]);
            let back = RawEvent::decode_payload(&mut Dec::new(&fast[2..n])).unwrap();
            let (lock, unlock) = back.split_held().expect("a HELD payload");
            let want_lock = RawEvent {
                op: p.op,
                dt: p.dt,
                obj: Some(p.obj),
                seq_delta: Some(p.seq_delta),
                result: Some(0),
                stack: p.lock_stack,
                ..RawEvent::default()
            };
            let want_unlock = RawEvent {
                op: Op::MutexUnlock as u8,
                dt: p.hold,
                obj: Some(p.obj),
                seq_delta: Some(2),
                result: Some(0),
                stack: p.unlock_stack,
                ..RawEvent::default()
            };
            assert_eq!((lock, unlock), (want_lock, want_unlock));
            // Smaller than the two EVENT records it stands for.
            let mut one = [0u8; MAX_EVENT_RECORD];
            assert!(n < lock.encode_fast(&mut one) + unlock.encode_fast(&mut one));
        }
    }

    #[test]
    fn a_held_payload_the_agent_never_writes_is_refused() {
        let raw = pair().raw();
        for bad in [
            RawEvent {
                aux: Some(0),
                ..raw
            },
            RawEvent {
                aux: Some(u64::MAX),
                ..raw
            },
            RawEvent { aux: None, ..raw },
            RawEvent { obj: None, ..raw },
            RawEvent {
                seq_delta: None,
                ..raw
            },
            RawEvent {
                op: Op::MutexTimedlock as u8,
                ..raw
            },
            RawEvent {
                op: Op::MutexUnlock as u8,
                ..raw
            },
        ] {
            assert!(bad.split_held().is_none(), "{bad:?}");
        }
    }

    #[test]
    fn fast_encoding_matches_the_checked_one() {
        let full = RawEvent {
            op: 77,
            dt: u64::MAX,
            dur: 1 << 40,
            obj: Some(u64::MAX),
            seq_delta: Some(i64::MIN),
            result: Some(-11),
            fd: Some(u64::MAX),
            offset: Some(u64::MAX),
            aux: Some(u64::MAX),
            aux2: Some(u64::MAX),
            stack: Some(u64::MAX),
            cpu: Some(u64::MAX),
        };
        let sparse = RawEvent {
            op: 1,
            dt: 3,
            dur: 0,
            result: Some(0),
            ..RawEvent::default()
        };
        let cpu_only = RawEvent {
            op: 2,
            cpu: Some(300),
            ..RawEvent::default()
        };
        for ev in [full, sparse, cpu_only, RawEvent::default()] {
            let mut a = [0u8; MAX_EVENT_RECORD];
            let n = ev.encode_fast(&mut a);
            let mut b = [0u8; MAX_EVENT_RECORD];
            let mut e = Enc::new(&mut b);
            ev.encode_record(&mut e);
            assert!(e.ok());
            let m = e.len();
            assert_eq!(&a[..n], &b[..m]);
            assert_eq!(usize::from(a[1]), n - 2, "length byte");
            let back = RawEvent::decode_payload(&mut crate::wire::Dec::new(&a[2..n])).unwrap();
            assert_eq!(back, ev);
        }
        // The largest event fills the bound exactly.
        let largest = RawEvent {
            dur: u64::MAX,
            seq_delta: Some(i64::MIN),
            result: Some(i64::MIN),
            ..full
        };
        let mut a = [0u8; MAX_EVENT_RECORD];
        assert_eq!(largest.encode_fast(&mut a), MAX_EVENT_RECORD);
    }

    #[test]
    fn fast_varints_match_the_checked_ones_at_every_length_boundary() {
        // Around 1, 2 and 3 bytes (the fast path's two shortcuts and its loop) and the longest.
        let values = [
            0,
            1,
            0x7f,
            0x80,
            0x81,
            0x3fff,
            0x4000,
            0x1f_ffff,
            0x20_0000,
            u64::MAX,
        ];
        for &v in &values {
            let ev = RawEvent {
                op: 3,
                dt: v,
                dur: v,
                obj: Some(v),
                offset: Some(v),
                stack: Some(v),
                ..RawEvent::default()
            };
            let mut a = [0u8; MAX_EVENT_RECORD];
            let n = ev.encode_fast(&mut a);
            let mut b = [0u8; MAX_EVENT_RECORD];
            let mut e = Enc::new(&mut b);
            ev.encode_record(&mut e);
            let m = e.len();
            assert_eq!(&a[..n], &b[..m], "value {v:#x}");
        }
    }

    #[test]
    fn unknown_second_mask_fields_and_trailing_bytes_are_ignored() {
        let ev = RawEvent {
            op: 5,
            dt: 9,
            cpu: Some(1234),
            ..RawEvent::default()
        };
        let mut a = [0u8; MAX_EVENT_RECORD];
        let n = ev.encode_fast(&mut a);
        // A later writer's bit set beside CPU, and its field after CPU's.
        let mut later = a[2..n].to_vec();
        let mask2_at = later.len() - crate::wire::varint_len(1234) - 1;
        later[mask2_at] |= 1 << 3;
        later.extend_from_slice(&[0x85, 0x01, 0x07]);
        let back = RawEvent::decode_payload(&mut crate::wire::Dec::new(&later)).unwrap();
        assert_eq!(back, ev);
        // A second mask without CPU: no CPU time.
        let mut no_cpu = a[2..mask2_at + 2].to_vec();
        no_cpu.push(1 << 2);
        let back = RawEvent::decode_payload(&mut crate::wire::Dec::new(&no_cpu)).unwrap();
        assert_eq!(back.cpu, None);
        assert_eq!(back.dt, 9);
    }
}
