//! Field-level encoding of records shared by the agent (no allocation) and the reader.

use crate::format::{field, field2, rec};
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
        let p = out.as_mut_ptr();
        let mut mask = 0u8;
        // SAFETY: at most 5 fixed bytes and 11 varints of at most 10 bytes each are written, and
        // MAX_EVENT_RECORD is 115 bytes, so every write is inside `out`.
        unsafe {
            *p = rec::EVENT;
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
