//! Fuzzes the trace file decoder: any input must decode or fail with an error, never panic.
//!
//! Run with `cargo fuzz run decode` from `fuzz/`, or through `scripts/fuzz.sh`.

#![no_main]

use libfuzzer_sys::fuzz_target;
use scalpel_model::format::HEADER_SIZE;
use scalpel_model::read::{decode_file, Header};

fuzz_target!(|data: &[u8]| {
    let path = std::path::Path::new("fuzz.trace");
    // As given: mostly exercises the header checks.
    let _ = decode_file(path, data);
    // Behind a valid header, so the record decoder sees the bytes; the first 8 bytes choose
    // flags and committed length.
    let (ctl, records) = data.split_at(data.len().min(8));
    let mut h = Header::thread(1, 2);
    h.flags = ctl.first().copied().unwrap_or(0);
    h.committed = match ctl.get(1) {
        Some(0) | None => records.len() as u64,
        Some(_) => u64::from_le_bytes(ctl.try_into().unwrap_or([0; 8])) >> 8,
    };
    let mut image = h.encode();
    debug_assert_eq!(image.len(), HEADER_SIZE);
    image.extend_from_slice(records);
    if let Ok(t) = decode_file(path, &image) {
        assert!(t.decoded_len <= records.len() as u64);
        for w in &t.warnings {
            let _ = w.to_string();
        }
    }
});
