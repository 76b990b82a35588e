//! How a traced process gets its files: it asks `scalpel record`, which creates every file and
//! directory of a recording itself and hands back an open descriptor.
//!
//! Why: the trace belongs to the user who records (directories 0700, files 0600), yet a traced
//! server may switch to another user (Apache and nginx workers as `www-data`) before it starts
//! the threads it must record. A descriptor received over a unix socket works whoever the process
//! is now; a path would not, and a directory others could write would let them plant links.
//!
//! The recorder passes one end of a `SOCK_SEQPACKET` socket pair to the command, not close-on-exec,
//! and names it in [`ENV_BROKER`] as `<fd>,<recorder pid>`. Every request is one [`REQUEST_LEN`]
//! byte message on that socket. A request that wants an answer carries, as `SCM_RIGHTS`, one end of
//! a fresh socket pair; the recorder answers on it with one [`REPLY_LEN`] byte message and, on
//! success, the file's descriptor. Messages from many threads and processes never interleave
//! (sequenced packets), and each answer goes to the one thread that asked.
//!
//! Layout of a request (little endian): `kind:u8, 0:[u8;3], pid:u32, a:u32, 0:u32, b:u64`.
//! A reply: `status:u32` (0, or the errno of what failed), `value:u32`, `0:u64`.

/// Environment variable naming the broker socket: `<fd>,<recorder pid>`. The agent records nothing
/// without it (or when the descriptor is not that recorder's socket).
pub const ENV_BROKER: &str = "SCALPEL_BROKER";
/// Bytes in a request.
pub const REQUEST_LEN: usize = 24;
/// Bytes in a reply.
pub const REPLY_LEN: usize = 16;

/// What a process asks the recorder for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum RequestKind {
    /// The shared counter table, opened for reading and writing: a `memfd` sealed against
    /// shrinking and growing, whose loss counters the recorder writes to `shared.tbl` when the
    /// recording ends.
    Shared = 1,
    /// A new process directory `<pid>.<n>` and its `process.trace`: the reply's value is `n`, the
    /// incarnation that names the directory (exec keeps the pid).
    Process = 2,
    /// A new thread file in the directory of incarnation `a` of `pid`, for thread id `b`: the
    /// reply's value is the file's token, which later requests name it by.
    Thread = 3,
    /// The thread file with token `a` again (a thread closes its descriptor once its file is
    /// mapped and asks again when the mapping must move on).
    Reopen = 4,
    /// No answer wanted: the thread file with token `a` is finished and holds `b` bytes; the
    /// recorder trims the space reserved beyond them.
    Closed = 5,
    /// No answer wanted: process `pid` records nothing (it got no shared table it could map);
    /// the recorder counts it as a process without a directory.
    Unrecorded = 6,
}

impl RequestKind {
    /// The kind with this code, if any.
    pub fn from_code(c: u8) -> Option<Self> {
        Some(match c {
            1 => Self::Shared,
            2 => Self::Process,
            3 => Self::Thread,
            4 => Self::Reopen,
            5 => Self::Closed,
            6 => Self::Unrecorded,
            _ => return None,
        })
    }

    /// Whether the recorder answers this kind.
    pub fn wants_reply(self) -> bool {
        self != Self::Closed
    }
}

/// One request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    /// What is asked for.
    pub kind: RequestKind,
    /// The asking process.
    pub pid: u32,
    /// Incarnation or token, by kind.
    pub a: u32,
    /// Thread id or length, by kind.
    pub b: u64,
}

impl Request {
    /// The wire form.
    pub fn encode(&self) -> [u8; REQUEST_LEN] {
        let mut m = [0u8; REQUEST_LEN];
        m[0] = self.kind as u8;
        m[4..8].copy_from_slice(&self.pid.to_le_bytes());
        m[8..12].copy_from_slice(&self.a.to_le_bytes());
        m[16..24].copy_from_slice(&self.b.to_le_bytes());
        m
    }

    /// Reads a request; None for a wrong length or an unknown kind.
    pub fn decode(m: &[u8]) -> Option<Self> {
        let m: &[u8; REQUEST_LEN] = m.try_into().ok()?;
        let u32_at = |at: usize| u32::from_le_bytes([m[at], m[at + 1], m[at + 2], m[at + 3]]);
        let mut b = [0u8; 8];
        b.copy_from_slice(&m[16..24]);
        Some(Request {
            kind: RequestKind::from_code(m[0])?,
            pid: u32_at(4),
            a: u32_at(8),
            b: u64::from_le_bytes(b),
        })
    }
}

/// Encodes a reply.
pub fn encode_reply(status: u32, value: u32) -> [u8; REPLY_LEN] {
    let mut m = [0u8; REPLY_LEN];
    m[0..4].copy_from_slice(&status.to_le_bytes());
    m[4..8].copy_from_slice(&value.to_le_bytes());
    m
}

/// Reads a reply as `(status, value)`.
pub fn decode_reply(m: &[u8; REPLY_LEN]) -> (u32, u32) {
    (
        u32::from_le_bytes([m[0], m[1], m[2], m[3]]),
        u32::from_le_bytes([m[4], m[5], m[6], m[7]]),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_round_trip_and_junk_is_refused() {
        for kind in [
            RequestKind::Shared,
            RequestKind::Process,
            RequestKind::Thread,
            RequestKind::Reopen,
            RequestKind::Closed,
            RequestKind::Unrecorded,
        ] {
            let r = Request {
                kind,
                pid: 4242,
                a: u32::MAX,
                b: u64::MAX - 1,
            };
            assert_eq!(Request::decode(&r.encode()), Some(r));
        }
        assert_eq!(Request::decode(&[0u8; REQUEST_LEN]), None);
        assert_eq!(Request::decode(&[1u8; REQUEST_LEN - 1]), None);
        assert_eq!(decode_reply(&encode_reply(13, 7)), (13, 7));
    }
}
