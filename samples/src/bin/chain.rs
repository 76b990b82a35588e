//! chain: three tiers over TCP, each a program of its own so that each can run on a machine of
//! its own: a client, a front server and a back server.
//!
//! ```text
//! chain back   --bind ADDR --port P [--connections C]                  (prints its port)
//! chain front  --bind ADDR --port P --back ADDR:PORT [--connections C] (prints its port)
//! chain client --host ADDR --port P [--connections C] [--requests N]
//! ```
//!
//! - The client opens C connections (default 2) to the front, and on each sends N requests
//!   (default 200), one at a time: a 64-byte request, then it reads the 64-byte answer.
//! - The front serves each connection on a thread of its own, with a connection of its own to
//!   the back: it reads a request, does a little work (`front_work`), calls the back with it
//!   (`call_back`: write, then read the answer) and answers the client.
//! - The back serves each connection on a thread of its own: it reads a request, works
//!   (`back_work`, a 200 µs sleep, as a disk read would block) and answers.
//! - Each tier serves C connections (the client's C, the front's C to the back) and stops when
//!   they have all closed.
//!
//! Ground truth (samples/TRUTH.md): `request` (client: request written → answer read; id =
//! connection * 1000000 + n), `front` (front: request read → answer written called; parent = its
//! request's id), `back` (back: request read → answer written called; parent = the same id).

use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::thread;
use std::time::Duration;

use scalpel_samples::truth;

const SIZE: usize = 64;

#[derive(Clone, Debug)]
struct Opts {
    host: String,
    port: u16,
    back: Option<String>,
    connections: u64,
    requests: u64,
}

fn parse(args: &[String]) -> Result<Opts, String> {
    let mut o = Opts {
        host: "127.0.0.1".into(),
        port: 0,
        back: None,
        connections: 2,
        requests: 200,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = || it.next().ok_or_else(|| format!("{a} needs a value"));
        let num = |v: &String| {
            v.parse::<u64>()
                .map_err(|_| format!("{a}: not a number: {v}"))
        };
        match a.as_str() {
            "--bind" | "--host" => o.host = val()?.clone(),
            "--port" => o.port = u16::try_from(num(val()?)?).map_err(|e| e.to_string())?,
            "--back" => o.back = Some(val()?.clone()),
            "--connections" => o.connections = num(val()?)?.clamp(1, 64),
            "--requests" => o.requests = num(val()?)?,
            _ => return Err(format!("unknown option {a}")),
        }
    }
    Ok(o)
}

/// A request or an answer: the request's id, padded.
fn frame(id: u64) -> [u8; SIZE] {
    let mut b = [0u8; SIZE];
    b[..8].copy_from_slice(&id.to_le_bytes());
    b
}

/// The next frame's id, or `None` when the peer closed.
fn read_frame(s: &mut impl Read) -> Option<u64> {
    let mut b = [0u8; SIZE];
    s.read_exact(&mut b).ok()?;
    let mut id = [0u8; 8];
    id.copy_from_slice(&b[..8]);
    Some(u64::from_le_bytes(id))
}

fn listen(o: &Opts) -> Result<TcpListener, String> {
    let l = TcpListener::bind((o.host.as_str(), o.port)).map_err(|e| format!("listen: {e}"))?;
    let port = l.local_addr().map_err(|e| e.to_string())?.port();
    println!("{port}");
    io::stdout().flush().map_err(|e| e.to_string())?;
    Ok(l)
}

#[inline(never)]
fn back_work() {
    thread::sleep(Duration::from_micros(200));
}

#[inline(never)]
fn front_work(id: u64) -> u64 {
    (0..2_000u64).fold(id, |a, b| a.wrapping_mul(31).wrapping_add(b))
}

/// Serves one connection on the back until it closes.
fn back_connection(mut s: TcpStream) {
    while let Some(id) = read_frame(&mut s) {
        let start = truth::now();
        back_work();
        truth::task("back", id as i64, id as i64, start, truth::now());
        if s.write_all(&frame(id)).is_err() {
            return;
        }
    }
}

#[inline(never)]
fn call_back(back: &mut TcpStream, id: u64) -> Option<u64> {
    back.write_all(&frame(id)).ok()?;
    read_frame(back)
}

/// Serves one client connection on the front until it closes, through its own connection to
/// the back.
fn front_connection(mut s: TcpStream, back_at: &str) {
    let Ok(mut back) = TcpStream::connect(back_at) else {
        return;
    };
    let _ = back.set_nodelay(true);
    while let Some(id) = read_frame(&mut s) {
        let start = truth::now();
        std::hint::black_box(front_work(id));
        if call_back(&mut back, id).is_none() {
            return;
        }
        truth::task("front", id as i64, id as i64, start, truth::now());
        if s.write_all(&frame(id)).is_err() {
            return;
        }
    }
}

/// Accepts connections and serves each on a thread until the listener's `expected` connections
/// have all closed.
fn serve(l: &TcpListener, expected: u64, f: impl Fn(TcpStream) + Send + Sync + Clone + 'static) {
    let mut threads = Vec::new();
    for _ in 0..expected {
        let Ok((s, _)) = l.accept() else { break };
        let _ = s.set_nodelay(true);
        let f = f.clone();
        threads.push(thread::spawn(move || f(s)));
    }
    for t in threads {
        let _ = t.join();
    }
}

fn client_connection(o: &Opts, conn: u64) -> Result<(), String> {
    let mut s =
        TcpStream::connect((o.host.as_str(), o.port)).map_err(|e| format!("connect: {e}"))?;
    s.set_nodelay(true).map_err(|e| e.to_string())?;
    for n in 0..o.requests {
        let id = conn * 1_000_000 + n;
        let start = truth::now();
        s.write_all(&frame(id)).map_err(|e| e.to_string())?;
        if read_frame(&mut s) != Some(id) {
            return Err(format!("no answer to request {id}"));
        }
        truth::task("request", id as i64, -1, start, truth::now());
    }
    Ok(())
}

fn run(role: &str, o: Opts) -> Result<(), String> {
    match role {
        "back" => {
            truth::open("chain-back");
            let l = listen(&o)?;
            // One connection per front connection, as many as the client opens.
            serve(&l, o.connections, back_connection);
            Ok(())
        }
        "front" => {
            truth::open("chain-front");
            let back = o.back.clone().ok_or("front needs --back ADDR:PORT")?;
            let l = listen(&o)?;
            serve(&l, o.connections, move |s| front_connection(s, &back));
            Ok(())
        }
        "client" => {
            truth::open("chain-client");
            let handles: Vec<_> = (0..o.connections)
                .map(|c| {
                    let o = o.clone();
                    thread::spawn(move || client_connection(&o, c))
                })
                .collect();
            for h in handles {
                h.join().map_err(|_| "a client thread panicked")??;
            }
            Ok(())
        }
        _ => Err(format!("unknown role {role:?}: back, front or client")),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((role, rest)) = args.split_first() else {
        eprintln!("usage: chain back|front|client [options] (see the source's docs)");
        std::process::exit(2);
    };
    if let Err(e) = parse(rest).and_then(|o| run(role, o)) {
        eprintln!("chain {role}: {e}");
        std::process::exit(1);
    }
}
