//! Socket identities: addresses of inet sockets, and for unix sockets the peer's inode, read
//! from the kernel's sock_diag netlink interface (there is no getsockopt for it).

use scalpel_format::format::{ep, ChanKind};
use scalpel_format::record::stable_hash;
use scalpel_format::wire::Enc;

use crate::channel::{self, Endpoint, EndpointObj, Info, Role};
use crate::sys;

fn getsockopt_int(fd: i32, opt: i32) -> Option<i32> {
    let mut v: i32 = 0;
    let mut len: u32 = 4;
    let r = sys::syscall6(
        libc::SYS_getsockopt,
        [
            fd as usize,
            libc::SOL_SOCKET as usize,
            opt as usize,
            &mut v as *mut i32 as usize,
            &mut len as *mut u32 as usize,
            0,
        ],
    );
    (r == 0).then_some(v)
}

/// `getsockname` (peer = false) or `getpeername` (peer = true).
pub(crate) fn name(fd: i32, peer: bool) -> Option<(libc::sockaddr_storage, u32)> {
    // SAFETY: zeroed is a valid sockaddr_storage.
    let mut sa: libc::sockaddr_storage = unsafe { core::mem::zeroed() };
    let mut len = core::mem::size_of::<libc::sockaddr_storage>() as u32;
    let nr = if peer {
        libc::SYS_getpeername
    } else {
        libc::SYS_getsockname
    };
    let r = sys::sys(
        nr,
        fd as usize,
        &mut sa as *mut _ as usize,
        &mut len as *mut u32 as usize,
    );
    (r == 0).then_some((sa, len))
}

/// Fills `info` for a socket descriptor.
pub(crate) fn resolve(fd: i32, st: &libc::stat, role: Role, info: &mut Info) {
    let me = Endpoint::inode(st.st_dev, st.st_ino);
    let domain = getsockopt_int(fd, libc::SO_DOMAIN).unwrap_or(-1);
    let ty = getsockopt_int(fd, libc::SO_TYPE).unwrap_or(-1);
    match domain {
        libc::AF_INET | libc::AF_INET6 => {
            let kind = if ty == libc::SOCK_STREAM {
                ChanKind::Tcp
            } else {
                ChanKind::Udp
            };
            let local = name(fd, false)
                .map_or(Endpoint::NONE, |(sa, l)| channel::sockaddr_endpoint(&sa, l));
            let peer =
                name(fd, true).map_or(Endpoint::NONE, |(sa, l)| channel::sockaddr_endpoint(&sa, l));
            channel::fill_socket(info, kind, local, peer);
        }
        libc::AF_UNIX => {
            // Both socket inodes live on the same sockfs device.
            let peer = unix_peer_inode(st.st_ino).filter(|&p| p != 0);
            let peer_ep = peer.map_or(Endpoint::NONE, |p| Endpoint::inode(st.st_dev, p));
            let (anchor, anchor_is_me) = match (role, peer) {
                (Role::Server, Some(p)) => (p, false),
                (Role::Client, _) | (Role::Server, None) => (st.st_ino, true),
                (Role::Unknown, Some(p)) => (st.st_ino.min(p), st.st_ino <= p),
                (Role::Unknown, None) => {
                    return channel::fill_socket(info, ChanKind::Unix, me, Endpoint::NONE)
                }
            };
            let anchor = Endpoint::inode(st.st_dev, anchor);
            channel::fill_anchored(info, ChanKind::Unix, me, peer_ep, anchor, anchor_is_me);
        }
        _ => channel::fill_socket(info, ChanKind::Other, me, Endpoint::NONE),
    }
}

/// The ENDPOINT object a `connect` to `addr` meets an `accept` at.
pub(crate) fn connect_endpoint(addr: *const libc::sockaddr, len: u32) -> Option<EndpointObj> {
    if addr.is_null() || len < 2 {
        return None;
    }
    // SAFETY: zeroed is a valid sockaddr_storage.
    let mut sa: libc::sockaddr_storage = unsafe { core::mem::zeroed() };
    let n = (len as usize).min(core::mem::size_of::<libc::sockaddr_storage>());
    // The address has not been checked by the kernel yet: copy it with a system call, which
    // fails with EFAULT where a plain read of a bad pointer would crash the host.
    let local = libc::iovec {
        iov_base: (&mut sa as *mut libc::sockaddr_storage).cast(),
        iov_len: n,
    };
    let remote = libc::iovec {
        iov_base: addr as *mut libc::c_void,
        iov_len: n,
    };
    let pid = sys::getpid() as usize;
    let r = sys::syscall6(
        libc::SYS_process_vm_readv,
        [
            pid,
            &local as *const libc::iovec as usize,
            1,
            &remote as *const libc::iovec as usize,
            1,
            0,
        ],
    );
    if r != n as isize {
        return None;
    }
    endpoint_of(&sa, n as u32, ChanKind::Tcp)
}

