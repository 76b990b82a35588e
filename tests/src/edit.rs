//! Editing recorded trace files, to put a real trace into a state the agent reaches only under
//! rare timing (a thread preempted at one exact instruction), so the graph stage's handling of it
//! is tested on every run.

use std::path::Path;

use scalpel_model::format::{hdr, rec, HEADER_SIZE};
use scalpel_model::record::{RawEvent, MAX_EVENT_RECORD};
use scalpel_model::wire::{Dec, Enc};

/// Rewrites the events of the trace file at `path` through `edit`, keeping every other record
/// as it was, and returns how many events `edit` changed.
pub fn rewrite_events(path: &Path, mut edit: impl FnMut(&mut RawEvent)) -> usize {
    let bytes = std::fs::read(path).unwrap();
    let field = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
    let end = HEADER_SIZE + field(hdr::COMMITTED) as usize;
    let mut out = bytes[..HEADER_SIZE].to_vec();
    let mut d = Dec::new(&bytes[HEADER_SIZE..end]);
    let mut changed = 0;
    while d.remaining() > 0 {
        let kind = d.u8().unwrap();
        if kind == rec::PAD {
            out.push(kind);
            continue;
        }
        let len = d.varint().unwrap() as usize;
        let payload = d.bytes(len).unwrap();
        // A HELD record is two events: each is edited and written as an EVENT of its own.
        if kind == rec::HELD {
            let held = RawEvent::decode_payload(&mut Dec::new(payload)).unwrap();
            let (lock, unlock) = held.split_held().expect("a HELD record the agent wrote");
            for before in [lock, unlock] {
                changed += usize::from(edit_one(before, &mut edit, &mut out));
            }
            continue;
        }
        if kind != rec::EVENT {
            let mut head = [0u8; 10];
            let mut e = Enc::new(&mut head);
            e.u8(kind);
            e.varint(len as u64);
            let n = e.len();
            out.extend_from_slice(&head[..n]);
            out.extend_from_slice(payload);
            continue;
        }
        let before = RawEvent::decode_payload(&mut Dec::new(payload)).unwrap();
        changed += usize::from(edit_one(before, &mut edit, &mut out));
    }
    let committed = (out.len() - HEADER_SIZE) as u64;
    out[hdr::COMMITTED..hdr::COMMITTED + 8].copy_from_slice(&committed.to_le_bytes());
    std::fs::write(path, out).unwrap();
    changed
}

/// Applies `edit` to one event and appends it to `out` as an EVENT record; whether it changed.
fn edit_one(before: RawEvent, edit: &mut impl FnMut(&mut RawEvent), out: &mut Vec<u8>) -> bool {
    let mut ev = before;
    edit(&mut ev);
    let mut buf = [0u8; MAX_EVENT_RECORD];
    let mut e = Enc::new(&mut buf);
    ev.encode_record(&mut e);
    let n = e.len();
    out.extend_from_slice(&buf[..n]);
    ev != before
}
