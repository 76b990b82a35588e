//! Transfers with peers outside the trace, kept for another machine's graph to be joined with:
//! on a TCP connection between routable addresses, the connects and accepts that met no traced
//! other end, the writes no traced read took and the reads of bytes no traced write produced.
//!
//! Why only routable TCP: a machine's loopback, pipes and Unix sockets never reach another
//! machine, so their untraced peers are no other machine's trace. What is kept is what the
//! several-machine merge (`hosts`) would have paired, each half on its own machine: the
//! connection's key, both ends agree on, and each direction's byte offsets.

use ahash::AHashSet;
use scalpel_model::graph::{Channel, Graph, PeerTransfer};
use scalpel_model::read::Endpoint;

/// Whether an address can be the same socket seen from two machines.
pub(crate) fn routable(e: &Endpoint) -> bool {
    match e {
        Endpoint::Inet(a) => !(a.ip().is_loopback() || a.ip().is_unspecified()),
        _ => false,
    }
}

/// The connection keys of the graph's TCP streams whose two ends are routable.
fn routable_connections(graph: &Graph) -> AHashSet<u64> {
    graph
        .objects
        .iter()
        .filter_map(|o| match &o.channel {
            Some(Channel::Stream {
                key,
                sender,
                receiver,
                ..
            }) if routable(sender) && routable(receiver) => Some(*key),
            _ => None,
        })
        .collect()
}

/// `found`, with each stream transfer's connection key from `channels` (an object's connection
/// key by index), kept when its connection is between routable addresses; sorted.
pub(crate) fn keep(
    graph: &Graph,
    channels: &[u64],
    mut found: Vec<PeerTransfer>,
) -> Vec<PeerTransfer> {
    if found.is_empty() {
        return found;
    }
    let routable = routable_connections(graph);
    for p in found.iter_mut().filter(|p| p.connection == 0) {
        p.connection = p
            .obj
            .and_then(|o| channels.get(o.index()).copied())
            .unwrap_or(0);
    }
    found.retain(|p| p.connection != 0 && routable.contains(&p.connection));
    found.sort_unstable();
    found.dedup();
    found
}
