//! `scalpel dump` prints recorded stacks symbolized through the process's module map: a trace
//! whose map is this test's own `/proc/self/maps` and whose stack holds addresses inside this
//! test's functions must come out with those functions' names, innermost first.

use scalpel::inspect::{dump, DumpOptions};
use scalpel_model::format::Op;
use scalpel_model::read::{read_dir, Header};
use scalpel_model::record::RawEvent;
use scalpel_model::write::TraceWriter;

#[inline(never)]
fn recv_packet_for_test() -> u64 {
    std::hint::black_box(1)
}

#[inline(never)]
fn session_loop_for_test() -> u64 {
    std::hint::black_box(2)
}

#[test]
fn dump_symbolizes_stacks() {
    assert_eq!(recv_packet_for_test() + session_loop_for_test(), 3);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("7.0");
    std::fs::create_dir_all(&dir).unwrap();
    let maps = std::fs::read("/proc/self/maps").unwrap();
    let mut p = TraceWriter::new(Header::process(7));
    p.maps(0, &maps);
    p.write_to(dir.join("process.trace")).unwrap();
    // Return addresses: one byte into each function (the listing looks up address - 1).
    let inner = recv_packet_for_test as *const () as u64 + 1;
    let outer = session_loop_for_test as *const () as u64 + 1;
    let mut t = TraceWriter::new(Header::thread(7, 7));
    t.stack(3, &[inner, outer, 8]).event(&RawEvent {
        op: Op::MutexLock as u8,
        result: Some(0),
        stack: Some(3),
        ..RawEvent::default()
    });
    t.write_to(dir.join("t7.trace")).unwrap();

    let trace = read_dir(tmp.path()).unwrap();
    let mut out = Vec::new();
    dump(&trace, &DumpOptions::default(), &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.trim_start().starts_with("at "))
        .collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(lines[0].contains("recv_packet_for_test"), "{text}");
    assert!(lines[1].contains("session_loop_for_test"), "{text}");
    assert!(lines[0].contains("stacks.rs:"), "file and line: {text}");
    assert!(
        lines[2].contains("[0x7]"),
        "unmapped address kept as an address: {text}"
    );

    let mut out = Vec::new();
    let opts = DumpOptions {
        stacks: false,
        ..DumpOptions::default()
    };
    dump(&trace, &opts, &mut out).unwrap();
    assert!(!String::from_utf8(out).unwrap().contains(" at "));
}
