//! Pipelined replies: which writes answer a request the thread had already read.
//!
//! A client that pipelines writes several requests before reading; one read of the server can
//! return them all, and the server answers each with a write, with no read between. Each of
//! those writes after the first ends a request of its own, and the program edge after the
//! write before it is weak (new work; see `super::weak`). But a server may also write one reply
//! in several calls (CPython's `http.server` sends the header, then the body, from the same C
//! call site), and sync calls alone cannot tell three replies from one reply in three parts.
//!
//! The rule: on a connection the thread reads from (a dialogue, not a stream it only writes
//! to), a write followed by the thread's next cut being a write from the same call site on the
//! same stream starts a new request with the second write. What is assumed: a reply is written
//! by one call. A reply written in several calls from one site is taken for several pipelined
//! replies; replies written in parts from different sites (a header, then a body) stay one.
//! (Counting the writes of each turn would tell a constant number of parts from a varying
//! number of pipelined replies, but takes a pipelined client that always sends the same number
//! of requests at once for a reply in parts, which cost more on the generated corpus than it
//! gave.)

use ahash::AHashSet;

use super::event::{reads_bytes, LocalObj};
use crate::local::LocalLeaf;

fn is_write(l: &LocalLeaf) -> bool {
    l.end_op.and_then(|o| o.op()).and_then(reads_bytes) == Some(false)
}

fn is_read(l: &LocalLeaf) -> bool {
    l.end_op.and_then(|o| o.op()).and_then(reads_bytes) == Some(true)
}

/// Per leaf `i`: whether the program edge out of it (to leaf `i + 1`) is a boundary between two
/// pipelined replies. `same_site(i, j)`: leaves `i` and `j` end at the same call site.
pub(super) fn pipelined(
    leaves: &[LocalLeaf],
    objs: &[LocalObj],
    same_site: impl Fn(usize, usize) -> bool,
) -> Vec<bool> {
    // A stream direction stands for its channel (both directions of a connection share one).
    let channel = |obj: u32| match objs.get(obj as usize) {
        Some(o) if o.channel != 0 => o.channel,
        _ => u64::from(obj) | 1 << 63,
    };
    let conn = |i: usize| leaves[i].end_obj.map(channel);
    // Candidates: a write on a channel read before, followed by a write from the same site on
    // the same stream.
    let mut read_from: AHashSet<u64> = AHashSet::new();
    let mut candidate = vec![false; leaves.len()];
    for (i, l) in leaves.iter().enumerate() {
        let Some(ch) = conn(i) else { continue };
        if is_write(l) && read_from.contains(&ch) {
            candidate[i] = leaves
                .get(i + 1)
                .is_some_and(|n| is_write(n) && n.end_obj == l.end_obj && same_site(i, i + 1));
        }
        if is_read(l) {
            read_from.insert(ch);
        }
    }
    candidate
}
