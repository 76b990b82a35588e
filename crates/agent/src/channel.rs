//! Channel identities: the endpoints a descriptor's channel is named by, and the keys and
//! identities of its two stream directions, shared by the descriptor table and the socket module.
//!
//! Channel identities are chosen so both ends compute the same stream key independently: a TCP
//! direction is named by its sender and receiver addresses, a pipe by its inode, a unix socket
//! direction by the inodes of the sending and receiving sockets (the peer's inode comes from the
//! kernel's sock_diag interface).

use scalpel_format::format::{ep, ChanKind, ObjKind};
use scalpel_format::record::stable_hash;
use scalpel_format::wire::Enc;

use crate::event::Obj;
use crate::shared::{StreamSlot, Table};

const IDENT: usize = 64;

/// An encoded endpoint.
#[derive(Clone, Copy)]
pub(crate) struct Endpoint {
    len: u8,
    bytes: [u8; 24],
}

impl Endpoint {
    /// No identity.
    pub(crate) const NONE: Endpoint = Endpoint {
        len: 1,
        bytes: [ep::NONE; 24],
    };

    fn from(f: impl FnOnce(&mut Enc<'_>)) -> Endpoint {
        let mut bytes = [0u8; 24];
        let mut e = Enc::new(&mut bytes);
        f(&mut e);
        if !e.ok() {
            return Endpoint::NONE;
        }
        Endpoint {
            len: e.len() as u8,
            bytes,
        }
    }

    /// An inode-named endpoint.
    pub(crate) fn inode(dev: u64, ino: u64) -> Endpoint {
        Endpoint::from(|e| {
            e.u8(ep::INODE);
            e.varint(dev);
            e.varint(ino);
        })
    }

    /// An endpoint numbered by a process.
    pub(crate) fn local(pid: i32, n: u64) -> Endpoint {
        Endpoint::from(|e| {
            e.u8(ep::LOCAL);
            e.varint(pid as u64);
            e.varint(n);
        })
    }

    /// The encoded bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }

    fn is_none(&self) -> bool {
        self.bytes[0] == ep::NONE
    }
}

/// What one descriptor refers to.
pub(crate) struct Info {
    /// Channel kind (a [`ChanKind`] code).
    pub chan: u8,
    /// Key shared by both ends and both directions.
    pub chan_key: u64,
    tx_key: u64,
    rx_key: u64,
    offsets: bool,
    tx_ident: [u8; IDENT],
    tx_len: u8,
    rx_ident: [u8; IDENT],
    rx_len: u8,
    /// The shared counters of each direction, found once when the descriptor is described
    /// ([`Info::bind`]): a slot, once claimed, keeps its key for the life of the table, and the
    /// table keeps its address in this process and its fork children, so the pointer stays
    /// right. Null when the direction has no stream or the table had no room for it.
    tx_slot: *const StreamSlot,
    rx_slot: *const StreamSlot,
}

impl Info {
    /// The outgoing stream as an event object, if the descriptor has one.
    pub(crate) fn tx(&self) -> Option<Obj<'_>> {
        (self.tx_key != 0).then(|| Obj {
            kind: ObjKind::Stream,
            key: self.tx_key,
            ident: &self.tx_ident[..self.tx_len as usize],
        })
    }

    /// The incoming stream as an event object.
    pub(crate) fn rx(&self) -> Option<Obj<'_>> {
        (self.rx_key != 0).then(|| Obj {
            kind: ObjKind::Stream,
            key: self.rx_key,
            ident: &self.rx_ident[..self.rx_len as usize],
        })
    }

    /// Finds the shared counters of both directions (once, after the keys are set): a hash
    /// and a probe of the shared table that every transfer would otherwise repeat.
    pub(crate) fn bind(&mut self, table: &'static Table) {
        let find = |key: u64| {
            (key != 0)
                .then(|| table.stream(key))
                .flatten()
                .map_or(core::ptr::null(), |s| s as *const StreamSlot)
        };
        self.tx_slot = find(self.tx_key);
        self.rx_slot = find(self.rx_key);
    }

    /// The shared counters of the outgoing stream.
    #[inline]
    pub(crate) fn tx_slot(&self) -> Option<&'static StreamSlot> {
        // SAFETY: null, or a slot of the shared table, which is never unmapped (see `tx_slot`).
        unsafe { self.tx_slot.as_ref() }
    }

    /// The shared counters of the incoming stream.
    #[inline]
    pub(crate) fn rx_slot(&self) -> Option<&'static StreamSlot> {
        // SAFETY: as in `tx_slot`.
        unsafe { self.rx_slot.as_ref() }
    }

    /// Whether byte offsets mean anything on this channel (not for files or terminals).
    #[inline]
    pub(crate) fn has_offsets(&self) -> bool {
        self.offsets
    }

    /// Whether readers order this channel's transfers by sequence number: where bytes have no
    /// positions, and on an eventfd, whose read takes every write made before it whatever the
    /// byte counts say. Byte streams are matched by offset alone.
    #[inline]
    pub(crate) fn needs_seq(&self) -> bool {
        !self.offsets || self.chan == ChanKind::Eventfd.code()
    }
}

/// Which side of a connection a socket is, when the hook that made it knows.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// Found later (inherited, or first seen at a read or write).
    Unknown,
    /// Made by `connect`.
    Client,
    /// Returned by `accept`.
    Server,
}

