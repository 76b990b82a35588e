//! The agent's side of the broker protocol (`scalpel_format::broker`): every file this process
//! records into is created by `scalpel record` and received here as a descriptor, so the process
//! opens no path in the trace directory and may switch user at will.
//!
//! Raw system calls only: this runs inside hooks (a thread's first call, a fork child, a window
//! that must move on), where nothing may allocate, lock or touch `errno`.

use core::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};

use scalpel_format::broker::{decode_reply, Request, RequestKind, REPLY_LEN};

use crate::sys;

/// The broker socket, or -1 when recording is off.
static SOCK: AtomicI32 = AtomicI32::new(-1);
/// The recorder's pid, named in `SCALPEL_BROKER` with the socket's number.
static RECORDER: AtomicU32 = AtomicU32::new(0);
/// Its inode, checked before each use: a host that closed the descriptor with a raw system call
/// may have a socket of its own under that number, which must never receive our requests.
static SOCK_INO: AtomicU64 = AtomicU64::new(0);
/// How long a thread waits for the recorder's answer before it gives up recording (seconds).
const ANSWER_TIMEOUT_S: i64 = 10;

/// Takes the socket named by `SCALPEL_BROKER`'s value `<fd>,<recorder pid>`, if the descriptor is
/// a unix sequenced-packet socket whose peer is that recorder. False turns recording off.
pub(crate) fn connect(value: &[u8]) -> bool {
    let mut parts = value.splitn(2, |&b| b == b',');
    let (Some(fd), Some(pid)) = (parts.next().and_then(parse), parts.next().and_then(parse)) else {
        return false;
    };
    let Ok(fd) = i32::try_from(fd) else {
        return false;
    };
    if !is_socket_of(fd, pid) {
        return false;
    }
    // SAFETY: zeroed is a valid stat.
    let mut st: libc::stat = unsafe { core::mem::zeroed() };
    if sys::fstat(fd, &mut st) < 0 {
        return false;
    }
    SOCK_INO.store(st.st_ino, Ordering::Relaxed);
    RECORDER.store(u32::try_from(pid).unwrap_or(0), Ordering::Relaxed);
    SOCK.store(fd, Ordering::Release);
    crate::agentfd::keep_broker(fd);
    true
}

/// The host is about to make `fd` a copy of another descriptor (`dup2`, `dup3`): when that is
/// the broker socket's number, the socket moves to a free number first, so the host gets its way
/// and the process keeps its recording (a program that `dup2`s over every descriptor would
/// otherwise leave its later threads without files).
pub(crate) fn make_way(fd: i32) {
    let cur = SOCK.load(Ordering::Acquire);
    if fd < 0 || fd != cur {
        return;
    }
    // Not close-on-exec: children and exec'd images still find it (through `env_var`).
    let moved = sys::sys(
        libc::SYS_fcntl,
        cur as usize,
        libc::F_DUPFD as usize,
        cur as usize + 1,
    );
    if let Ok(moved) = i32::try_from(moved) {
        if moved >= 0 {
            crate::agentfd::keep_broker(moved);
            SOCK.store(moved, Ordering::Release);
        }
    }
}

/// `SCALPEL_BROKER=<fd>,<pid>` for an exec'd image, with the socket's current number; None when
/// recording is off.
pub(crate) fn env_var(out: &mut sys::PathBuf<64>) -> Option<&[u8]> {
    let fd = u64::try_from(SOCK.load(Ordering::Acquire)).ok()?;
    out.push(b"SCALPEL_BROKER=")
        .push_u64(fd)
        .push(b",")
        .push_u64(u64::from(RECORDER.load(Ordering::Relaxed)));
    out.c_bytes()
}

/// Whether a `SCALPEL_BROKER` value names a recorder other than ours (a nested recording).
pub(crate) fn names_another_recorder(value: &[u8]) -> bool {
    let ours = u64::from(RECORDER.load(Ordering::Relaxed));
    let pid = value
        .iter()
        .position(|&b| b == b',')
        .and_then(|at| parse(&value[at + 1..]));
    pid.is_some_and(|p| ours != 0 && p != ours)
}

fn parse(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 10 || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(s.iter().fold(0u64, |v, &d| v * 10 + u64::from(d - b'0')))
}

fn sockopt(fd: i32, opt: i32, out: &mut [u8]) -> bool {
    let mut len = out.len() as u32;
    sys::syscall6(
        libc::SYS_getsockopt,
        [
            fd as usize,
            libc::SOL_SOCKET as usize,
            opt as usize,
            out.as_mut_ptr() as usize,
            core::ptr::addr_of_mut!(len) as usize,
            0,
        ],
    ) == 0
        && len as usize == out.len()
}