/// The ENDPOINT object of an accepted socket: its local address, the one clients connected to.
pub(crate) fn accept_endpoint(newfd: i32) -> Option<EndpointObj> {
    let (sa, len) = name(newfd, false)?;
    endpoint_of(&sa, len, ChanKind::Tcp)
}

fn endpoint_of(sa: &libc::sockaddr_storage, len: u32, inet_kind: ChanKind) -> Option<EndpointObj> {
    if i32::from(sa.ss_family) == libc::AF_UNIX {
        let off = core::mem::size_of::<libc::sa_family_t>();
        let plen = (len as usize).saturating_sub(off);
        // SAFETY: sockaddr_un's path starts right after the family field, within the storage.
        let path = unsafe {
            core::slice::from_raw_parts((sa as *const _ as *const u8).add(off), plen.min(108))
        };
        let path = match path.iter().skip(1).position(|&b| b == 0) {
            Some(p) if path.first() != Some(&0) => &path[..p + 1],
            _ => path,
        };
        return Some(path_endpoint(path));
    }
    let e = channel::sockaddr_endpoint(sa, len);
    (e.bytes()[0] != ep::NONE).then(|| EndpointObj::new(inet_kind, &e))
}

fn path_endpoint(path: &[u8]) -> EndpointObj {
    let mut buf = [0u8; 24];
    let mut e = Enc::new(&mut buf);
    e.u8(ChanKind::Unix.code());
    e.u8(ep::PATH);
    let keep = path.len().min(20);
    e.varint(keep as u64);
    e.bytes(&path[..keep]);
    let n = e.len();
    let mut o = EndpointObj::new(ChanKind::Unix, &Endpoint::NONE);
    // The key hashes the whole path; the identity keeps its first 20 bytes.
    o.set(
        stable_hash(&[&[ChanKind::Unix.code(), ep::PATH], path]),
        &buf[..n],
    );
    o
}

/// The inode of the socket connected to the unix socket with inode `ino`.
fn unix_peer_inode(ino: u64) -> Option<u64> {
    const SOCK_DIAG_BY_FAMILY: u16 = 20;
    const UDIAG_SHOW_PEER: u32 = 4;
    const UNIX_DIAG_PEER: u16 = 2;
    let s = sys::sys(
        libc::SYS_socket,
        libc::AF_NETLINK as usize,
        (libc::SOCK_DGRAM | libc::SOCK_CLOEXEC) as usize,
        4, /* NETLINK_SOCK_DIAG */
    );
    if s < 0 {
        return None;
    }
    let s = s as i32;
    // nlmsghdr (16) + unix_diag_req (24)
    let mut req = [0u8; 40];
    req[0..4].copy_from_slice(&40u32.to_ne_bytes());
    req[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    req[6..8].copy_from_slice(&(libc::NLM_F_REQUEST as u16).to_ne_bytes());
    req[16] = libc::AF_UNIX as u8; // sdiag_family
    req[20..24].copy_from_slice(&u32::MAX.to_ne_bytes()); // udiag_states: all
    req[24..28].copy_from_slice(&(ino as u32).to_ne_bytes());
    req[28..32].copy_from_slice(&UDIAG_SHOW_PEER.to_ne_bytes());
    req[32..40].copy_from_slice(&[0xff; 8]); // no cookie
    let mut out = None;
    if sys::syscall6(
        libc::SYS_sendto,
        [s as usize, req.as_ptr() as usize, req.len(), 0, 0, 0],
    ) == 40
    {
        let mut resp = [0u8; 512];
        let n = sys::syscall6(
            libc::SYS_recvfrom,
            [s as usize, resp.as_mut_ptr() as usize, resp.len(), 0, 0, 0],
        );
        if n >= 32 {
            out = parse_peer(&resp[..n as usize], UNIX_DIAG_PEER);
        }
    }
    sys::close(s);
    out
}

fn parse_peer(resp: &[u8], attr: u16) -> Option<u64> {
    let msg_len = u32::from_ne_bytes(resp.get(0..4)?.try_into().ok()?) as usize;
    let ty = u16::from_ne_bytes(resp.get(4..6)?.try_into().ok()?);
    if ty == libc::NLMSG_ERROR as u16 {
        return None;
    }
    // unix_diag_msg is 16 bytes after the 16-byte nlmsghdr; attributes follow.
    let mut at = 32;
    let end = msg_len.min(resp.len());
    while at + 4 <= end {
        let len = u16::from_ne_bytes(resp.get(at..at + 2)?.try_into().ok()?) as usize;
        let kind = u16::from_ne_bytes(resp.get(at + 2..at + 4)?.try_into().ok()?);
        if len < 4 {
            return None;
        }
        if kind == attr && len >= 8 {
            return Some(u64::from(u32::from_ne_bytes(
                resp.get(at + 4..at + 8)?.try_into().ok()?,
            )));
        }
        at += (len + 3) & !3;
    }
    None
}
