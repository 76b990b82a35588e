//! Damaged, truncated and unusual files: the reader keeps what is valid and never panics.

use proptest::prelude::*;
use scalpel_model::format::{rec, ChanKind, ObjKind, Op, HEADER_SIZE, VERSION};
use scalpel_model::read::{decode_file, Endpoint, Header, Identity, ReadError};
use scalpel_model::record::RawEvent;
use scalpel_model::write::TraceWriter;

fn ev(op: u8, dt: u64) -> RawEvent {
    RawEvent {
        op,
        dt,
        ..RawEvent::default()
    }
}

/// A file with several record kinds; returns the writer and the record-boundary lengths.
fn sample() -> (TraceWriter, Vec<usize>) {
    let mut w = TraceWriter::new(Header::thread(1, 2));
    let mut ends = vec![0];
    let id = Identity::Stream {
        chan: ChanKind::Tcp.code(),
        channel_key: 9,
        sender: Endpoint::Inet("10.0.0.1:80".parse().unwrap()),
        receiver: Endpoint::Path(b"/tmp/some socket".to_vec()),
    };
    w.object(1, ObjKind::Stream.code(), 0xabc, &id);
    ends.push(w.records().len());
    for i in 0..6u64 {
        let mut e = ev(Op::Write as u8, 10 + i);
        e.obj = Some(1);
        e.seq_delta = Some(1);
        e.result = Some(300 * i as i64);
        e.offset = Some(1 << (i * 9));
        w.event(&e);
        ends.push(w.records().len());
        if i == 2 {
            w.calibration(1000, 2000, None);
            ends.push(w.records().len());
            w.thread_name(5, b"worker");
            ends.push(w.records().len());
        }
    }
    (w, ends)
}

fn damaged(t: &scalpel_model::read::FileTrace) -> Vec<&ReadError> {
    let d = t.warnings.iter();
    d.filter(|w| matches!(w, ReadError::Damaged { .. }))
        .collect()
}

#[test]
fn every_prefix_decodes_to_a_prefix() {
    let (w, ends) = sample();
    let full_bytes = w.to_bytes();
    let full = decode_file("f".as_ref(), &full_bytes).unwrap();
    assert!(full.warnings.is_empty(), "{:?}", full.warnings);
    assert_eq!(full.events.len(), 6);
    for len in 0..=full_bytes.len() {
        let r = decode_file("f".as_ref(), &full_bytes[..len]);
        if len < HEADER_SIZE {
            assert!(matches!(r, Err(ReadError::ShortHeader { .. })), "len {len}");
            continue;
        }
        let t = r.unwrap();
        assert_eq!(t.events[..], full.events[..t.events.len()], "len {len}");
        let at_boundary = ends.contains(&(len - HEADER_SIZE));
        assert_eq!(damaged(&t).len(), usize::from(!at_boundary), "len {len}");
        if let Some(ReadError::Damaged { offset, path, .. }) = damaged(&t).first() {
            assert!(*offset >= HEADER_SIZE as u64 && *offset < len as u64);
            assert_eq!(path.to_str(), Some("f"));
        }
        // The header still claims the full length.
        if len < full_bytes.len() {
            assert!(t
                .warnings
                .iter()
                .any(|w| w.to_string().contains("committed length")));
        }
    }
}

#[test]
fn every_committed_length_decodes_to_a_prefix() {
    let (w, ends) = sample();
    let n = w.records().len();
    let full = decode_file("f".as_ref(), &w.to_bytes()).unwrap();
    for committed in 0..=n {
        let t = decode_file("f".as_ref(), &w.to_bytes_with_committed(committed as u64)).unwrap();
        assert_eq!(t.events[..], full.events[..t.events.len()]);
        let expect_damage = !ends.contains(&committed);
        assert_eq!(
            t.warnings.len(),
            usize::from(expect_damage),
            "{:?}",
            t.warnings
        );
        if !expect_damage {
            assert_eq!(t.decoded_len, committed as u64);
        }
    }
}