/// Fills a channel named by its two endpoints; `offsets` tells whether byte offsets mean anything
/// on it.
pub(crate) fn fill(
    info: &mut Info,
    kind: ChanKind,
    local: Endpoint,
    peer: Endpoint,
    offsets: bool,
) {
    let kind = kind.code();
    info.chan = kind;
    let (lo, hi) = if local.bytes() <= peer.bytes() {
        (local, peer)
    } else {
        (peer, local)
    };
    info.chan_key = stable_hash(&[&[kind], lo.bytes(), hi.bytes()]);
    info.offsets = offsets;
    info.tx_key = stable_hash(&[&[kind], local.bytes(), peer.bytes()]);
    info.rx_key = stable_hash(&[&[kind], peer.bytes(), local.bytes()]);
    set_idents(info, kind, &local, &peer);
}

/// Writes the identities of both directions (see the OBJECT record's STREAM identity).
fn set_idents(info: &mut Info, kind: u8, me: &Endpoint, peer: &Endpoint) {
    let encode = |dst: &mut [u8; IDENT], sender: &Endpoint, receiver: &Endpoint, chan_key: u64| {
        let mut e = Enc::new(dst);
        e.u8(kind);
        e.varint(chan_key);
        e.bytes(sender.bytes());
        e.bytes(receiver.bytes());
        if e.ok() {
            e.len() as u8
        } else {
            0
        }
    };
    let ck = info.chan_key;
    info.tx_len = encode(&mut info.tx_ident, me, peer, ck);
    info.rx_len = encode(&mut info.rx_ident, peer, me, ck);
}

/// Fills a channel of `kind` that has no stream identity.
pub(crate) fn none(info: &mut Info, kind: ChanKind) {
    let kind = kind.code();
    info.chan = kind;
    info.chan_key = 0;
    info.tx_key = 0;
    info.rx_key = 0;
    info.offsets = false;
}

/// Fills a connection named by one anchor endpoint that both ends know (a unix connection is
/// named by the connecting socket's inode: the accepting socket's inode does not exist until
/// accept, so the client cannot know it when it starts writing). `anchor_is_me` tells the side.
pub(crate) fn fill_anchored(
    info: &mut Info,
    kind: ChanKind,
    me: Endpoint,
    peer: Endpoint,
    anchor: Endpoint,
    anchor_is_me: bool,
) {
    let kind = kind.code();
    info.chan = kind;
    info.offsets = true;
    info.chan_key = stable_hash(&[&[kind], anchor.bytes()]);
    let fwd = stable_hash(&[&[kind], anchor.bytes(), b"fwd"]);
    let back = stable_hash(&[&[kind], anchor.bytes(), b"back"]);
    let (tx, rx) = if anchor_is_me {
        (fwd, back)
    } else {
        (back, fwd)
    };
    set_idents(info, kind, &me, &peer);
    info.tx_key = tx;
    info.rx_key = rx;
}

/// Fills a socket's identity (used by the socket module).
pub(crate) fn fill_socket(info: &mut Info, kind: ChanKind, local: Endpoint, peer: Endpoint) {
    if peer.is_none() {
        // Not connected: no stream both ends can agree on.
        none(info, kind);
        info.chan_key = stable_hash(&[&[kind.code()], local.bytes()]);
    } else {
        fill(info, kind, local, peer, true);
    }
}

/// Encodes a socket address as an endpoint.
pub(crate) fn sockaddr_endpoint(sa: &libc::sockaddr_storage, len: u32) -> Endpoint {
    match i32::from(sa.ss_family) {
        libc::AF_INET if len as usize >= core::mem::size_of::<libc::sockaddr_in>() => {
            // SAFETY: family and length say this is a sockaddr_in.
            let a = unsafe { &*(sa as *const _ as *const libc::sockaddr_in) };
            Endpoint::from(|e| {
                e.u8(ep::IPV4);
                e.bytes(&a.sin_addr.s_addr.to_ne_bytes());
                e.bytes(&a.sin_port.to_ne_bytes());
            })
        }
        libc::AF_INET6 if len as usize >= core::mem::size_of::<libc::sockaddr_in6>() => {
            // SAFETY: family and length say this is a sockaddr_in6.
            let a = unsafe { &*(sa as *const _ as *const libc::sockaddr_in6) };
            Endpoint::from(|e| {
                e.u8(ep::IPV6);
                e.bytes(&a.sin6_addr.s6_addr);
                e.bytes(&a.sin6_port.to_ne_bytes());
            })
        }
        _ => Endpoint::NONE,
    }
}

/// An ENDPOINT object for a listening address (what connect and accept meet at).
pub(crate) struct EndpointObj {
    key: u64,
    ident: [u8; 32],
    len: u8,
}

impl EndpointObj {
    /// Builds it from a channel kind and an endpoint.
    pub(crate) fn new(kind: ChanKind, ep: &Endpoint) -> EndpointObj {
        let kind = kind.code();
        let mut ident = [0u8; 32];
        let mut e = Enc::new(&mut ident);
        e.u8(kind);
        e.bytes(ep.bytes());
        let len = e.len() as u8;
        EndpointObj {
            key: stable_hash(&[&[kind], ep.bytes()]),
            ident,
            len,
        }
    }

    /// Replaces key and identity (for endpoints whose key covers more than the identity keeps).
    pub(crate) fn set(&mut self, key: u64, ident: &[u8]) {
        self.key = key;
        let n = ident.len().min(self.ident.len());
        self.ident[..n].copy_from_slice(&ident[..n]);
        self.len = n as u8;
    }

    /// As an event object.
    pub(crate) fn obj(&self) -> Obj<'_> {
        Obj {
            kind: ObjKind::Endpoint,
            key: self.key,
            ident: &self.ident[..self.len as usize],
        }
    }
}
