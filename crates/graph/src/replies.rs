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
//!
//! The same holds where the requests are passed on rather than answered: a dispatcher that read
//! several requests at once hands each to a worker (a write to a pipe, a condition's signal, a
//! semaphore's post, a futex wake, after its put), with no read between. So a hand-off that
//! belongs to a run of the same call (operation, object, call site) that began right after a
//! read, and is followed by the same call, ends a request; the next hand-off starts one. A
//! thread that only writes (a producer's stream) never read before its run, and hand-offs to
//! different objects (a fan-out to two workers' queues) are no run. What is assumed: one
//! hand-off per request; a request passed on in several writes from one site right after a read
//! is taken for several.
//!
//! (Counting the writes of each turn would tell a constant number of parts from a varying
//! number of pipelined replies, but takes a pipelined client that always sends the same number
//! of requests at once for a reply in parts, which cost more on the generated corpus than it
//! gave.)

use ahash::AHashSet;

use scalpel_model::format::Op;

use super::event::{reads_bytes, LocalObj};
use crate::local::LocalLeaf;

fn is_write(l: &LocalLeaf) -> bool {
    l.end_op.and_then(|o| o.op()).and_then(reads_bytes) == Some(false)
}

fn is_read(l: &LocalLeaf) -> bool {
    l.end_op.and_then(|o| o.op()).and_then(reads_bytes) == Some(true)
}

/// Whether the leaf ends at a notification that hands an item on: a condition's signal, a
/// semaphore's post, a futex wake (a broadcast is usually a shutdown, and hands nothing on).
fn is_post(l: &LocalLeaf) -> bool {
    matches!(
        l.end_op.and_then(|o| o.op()),
        Some(Op::CondSignal | Op::SemPost | Op::FutexWake)
    )
}

/// Per leaf `i`: whether the program edge out of it (to leaf `i + 1`) is a boundary between two
/// pipelined requests. `same_site(i, j)`: leaves `i` and `j` end at the same call site.
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
    // The same call ends leaves `i` and `j`: operation, object and site.
    let same_call = |i: usize, j: usize| {
        let (a, b) = (&leaves[i], &leaves[j]);
        a.end_op == b.end_op && a.end_obj == b.end_obj && same_site(i, j)
    };
    let hands_on = |l: &LocalLeaf| is_write(l) || is_post(l);
    let mut read_from: AHashSet<u64> = AHashSet::new();
    let mut candidate = vec![false; leaves.len()];
    // Whether the run of identical hand-offs that leaf `i` belongs to began right after a read.
    let mut run_after_read = false;
    for (i, l) in leaves.iter().enumerate() {
        if i == 0 || !same_call(i - 1, i) {
            run_after_read = i > 0 && is_read(&leaves[i - 1]);
        }
        let next_same = i + 1 < leaves.len() && same_call(i, i + 1);
        let Some(ch) = conn(i) else { continue };
        // A reply: a write on a channel read before, followed by the same write.
        let reply = is_write(l) && read_from.contains(&ch);
        // A forwarded request: one of a run of the same hand-off right after a read.
        let forwarded = hands_on(l) && run_after_read;
        candidate[i] = (reply || forwarded) && next_same;
        if is_read(l) {
            read_from.insert(ch);
        }
    }
    candidate
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::local::Ticks;
    use scalpel_model::format::ObjKind;
    use scalpel_model::graph::{ObjectKind, OpName};

    /// Leaves ending at `ops` on objects `objs` (every call from one site).
    fn leaves(calls: &[(Op, u32)]) -> Vec<LocalLeaf> {
        calls
            .iter()
            .map(|&(op, obj)| {
                let mut l = LocalLeaf::open(Ticks(0), None, 0);
                l.end_op = Some(OpName::from(op));
                l.end_obj = Some(obj);
                l
            })
            .collect()
    }

    /// A connection (0), a pipe (1), a semaphore (2), a condition (3).
    fn objs() -> Vec<LocalObj> {
        let obj = |kind: ObjKind, key: u64, channel: u64| LocalObj {
            kind: ObjectKind::from(kind),
            key,
            chan: None,
            channel,
            shared: false,
        };
        vec![
            obj(ObjKind::Stream, 1, 10),
            obj(ObjKind::Stream, 2, 20),
            obj(ObjKind::Sem, 3, 0),
            obj(ObjKind::Cond, 4, 0),
        ]
    }

    #[test]
    fn replies_to_requests_read_at_once_are_each_a_request() {
        // Read a connection (0), answer three requests on it, read again.
        let l = leaves(&[
            (Op::Read, 0),
            (Op::Write, 0),
            (Op::Write, 0),
            (Op::Write, 0),
            (Op::Read, 0),
        ]);
        assert_eq!(
            pipelined(&l, &objs(), |_, _| true),
            [false, true, true, false, false]
        );
    }

    #[test]
    fn requests_read_at_once_and_passed_on_are_each_a_request() {
        // Read a connection (0), pass three requests to workers through a pipe (1), or by
        // posting a semaphore (2) after each put.
        for (op, obj) in [(Op::Write, 1), (Op::SemPost, 2), (Op::CondSignal, 3)] {
            let l = leaves(&[
                (Op::Read, 0),
                (op, obj),
                (op, obj),
                (op, obj),
                (Op::EpollWait, 3),
            ]);
            assert_eq!(
                pipelined(&l, &objs(), |_, _| true),
                [false, true, true, false, false]
            );
        }
    }

    #[test]
    fn a_stream_of_writes_is_not_a_run_of_requests() {
        // A producer that only writes, and one that writes between two other calls.
        let l = leaves(&[(Op::Write, 1), (Op::Write, 1), (Op::Write, 1)]);
        assert_eq!(pipelined(&l, &objs(), |_, _| true), [false; 3]);
        let l = leaves(&[
            (Op::Read, 0),
            (Op::Write, 1),
            (Op::Write, 2),
            (Op::Write, 1),
        ]);
        assert_eq!(pipelined(&l, &objs(), |_, _| true), [false; 4]);
        // The same writes from two call sites: a header and a body.
        let l = leaves(&[(Op::Read, 0), (Op::Write, 1), (Op::Write, 1)]);
        assert_eq!(pipelined(&l, &objs(), |i, j| i == j), [false; 3]);
    }
}