#[test]
fn corrupt_committed_length_reads_to_end_of_file() {
    let (w, _) = sample();
    for committed in [w.records().len() as u64 + 1000, u64::MAX] {
        let t = decode_file("f".as_ref(), &w.to_bytes_with_committed(committed)).unwrap();
        assert_eq!(t.events.len(), 6);
        assert_eq!(t.warnings.len(), 1);
        let msg = t.warnings[0].to_string();
        assert!(
            msg.contains("committed length") && msg.contains("offset 64"),
            "{msg}"
        );
    }
}

#[test]
fn unknown_kinds_and_ops_are_skipped_or_kept() {
    let mut w = TraceWriter::new(Header::thread(1, 2));
    w.event(&ev(1, 1))
        .record(200, b"from the future")
        .pad(3)
        // A STACK record (id 1, two frames: 3, then +2) between events.
        .record(rec::STACK, &[1, 2, 3, 4])
        .event(&ev(250, 1));
    let t = decode_file("f".as_ref(), &w.to_bytes()).unwrap();
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
    assert_eq!(t.unknown_records, 1);
    assert_eq!(t.stacks.get(&1).map(Vec::as_slice), Some(&[3u64, 5][..]));
    assert_eq!(t.events.len(), 2);
    assert_eq!(t.events[0].op, Some(Op::MutexLock));
    assert_eq!(t.events[1].op, None);
    assert_eq!(t.events[1].op_name(), "op#250");
    assert_eq!(t.events[1].ticks, 2);
}

#[test]
fn undecodable_payload_is_skipped_with_offset() {
    let mut w = TraceWriter::new(Header::thread(1, 2));
    w.event(&ev(1, 1));
    let at = HEADER_SIZE + w.records().len();
    w.record(rec::EVENT, &[1]).event(&ev(2, 1));
    let t = decode_file("dir/t2.trace".as_ref(), &w.to_bytes()).unwrap();
    // Its length framing is intact, so only the bad record is lost.
    assert_eq!(t.events.len(), 2);
    assert_eq!(t.events[1].op_code, 2);
    assert_eq!(t.warnings.len(), 1);
    let msg = t.warnings[0].to_string();
    assert_eq!(t.warnings[0].offset(), Some(at as u64));
    assert!(msg.starts_with("dir/t2.trace:"), "{msg}");
    assert!(msg.contains("EVENT") && msg.contains("skipped"), "{msg}");
}

#[test]
fn object_reset_restarts_indices_and_sequences() {
    let mut w = TraceWriter::new(Header::thread(1, 2));
    let seq = |d| RawEvent {
        obj: Some(1),
        seq_delta: Some(d),
        ..ev(Op::MutexUnlock as u8, 1)
    };
    w.object(1, ObjKind::Mutex.code(), 0xa, &Identity::None)
        .event(&seq(5))
        .event(&seq(2))
        .object_reset()
        .object(1, ObjKind::Mutex.code(), 0xb, &Identity::None)
        .event(&seq(3))
        .object_reset()
        .event(&seq(1));
    let t = decode_file("f".as_ref(), &w.to_bytes()).unwrap();
    let got: Vec<_> = t
        .events
        .iter()
        .map(|e| (e.obj.map(|o| o.key), e.seq))
        .collect();
    assert_eq!(
        got[..3],
        [
            (Some(0xa), Some(5)),
            (Some(0xa), Some(7)),
            (Some(0xb), Some(3))
        ]
    );
    assert_eq!(got[3].0, None);
    assert_eq!(t.warnings.len(), 1, "{:?}", t.warnings);
    assert!(matches!(t.warnings[0], ReadError::Inconsistent { .. }));
}

