//! A small trace directory built with the model's writer, shared by the tests.

use std::fs;
use std::path::Path;

use scalpel_model::format::{ChanKind, ObjKind, Op};
use scalpel_model::read::{Endpoint, Header, Identity};
use scalpel_model::record::RawEvent;
use scalpel_model::write::TraceWriter;

fn ev(op: Op, dt: u64) -> RawEvent {
    RawEvent {
        op: op as u8,
        dt,
        ..RawEvent::default()
    }
}

fn thread(pid: u32, tid: u32, name: &str) -> TraceWriter {
    let mut h = Header::thread(pid, tid);
    h.clock0 = 1_000_000;
    h.thread_name = name.as_bytes().to_vec();
    h.exe = b"/bin/prog".to_vec();
    TraceWriter::new(h)
}

/// Writes the fixture into `root`:
/// - process 100 (`/bin/prog a b`), threads 100 "main" and 101 "worker" sharing a mutex and a
///   TCP stream;
/// - process 200 with thread 200 whose file is cut in the middle of its second event.
pub(crate) fn build(root: &Path) {
    let p = root.join("100.0");
    fs::create_dir_all(&p).unwrap();
    fs::write(root.join("shared.tbl"), [0u8; 64]).unwrap();
    let mut w = TraceWriter::new(Header::process(100));
    w.cmdline(&["/bin/prog", "a", "b"]).exe(b"/bin/prog");
    w.write_to(p.join("process.trace")).unwrap();

    let tcp = Identity::Stream {
        chan: ChanKind::Tcp.code(),
        channel_key: 7,
        sender: Endpoint::Inet("127.0.0.1:5000".parse().unwrap()),
        receiver: Endpoint::Inet("127.0.0.1:41234".parse().unwrap()),
    };
    let mut w = thread(100, 100, "main");
    w.object(1, ObjKind::Mutex.code(), 0x1000, &Identity::None)
        .object(2, ObjKind::Stream.code(), 0xabc, &tcp)
        .event(&RawEvent {
            obj: Some(1),
            seq_delta: Some(1),
            result: Some(0),
            dur: 40,
            ..ev(Op::MutexLock, 0)
        })
        .event(&RawEvent {
            obj: Some(2),
            seq_delta: Some(1),
            result: Some(5),
            fd: Some(3),
            offset: Some(0),
            ..ev(Op::Write, 500)
        })
        .event(&RawEvent {
            op: 250,
            ..ev(Op::Close, 1000)
        });
    w.write_to(p.join("t100.trace")).unwrap();

    let mut w = thread(100, 101, "worker");
    w.object(1, ObjKind::Mutex.code(), 0x1000, &Identity::None)
        .object(2, ObjKind::Stream.code(), 0xabc, &tcp)
        .event(&RawEvent {
            obj: Some(1),
            seq_delta: Some(2),
            ..ev(Op::MutexUnlock, 1200)
        })
        .event(&RawEvent {
            obj: Some(2),
            seq_delta: Some(1),
            result: Some(-11),
            fd: Some(4),
            ..ev(Op::Read, 100)
        });
    w.write_to(p.join("t101.trace")).unwrap();

    let p = root.join("200.0");
    fs::create_dir_all(&p).unwrap();
    let mut w = thread(200, 200, "other");
    w.event(&ev(Op::Sleep, 300)).event(&ev(Op::Sleep, 300));
    let mut bytes = w.to_bytes();
    bytes.truncate(bytes.len() - 2);
    fs::write(p.join("t200.trace"), bytes).unwrap();
}
