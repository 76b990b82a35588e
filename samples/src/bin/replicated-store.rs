//! replicated-store: a small version of the PacificA setup from the Scalpel paper, with its
//! flow-control bug.
//!
//! Three processes on loopback TCP: a client, the primary (this process) and a backup.
//! - The client submits commits (a window of outstanding commits per connection).
//! - Primary: a session thread per connection (each client's, and the backup's) receives packets
//!   (`recv_packet`) and dispatches them to a thread pool (`do_work`). A commit is applied
//!   locally (`mutate`: append to a log file and fsync), then sent to the backup through an RPC
//!   layer (`rpc_async_call`) that queues it for the network layer's 4 sender threads
//!   (`send_packet`).
//! - The backup applies the mutation (`apply_mutation`) and acks (`send_ack`).
//! - The backup's session thread receives the ack and dispatches it to the pool like any packet;
//!   there `receive_mutation_ack` replies to the client (`rpc_call_reply`), again through the
//!   senders.
//! - The pool's queue and the network layer's queue are completion ports ([`Port`]), the way
//!   PacificA's are Windows I/O completion ports: whoever takes an item was notified of that
//!   item, so the hand-off is visible to a tracer of synchronization calls.
//! - The link to the backup is simulated with a bandwidth (`--link-mbps`, default 4 MB/s).
//!   Why that low: the bug needs the workers to outpace the link, and on a loaded 2-core
//!   machine under the agent they manage 1.2 to 3 MB/s; at 10 MB/s some runs never filled the
//!   queue.
//! - Flow control in the network layer: when more than `--flow-limit` bytes (default 32 KiB)
//!   are queued, the senders stall together for `--flow-sleep-ms` (default 1 s: each sender
//!   that takes a packet in that time sleeps to its end), then send the backlog the stall left
//!   (or until the queue is down to half the limit) before a stall may begin again.
//!   With `--rpc async` (the default) the workers queue mutations faster than the link carries
//!   them, so the senders stall together again and again and the link idles most of the time;
//!   `--rpc sync` sends from the worker and waits for the ack, so the queue never fills.
//! - The logs (`--log-dir`) go to `/dev/shm` when it exists. Why: each commit's fsync holds the
//!   log lock, so on a disk whose fsync takes 4 ms the workers made only 233 commits/s (0.96
//!   MB/s), never outpaced the link and the bug did not show (a CI run with 0 stalls). On tmpfs
//!   the fsync is still a call the agent records, but the disk no longer decides the outcome
//!   (and since the stall re-arms after its backlog, not only at half the limit, a faster disk
//!   no longer decides how often it recurs either: see [`FlowState::Draining`]).
//!
//! Ground truth (samples/README.md): `worker_task` (session thread: packet received →
//! dispatched, for commits and acks), `local_commit` (worker: dequeued → mutation queued for the
//! backup), `remote_ack` (worker: ack dequeued → reply queued), `send_mutation` and `send_reply`
//! (sender thread: one packet), `apply` (backup), `commit` (client: submitted → reply received).
//! Ids are commit ids: `connection * 1000000 + n`; the worker and sender parts of one commit's
//! local commit (and of its remote ack) carry the commit id as their parent.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use scalpel_samples::truth;

const COMMIT: u8 = 1;
const MUTATION: u8 = 2;
const ACK: u8 = 3;
const REPLY: u8 = 4;

/// Command-line settings.
#[derive(Clone, Debug)]
struct Opts {
    rpc_sync: bool,
    clients: u64,
    commits: u64,
    window: u64,
    value_size: usize,
    workers: usize,
    senders: usize,
    flow_limit: usize,
    flow_sleep: Duration,
    /// Bandwidth of the simulated network between primary and backup, in bytes per second.
    link_bps: u64,
    port: u16,
    log_dir: std::path::PathBuf,
    /// The address the primary's and the backup's listeners bind, and the client connects to
    /// (`--bind`, `--host`): loopback unless the roles run on machines of their own.
    host: String,
    /// The backup to connect to (`--backup ADDR:PORT`), already running elsewhere; else the
    /// primary starts one.
    backup: Option<String>,
    /// The clients connect from elsewhere (`--remote-clients`); else the primary starts them.
    remote_clients: bool,
}

