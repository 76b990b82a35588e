//! Which objects two machines share, and new keys for every other one.
//!
//! The agent names an object by a key it derives from what it is: an address, an inode, a pair
//! of socket addresses. On one machine equal keys are one object; across machines they are one
//! object only for a TCP connection whose two ends are each on one of them. Everything else is
//! given a key of its own machine before the traces are put together: pipes and unix sockets
//! (inodes repeat across machines), loopback connections (every machine has its own
//! `127.0.0.1`), process-shared futex words, eventfds, listening sockets.
//!
//! A connection is shared only when both machines saw it begin (a `connect` on one, an `accept`
//! on the other, the same connection key): the byte offsets each end counts start at that
//! point, and a connection already open when one recording started would pair bytes that do not
//! belong together. It then stays each machine's own, ending at an untraced peer.

use ahash::{AHashMap, AHashSet};
use scalpel_model::format::{ObjKind, Op};
use scalpel_model::read::{Endpoint, Identity, ProcessSinks, ReadyForm, TraceDir};
use scalpel_model::record::stable_hash;

use crate::event::HAS_X;
use crate::peers::routable;
use crate::sink::ThreadSink;

/// The connection keys of channels between two machines that both saw begin.
pub(crate) type Shared = AHashSet<u64>;

/// A trace directory as read, with the machine it belongs to (an index among the machines).
pub(crate) struct OnHost<'a> {
    pub host: usize,
    pub trace: &'a TraceDir,
    pub sinks: &'a [ProcessSinks<ThreadSink>],
}

/// The connection keys of TCP channels between routable addresses in `trace`.
fn routable_channels(trace: &TraceDir) -> AHashSet<u64> {
    let mut out = AHashSet::new();
    for (_, f) in trace.files() {
        for o in &f.objects {
            if let Identity::Stream {
                channel_key,
                sender,
                receiver,
                ..
            } = &o.identity
            {
                if routable(sender) && routable(receiver) {
                    out.insert(*channel_key);
                }
            }
        }
    }
    out
}

/// Whether `op` opens a connection (its event carries the connection key).
fn opens(op: Option<Op>) -> bool {
    matches!(op, Some(Op::Connect | Op::Accept | Op::Accept4))
}

/// The connection keys a `connect` or an `accept` of `dir` carries.
fn begun(dir: &OnHost<'_>) -> AHashSet<u64> {
    dir.sinks
        .iter()
        .flat_map(|p| p.threads.iter())
        .filter_map(|s| s.out.as_ref())
        .flat_map(|o| o.bounds.iter())
        .filter(|b| b.flags & HAS_X != 0 && opens(b.op.op()))
        .map(|b| b.x)
        .collect()
}

/// The connections seen beginning on two machines, between routable addresses.
pub(crate) fn shared(dirs: &[OnHost<'_>]) -> Shared {
    // Per machine, so that two directories of one machine count once.
    let mut per_host: Vec<(usize, AHashSet<u64>)> = Vec::new();
    for d in dirs {
        let routable = routable_channels(d.trace);
        let keys: AHashSet<u64> = begun(d).intersection(&routable).copied().collect();
        match per_host.iter_mut().find(|(h, _)| *h == d.host) {
            Some((_, k)) => k.extend(keys),
            None => per_host.push((d.host, keys)),
        }
    }
    let mut seen: AHashSet<u64> = AHashSet::new();
    let mut out = Shared::new();
    for (_, keys) in &per_host {
        for &k in keys {
            if !seen.insert(k) {
                out.insert(k);
            }
        }
    }
    out
}

/// `key` as machine `host` names it: unchanged on the first machine (so a trace of one machine
/// keeps its keys) and for 0, which means none.
pub(crate) fn host_key(key: u64, host: usize) -> u64 {
    if host == 0 || key == 0 {
        return key;
    }
    stable_hash(&[
        &key.to_le_bytes(),
        &(host as u64).to_le_bytes(),
        b"host".as_slice(),
    ])
}

/// Gives every object of machine `host` that it does not share its machine's key: in the
/// files' object records (their identities) and in the cut threads (their objects, the
/// connection keys of `connect`, `accept` and closes, the epoll instances of readiness waits
/// and registrations, and the stream keys poll and select reported).
pub(crate) fn rekey(
    host: usize,
    shared: &Shared,
    trace: &mut TraceDir,
    sinks: &mut [ProcessSinks<ThreadSink>],
) {
    if host == 0 {
        return;
    }
    // The stream directions of shared connections keep their keys wherever they appear.
    let shared_streams: AHashSet<u64> = trace
        .files()
        .flat_map(|(_, f)| f.objects.iter())
        .filter(|o| {
            matches!(&o.identity, Identity::Stream { channel_key, .. } if shared.contains(channel_key))
        })
        .map(|o| o.key)
        .collect();
    for p in &mut trace.processes {
        for f in p.process.iter_mut().chain(p.threads.iter_mut()) {
            for o in &mut f.objects {
                if let Identity::Stream { channel_key, .. } = &mut o.identity {
                    if shared.contains(channel_key) {
                        continue;
                    }
                    *channel_key = host_key(*channel_key, host);
                }
                o.key = host_key(o.key, host);
            }
        }
    }
    for s in sinks.iter_mut().flat_map(|p| p.threads.iter_mut()) {
        let Some(out) = s.out.as_mut() else { continue };
        for o in &mut out.objs {
            let stream = o.kind.is(ObjKind::Stream);
            if stream && shared.contains(&o.channel) {
                continue;
            }
            o.key = host_key(o.key, host);
            o.channel = if shared.contains(&o.channel) {
                o.channel
            } else {
                host_key(o.channel, host)
            };
        }
        for b in &mut out.bounds {
            if b.flags & HAS_X != 0 && opens(b.op.op()) && !shared.contains(&b.x) {
                b.x = host_key(b.x, host);
            }
        }
        for c in &mut out.closes {
            if !shared.contains(&c.3) {
                c.3 = host_key(c.3, host);
            }
        }
        for c in &mut out.ctls {
            c.epoll = host_key(c.epoll, host);
        }
        for w in &mut out.ready {
            w.epoll = host_key(w.epoll, host);
            if w.form == ReadyForm::StreamKeys {
                for v in w.values.iter_mut().filter(|v| !shared_streams.contains(v)) {
                    *v = host_key(*v, host);
                }
            }
        }
    }
}

/// The addresses of `d`'s machine that its traces show: the sending end of every shared
/// connection it wrote to. Sorted, for people.
pub(crate) fn addresses(d: &OnHost<'_>, shared: &Shared) -> Vec<std::net::IpAddr> {
    let mut sender_of: AHashMap<u64, std::net::IpAddr> = AHashMap::new();
    for (_, f) in d.trace.files() {
        for o in &f.objects {
            if let Identity::Stream {
                channel_key,
                sender: Endpoint::Inet(a),
                ..
            } = &o.identity
            {
                if shared.contains(channel_key) {
                    sender_of.insert(o.key, a.ip());
                }
            }
        }
    }
    let mut out: Vec<std::net::IpAddr> = d
        .sinks
        .iter()
        .flat_map(|p| p.threads.iter())
        .filter_map(|s| s.out.as_ref())
        .flat_map(|out| {
            out.bounds.iter().filter_map(|b| {
                let o = out.objs.get(b.obj as usize)?;
                let wrote = b.op.op().and_then(crate::event::reads_bytes) == Some(false);
                wrote.then(|| sender_of.get(&o.key).copied()).flatten()
            })
        })
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}
