//! A Rust program for the agent tests: std's Mutex, Condvar and mpsc use raw futexes through
//! `syscall(SYS_futex)`, and std threads go through pthread_create and pthread_join.

use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::thread;

fn main() {
    let pair = Arc::new((Mutex::new(0u32), Condvar::new()));
    let (tx, rx) = mpsc::channel::<u64>();
    let mut handles = Vec::new();
    for id in 0..4u64 {
        let pair = Arc::clone(&pair);
        let tx = tx.clone();
        handles.push(thread::spawn(move || {
            for i in 0..2000u64 {
                let (m, cv) = &*pair;
                let mut g = m.lock().unwrap();
                *g += 1;
                cv.notify_all();
                drop(g);
                tx.send(id * 10_000 + i).unwrap();
            }
        }));
    }
    drop(tx);
    let waiter = {
        let pair = Arc::clone(&pair);
        thread::spawn(move || {
            let (m, cv) = &*pair;
            let mut g = m.lock().unwrap();
            while *g < 8000 {
                g = cv.wait(g).unwrap();
            }
        })
    };
    let received = rx.iter().count();
    for h in handles {
        h.join().unwrap();
    }
    waiter.join().unwrap();
    println!("rust-sync ok {received}");
    assert_eq!(received, 8000);
}
