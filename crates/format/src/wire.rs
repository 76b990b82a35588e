//! LEB128 varints and zigzag integers, encoded into caller-provided buffers without allocating.
//!
//! The agent encodes every record with [`Enc`] straight into the mapped trace window; the reader
//! decodes with [`Dec`]. Both are `no_std`-friendly on purpose.

/// Maximum encoded size of a u64 varint.
pub const MAX_VARINT: usize = 10;

/// Zigzag-encodes a signed value so that small magnitudes stay small.
#[inline]
pub fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)).cast_unsigned()
}

/// Inverse of [`zigzag`].
#[inline]
pub fn unzigzag(v: u64) -> i64 {
    (v >> 1).cast_signed() ^ -(v & 1).cast_signed()
}

/// Number of bytes [`Enc::varint`] writes for `v`.
#[inline]
pub fn varint_len(v: u64) -> usize {
    let bits = 64 - (v | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

/// A writing cursor over a byte slice. Writes past the end are refused, not panicking: the
/// cursor remembers it overflowed and [`Enc::ok`] reports it.
pub struct Enc<'a> {
    buf: &'a mut [u8],
    pos: usize,
    overflow: bool,
}

impl<'a> Enc<'a> {
    /// A cursor at the start of `buf`.
    #[inline]
    pub fn new(buf: &'a mut [u8]) -> Self {
        Enc {
            buf,
            pos: 0,
            overflow: false,
        }
    }

    /// Bytes written so far.
    #[inline]
    pub fn len(&self) -> usize {
        self.pos
    }

    /// True when nothing has been written.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.pos == 0
    }

    /// False if any write did not fit.
    #[inline]
    pub fn ok(&self) -> bool {
        !self.overflow
    }

    /// Appends one byte.
    #[inline]
    pub fn u8(&mut self, b: u8) {
        match self.buf.get_mut(self.pos) {
            Some(slot) => {
                *slot = b;
                self.pos += 1;
            }
            None => self.overflow = true,
        }
    }

    /// Appends a LEB128 varint.
    #[inline]
    pub fn varint(&mut self, mut v: u64) {
        loop {
            let byte = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                self.u8(byte);
                return;
            }
            self.u8(byte | 0x80);
        }
    }

    /// Appends a zigzag varint.
    #[inline]
    pub fn ivarint(&mut self, v: i64) {
        self.varint(zigzag(v));
    }

    /// Overwrites an already written byte (no effect past the end).
    #[inline]
    pub fn patch(&mut self, at: usize, b: u8) {
        if at < self.pos {
            self.buf[at] = b;
        }
    }

    /// Appends raw bytes.
    #[inline]
    pub fn bytes(&mut self, b: &[u8]) {
        match self.buf.get_mut(self.pos..self.pos + b.len()) {
            Some(dst) => {
                dst.copy_from_slice(b);
                self.pos += b.len();
            }
            None => self.overflow = true,
        }
    }
}

/// Why a value could not be decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecError {
    /// The input ended inside the value.
    Eof,
    /// A varint ran longer than 10 bytes or overflowed 64 bits.
    Overlong,
}

/// A reading cursor over a byte slice.
pub struct Dec<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Dec<'a> {
    /// A cursor at the start of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Dec { buf, pos: 0 }
    }

    /// Bytes consumed so far.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// Bytes left.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Reads one byte.
    pub fn u8(&mut self) -> Result<u8, DecError> {
        let b = *self.buf.get(self.pos).ok_or(DecError::Eof)?;
        self.pos += 1;
        Ok(b)
    }

    /// Reads a LEB128 varint.
    pub fn varint(&mut self) -> Result<u64, DecError> {
        let mut v: u64 = 0;
        for i in 0..MAX_VARINT {
            let b = self.u8()?;
            let part = u64::from(b & 0x7f);
            if i == 9 && b > 1 {
                return Err(DecError::Overlong);
            }
            v |= part << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(DecError::Overlong)
    }

    /// Reads a zigzag varint.
    pub fn ivarint(&mut self) -> Result<i64, DecError> {
        self.varint().map(unzigzag)
    }

    /// Reads `n` raw bytes.
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], DecError> {
        let end = self.pos.checked_add(n).ok_or(DecError::Eof)?;
        let s = self.buf.get(self.pos..end).ok_or(DecError::Eof)?;
        self.pos = end;
        Ok(s)
    }

    /// The rest of the input.
    pub fn rest(&mut self) -> &'a [u8] {
        let s = &self.buf[self.pos..];
        self.pos = self.buf.len();
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varint_edges() {
        for v in [
            0u64,
            1,
            127,
            128,
            16383,
            16384,
            u64::from(u32::MAX),
            u64::MAX,
        ] {
            let mut buf = [0u8; 16];
            let mut e = Enc::new(&mut buf);
            e.varint(v);
            assert!(e.ok());
            let n = e.len();
            assert_eq!(n, varint_len(v));
            let mut d = Dec::new(&buf[..n]);
            assert_eq!(d.varint(), Ok(v));
            assert_eq!(d.remaining(), 0);
        }
        for v in [0i64, -1, 1, i64::MIN, i64::MAX] {
            assert_eq!(unzigzag(zigzag(v)), v);
        }
    }

    #[test]
    fn overflow_is_reported_not_panicking() {
        let mut buf = [0u8; 2];
        let mut e = Enc::new(&mut buf);
        e.varint(u64::MAX);
        assert!(!e.ok());
        let mut d = Dec::new(&[0xff; 11]);
        assert_eq!(d.varint(), Err(DecError::Overlong));
        let mut d = Dec::new(&[0x80]);
        assert_eq!(d.varint(), Err(DecError::Eof));
    }
}