/// Where the logs go unless `--log-dir` says otherwise: tmpfs when there is one (see the module
/// docs: a slow disk's fsync would hide the flow-control bug), else the temporary directory.
fn default_log_dir() -> std::path::PathBuf {
    let shm = std::path::Path::new("/dev/shm");
    // Writable for us: a file can be made there (and is removed at once).
    let probe = shm.join(format!(".replicated-store-{}", std::process::id()));
    if File::create(&probe).is_ok() {
        let _ = std::fs::remove_file(&probe);
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    }
}

fn parse(args: &[String]) -> Result<Opts, String> {
    let mut o = Opts {
        rpc_sync: false,
        clients: 4,
        commits: 100,
        window: 16,
        value_size: 4096,
        workers: 4,
        senders: 4,
        flow_limit: 32 * 1024,
        flow_sleep: Duration::from_millis(1000),
        link_bps: 4_000_000,
        port: 0,
        log_dir: default_log_dir(),
        host: "127.0.0.1".to_string(),
        backup: None,
        remote_clients: false,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = || it.next().ok_or_else(|| format!("{a} needs a value"));
        let num = |v: &String| {
            v.parse::<u64>()
                .map_err(|_| format!("{a}: not a number: {v}"))
        };
        match a.as_str() {
            "--rpc" => match val()?.as_str() {
                "async" => o.rpc_sync = false,
                "sync" => o.rpc_sync = true,
                v => return Err(format!("--rpc takes async or sync, not {v}")),
            },
            "--clients" => o.clients = num(val()?)?.clamp(1, 64),
            "--commits" => o.commits = num(val()?)?,
            "--window" => o.window = num(val()?)?.max(1),
            "--value-size" => o.value_size = num(val()?)?.clamp(1, 1 << 20) as usize,
            "--workers" => o.workers = num(val()?)?.clamp(1, 64) as usize,
            "--senders" => o.senders = num(val()?)?.clamp(1, 64) as usize,
            "--flow-limit" => o.flow_limit = num(val()?)? as usize,
            "--flow-sleep-ms" => o.flow_sleep = Duration::from_millis(num(val()?)?),
            "--link-mbps" => o.link_bps = num(val()?)?.max(1) * 1_000_000,
            "--port" => o.port = num(val()?)? as u16,
            "--log-dir" => o.log_dir = val()?.into(),
            "--bind" | "--host" => o.host = val()?.clone(),
            "--backup" => o.backup = Some(val()?.clone()),
            "--remote-clients" => o.remote_clients = true,
            _ => return Err(format!("unknown option {a}")),
        }
    }
    Ok(o)
}

// ---------------------------------------------------------------------------------------------
// Framing: kind u8, id u64, length u32, payload.

// Always inlined (also in debug builds), like the port's calls: the functions the paper names
// (`recv_packet`, `send_packet`, `dispatch`, ...) are then the innermost frames at each call.
#[inline(always)]
fn write_frame(w: &mut impl Write, kind: u8, id: u64, payload: &[u8]) -> io::Result<()> {
    let mut buf = Vec::with_capacity(13 + payload.len());
    buf.push(kind);
    buf.extend_from_slice(&id.to_le_bytes());
    buf.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    buf.extend_from_slice(payload);
    w.write_all(&buf)
}

#[inline(always)]
fn read_frame(r: &mut impl Read) -> io::Result<Option<(u8, u64, Vec<u8>)>> {
    let mut head = [0u8; 13];
    match r.read_exact(&mut head) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let id = u64::from_le_bytes(head[1..9].try_into().expect("8 bytes"));
    let len = u32::from_le_bytes(head[9..13].try_into().expect("4 bytes")) as usize;
    let mut payload = vec![0u8; len];
    r.read_exact(&mut payload)?;
    Ok(Some((head[0], id, payload)))
}

// ---------------------------------------------------------------------------------------------
// The primary.

enum Work {
    Commit {
        id: u64,
        value: Vec<u8>,
        received: u64,
    },
    Ack {
        id: u64,
    },
}

enum Dest {
    Backup,
    Client(usize),
}

