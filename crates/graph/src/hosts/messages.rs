//! The messages between machines: every read of a shared connection paired with the write of its
//! last byte, by byte offset, each time on its own machine's clock.
//!
//! Why the last byte: the read cannot have ended before the write that gave it that byte began,
//! and of the writes a read took from, that one began last, so it bounds the clocks the most.

use ahash::AHashMap;
use scalpel_model::format::ObjKind;

use super::keys::{OnHost, Shared};
use super::tree::Messages;
use crate::event::{reads_bytes, HAS_X, NO_OBJ};
use scalpel_model::clockfit::Message;

/// One transfer on a shared connection.
#[derive(Clone, Copy, Debug)]
struct Transfer {
    /// First byte's offset.
    offset: u64,
    /// Bytes moved.
    len: u64,
    /// A write's start, a read's end (ns, on its machine's clock).
    at: u64,
    host: usize,
}

/// Every stream direction of a shared connection: its writes and its reads.
#[derive(Default)]
struct Direction {
    writes: Vec<Transfer>,
    reads: Vec<Transfer>,
}

/// The messages between machines in `dirs`, by (writing machine, reading machine).
pub(crate) fn messages(dirs: &[OnHost<'_>], shared: &Shared) -> Messages {
    let mut streams: AHashMap<u64, Direction> = AHashMap::new();
    for d in dirs {
        collect(d, shared, &mut streams);
    }
    let mut out = Messages::new();
    // In key order, so that the messages (and the fit, to the last bit) are the same every run.
    let mut keys: Vec<u64> = streams.keys().copied().collect();
    keys.sort_unstable();
    for k in keys {
        let Some(s) = streams.get_mut(&k) else {
            continue;
        };
        s.writes.sort_by_key(|w| (w.offset, w.at));
        s.reads.sort_by_key(|r| (r.offset, r.at));
        for r in &s.reads {
            let last = r.offset + r.len - 1;
            // The write whose bytes hold the read's last byte.
            let i = s.writes.partition_point(|w| w.offset <= last);
            let Some(w) = i.checked_sub(1).map(|i| s.writes[i]) else {
                continue;
            };
            if w.offset + w.len > last && w.host != r.host {
                out.entry((w.host, r.host)).or_default().push(Message {
                    sent: w.at,
                    received: r.at,
                });
            }
        }
    }
    out
}

/// The transfers of `d` on shared connections, each with its time on `d`'s clock.
fn collect(d: &OnHost<'_>, shared: &Shared, streams: &mut AHashMap<u64, Direction>) {
    for (p, ps) in d.trace.processes.iter().zip(d.sinks) {
        for (f, s) in p.threads.iter().zip(&ps.threads) {
            let Some(out) = s.out.as_ref() else { continue };
            for b in &out.bounds {
                let Some(o) = (b.obj != NO_OBJ)
                    .then(|| out.objs.get(b.obj as usize))
                    .flatten()
                else {
                    continue;
                };
                let Some(read) = b.op.op().and_then(reads_bytes) else {
                    continue;
                };
                if !o.kind.is(ObjKind::Stream) || !shared.contains(&o.channel) {
                    continue;
                }
                let (Ok(len), true) = (u64::try_from(b.res), b.flags & HAS_X != 0) else {
                    continue;
                };
                let Some(leaf) = out.leaves.get(b.leaf as usize) else {
                    continue;
                };
                if len == 0 {
                    continue;
                }
                // A read starts its leaf when it returns; a write ends its leaf when it begins.
                let at = f.clock.ns(if read { leaf.start.0 } else { leaf.end.0 });
                let t = Transfer {
                    offset: b.x,
                    len,
                    at,
                    host: d.host,
                };
                let dir = streams.entry(o.key).or_default();
                if read {
                    dir.reads.push(t);
                } else {
                    dir.writes.push(t);
                }
            }
        }
    }
}
