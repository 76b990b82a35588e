//! fanout: a nested hierarchy. Each request is taken by a front thread, which fans out two
//! sub-requests to a back pool and waits for both before completing the request.
//!
//! main --channel--> 2 front threads --queue--> 4 back threads
//!                        ^------- completion counter + condvar ------'
//!
//! Ground truth (samples/TRUTH.md): `request` (front thread: taken → both sub-requests done),
//! `subrequest` (back thread, parent = its request; id = request * 2 + half).
//! Usage: `fanout [REQUESTS]` (default 500).

use std::collections::VecDeque;
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::thread;

use scalpel_samples::truth;

struct Sub {
    request: u64,
    half: u64,
    done: Arc<(Mutex<u32>, Condvar)>,
}

type BackQueue = (Mutex<(VecDeque<Sub>, bool)>, Condvar);

#[inline(never)]
fn serve_subrequest(s: &Sub) {
    let start = truth::now();
    let mut x = s.request * 2 + s.half;
    for _ in 0..20_000 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
    }
    std::hint::black_box(x);
    let (m, cv) = &*s.done;
    *m.lock().expect("done lock") += 1;
    cv.notify_one();
    truth::task(
        "subrequest",
        (s.request * 2 + s.half) as i64,
        s.request as i64,
        start,
        truth::now(),
    );
}

#[inline(never)]
fn serve_request(r: u64, back: &BackQueue) {
    let start = truth::now();
    let done = Arc::new((Mutex::new(0u32), Condvar::new()));
    {
        let (m, cv) = back;
        let mut q = m.lock().expect("back lock");
        for half in 0..2 {
            q.0.push_back(Sub {
                request: r,
                half,
                done: Arc::clone(&done),
            });
        }
        cv.notify_all();
    }
    let (m, cv) = &*done;
    let mut n = m.lock().expect("done lock");
    while *n < 2 {
        n = cv.wait(n).expect("done wait");
    }
    truth::task("request", r as i64, -1, start, truth::now());
}

fn main() {
    let requests: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(500);
    truth::open("fanout");
    let back: Arc<BackQueue> = Arc::new((Mutex::new((VecDeque::new(), false)), Condvar::new()));
    let backs: Vec<_> = (0..4)
        .map(|_| {
            let b = Arc::clone(&back);
            thread::Builder::new()
                .name("back".into())
                .spawn(move || loop {
                    let (m, cv) = &*b;
                    let mut q = m.lock().expect("back lock");
                    let s = loop {
                        if let Some(s) = q.0.pop_front() {
                            break Some(s);
                        }
                        if q.1 {
                            break None;
                        }
                        q = cv.wait(q).expect("back wait");
                    };
                    drop(q);
                    match s {
                        Some(s) => serve_subrequest(&s),
                        None => return,
                    }
                })
                .expect("thread")
        })
        .collect();
    let (tx, rx) = mpsc::channel::<u64>();
    let rx = Arc::new(Mutex::new(rx));
    let fronts: Vec<_> = (0..2)
        .map(|_| {
            let (rx, b) = (Arc::clone(&rx), Arc::clone(&back));
            thread::Builder::new()
                .name("front".into())
                .spawn(move || loop {
                    let next = rx.lock().expect("rx lock").recv();
                    match next {
                        Ok(r) => serve_request(r, &b),
                        Err(_) => return,
                    }
                })
                .expect("thread")
        })
        .collect();
    for r in 0..requests {
        tx.send(r).expect("send");
    }
    drop(tx);
    for f in fronts {
        f.join().expect("front");
    }
    back.0.lock().expect("back lock").1 = true;
    back.1.notify_all();
    for b in backs {
        b.join().expect("back");
    }
    println!("fanout: {requests} requests, {} sub-requests", requests * 2);
}