fn is_socket_of(fd: i32, pid: u64) -> bool {
    let mut v = [0u8; 4];
    if !sockopt(fd, libc::SO_DOMAIN, &mut v) || i32::from_ne_bytes(v) != libc::AF_UNIX {
        return false;
    }
    if !sockopt(fd, libc::SO_TYPE, &mut v) || i32::from_ne_bytes(v) != libc::SOCK_SEQPACKET {
        return false;
    }
    // struct ucred: pid, uid, gid (three i32).
    let mut cred = [0u8; 12];
    sockopt(fd, libc::SO_PEERCRED, &mut cred)
        && u64::from(u32::from_ne_bytes([cred[0], cred[1], cred[2], cred[3]])) == pid
}

/// The broker socket if it is still the one we were given.
fn socket() -> Option<i32> {
    let fd = SOCK.load(Ordering::Acquire);
    if fd < 0 {
        return None;
    }
    // SAFETY: zeroed is a valid stat.
    let mut st: libc::stat = unsafe { core::mem::zeroed() };
    (sys::fstat(fd, &mut st) == 0 && st.st_ino == SOCK_INO.load(Ordering::Relaxed)).then_some(fd)
}

/// Room for one control message carrying one descriptor, aligned for `cmsghdr`.
#[repr(C, align(8))]
struct Control([u8; 32]);

const CMSG_HDR: usize = core::mem::size_of::<libc::cmsghdr>();

/// Sends `msg` on `sock`, with `fd` attached when it is not negative. When the recorder is behind
/// and the socket full, waits for room up to the answer timeout if `patient`, else gives up.
fn send(sock: i32, msg: &[u8], fd: i32, patient: bool) -> bool {
    let deadline = sys::clock_ns(libc::CLOCK_MONOTONIC) + ANSWER_TIMEOUT_S as u64 * 1_000_000_000;
    let mut iov = libc::iovec {
        iov_base: msg.as_ptr() as *mut libc::c_void,
        iov_len: msg.len(),
    };
    let mut control = Control([0; 32]);
    // SAFETY: zeroed is a valid msghdr (null pointers, zero lengths).
    let mut hdr: libc::msghdr = unsafe { core::mem::zeroed() };
    hdr.msg_iov = &mut iov;
    hdr.msg_iovlen = 1;
    if fd >= 0 {
        let c = libc::cmsghdr {
            cmsg_len: CMSG_HDR + 4,
            cmsg_level: libc::SOL_SOCKET,
            cmsg_type: libc::SCM_RIGHTS,
        };
        // SAFETY: the buffer is 8-aligned and holds a cmsghdr plus 4 bytes of data.
        unsafe { core::ptr::write(control.0.as_mut_ptr() as *mut libc::cmsghdr, c) };
        control.0[CMSG_HDR..CMSG_HDR + 4].copy_from_slice(&fd.to_ne_bytes());
        hdr.msg_control = control.0.as_mut_ptr().cast();
        hdr.msg_controllen = CMSG_HDR + 8;
    }
    loop {
        let r = sys::sys(
            libc::SYS_sendmsg,
            sock as usize,
            core::ptr::addr_of!(hdr) as usize,
            (libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT) as usize,
        );
        if r == -(libc::EINTR as isize) {
            continue;
        }
        if r == -(libc::EAGAIN as isize)
            && patient
            && sys::clock_ns(libc::CLOCK_MONOTONIC) < deadline
        {
            sys::sched_yield();
            continue;
        }
        return r == msg.len() as isize;
    }
}

/// Receives one reply on `sock`: `(status, value, descriptor or -1)`.
fn receive(sock: i32) -> Option<(u32, u32, i32)> {
    let mut reply = [0u8; REPLY_LEN];
    let mut iov = libc::iovec {
        iov_base: reply.as_mut_ptr().cast(),
        iov_len: REPLY_LEN,
    };
    let mut control = Control([0; 32]);
    // SAFETY: zeroed is a valid msghdr.
    let mut hdr: libc::msghdr = unsafe { core::mem::zeroed() };
    hdr.msg_iov = &mut iov;
    hdr.msg_iovlen = 1;
    hdr.msg_control = control.0.as_mut_ptr().cast();
    hdr.msg_controllen = control.0.len();
    let r = loop {
        let r = sys::sys(
            libc::SYS_recvmsg,
            sock as usize,
            core::ptr::addr_of_mut!(hdr) as usize,
            libc::MSG_CMSG_CLOEXEC as usize,
        );
        if r != -(libc::EINTR as isize) {
            break r;
        }
    };
    // Any descriptor that came is ours to close if the reply is not used.
    let mut fd = -1;
    if hdr.msg_controllen >= CMSG_HDR + 4 {
        // SAFETY: the kernel wrote a cmsghdr at the start of the 8-aligned buffer.
        let c = unsafe { core::ptr::read(control.0.as_ptr() as *const libc::cmsghdr) };
        if c.cmsg_level == libc::SOL_SOCKET && c.cmsg_type == libc::SCM_RIGHTS {
            let n = (c.cmsg_len.saturating_sub(CMSG_HDR) / 4).min(4);
            for i in 0..n {
                let at = CMSG_HDR + 4 * i;
                let mut b = [0u8; 4];
                b.copy_from_slice(&control.0[at..at + 4]);
                let got = i32::from_ne_bytes(b);
                if fd < 0 {
                    fd = got;
                } else {
                    sys::close(got);
                }
            }
        }
    }
    // With no descriptor free, the kernel drops the one that came (MSG_CTRUNC) and delivers the
    // reply alone: the caller may ask again for the same file by its token.
    if r != REPLY_LEN as isize {
        if fd >= 0 {
            sys::close(fd);
        }
        return None;
    }
    let (status, value) = decode_reply(&reply);
    Some((status, value, fd))
}