struct Outgoing {
    dest: Dest,
    kind: u8,
    id: u64,
    payload: Vec<u8>,
}

/// A completion port: the Linux stand-in for the Windows I/O completion ports PacificA's thread
/// pool and network layer are built on. Items wait in a table; each one's token goes through a
/// Unix socket pair, and a consumer blocks reading the next token, then takes that item. So the
/// thread that posts an item and the one that takes it meet at a byte stream, a notification the
/// agent sees, whether or not the consumer had to wait. (A mutex and condition variable queue
/// hides the hand-off whenever the consumer finds work without waiting.)
struct Port<T> {
    items: Mutex<(u64, HashMap<u64, T>)>,
    tx: UnixStream,
    rx: UnixStream,
}

/// The token that tells one consumer to stop.
const STOP: u64 = u64::MAX;

impl<T> Port<T> {
    fn new() -> io::Result<Self> {
        let (tx, rx) = UnixStream::pair()?;
        Ok(Port {
            items: Mutex::new((0, HashMap::new())),
            tx,
            rx,
        })
    }

    #[inline(always)]
    fn post(&self, item: T) {
        let token = {
            let mut g = self.items.lock().expect("port lock");
            g.0 += 1;
            let t = g.0;
            g.1.insert(t, item);
            t
        };
        self.send_token(token);
    }

    #[inline(always)]
    fn send_token(&self, token: u64) {
        (&self.tx)
            .write_all(&token.to_le_bytes())
            .expect("port write");
    }

    /// Tells `consumers` consumers to stop once the items posted before are taken.
    fn close(&self, consumers: usize) {
        for _ in 0..consumers {
            self.send_token(STOP);
        }
    }

    /// The next item, or None once the port is closed. Tokens are 8 bytes and every write and
    /// read is 8 bytes, so each read takes exactly one token.
    #[inline(always)]
    fn get(&self) -> Option<T> {
        let mut b = [0u8; 8];
        (&self.rx).read_exact(&mut b).expect("port read");
        let token = u64::from_le_bytes(b);
        if token == STOP {
            return None;
        }
        let item = self.items.lock().expect("port lock").1.remove(&token);
        Some(item.expect("an item for every token"))
    }
}

/// The network layer's flow-control state.
struct Flow {
    /// Bytes queued for the senders.
    bytes: usize,
    state: FlowState,
}

/// Where the network layer's flow control stands.
#[derive(Clone, Copy, Debug)]
enum FlowState {
    /// The next sender to take a packet while more than the limit is queued begins a stall.
    Armed,
    /// A stall under way until `until` (nanoseconds after `epoch`): every sender that takes a
    /// packet before then sleeps until then, so the senders stall together. Why one shared end
    /// rather than each sender's own sleep deciding: a sender that woke after the others had
    /// drained the queue began a stall again, and how often that happened decided how many
    /// stalls a run had (3 to 7 in runs of one setting).
    Stalled { until: u64 },
    /// After a stall, the senders send the backlog it left (`left` bytes of it still to go)
    /// without stalling again, or until the queue is down to half the limit.
    ///
    /// Why the backlog and not only the half-limit mark: the queue drops that low only if the
    /// workers fall behind the link for a moment. With the log on tmpfs they do (a stall's
    /// backlog goes out as one wave, and the next wave comes back with the replies), and the
    /// stall recurred once per window of commits; with the log on disk, each commit's fsync
    /// spread the workers' output so evenly that the queue stayed above the mark and the run
    /// stalled 2-3 times instead of 7. The backlog is the same on either: the commits
    /// outstanding.
    Draining { left: usize },
}

impl Flow {
    /// A sender takes a packet of `size` bytes at `now`: how long it must sleep first, if a
    /// stall is under way or begins now.
    fn take(&mut self, size: usize, now: u64, opts: &Opts) -> Option<Duration> {
        if matches!(self.state, FlowState::Armed) && self.bytes > opts.flow_limit {
            let until = now + opts.flow_sleep.as_nanos() as u64;
            self.state = FlowState::Stalled { until };
        }
        let mut left = None;
        if let FlowState::Stalled { until } = self.state {
            if until > now {
                left = Some(Duration::from_nanos(until - now));
            } else {
                self.state = FlowState::Draining { left: self.bytes };
            }
        }
        self.bytes -= size;
        if let FlowState::Draining { left } = self.state {
            let rest = left.saturating_sub(size);
            self.state = if rest == 0 || self.bytes <= opts.flow_limit / 2 {
                FlowState::Armed
            } else {
                FlowState::Draining { left: rest }
            };
        }
        left
    }
}

