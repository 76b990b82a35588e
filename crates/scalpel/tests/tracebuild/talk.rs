//! Two machines talking over one TCP connection, written call by call with clocks known
//! exactly: machine A a client, machine B a server.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use scalpel_model::format::{ChanKind, ObjKind, Op};
use scalpel_model::read::{Endpoint, HostIdentity, Identity};

use super::{write, Call, Thread};

/// A connection's key, and its two directions' after it (the agent derives them from the
/// addresses; any distinct numbers do here, the same on both machines).
pub(crate) const CONN: u64 = 0xc000;
pub(crate) const TO_B: u64 = 1;
pub(crate) const TO_A: u64 = 2;

pub(crate) fn addr(s: &str) -> Endpoint {
    Endpoint::Inet(s.parse::<SocketAddr>().unwrap())
}

/// Direction `key` of connection `conn`, from one address to another: its key and identity.
pub(crate) fn stream(conn: u64, key: u64, from: &str, to: &str) -> (u64, Identity) {
    let id = Identity::Stream {
        chan: ChanKind::Tcp.code(),
        channel_key: conn,
        sender: addr(from),
        receiver: addr(to),
    };
    (key, id)
}

/// A transfer of `bytes` at `offset` on direction `key`.
pub(crate) fn transfer(
    at: u64,
    dur: u64,
    op: Op,
    (key, id): (u64, Identity),
    offset: u64,
    bytes: i64,
) -> Call {
    Call {
        obj: Some((ObjKind::Stream, key, id)),
        offset: Some(offset),
        result: bytes,
        ..Call::new(at, dur, op)
    }
}

/// A machine's clock against true time: it reads `ahead_ns` more at true time 0 and runs
/// `ppm` parts per million fast.
#[derive(Clone, Copy)]
pub(crate) struct Clock {
    pub(crate) ahead_ns: i64,
    pub(crate) ppm: f64,
}

impl Clock {
    /// True time.
    pub(crate) const TRUE: Clock = Clock {
        ahead_ns: 0,
        ppm: 0.0,
    };

    pub(crate) fn at(self, t: u64) -> u64 {
        (t as f64 * (1.0 + self.ppm * 1e-6) + self.ahead_ns as f64).round() as u64
    }
}

pub(crate) const A_ADDR: &str = "10.0.0.1:40000";
pub(crate) const B_ADDR: &str = "10.0.0.2:80";

/// Machine A (a client) and machine B (a server) talking on connection `conn` for `secs`
/// seconds of true time, a request and its answer every 100 ms, 20 µs each way: their two
/// trace directories.
pub(crate) fn talk(root: &Path, a: Clock, b: Clock, secs: u64, conn: u64) -> (PathBuf, PathBuf) {
    talk_between(root, (a, b), secs, conn, (A_ADDR, B_ADDR))
}

/// [`talk`], A at address `ends.0` and B at `ends.1`.
pub(crate) fn talk_between(
    root: &Path,
    (a, b): (Clock, Clock),
    secs: u64,
    conn: u64,
    (a_addr, b_addr): (&str, &str),
) -> (PathBuf, PathBuf) {
    let to_b = || stream(conn, conn + TO_B, a_addr, b_addr);
    let to_a = || stream(conn, conn + TO_A, b_addr, a_addr);
    let t0 = 10_000_000_000u64;
    let mut client = Thread::new(100, 100);
    let mut server = Thread::new(200, 200);
    client.call(Call {
        aux: Some(conn),
        ..Call::new(a.at(t0), 1_000, Op::Connect)
    });
    server.call(Call {
        aux: Some(conn),
        ..Call::new(b.at(t0) + 10_000, 1_000, Op::Accept)
    });
    for i in 0..secs * 10 {
        let t = t0 + 1_000_000 + i * 100_000_000;
        let off = i * 64;
        client.call(transfer(a.at(t), 2_000, Op::Write, to_b(), off, 64));
        // The server's read returns 20 µs after the write began; it answers 50 µs later.
        server.call(transfer(b.at(t + 19_000), 1_000, Op::Read, to_b(), off, 64));
        server.call(transfer(
            b.at(t + 70_000),
            2_000,
            Op::Write,
            to_a(),
            off,
            64,
        ));
        client.call(transfer(a.at(t + 89_000), 1_000, Op::Read, to_a(), off, 64));
    }
    let (da, db) = (root.join("a"), root.join("b"));
    for (dir, thread, clock, name) in [(&da, client, a, "a"), (&db, server, b, "b")] {
        let mut thread = thread;
        let h = thread.header();
        h.mono0 = clock.at(t0 - 1_000_000);
        // The wall clocks agree: both read true time plus the epoch.
        h.realtime0 = t0 - 1_000_000 + 1_700_000_000_000_000_000;
        write(dir, vec![thread]);
        host_file(dir, name, 0);
    }
    (da, db)
}

/// Writes `dir`'s `host.id`: machine `name`, in network namespace `net`.
pub(crate) fn host_file(dir: &Path, name: &str, net: u64) {
    let id = HostIdentity {
        hostname: name.into(),
        boot_id: format!("boot-of-{name}"),
        net_ns: 4026531000 + net,
        time_ns: 4026532000,
    };
    std::fs::write(dir.join("host.id"), id.render()).unwrap();
}