/// How many of this process's threads are asking the recorder right now, each holding a few
/// descriptors for a moment (the reply's socket pair, then the file's).
static ASKING: AtomicU32 = AtomicU32::new(0);
/// How long a thread waits for descriptors the process's other asking threads hold.
const ASKING_PATIENCE_NS: u64 = 100_000_000;

/// Asks the recorder for a file: its descriptor (close-on-exec) and the reply's value, or None
/// when the recorder is gone, refused, did not answer in time, or the process has no descriptor
/// free.
///
/// A full descriptor table is waited for only while other threads of the process are asking
/// too: the descriptors they hold come back within microseconds (threads starting together
/// under a tight limit). A table the host itself filled is never waited for: the thread goes
/// unrecorded at once (counted by the caller), where a wait would cost a host at its limit
/// (`ulimit -n`) a pause at every thread start.
pub(crate) fn ask(req: &Request) -> Option<(i32, u32)> {
    ASKING.fetch_add(1, Ordering::AcqRel);
    let got = ask_counted(req);
    ASKING.fetch_sub(1, Ordering::AcqRel);
    got
}

fn ask_counted(req: &Request) -> Option<(i32, u32)> {
    let give_up = sys::clock_ns(libc::CLOCK_MONOTONIC) + ASKING_PATIENCE_NS;
    let (status, value, fd) = ask_once(req, give_up)?;
    if status != 0 {
        if fd >= 0 {
            sys::close(fd);
        }
        return None;
    }
    if fd >= 0 {
        return Some((fd, value));
    }
    // The file was made but its descriptor found no free slot: ask for it again by its token
    // while other threads of the process give theirs back.
    let token = match req.kind {
        RequestKind::Thread => value,
        RequestKind::Reopen => req.a,
        _ => return None,
    };
    let again = Request {
        kind: RequestKind::Reopen,
        pid: req.pid,
        a: token,
        b: 0,
    };
    loop {
        match ask_once(&again, give_up)? {
            (0, _, fd) if fd >= 0 => return Some((fd, value)),
            (0, _, _) if others_asking(give_up) => sys::sched_yield(),
            (_, _, fd) => {
                if fd >= 0 {
                    sys::close(fd);
                }
                return None;
            }
        }
    }
}

/// Whether a thread short of descriptors may wait: other threads of the process are asking
/// (and hold descriptors they will soon give back), and `give_up` has not passed.
fn others_asking(give_up: u64) -> bool {
    ASKING.load(Ordering::Acquire) > 1 && sys::clock_ns(libc::CLOCK_MONOTONIC) < give_up
}

/// One request and its reply: `(status, value, descriptor or -1)`.
fn ask_once(req: &Request, give_up: u64) -> Option<(u32, u32, i32)> {
    let sock = socket()?;
    let mut pair = [-1i32; 2];
    loop {
        let r = sys::syscall6(
            libc::SYS_socketpair,
            [
                libc::AF_UNIX as usize,
                (libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC) as usize,
                0,
                pair.as_mut_ptr() as usize,
                0,
                0,
            ],
        );
        if r == 0 {
            break;
        }
        if r != -(libc::EMFILE as isize) || !others_asking(give_up) {
            return None;
        }
        sys::sched_yield();
    }
    let timeout = libc::timeval {
        tv_sec: ANSWER_TIMEOUT_S,
        tv_usec: 0,
    };
    sys::syscall6(
        libc::SYS_setsockopt,
        [
            pair[0] as usize,
            libc::SOL_SOCKET as usize,
            libc::SO_RCVTIMEO as usize,
            core::ptr::addr_of!(timeout) as usize,
            core::mem::size_of::<libc::timeval>(),
            0,
        ],
    );
    let sent = send(sock, &req.encode(), pair[1], true);
    sys::close(pair[1]);
    let got = if sent { receive(pair[0]) } else { None };
    sys::close(pair[0]);
    got
}

/// Tells the recorder something that needs no answer; lost if the recorder is gone.
pub(crate) fn tell(req: &Request) {
    if let Some(sock) = socket() {
        send(sock, &req.encode(), -1, false);
    }
}