struct Primary {
    opts: Opts,
    pool: Port<Work>,
    net: Port<Outgoing>,
    flow: Mutex<Flow>,
    backup: Mutex<TcpStream>,
    clients: Vec<Mutex<TcpStream>>,
    log: Mutex<File>,
    /// Which accepted connection each commit came in on (replies go back on it).
    routes: Mutex<HashMap<u64, usize>>,
    /// Sync mode: acks the workers are waiting for.
    pending: Mutex<HashMap<u64, bool>>,
    pending_cv: Condvar,
    stalls: AtomicU64,
    sent_bytes: AtomicU64,
    /// The simulated link is busy until this many nanoseconds after `epoch`.
    link_busy_until: Mutex<u64>,
    epoch: Instant,
}

impl Primary {
    fn dispatch(&self, w: Work) {
        self.pool.post(w);
    }

    #[inline(never)]
    fn mutate(&self, id: u64, value: &[u8]) {
        let mut log = self.log.lock().expect("log lock");
        log.write_all(&id.to_le_bytes())
            .and_then(|_| log.write_all(value))
            .expect("log write");
        log.sync_data().expect("fsync");
    }

    #[inline(never)]
    fn rpc_async_call(&self, id: u64, value: Vec<u8>) {
        self.queue_packet(Outgoing {
            dest: Dest::Backup,
            kind: MUTATION,
            id,
            payload: value,
        });
    }

    #[inline(never)]
    fn rpc_sync_call(&self, id: u64, value: &[u8]) {
        self.pending.lock().expect("pending lock").insert(id, false);
        self.link_transmit(value.len() + 13);
        {
            let mut b = self.backup.lock().expect("backup lock");
            write_frame(&mut *b, MUTATION, id, value).expect("send to backup");
        }
        self.sent_bytes
            .fetch_add(13 + value.len() as u64, Ordering::Relaxed);
        let mut p = self.pending.lock().expect("pending lock");
        while !p.get(&id).copied().unwrap_or(true) {
            p = self.pending_cv.wait(p).expect("pending wait");
        }
        p.remove(&id);
    }

    #[inline(never)]
    fn receive_mutation_ack(&self, id: u64) {
        self.rpc_call_reply(id);
    }

    #[inline(never)]
    fn rpc_call_reply(&self, id: u64) {
        let conn = self
            .routes
            .lock()
            .expect("routes lock")
            .remove(&id)
            .expect("a route for every commit");
        if self.opts.rpc_sync {
            let mut c = self.clients[conn].lock().expect("client lock");
            write_frame(&mut *c, REPLY, id, &[]).expect("reply");
        } else {
            self.queue_packet(Outgoing {
                dest: Dest::Client(conn),
                kind: REPLY,
                id,
                payload: Vec::new(),
            });
        }
    }

    fn queue_packet(&self, o: Outgoing) {
        self.flow.lock().expect("flow lock").bytes += o.payload.len() + 13;
        self.net.post(o);
    }

    #[inline(never)]
    fn do_work(&self, w: Work) {
        match w {
            Work::Commit {
                id,
                value,
                received,
            } => {
                let start = truth::now();
                self.mutate(id, &value);
                if self.opts.rpc_sync {
                    self.rpc_sync_call(id, &value);
                    truth::task(
                        "local_commit",
                        id as i64,
                        id as i64,
                        start.max(received),
                        truth::now(),
                    );
                    let ack = truth::now();
                    self.receive_mutation_ack(id);
                    truth::task("remote_ack", id as i64, id as i64, ack, truth::now());
                } else {
                    self.rpc_async_call(id, value);
                    truth::task("local_commit", id as i64, id as i64, start, truth::now());
                }
            }
            Work::Ack { id } => {
                let start = truth::now();
                self.receive_mutation_ack(id);
                truth::task("remote_ack", id as i64, id as i64, start, truth::now());
            }
        }
    }