#[test]
fn fatal_header_errors() {
    let good = TraceWriter::new(Header::thread(1, 2)).to_bytes();
    let mut bad = good.clone();
    bad[0] = b'X';
    assert!(matches!(
        decode_file("f".as_ref(), &bad),
        Err(ReadError::BadMagic { .. })
    ));
    let mut newer = good.clone();
    newer[8..10].copy_from_slice(&(VERSION + 1).to_le_bytes());
    let e = decode_file("f".as_ref(), &newer).unwrap_err();
    assert!(matches!(e, ReadError::UnsupportedVersion { .. }), "{e}");
    let mut tiny = good.clone();
    tiny[10..12].copy_from_slice(&16u16.to_le_bytes());
    let e = decode_file("f".as_ref(), &tiny).unwrap_err();
    assert!(matches!(e, ReadError::ShortHeader { .. }), "{e}");
    assert!(matches!(
        decode_file("f".as_ref(), b"SCAL"),
        Err(ReadError::ShortHeader { .. })
    ));
    let e = scalpel_model::read::read_file("/nonexistent/x.trace").unwrap_err();
    assert!(
        e.to_string()
            .starts_with("/nonexistent/x.trace: cannot read"),
        "{e}"
    );
}

proptest! {
    #[test]
    fn arbitrary_records_never_panic(tail in proptest::collection::vec(any::<u8>(), 0..600),
                                     committed in any::<u64>(), flags in any::<u8>()) {
        let mut h = Header::thread(1, 2);
        h.flags = flags;
        let mut w = TraceWriter::new(h);
        w.raw(&tail);
        let _ = decode_file("f".as_ref(), &w.to_bytes_with_committed(committed));
        let t = decode_file("f".as_ref(), &w.to_bytes()).unwrap();
        prop_assert!(t.decoded_len <= tail.len() as u64);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..5000)) {
        let _ = decode_file("f".as_ref(), &bytes);
    }
}

#[test]
fn stacks_round_trip_and_bad_counts_are_damage() {
    let frames = [
        0x5555_0000_1234u64,
        0x5555_0000_1000,
        0x7f00_0000_0010,
        0x10,
    ];
    let mut w = TraceWriter::new(Header::thread(1, 2));
    w.stack(7, &frames).event(&RawEvent {
        stack: Some(7),
        ..ev(1, 1)
    });
    let t = decode_file("f".as_ref(), &w.to_bytes()).unwrap();
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
    assert_eq!(t.stacks.get(&7).map(Vec::as_slice), Some(&frames[..]));
    assert_eq!(t.events[0].stack, Some(7));
    // A frame count larger than the payload can hold is reported, not allocated.
    let mut w = TraceWriter::new(Header::thread(1, 2));
    w.record(rec::STACK, &[1, 0xff, 0xff, 0xff, 0xff, 0x0f])
        .event(&ev(1, 1));
    let t = decode_file("f".as_ref(), &w.to_bytes()).unwrap();
    assert!(t.stacks.is_empty());
    assert_eq!(t.events.len(), 1);
    assert_eq!(t.warnings.len(), 1);
}

/// A STACK record deeper than the agent ever writes (a planted file: 5,000 frames made `dump`
/// write gigabytes) is refused with a warning naming its offset; the records after it are kept.
#[test]
fn stacks_deeper_than_the_agent_writes_are_refused() {
    let deep: Vec<u64> = (0..5_000u64).map(|i| 0x5555_0000_0000 + i * 16).collect();
    let ok: Vec<u64> = (0..64u64).map(|i| 0x5555_0000_0000 + i * 16).collect();
    let mut w = TraceWriter::new(Header::thread(1, 2));
    w.stack(1, &deep).stack(2, &ok).event(&RawEvent {
        stack: Some(2),
        ..ev(1, 1)
    });
    let t = decode_file("f".as_ref(), &w.to_bytes()).unwrap();
    assert!(
        !t.stacks.contains_key(&1),
        "the 5,000-frame stack is dropped"
    );
    assert_eq!(
        t.stacks.get(&2).map(Vec::len),
        Some(64),
        "a 64-frame stack is kept"
    );
    assert_eq!(t.events.len(), 1);
    assert_eq!(t.warnings.len(), 1, "{:?}", t.warnings);
    let msg = t.warnings[0].to_string();
    assert!(
        msg.contains("5000 frames") && msg.contains(&format!("offset {HEADER_SIZE}")),
        "{msg}"
    );
}
