//! fanout: a nested hierarchy. Each request is taken by a front thread, which fans out two
//! sub-requests to a back pool, waits for both, and answers.
//!
//! main --requests pipe--> 2 fronts --a pipe per back--> 4 backs
//!   ^                        ^---- reply pipe per front and half ----'
//!   '---- responses pipe ----'
//!
//! The main thread is a client keeping at most `--window` (default 1) requests in flight; it
//! starts when the fronts greet it. The fronts share the requests pipe: whichever reads a
//! request serves it. Sub-requests are sharded: half `h` of request `r` goes to back
//! `(2r + h) mod 4`, each back reading its own pipe. A sub-request names its front and half,
//! and the back writes the reply into that front's pipe for that half, so a front joins its
//! two halves in order, whichever finished first.
//!
//! Why a pipe per back rather than one the backs share: the two halves are written back to
//! back, and two backs reading one pipe at once return from their reads in an order the agent
//! cannot see (it numbers a stream's bytes after each call returns), so the trace could hand
//! half 0's edge to the back that read half 1. With one request in flight, every pipe here has
//! one reader and one writer at a time, and each edge is exact.
//!
//! Why pipes rather than Rust's channels or a condvar queue: those enter the kernel only when
//! the receiver has to block, so a hand-off to a thread that had not gone to sleep yet makes no
//! call and leaves nothing in the trace to tie the two threads' parts of a request together.
//!
//! Ground truth (samples/TRUTH.md): `request` (front: request read → response write called),
//! `subrequest` (back: sub-request read → reply write called; parent = its request, id =
//! request * 2 + half). Usage: `fanout [REQUESTS] [--window W]` (defaults 500 and 1).

use std::fs::File;
use std::io::{Read, Write};
use std::sync::Arc;
use std::thread;

use scalpel_samples::args::count_and_window;
use scalpel_samples::pipe::pipe;
use scalpel_samples::truth;

const FRONTS: usize = 2;
const BACKS: usize = 4;

/// What each front writes on the responses pipe once it runs.
const GREETING: u64 = u64::MAX;

/// A fixed amount of computation, so that every part takes some time.
fn spin(seed: u64, rounds: u32) -> u64 {
    let mut x = seed | 1;
    for _ in 0..rounds {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
    }
    std::hint::black_box(x)
}

/// Reads one little-endian u64, or `None` at the end of the stream.
fn read_u64(from: &mut impl Read) -> Option<u64> {
    let mut b = [0u8; 8];
    from.read_exact(&mut b).ok().map(|_| u64::from_le_bytes(b))
}

/// The write ends of the reply pipes, by front and half.
type Replies = [[File; 2]; FRONTS];

/// Serves one sub-request (request, half, front) and replies to its front.
#[inline(never)]
fn serve_subrequest(msg: [u64; 3], replies: &Replies) {
    let start = truth::now();
    let [r, half, front] = msg;
    let v = spin(r * 2 + half, 20_000);
    let id = (r * 2 + half) as i64;
    truth::task("subrequest", id, r as i64, start, truth::now());
    (&replies[front as usize][half as usize])
        .write_all(&v.to_le_bytes())
        .expect("reply");
}

/// A back thread: serves sub-requests until its pipe closes.
#[inline(never)]
fn back_main(mut subs: File, replies: &Replies) {
    let mut b = [0u8; 24];
    while subs.read_exact(&mut b).is_ok() {
        let word = |i: usize| u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().expect("8"));
        serve_subrequest([word(0), word(1), word(2)], replies);
    }
}

/// Fans request `r` out to the back pool, joins both halves, and answers.
#[inline(never)]
fn serve_request(r: u64, front: usize, backs: &[File], joins: &mut [File; 2], mut out: &File) {
    let start = truth::now();
    spin(r, 20_000);
    for half in 0..2u64 {
        let mut m = [0u8; 24];
        for (i, w) in [r, half, front as u64].into_iter().enumerate() {
            m[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
        }
        let shard = (r * 2 + half) as usize % backs.len();
        (&backs[shard]).write_all(&m).expect("sub-request");
    }
    let a = read_u64(&mut joins[0]).expect("reply, half 0");
    let b = read_u64(&mut joins[1]).expect("reply, half 1");
    let v = spin(a ^ b, 20_000);
    truth::task("request", r as i64, -1, start, truth::now());
    out.write_all(&v.to_le_bytes()).expect("response");
}

/// A front thread: greets the client, then serves requests until the pipe closes.
#[inline(never)]
fn front_main(front: usize, mut requests: &File, backs: &[File], mut joins: [File; 2], out: &File) {
    (&*out)
        .write_all(&GREETING.to_le_bytes())
        .expect("greeting");
    while let Some(r) = read_u64(&mut requests) {
        serve_request(r, front, backs, &mut joins, out);
    }
}

fn main() {
    let (requests, window) = count_and_window("fanout [REQUESTS] [--window W]", 500, 1);
    truth::open("fanout");
    let (req_r, mut req_w) = pipe();
    let (sub_r, sub_w): (Vec<File>, Vec<File>) = (0..BACKS).map(|_| pipe()).unzip();
    let (resp_r, resp_w) = pipe();
    let (req_r, sub_w, resp_w) = (Arc::new(req_r), Arc::new(sub_w), Arc::new(resp_w));
    let mut join_r: Vec<[File; 2]> = Vec::new();
    let mut reply_w: Vec<[File; 2]> = Vec::new();
    for _ in 0..FRONTS {
        let ((r0, w0), (r1, w1)) = (pipe(), pipe());
        join_r.push([r0, r1]);
        reply_w.push([w0, w1]);
    }
    let replies: Arc<Replies> = Arc::new(reply_w.try_into().expect("one per front"));
    let backs: Vec<_> = sub_r
        .into_iter()
        .map(|subs| {
            let replies = Arc::clone(&replies);
            thread::Builder::new()
                .name("back".into())
                .spawn(move || back_main(subs, &replies))
                .expect("thread")
        })
        .collect();
    drop(replies);
    let fronts: Vec<_> = join_r
        .into_iter()
        .enumerate()
        .map(|(f, joins)| {
            let (rq, subs, out) = (Arc::clone(&req_r), Arc::clone(&sub_w), Arc::clone(&resp_w));
            thread::Builder::new()
                .name("front".into())
                .spawn(move || front_main(f, &rq, &subs, joins, &out))
                .expect("thread")
        })
        .collect();
    drop((req_r, sub_w, resp_w));

    // One read call site for greetings and responses: each frees a slot in the window, so
    // every request is sent after the same read.
    let mut resp_r = resp_r;
    let (mut sent, mut answered, mut greeted) = (0u64, 0u64, 0usize);
    let mut credit = 0u64;
    while answered < requests {
        let v = read_u64(&mut resp_r).expect("a response");
        if v == GREETING && greeted < FRONTS {
            greeted += 1;
            // The window opens once every front is up.
            if greeted == FRONTS {
                credit = window;
            }
        } else {
            answered += 1;
            credit += 1;
        }
        while credit > 0 && sent < requests {
            req_w.write_all(&sent.to_le_bytes()).expect("request");
            sent += 1;
            credit -= 1;
        }
    }
    // Closing the requests pipe ends the fronts; the last front's exit closes the backs' pipes,
    // which ends the backs.
    drop(req_w);
    for f in fronts {
        f.join().expect("front");
    }
    for b in backs {
        b.join().expect("back");
    }
    println!("fanout: {requests} requests, {} sub-requests", requests * 2);
}
