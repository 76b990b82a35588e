//! pipeline: three stages on three threads, plus unrelated mutex noise.
//!
//! `parse` turns each input line into an item and sends it over an mpsc channel; `transform`
//! works on it and pushes it onto a condvar-guarded queue; `store` pops it and appends the result
//! to a pipe that the main thread drains. Two `noise` threads meanwhile take and release a mutex
//! of their own, which has nothing to do with the items: a tool that links tasks by mutex order
//! would glue them to the pipeline, one that follows causality will not.
//!
//! Ground truth (samples/TRUTH.md): `parse`, `transform`, `store`, one of each per item, on the
//! stage's thread, id = item number. Usage: `pipeline [ITEMS]` (default 2000).

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::thread;
use std::time::Duration;

use scalpel_samples::truth;

#[inline(never)]
fn parse(n: u64) -> Vec<u8> {
    let start = truth::now();
    let line = format!("item {n} {}", n.wrapping_mul(2654435761) % 1000);
    let item = line.into_bytes();
    truth::task("parse", n as i64, -1, start, truth::now());
    item
}

#[inline(never)]
fn transform(n: u64, item: &[u8]) -> u64 {
    let start = truth::now();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for _ in 0..200 {
        for &b in item {
            h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    truth::task("transform", n as i64, -1, start, truth::now());
    h
}

#[inline(never)]
fn store(out: &mut UnixStream, n: u64, value: u64) {
    let start = truth::now();
    out.write_all(&value.to_le_bytes()).expect("store");
    truth::task("store", n as i64, -1, start, truth::now());
}

#[inline(never)]
fn noise(m: &Mutex<u64>, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        *m.lock().expect("noise lock") += 1;
        thread::sleep(Duration::from_micros(200));
    }
}

fn main() {
    let items: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(2000);
    truth::open("pipeline");
    let (tx, rx) = mpsc::channel::<(u64, Vec<u8>)>();
    let queue = Arc::new((
        Mutex::new((VecDeque::<(u64, u64)>::new(), false)),
        Condvar::new(),
    ));
    let (mut out, mut sink) = UnixStream::pair().expect("socketpair");

    let stop = Arc::new(AtomicBool::new(false));
    let noise_lock = Arc::new(Mutex::new(0u64));
    let noisy: Vec<_> = (0..2)
        .map(|_| {
            let (m, s) = (Arc::clone(&noise_lock), Arc::clone(&stop));
            thread::Builder::new()
                .name("noise".into())
                .spawn(move || noise(&m, &s))
                .expect("thread")
        })
        .collect();

    let parser = thread::Builder::new()
        .name("parse".into())
        .spawn(move || {
            for n in 0..items {
                tx.send((n, parse(n))).expect("send");
            }
        })
        .expect("thread");
    let q = Arc::clone(&queue);
    let transformer = thread::Builder::new()
        .name("transform".into())
        .spawn(move || {
            for (n, item) in rx {
                let v = transform(n, &item);
                let (m, cv) = &*q;
                m.lock().expect("queue lock").0.push_back((n, v));
                cv.notify_one();
            }
            let (m, cv) = &*q;
            m.lock().expect("queue lock").1 = true;
            cv.notify_all();
        })
        .expect("thread");
    let q = Arc::clone(&queue);
    let storer = thread::Builder::new()
        .name("store".into())
        .spawn(move || loop {
            let (m, cv) = &*q;
            let mut g = m.lock().expect("queue lock");
            let next = loop {
                if let Some(x) = g.0.pop_front() {
                    break Some(x);
                }
                if g.1 {
                    break None;
                }
                g = cv.wait(g).expect("queue wait");
            };
            drop(g);
            match next {
                Some((n, v)) => store(&mut out, n, v),
                None => return,
            }
        })
        .expect("thread");

    let mut buf = [0u8; 8];
    let mut got = 0u64;
    while got < items {
        sink.read_exact(&mut buf).expect("read result");
        got += 1;
    }
    for t in [parser, transformer, storer] {
        t.join().expect("stage");
    }
    stop.store(true, Ordering::Relaxed);
    for t in noisy {
        t.join().expect("noise");
    }
    println!(
        "pipeline: {got} items through 3 stages, {} noise lock rounds",
        *noise_lock.lock().expect("noise lock")
    );
}
