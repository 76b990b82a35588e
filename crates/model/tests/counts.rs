//! The counts table in a thread file's header (`SCALPEL_LOCKS=count`): the reader takes from it
//! the counts no `mutex_counted` event of the file wrote out, each once.

use scalpel_model::format::{ObjKind, Op};
use scalpel_model::read::{decode_file, FileTrace, Header, Identity};
use scalpel_model::record::RawEvent;
use scalpel_model::write::TraceWriter;

const A: u64 = 0x5000;
const B: u64 = 0x5040;

/// A file whose thread wrote out the counts of generation 3 for `A` only (5 pairs), with the
/// header's table as `state` and `counts` say.
fn file(state: u64, counts: &[(u64, u64)]) -> FileTrace {
    let mut h = Header::thread(10, 11);
    h.counts_state = state;
    h.counts = counts.to_vec();
    let mut w = TraceWriter::new(h);
    w.object(1, ObjKind::Mutex.code(), A, &Identity::None);
    w.event(&RawEvent {
        op: Op::MutexCounted as u8,
        dt: 100,
        obj: Some(1),
        aux: Some(5),
        aux2: Some(3),
        ..RawEvent::default()
    });
    w.event(&RawEvent {
        op: Op::Read as u8,
        dt: 50,
        ..RawEvent::default()
    });
    decode_file("t11.trace".as_ref(), &w.to_bytes()).expect("the file reads")
}

/// Pairs counted per mutex key, and the times of the counts.
fn counted(t: &FileTrace) -> Vec<(u64, u64, u64)> {
    t.events
        .iter()
        .filter(|e| e.op == Some(Op::MutexCounted))
        .map(|e| (e.obj.expect("an object").key, e.aux.unwrap_or(0), e.ticks))
        .collect()
}

#[test]
fn a_table_written_out_half_way_gives_only_what_is_missing() {
    // Killed while writing generation 3: `A`'s event is in the file, `B`'s is not.
    let t = file(3 << 32 | 2, &[(A, 5), (B, 7)]);
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
    assert_eq!(counted(&t), vec![(A, 5, 100), (B, 7, 150)]);
    // `B` had no definition: the reader made one.
    assert!(t
        .objects
        .iter()
        .any(|o| o.key == B && o.kind == ObjKind::Mutex.code()));
}

#[test]
fn a_later_generation_is_read_whole_and_an_empty_one_not_at_all() {
    let t = file(4 << 32 | 2, &[(A, 2), (B, 1)]);
    assert_eq!(counted(&t), vec![(A, 5, 100), (A, 2, 150), (B, 1, 150)]);
    let t = file(4 << 32, &[]);
    assert_eq!(counted(&t), vec![(A, 5, 100)]);
}

#[test]
fn a_table_claiming_more_entries_than_it_has_is_read_to_its_end_with_a_warning() {
    let full: Vec<(u64, u64)> = (1..=16).map(|i| (i * 64, i)).collect();
    let mut h = Header::thread(10, 11);
    h.counts_state = 4 << 32 | 1000;
    h.counts = full.clone();
    let bytes = TraceWriter::new(h).to_bytes();
    let t = decode_file("t11.trace".as_ref(), &bytes).expect("the file reads");
    assert_eq!(t.warnings.len(), 1, "{:?}", t.warnings);
    assert!(
        t.warnings[0].to_string().contains("1000 entries"),
        "{}",
        t.warnings[0]
    );
    let got: Vec<(u64, u64)> = counted(&t).iter().map(|&(k, c, _)| (k, c)).collect();
    assert_eq!(got, full);
}
