//! FNV-1a (64 bits): a hash fixed by its definition, so that what is keyed by it (file
//! checksums, the `#…` suffixes of task names, call-stack keys) does not change with the build,
//! the process or the platform, as `std`'s and `ahash`'s seeded hashers do.

/// An FNV-1a hasher. Each `bytes` call ends with a separator, so that `("ab", "c")` and
/// `("a", "bc")` hash apart.
#[derive(Clone, Copy, Debug)]
pub struct Fnv(u64);

const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const PRIME: u64 = 0x0100_0000_01b3;

impl Default for Fnv {
    fn default() -> Fnv {
        Fnv::new()
    }
}

impl Fnv {
    /// The hash of nothing.
    pub fn new() -> Fnv {
        Fnv(OFFSET)
    }

    /// Adds `b`, then a separator.
    pub fn bytes(&mut self, b: &[u8]) -> &mut Fnv {
        self.raw(b);
        self.0 = (self.0 ^ 0xff).wrapping_mul(PRIME);
        self
    }

    /// Adds `v` (little-endian), then a separator.
    pub fn u64(&mut self, v: u64) -> &mut Fnv {
        self.bytes(&v.to_le_bytes())
    }

    /// Adds `b` with no separator: plain FNV-1a over a byte string.
    pub fn raw(&mut self, b: &[u8]) -> &mut Fnv {
        for &x in b {
            self.0 = (self.0 ^ u64::from(x)).wrapping_mul(PRIME);
        }
        self
    }

    /// The hash so far.
    pub fn get(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_fnv1a_matches_its_published_vectors() {
        assert_eq!(Fnv::new().raw(b"").get(), 0xcbf2_9ce4_8422_2325);
        assert_eq!(Fnv::new().raw(b"a").get(), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(Fnv::new().raw(b"foobar").get(), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn separators_keep_splits_apart() {
        let ab_c = Fnv::new().bytes(b"ab").bytes(b"c").get();
        let a_bc = Fnv::new().bytes(b"a").bytes(b"bc").get();
        assert_ne!(ab_c, a_bc);
    }
}
