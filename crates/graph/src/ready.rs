//! Readiness: a write that made a descriptor ready and the wait that reported it, when nothing
//! read the bytes. nginx's thread pool writes an eventfd that edge-triggered epoll reports and
//! nobody ever reads; without this, every completion went to the eventfd's external sink and the
//! event loop's next steps had no cause.
//!
//! The agent writes, after each epoll, poll or select call that found descriptors ready for
//! input, what it reported (a READY record): epoll's user data, mapped back to a descriptor's
//! incoming stream through the `epoll_ctl` that registered it (the latest one on the same
//! instance with the same data before the wait returned, whose descriptor the process had not
//! closed since: closing a descriptor takes it out of every epoll set, and nginx registers a
//! test socket under its notification's data before closing it); or, for poll and select, the
//! stream keys themselves. A write that no read took is then linked to the first wait that reported its
//! stream at or after the write began (see `streams`). Reads keep their edges: a read is the
//! better witness, since it says which bytes it took.
//!
//! Limits: only input readiness is kept (a writable socket is no hand-off); a wait lists at most
//! `format::ready::MAX_LISTED` descriptors, and the rest are counted in its record only; a
//! peer's close, which also makes a descriptor readable, is not linked.

use ahash::AHashMap;
use scalpel_model::graph::Graph;
use scalpel_model::read::ReadyForm;

/// A readiness wait as one thread saw it.
#[derive(Clone, Debug)]
pub(super) struct ReadyWait {
    /// The leaf the wait started (thread-local, then global after assembly).
    pub leaf: u32,
    /// The key of the epoll instance waited on (0 for poll and select).
    pub epoll: u64,
    /// What the values are.
    pub form: ReadyForm,
    /// epoll user data, or incoming stream keys.
    pub values: Box<[u64]>,
}

/// An `epoll_ctl` that registered `data` for a descriptor's incoming stream.
#[derive(Clone, Copy, Debug)]
pub(super) struct Ctl {
    /// When (ticks until assembly, then nanoseconds).
    pub at: u64,
    /// The epoll instance's key.
    pub epoll: u64,
    /// The user data registered.
    pub data: u64,
    /// The descriptor's incoming stream (file-local, then global), or `NO_OBJ`.
    pub obj: u32,
    /// The descriptor registered.
    pub fd: u32,
    /// Its process (set at assembly).
    pub process: u32,
}

/// A descriptor closed: (process, descriptor, when, the key of the connection it was or 0), times
/// in nanoseconds after assembly.
pub(super) type Close = (u32, u32, u64, u64);

/// How many earlier registrations of the same data a report looks through for one that is
/// still open.
pub(super) const LOOK_BACK: usize = 8;

/// Per stream object, the waits that reported it: (when the wait returned, the leaf it started),
/// sorted.
#[derive(Default)]
pub(super) struct Reports {
    by_obj: AHashMap<u32, Vec<(u64, u32)>>,
}

impl Reports {
    /// The waits that reported `obj`, in time order.
    pub(super) fn of(&self, obj: u32) -> &[(u64, u32)] {
        self.by_obj.get(&obj).map_or(&[], Vec::as_slice)
    }

    /// The first wait that reported `obj` at or after `at`: its leaf.
    pub(super) fn first_after(&self, obj: u32, at: u64) -> Option<u32> {
        let v = self.of(obj);
        let i = v.partition_point(|&(t, _)| t < at);
        v.get(i).map(|&(_, leaf)| leaf)
    }
}

/// Resolves every wait's list to stream objects: epoll data through the latest `epoll_ctl` on
/// the same instance with the same data before the wait returned; stream keys through
/// `stream_by_key` (global object of each stream key). `waits` and `ctls` carry global indices
/// and nanoseconds.
pub(super) fn reports(
    waits: &[ReadyWait],
    mut ctls: Vec<Ctl>,
    mut closes: Vec<Close>,
    stream_by_key: &AHashMap<u64, u32>,
    graph: &Graph,
    no_obj: u32,
) -> Reports {
    ctls.retain(|c| c.obj != no_obj);
    ctls.sort_unstable_by_key(|c| (c.epoll, c.data, c.at, c.obj));
    closes.sort_unstable();
    // Whether `c`'s descriptor was closed after it was registered and by `at`.
    let closed = |c: &Ctl, at: u64| {
        let i = closes.partition_point(|&k| (k.0, k.1, k.2) <= (c.process, c.fd, c.at));
        closes
            .get(i)
            .is_some_and(|&(p, fd, t, _)| p == c.process && fd == c.fd && t <= at)
    };
    let mut by_obj: AHashMap<u32, Vec<(u64, u32)>> = AHashMap::new();
    for w in waits {
        let Some(leaf) = graph.leaves.get(w.leaf as usize) else {
            continue;
        };
        let at = leaf.start_ns;
        for &v in w.values.iter() {
            let obj = match w.form {
                ReadyForm::EpollData => {
                    let lo = ctls.partition_point(|c| (c.epoll, c.data) < (w.epoll, v));
                    let hi = ctls.partition_point(|c| (c.epoll, c.data, c.at) <= (w.epoll, v, at));
                    ctls[lo..hi]
                        .iter()
                        .rev()
                        .take(LOOK_BACK)
                        .find(|c| !closed(c, at))
                        .map(|c| c.obj)
                }
                ReadyForm::StreamKeys => stream_by_key.get(&v).copied(),
                ReadyForm::Other(_) => None,
            };
            if let Some(o) = obj {
                by_obj.entry(o).or_default().push((at, w.leaf));
            }
        }
    }
    for v in by_obj.values_mut() {
        v.sort_unstable();
        v.dedup();
    }
    Reports { by_obj }
}
