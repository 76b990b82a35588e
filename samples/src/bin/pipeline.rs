//! pipeline: three stages on three threads, plus unrelated mutex noise.
//!
//! main --pipe--> parse --unix socket--> transform --pipe--> store --unix socket--> main
//!
//! The main thread is a client: it writes 16-byte item records into a pipe, keeping at most
//! `--window` (default 1) items in flight, and reads each 8-byte result back. `parse` reads one
//! record per item and passes the parsed item on; `transform` hashes it and passes the value on;
//! `store` writes the result out. Two `noise` threads meanwhile fight over a mutex of their own,
//! which has nothing to do with the items: a tool that links tasks by mutex order would glue them
//! to the pipeline, one that follows causality will not.
//!
//! Why the stages hand over through pipes and sockets rather than Rust's channels or a condvar
//! queue: those enter the kernel only when the receiver has to block, so whenever a stage finds
//! its next item already queued (which a loaded two-core machine makes happen every few hundred
//! items even with one item in flight) the hand-off makes no call at all, and only mutex order,
//! which is no cause, would tie the item's stages together. A read or write is a call every
//! time. (The `workqueue` and `threadpool` samples hand over through pthread condvar queues.)
//!
//! Ground truth (samples/TRUTH.md): `parse`, `transform`, `store`, one of each per item, on the
//! stage's thread, id and parent = item number, each from the return of the read that handed it
//! the item to the write that hands it on; `item` (written by the main thread, id = item number),
//! made of its three stages. Usage: `pipeline [ITEMS] [--window W]` (defaults 2000 and 1).

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use scalpel_samples::args::count_and_window;
use scalpel_samples::pipe::pipe;
use scalpel_samples::truth;

/// Turns a record into an item (24 bytes: number, value, a digest of its text).
#[inline(never)]
fn parse(record: &[u8; 16], start: u64) -> [u8; 24] {
    let n = u64::from_le_bytes(record[..8].try_into().expect("8 bytes"));
    let v = u64::from_le_bytes(record[8..].try_into().expect("8 bytes"));
    let text = format!("item {n} {}", v % 1000);
    let digest = text
        .bytes()
        .fold(0u64, |h, b| h.rotate_left(5) ^ u64::from(b));
    let mut item = [0u8; 24];
    item[..16].copy_from_slice(record);
    item[16..].copy_from_slice(&digest.to_le_bytes());
    truth::task("parse", n as i64, n as i64, start, truth::now());
    item
}

/// Hashes an item into a 16-byte (number, value) record.
#[inline(never)]
fn transform(item: &[u8; 24], start: u64) -> [u8; 16] {
    let n = u64::from_le_bytes(item[..8].try_into().expect("8 bytes"));
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for _ in 0..200 {
        for &b in item {
            h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&n.to_le_bytes());
    out[8..].copy_from_slice(&h.to_le_bytes());
    truth::task("transform", n as i64, n as i64, start, truth::now());
    out
}

/// Makes the 8-byte result of a transformed record.
#[inline(never)]
fn store(rec: &[u8; 16], start: u64) -> [u8; 8] {
    let n = u64::from_le_bytes(rec[..8].try_into().expect("8 bytes"));
    let v = u64::from_le_bytes(rec[8..].try_into().expect("8 bytes"));
    let result = (v.rotate_left(17) ^ n).to_le_bytes();
    truth::task("store", n as i64, n as i64, start, truth::now());
    result
}

/// The store stage's greeting to the main thread, written once it runs.
const READY: [u8; 8] = *b"ready\0\0\0";

/// Sleeps while holding the noise mutex, so the two noise threads take turns waiting for each
/// other: futex waits and wakes all through the run that order nothing but the mutex.
#[inline(never)]
fn noise(m: &Mutex<u64>, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        {
            let mut g = m.lock().expect("noise lock");
            *g += 1;
            thread::sleep(Duration::from_micros(50));
        }
        thread::sleep(Duration::from_micros(10));
    }
}

/// Runs one stage on its own thread: reads `N`-byte records from `input` until it closes, turns
/// each into an `M`-byte record with `work` (given the time its read returned) and writes it on.
/// A macro rather than a generic function, so that each stage's calls have a stack of their own
/// (the symbolizer names a generic function's instances alike).
macro_rules! stage {
    ($name:ident, $n:literal, $m:literal, $work:ident) => {
        #[inline(never)]
        fn $name(mut input: impl Read, mut output: impl Write) {
            let mut rec = [0u8; $n];
            while input.read_exact(&mut rec).is_ok() {
                let out: [u8; $m] = $work(&rec, truth::now());
                output.write_all(&out).expect("stage write");
            }
        }
    };
}
stage!(parse_stage, 16, 24, parse);
stage!(transform_stage, 24, 16, transform);
stage!(store_stage, 16, 8, store);

/// Starts a named thread.
fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> thread::JoinHandle<()> {
    thread::Builder::new()
        .name(name.into())
        .spawn(f)
        .expect("thread")
}

fn main() {
    let (items, window) = count_and_window("pipeline [ITEMS] [--window W]", 2000, 1);
    truth::open("pipeline");
    let (input_r, mut input_w) = pipe();
    let (parsed_w, parsed_r) = UnixStream::pair().expect("socketpair");
    let (hashed_r, hashed_w) = pipe();
    let (out, mut sink) = UnixStream::pair().expect("socketpair");

    let stop = Arc::new(AtomicBool::new(false));
    let noise_lock = Arc::new(Mutex::new(0u64));
    let noisy: Vec<_> = (0..2)
        .map(|_| {
            let (m, s) = (Arc::clone(&noise_lock), Arc::clone(&stop));
            spawn("noise", move || noise(&m, &s))
        })
        .collect();

    let stages = [
        spawn("parse", move || parse_stage(input_r, parsed_w)),
        spawn("transform", move || transform_stage(parsed_r, hashed_w)),
        spawn("store", move || {
            (&out).write_all(&READY).expect("greeting");
            store_stage(hashed_r, out)
        }),
    ];
    // The client answers each message from the store stage: its greeting (written once it
    // runs, as a server greets a client that connected) opens the window, and each result
    // refills it. One read call site for both, so the first item's hand-off follows the same
    // read as every later one.
    let (mut sent, mut got, mut greeted) = (0u64, 0u64, false);
    let mut started = std::collections::VecDeque::new();
    let mut buf = [0u8; 8];
    while got < items {
        sink.read_exact(&mut buf)
            .expect("read from the store stage");
        if greeted {
            let start = started.pop_front().expect("an item in flight");
            truth::task("item", got as i64, -1, start, truth::now());
            got += 1;
        } else {
            assert_eq!(buf, READY, "the store stage's greeting");
            greeted = true;
        }
        while sent < items && sent - got < window {
            started.push_back(truth::now());
            let mut record = [0u8; 16];
            record[..8].copy_from_slice(&sent.to_le_bytes());
            record[8..].copy_from_slice(&sent.wrapping_mul(2654435761).to_le_bytes());
            input_w.write_all(&record).expect("write item");
            sent += 1;
        }
    }
    // Closing the input ends each stage in turn: it sees the end of its input, returns, and its
    // output closes with it.
    drop(input_w);
    for t in stages {
        t.join().expect("stage");
    }
    stop.store(true, Ordering::Relaxed);
    for t in noisy {
        t.join().expect("noise");
    }
    println!(
        "pipeline: {got} items through 3 stages (window {window}), {} noise lock rounds",
        *noise_lock.lock().expect("noise lock")
    );
}