    fn worker(&self) {
        while let Some(w) = self.pool.get() {
            self.do_work(w);
        }
    }

    /// The network layer's flow control: the paper's one-second sleep when too much is queued
    /// (`left` of it, for a sender that joins a stall under way).
    #[inline(never)]
    fn flow_control_sleep(&self, left: Duration) {
        thread::sleep(left);
        // Counted after the sleep so that the sleep is not a tail call: the frame of this
        // function stays on the stack the agent records.
        self.stalls.fetch_add(1, Ordering::Relaxed);
    }

    /// Waits for the simulated link to carry `bytes` (senders share its bandwidth).
    #[inline(never)]
    fn link_transmit(&self, bytes: usize) {
        let cost = bytes as u64 * 1_000_000_000 / self.opts.link_bps;
        let done = {
            let mut busy = self.link_busy_until.lock().expect("link lock");
            let now = self.epoch.elapsed().as_nanos() as u64;
            *busy = (*busy).max(now) + cost;
            *busy
        };
        let now = self.epoch.elapsed().as_nanos() as u64;
        if done > now {
            thread::sleep(Duration::from_nanos(done - now));
        }
        // Not a tail call either (see flow_control_sleep).
        std::hint::black_box(());
    }

    #[inline(never)]
    fn send_packet(&self, o: &Outgoing) {
        let start = truth::now();
        self.link_transmit(o.payload.len() + 13);
        let stream = match o.dest {
            Dest::Backup => &self.backup,
            Dest::Client(c) => &self.clients[c],
        };
        let mut s = stream.lock().expect("stream lock");
        write_frame(&mut *s, o.kind, o.id, &o.payload).expect("send");
        drop(s);
        self.sent_bytes
            .fetch_add(13 + o.payload.len() as u64, Ordering::Relaxed);
        let ty = if o.kind == MUTATION {
            "send_mutation"
        } else {
            "send_reply"
        };
        truth::task(ty, o.id as i64, o.id as i64, start, truth::now());
    }

    fn sender(&self) {
        while let Some(o) = self.net.get() {
            let left = self.flow.lock().expect("flow lock").take(
                o.payload.len() + 13,
                self.epoch.elapsed().as_nanos() as u64,
                &self.opts,
            );
            if let Some(left) = left {
                self.flow_control_sleep(left);
            }
            self.send_packet(&o);
        }
    }

    #[inline(never)]
    fn recv_packet(r: &mut impl Read) -> Option<(u8, u64, Vec<u8>)> {
        read_frame(r).expect("receive")
    }

    /// One connection's session: a client's (`client` is its index) or the backup's (`None`).
    /// Every packet goes through the same receive and dispatch, whatever it is.
    fn session(&self, client: Option<usize>, mut stream: TcpStream) {
        while let Some((kind, id, value)) = Self::recv_packet(&mut stream) {
            let start = truth::now();
            let work = match (kind, client) {
                (COMMIT, Some(index)) => {
                    self.routes.lock().expect("routes lock").insert(id, index);
                    Work::Commit {
                        id,
                        value,
                        received: start,
                    }
                }
                (ACK, None) if self.opts.rpc_sync => {
                    let mut p = self.pending.lock().expect("pending lock");
                    p.insert(id, true);
                    self.pending_cv.notify_all();
                    continue;
                }
                (ACK, None) => Work::Ack { id },
                _ => continue,
            };
            self.dispatch(work);
            truth::task("worker_task", id as i64, -1, start, truth::now());
        }
    }
}

fn spawn_self(args: &[&str], stdout: Stdio) -> io::Result<Child> {
    Command::new(std::env::current_exe()?)
        .args(args)
        .stdout(stdout)
        .spawn()
}

