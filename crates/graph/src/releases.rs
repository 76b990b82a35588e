//! Lock releases, kept compactly until contention is known.
//!
//! A contended acquisition's holder is the lock's last release before it (`locks`), and that
//! release may be on any thread. So every release with a sequence number is kept until every
//! thread is read: by far the most numerous thing the graph stage holds on a lock-heavy server
//! (memcached's workers release a lock every other event). Kept as 16-byte rows, they were a
//! quarter of the stage's peak memory; here each thread keeps, per lock, its releases'
//! sequence numbers and leaves as differences from the one before, in variable-length bytes
//! (about three bytes a release), and only the locks some acquisition waited on are ever
//! decoded.

use super::perobj::PerObj;

/// One thread's releases of one lock, in file order.
#[derive(Default, Debug)]
pub(crate) struct LockReleases {
    bytes: Vec<u8>,
    last_seq: u64,
    last_leaf: u32,
}

impl LockReleases {
    fn push(&mut self, seq: u64, leaf: u32) {
        // Zigzag: a thread's sequence numbers of one lock grow, but nothing here relies on it.
        put_varint(
            &mut self.bytes,
            zigzag(seq.wrapping_sub(self.last_seq) as i64),
        );
        put_varint(
            &mut self.bytes,
            u64::from(leaf.wrapping_sub(self.last_leaf)),
        );
        self.last_seq = seq;
        self.last_leaf = leaf;
    }

    /// The releases as (sequence number, leaf), the leaf offset by `base`.
    pub(crate) fn decode(&self, base: u32) -> impl Iterator<Item = (u64, u32)> + '_ {
        let (mut at, mut seq, mut leaf) = (0usize, 0u64, 0u32);
        std::iter::from_fn(move || {
            if at >= self.bytes.len() {
                return None;
            }
            seq = seq.wrapping_add(unzigzag(get_varint(&self.bytes, &mut at)) as u64);
            leaf = leaf.wrapping_add(get_varint(&self.bytes, &mut at) as u32);
            Some((seq, leaf.wrapping_add(base)))
        })
    }
}

/// One thread's releases, per lock (file-local objects).
#[derive(Default, Debug)]
pub(crate) struct ThreadReleases {
    by_obj: PerObj<LockReleases>,
}

impl ThreadReleases {
    /// Keeps the release of lock `obj` with sequence number `seq`, in leaf `leaf`.
    pub(crate) fn push(&mut self, obj: u32, seq: u64, leaf: u32) {
        self.by_obj.entry(obj).push(seq, leaf);
    }

    /// Per lock, its releases (locks in the order the thread first released them).
    pub(crate) fn into_locks(self) -> impl Iterator<Item = (u32, LockReleases)> {
        self.by_obj.into_values()
    }
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads a varint written by [`put_varint`] (bytes only this module wrote, so complete).
fn get_varint(b: &[u8], at: &mut usize) -> u64 {
    let mut v = 0u64;
    let mut shift = 0;
    while let Some(&x) = b.get(*at) {
        *at += 1;
        v |= u64::from(x & 0x7f) << shift;
        if x < 0x80 {
            break;
        }
        shift += 7;
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_come_back_as_kept() {
        let mut t = ThreadReleases::default();
        let rows = [
            (5u64, 0u32),
            (9, 3),
            (7, 3),
            (u64::MAX, 40),
            (0, u32::MAX),
            (1 << 40, 2),
        ];
        for &(s, l) in &rows {
            t.push(7, s, l);
        }
        t.push(8, 3, 1);
        let mut locks: Vec<(u32, LockReleases)> = t.into_locks().collect();
        locks.sort_by_key(|l| l.0);
        let back: Vec<(u64, u32)> = locks[0].1.decode(0).collect();
        assert_eq!(back, rows);
        let shifted: Vec<(u64, u32)> = locks[1].1.decode(100).collect();
        assert_eq!(shifted, vec![(3, 101)]);
    }
}
