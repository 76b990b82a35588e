//! Stacks in an optimized Rust program: a chain of non-inlined functions ends in a send on a
//! Unix socket (std writes with libc `send`, traced), read by a second std thread.

use std::hint::black_box;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;

#[inline(never)]
fn stage_four(s: &mut UnixStream, i: u8) -> usize {
    let n = s.write(&[i]).unwrap();
    black_box(n) + 1
}

#[inline(never)]
fn stage_three(s: &mut UnixStream, i: u8) -> usize {
    let r = stage_four(s, i.wrapping_add(1));
    black_box(r) * 2
}

#[inline(never)]
fn stage_two(s: &mut UnixStream, i: u8) -> usize {
    let r = stage_three(s, i ^ 3);
    black_box(r) + 3
}

#[inline(never)]
fn stage_one(s: &mut UnixStream, i: u8) -> usize {
    let r = stage_two(s, i.wrapping_mul(5));
    black_box(r) - 1
}

fn main() {
    let (mut a, mut b) = UnixStream::pair().unwrap();
    let reader = std::thread::spawn(move || {
        let mut buf = [0u8; 1];
        let mut total = 0usize;
        while total < 200 {
            total += b.read(&mut buf).unwrap();
        }
        total
    });
    let mut sum = 0;
    for i in 0..200u8 {
        sum += stage_one(&mut a, i);
    }
    println!("read {} sum {}", reader.join().unwrap(), black_box(sum) > 0);
}