// Each role is a frame of its own in every build: `main` calls one of them once, which an
// optimized build inlines, and a machine's tasks would then be named `main`, not by its role.
#[inline(never)]
fn run_primary(opts: Opts) -> Result<(), String> {
    truth::open("replicated-store");
    fn e(what: &str) -> impl Fn(io::Error) -> String + '_ {
        move |err| format!("{what}: {err}")
    }
    let (mut backup, backup_at) = match &opts.backup {
        Some(at) => (None, at.clone()),
        None => {
            let (child, port) = start_backup(&opts)?;
            (Some(child), format!("127.0.0.1:{port}"))
        }
    };
    let backup_stream =
        TcpStream::connect(backup_at.as_str()).map_err(e("connecting to the backup"))?;
    backup_stream.set_nodelay(true).map_err(e("nodelay"))?;

    let listener = TcpListener::bind((opts.host.as_str(), opts.port)).map_err(e("listening"))?;
    let port = listener
        .local_addr()
        .map_err(e("local address"))?
        .port()
        .to_string();
    let mut client = if opts.remote_clients {
        // Whoever starts the clients elsewhere waits for this line.
        println!("listening on {}:{port}", opts.host);
        io::stdout().flush().map_err(e("stdout"))?;
        None
    } else {
        let client_args = [
            "client",
            "--host",
            &opts.host,
            "--port",
            &port,
            "--clients",
            &opts.clients.to_string(),
            "--commits",
            &opts.commits.to_string(),
            "--window",
            &opts.window.to_string(),
            "--value-size",
            &opts.value_size.to_string(),
        ];
        Some(spawn_self(&client_args, Stdio::inherit()).map_err(e("starting the client"))?)
    };
    let mut clients = Vec::new();
    for _ in 0..opts.clients {
        let (s, _) = listener.accept().map_err(e("accepting a client"))?;
        s.set_nodelay(true).map_err(e("nodelay"))?;
        clients.push(s);
    }
    let log_path = opts.log_dir.join(format!(
        "replicated-store-primary-{}.log",
        std::process::id()
    ));
    let log = File::create(&log_path).map_err(e("creating the primary log"))?;
    let p = Arc::new(Primary {
        backup: Mutex::new(backup_stream.try_clone().map_err(e("clone"))?),
        clients: clients
            .iter()
            .map(|c| c.try_clone().map(Mutex::new))
            .collect::<io::Result<_>>()
            .map_err(e("clone"))?,
        opts: opts.clone(),
        pool: Port::new().map_err(e("pool port"))?,
        net: Port::new().map_err(e("network port"))?,
        flow: Mutex::new(Flow {
            bytes: 0,
            state: FlowState::Armed,
        }),
        log: Mutex::new(log),
        routes: Mutex::new(HashMap::new()),
        pending: Mutex::new(HashMap::new()),
        pending_cv: Condvar::new(),
        stalls: AtomicU64::new(0),
        sent_bytes: AtomicU64::new(0),
        link_busy_until: Mutex::new(0),
        epoch: Instant::now(),
    });
    let started = Instant::now();
    let named = |name: &str| thread::Builder::new().name(name.to_string());
    let spawn_n = |n: usize, name: &str, f: fn(&Primary)| {
        (0..n)
            .map(|_| {
                let p = Arc::clone(&p);
                named(name).spawn(move || f(&p)).map_err(e("thread"))
            })
            .collect::<Result<Vec<_>, String>>()
    };
    let workers = spawn_n(opts.workers, "worker", Primary::worker)?;
    let senders = spawn_n(opts.senders, "sender", Primary::sender)?;
    // One session per connection, the backup's last; all run the same code.
    let connections = clients
        .into_iter()
        .enumerate()
        .map(|(i, c)| (Some(i), c))
        .chain(std::iter::once((None, backup_stream)));
    let mut sessions = Vec::new();
    for (client, c) in connections {
        let p = Arc::clone(&p);
        sessions.push(
            named("session")
                .spawn(move || p.session(client, c))
                .map_err(e("thread"))?,
        );
    }
    let backup_session = sessions.pop().expect("the backup's session");
    let join = |t: thread::JoinHandle<()>| t.join().map_err(|_| "a thread panicked".to_string());
    // Clients elsewhere are done when they have closed their connections, which ends their
    // sessions.
    let ok = match client.as_mut() {
        Some(c) => c.wait().map_err(e("waiting for the client"))?.success(),
        None => true,
    };
    for s in sessions {
        join(s)?;
    }
    let elapsed = started.elapsed();
    // Every reply went out before the client finished: stop the pool, then the senders, then
    // the backup (closing its connection ends it and then its session).
    p.pool.close(opts.workers);
    for t in workers {
        join(t)?;
    }
    p.net.close(opts.senders);
    for t in senders {
        join(t)?;
    }
    p.backup
        .lock()
        .expect("backup lock")
        .shutdown(std::net::Shutdown::Both)
        .map_err(e("shutdown"))?;
    join(backup_session)?;
    if let Some(b) = backup.as_mut() {
        b.wait().map_err(e("waiting for the backup"))?;
    }
    let _ = std::fs::remove_file(&log_path);
    let bytes = p.sent_bytes.load(Ordering::Relaxed) as f64;
    let secs = elapsed.as_secs_f64();
    println!(
        "replicated-store ({} rpc): {} commits in {:.2} s, {:.0} commits/s, {:.2} MB/s sent, {} flow-control stalls of {} ms",
        if opts.rpc_sync { "sync" } else { "async" },
        opts.clients * opts.commits,
        secs,
        (opts.clients * opts.commits) as f64 / secs,
        bytes / secs / 1e6,
        p.stalls.load(Ordering::Relaxed),
        opts.flow_sleep.as_millis()
    );
    if !ok {
        return Err("the client failed".into());
    }
    Ok(())
}

