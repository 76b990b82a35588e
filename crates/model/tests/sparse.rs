//! A planted sparse file claiming gigabytes: the reader streams through it, so its memory follows
//! the records it holds, not the size the file claims (it read whole files: a sparse 8 GiB
//! `t4242.trace` made `summary` use 8.4 GB). Alone in its test binary, so the process's peak
//! resident size is this test's.

use scalpel_model::format::{hdr, Op};
use scalpel_model::read::{read_file, Header};
use scalpel_model::record::RawEvent;
use scalpel_model::write::TraceWriter;

/// Peak resident set of this process, in KiB (from /proc/self/status).
fn peak_kib() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    s.lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[test]
fn a_sparse_file_of_gigabytes_is_read_in_little_memory() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("t4242.trace");
    let mut w = TraceWriter::new(Header::thread(4242, 4242));
    for dt in 0..100 {
        w.event(&RawEvent {
            op: Op::MutexLock as u8,
            dt,
            ..RawEvent::default()
        });
    }
    let mut bytes = w.to_bytes();
    // The committed length claims far more than the file holds.
    bytes[hdr::COMMITTED..hdr::COMMITTED + 8].copy_from_slice(&u64::MAX.to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(8 << 30).unwrap();
    drop(f);
    let before = peak_kib();
    let t = read_file(&path).unwrap();
    let grew = peak_kib().saturating_sub(before);
    assert_eq!(t.events.len(), 100, "every record before the zeros is kept");
    assert!(
        t.warnings
            .iter()
            .any(|w| w.to_string().contains("runs past the end")),
        "{:?}",
        t.warnings
    );
    assert!(grew < 64 << 10, "reading grew the peak by {grew} KiB");
}