/// Starts the backup on loopback; returns it and the port it listens on.
fn start_backup(opts: &Opts) -> Result<(Child, u16), String> {
    let e = |what: &'static str| move |err: io::Error| format!("{what}: {err}");
    let mut backup = spawn_self(
        &["backup", "--log-dir", &opts.log_dir.to_string_lossy()],
        Stdio::piped(),
    )
    .map_err(e("starting the backup"))?;
    let mut line = String::new();
    BufReader::new(backup.stdout.take().expect("piped"))
        .read_line(&mut line)
        .map_err(e("backup port"))?;
    let port = line
        .trim()
        .parse()
        .map_err(|_| format!("backup said {line:?}, not a port"))?;
    Ok((backup, port))
}

// ---------------------------------------------------------------------------------------------
// The backup and the client.

#[inline(never)]
fn apply_mutation(log: &mut File, id: u64, value: &[u8]) {
    log.write_all(&id.to_le_bytes())
        .and_then(|_| log.write_all(value))
        .expect("backup log");
    log.sync_data().expect("backup fsync");
}

/// Acks a mutation with the backup's log position after it, so that an ack, like every packet,
/// has a header and a payload.
#[inline(never)]
fn send_ack(s: &mut TcpStream, id: u64, position: u64) {
    write_frame(s, ACK, id, &position.to_le_bytes()).expect("ack");
}

#[inline(never)]
fn run_backup(opts: Opts) -> Result<(), String> {
    truth::open("replicated-store-backup");
    let listener = TcpListener::bind((opts.host.as_str(), opts.port))
        .map_err(|e| format!("backup listen: {e}"))?;
    println!(
        "{}",
        listener.local_addr().map_err(|e| e.to_string())?.port()
    );
    io::stdout().flush().map_err(|e| e.to_string())?;
    let (mut s, _) = listener
        .accept()
        .map_err(|e| format!("backup accept: {e}"))?;
    s.set_nodelay(true).map_err(|e| e.to_string())?;
    let path = opts.log_dir.join(format!(
        "replicated-store-backup-{}.log",
        std::process::id()
    ));
    let mut log = File::create(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut reader = s.try_clone().map_err(|e| e.to_string())?;
    let mut position = 0u64;
    while let Some((kind, id, value)) = Primary::recv_packet(&mut reader) {
        if kind == MUTATION {
            let start = truth::now();
            apply_mutation(&mut log, id, &value);
            position += 8 + value.len() as u64;
            send_ack(&mut s, id, position);
            truth::task("apply", id as i64, -1, start, truth::now());
        }
    }
    let _ = std::fs::remove_file(&path);
    Ok(())
}

#[inline(never)]
fn submit_commit(s: &mut TcpStream, id: u64, value: &[u8]) {
    write_frame(s, COMMIT, id, value).expect("submit");
}

fn client_connection(conn: u64, opts: &Opts) {
    let mut s = TcpStream::connect((opts.host.as_str(), opts.port)).expect("client connect");
    s.set_nodelay(true).expect("nodelay");
    let mut r = s.try_clone().expect("clone");
    let value: Vec<u8> = (0..opts.value_size)
        .map(|i| (i as u64 + conn) as u8)
        .collect();
    let mut started: HashMap<u64, u64> = HashMap::new();
    let (mut sent, mut done) = (0u64, 0u64);
    while done < opts.commits {
        while sent < opts.commits && sent - done < opts.window {
            let id = conn * 1_000_000 + sent;
            started.insert(id, truth::now());
            submit_commit(&mut s, id, &value);
            sent += 1;
        }
        let (kind, id, _) =
            Primary::recv_packet(&mut r).expect("the primary closed the connection");
        assert_eq!(kind, REPLY, "unexpected packet");
        let start = started.remove(&id).expect("a reply to a commit we sent");
        truth::task("commit", id as i64, conn as i64, start, truth::now());
        done += 1;
    }
}

#[inline(never)]
fn run_client(opts: Opts) -> Result<(), String> {
    truth::open("replicated-store-client");
    let handles: Vec<_> = (0..opts.clients)
        .map(|c| {
            let o = opts.clone();
            thread::spawn(move || client_connection(c, &o))
        })
        .collect();
    for h in handles {
        h.join()
            .map_err(|_| "a client connection failed".to_string())?;
    }
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (role, rest) = match args.first().map(String::as_str) {
        Some("backup") => ("backup", &args[1..]),
        Some("client") => ("client", &args[1..]),
        _ => ("primary", &args[..]),
    };
    let result = parse(rest).and_then(|o| match role {
        "backup" => run_backup(o),
        "client" => run_client(o),
        _ => run_primary(o),
    });
    if let Err(e) = result {
        eprintln!("replicated-store {role}: {e}");
        std::process::exit(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PACKET: usize = 4096 + 13;

    fn armed(packets: usize) -> Flow {
        Flow {
            bytes: packets * PACKET,
            state: FlowState::Armed,
        }
    }

    fn opts() -> Opts {
        let mut o = parse(&[]).unwrap();
        o.flow_sleep = Duration::from_nanos(1000);
        o
    }

    /// A queue that stays above half the limit after a stall (the workers keep up with the
    /// link) still stalls again once the stall's backlog is sent.
    #[test]
    fn a_stall_rearms_once_its_backlog_is_sent() {
        let o = opts();
        let mut f = armed(10);
        // Over the limit (32 KiB): the first taker stalls to the shared end.
        assert_eq!(f.take(PACKET, 0, &o), Some(Duration::from_nanos(1000)));
        assert_eq!(f.take(PACKET, 400, &o), Some(Duration::from_nanos(600)));
        // After the end, the 9 packets queued when the first sender comes back are the
        // backlog; the workers queue one packet for each one sent, so the queue never falls
        // to half the limit.
        for _ in 0..9 {
            f.bytes += PACKET;
            assert_eq!(f.take(PACKET, 2000, &o), None);
        }
        assert!(matches!(f.state, FlowState::Armed), "{:?}", f.state);
        assert_eq!(f.take(PACKET, 3000, &o), Some(Duration::from_nanos(1000)));
    }

    /// Below the limit nothing stalls; a drain that reaches half the limit re-arms early.
    #[test]
    fn half_the_limit_rearms_before_the_backlog_is_sent() {
        let o = opts();
        let mut f = armed(4);
        assert_eq!(f.take(PACKET, 0, &o), None);
        f.bytes = 9 * PACKET;
        assert!(f.take(PACKET, 0, &o).is_some());
        assert_eq!(f.take(PACKET, 5000, &o), None);
        assert!(
            matches!(f.state, FlowState::Draining { .. }),
            "{:?}",
            f.state
        );
        // The backlog was 8 packets; after 5 of them, 3 are queued (under 16 KiB).
        for _ in 0..4 {
            f.take(PACKET, 5000, &o);
        }
        assert_eq!(f.bytes, 3 * PACKET);
        assert!(matches!(f.state, FlowState::Armed), "{:?}", f.state);
    }
}
