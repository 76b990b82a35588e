//! A generated program's architecture, drawn from a seed.
//!
//! Every choice comes from one seed through a fixed generator (SplitMix64), so a seed names the
//! same program on every machine and in every version that keeps this file's order of draws.
//! The architecture is the seed modulo the number of architectures, so that any run of
//! consecutive seeds covers them all evenly.

use std::fmt;

/// How the server's threads serve a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arch {
    /// A thread per connection, in a loop of read, serve, write.
    ThreadPerConnection,
    /// One thread waits on epoll for every connection and serves each request itself.
    EventLoop,
    /// An epoll thread reads requests and hands each to a pool of workers, which answer.
    Pool,
    /// Stages joined by bounded queues (mutex, not-empty and not-full conditions): the epoll
    /// thread reads, the middle stage serves, the last one (or the middle one) answers.
    Pipeline,
    /// A process forked per connection, in a loop of read, serve, write.
    ForkPerConnection,
}

impl Arch {
    /// Every architecture, in the order seeds cycle through them.
    pub const ALL: [Arch; 5] = [
        Arch::ThreadPerConnection,
        Arch::EventLoop,
        Arch::Pool,
        Arch::Pipeline,
        Arch::ForkPerConnection,
    ];

    /// Its name in the corpus's lines.
    pub fn name(self) -> &'static str {
        match self {
            Arch::ThreadPerConnection => "thread-per-connection",
            Arch::EventLoop => "event-loop",
            Arch::Pool => "pool",
            Arch::Pipeline => "pipeline",
            Arch::ForkPerConnection => "fork-per-connection",
        }
    }
}

/// How the pool's reader tells a worker there is work (`H_*` in `tests/gen/runtime.h`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Handoff {
    /// A mutex-protected queue and a condition variable.
    Cond,
    /// A mutex-protected queue and a counting semaphore.
    Sem,
    /// The item itself written to a pipe.
    Pipe,
    /// A mutex-protected queue and an eventfd in semaphore mode.
    Eventfd,
    /// A mutex-protected queue and a futex word counting the items.
    Futex,
}

impl Handoff {
    const ALL: [Handoff; 5] = [
        Handoff::Cond,
        Handoff::Sem,
        Handoff::Pipe,
        Handoff::Eventfd,
        Handoff::Futex,
    ];

    /// The runtime's constant for it.
    pub fn c_name(self) -> &'static str {
        match self {
            Handoff::Cond => "H_COND",
            Handoff::Sem => "H_SEM",
            Handoff::Pipe => "H_PIPE",
            Handoff::Eventfd => "H_EVENTFD",
            Handoff::Futex => "H_FUTEX",
        }
    }

    /// Its name in the corpus's lines.
    pub fn name(self) -> &'static str {
        match self {
            Handoff::Cond => "cond",
            Handoff::Sem => "sem",
            Handoff::Pipe => "pipe",
            Handoff::Eventfd => "eventfd",
            Handoff::Futex => "futex",
        }
    }
}

/// One generated program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spec {
    /// The seed it was drawn from.
    pub seed: u64,
    pub arch: Arch,
    /// The pool's hand-off (drawn for every architecture, used by the pool).
    pub handoff: Handoff,
    /// A Unix socket instead of TCP on 127.0.0.1.
    pub unix_socket: bool,
    /// Connections, one per client thread of the load.
    pub clients: u32,
    /// Requests per connection.
    pub requests: u32,
    /// Requests a client writes before it reads their responses (1: none pipelined).
    pub pipeline: u32,
    /// Requests in a thousand that take the slow path.
    pub slow_permille: u32,
    /// The slow path waits for a group commit by a service thread (else it only computes).
    pub slow_commit: bool,
    /// Loop iterations a request costs.
    pub work: u32,
    /// Threads that share a lock with the handlers and nothing else.
    pub noise: u32,
    /// Pool workers.
    pub workers: u32,
    /// Pipeline stages after the reader's (1: the server stage answers; 2: a writer does).
    pub stages: u32,
    /// Bounded queues' capacity.
    pub capacity: u32,
    /// The serving stage is slow enough that the reader fills the queue and waits for room.
    pub flooded: bool,
    /// Every request calls a backend outside the trace on a connection of its own, as a proxy
    /// does (thread per connection and event loop only: drawn for every architecture, last,
    /// so that adding it left every other choice of every seed as it was).
    pub call: bool,
    /// The pool's workers report each finished request through an eventfd that the epoll
    /// thread watches edge-triggered and never reads, and the epoll thread writes the replies
    /// and hands over a connection's next (pipelined) request only after its reply, as nginx's
    /// thread pools do (pool only; drawn after `call`, for the same reason).
    pub completions: bool,
    /// The pool's workers take their first item before their loop, from a call of its own,
    /// as a compiler that peels or rotates a loop writes it (pool only; drawn last, for the
    /// same reason).
    pub peeled: bool,
    /// Every request's computing, and every noise thread's, holds a global lock built from a
    /// mutex and conditions, as an interpreter's is (CPython's GIL), with forced switches: a
    /// thread that waited too long asks the holder to wait, once it has let the lock go, until
    /// another thread has taken it (thread per connection and pool only, whose handlers are
    /// several threads, and only where three or more threads share it; drawn last, for the
    /// same reason).
    pub global_lock: bool,
    /// The epoll thread hands a request over only to an idle worker; with none idle it waits
    /// until a worker that goes idle writes a byte to its wake-up pipe, as Apache's event MPM
    /// listener waits for an idle worker (pool without completions; drawn last, for the same
    /// reason).
    pub idle: bool,
    /// The pool's workers hand each reply to one sender thread through one channel (a pipe, a
    /// Unix socket pair where the transport is Unix sockets), each writing the item itself, and
    /// the sender writes it to the client, as servers with a network thread do: several workers
    /// write one channel at once (pool without completions or `idle`; drawn last, for the same
    /// reason).
    pub sender: bool,
    /// The epoll thread hands each request to a feeder thread, which gives it to an idle
    /// worker's own queue and, with none idle, waits on a condition every worker signals as it
    /// goes idle, as XZ Utils' threaded encoder feeds its workers (pool of two or more workers
    /// without completions, `idle` or `sender`; drawn last, for the same reason).
    pub feeder: bool,
    /// The feeder hands each request over in pieces: the item, then this many more puts on the
    /// worker's queue, each with its own notification, which the worker takes one by one
    /// before it serves, as XZ Utils' main thread copies a block's input to its worker in
    /// pieces (0: the item alone; feeder only, drawn last for the same reason). Which put a
    /// take drains, and whether the worker woke early and waited again, is timing.
    pub chunks: u32,
}

/// SplitMix64: small, fast, and the same everywhere.
struct Draw(u64);

impl Draw {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `lo..=hi`.
    fn range(&mut self, lo: u32, hi: u32) -> u32 {
        lo + (self.next() % u64::from(hi - lo + 1)) as u32
    }

    fn chance(&mut self, permille: u32) -> bool {
        self.next() % 1000 < u64::from(permille)
    }

    fn pick<T: Copy>(&mut self, from: &[T]) -> T {
        from[(self.next() % from.len() as u64) as usize]
    }
}

impl Spec {
    /// The program of `seed`.
    pub fn from_seed(seed: u64) -> Spec {
        let arch = Arch::ALL[(seed % Arch::ALL.len() as u64) as usize];
        let mut d = Draw(seed);
        let handoff = d.pick(&Handoff::ALL);
        let unix_socket = d.chance(300);
        let clients = d.range(2, 6);
        let requests = d.range(20, 50);
        let pipeline = if d.chance(250) { d.range(2, 4) } else { 1 };
        let slow_permille = d.pick(&[0, 0, 100, 250, 500]);
        let slow_commit = d.chance(500);
        let work = d.range(2_000, 40_000);
        let noise = d.range(0, 2);
        let workers = d.range(1, 4);
        let stages = d.range(1, 2);
        let capacity = d.range(2, 8);
        let flooded = d.chance(500);
        let call = d.chance(250);
        let completions = d.chance(500);
        let peeled = d.chance(500);
        let global_lock = d.chance(300);
        let idle = d.chance(500);
        let sender = d.chance(500);
        let feeder = d.chance(500);
        let chunks = if d.chance(500) { d.range(2, 6) } else { 0 };
        let forked = arch == Arch::ForkPerConnection;
        // The threads that would share a global lock: a lock two threads pass to and fro is a
        // dialogue between them (docs/LIMITS.md), so it is drawn only where three or more do.
        let lock_sharers = noise
            + match arch {
                Arch::ThreadPerConnection => clients,
                Arch::Pool => workers,
                _ => 0,
            };
        let feeder =
            feeder && arch == Arch::Pool && workers >= 2 && !completions && !idle && !sender;
        Spec {
            seed,
            arch,
            handoff,
            unix_socket,
            clients,
            requests,
            pipeline,
            slow_permille,
            // A forked child has neither the service thread nor the noise threads.
            slow_commit: slow_commit && !forked,
            work,
            noise: if forked { 0 } else { noise },
            workers,
            stages,
            capacity,
            flooded,
            call: call && matches!(arch, Arch::ThreadPerConnection | Arch::EventLoop),
            completions: completions && arch == Arch::Pool,
            peeled: peeled && arch == Arch::Pool,
            global_lock: global_lock && lock_sharers >= 3,
            idle: idle && arch == Arch::Pool && !completions,
            // Not with `idle`: the chosen seeds of the fixed set draw it, and stay as they were.
            sender: sender && arch == Arch::Pool && !completions && !idle,
            feeder,
            chunks: if feeder { chunks } else { 0 },
        }
    }

    /// Requests the load sends in all.
    pub fn total_requests(&self) -> u32 {
        self.clients * self.requests
    }
}

impl fmt::Display for Spec {
    /// The choices that matter for this architecture, as `key=value` words.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "arch={}", self.arch.name())?;
        match self.arch {
            Arch::Pool => write!(
                f,
                " handoff={} workers={}",
                self.handoff.name(),
                self.workers
            )?,
            Arch::Pipeline => write!(
                f,
                " stages={} capacity={} flooded={}",
                self.stages + 1,
                self.capacity,
                self.flooded
            )?,
            _ => {}
        }
        if self.call {
            write!(f, " call=backend")?;
        }
        if self.completions {
            write!(f, " replies=loop")?;
        }
        if self.peeled {
            write!(f, " first-take=peeled")?;
        }
        if self.global_lock {
            write!(f, " lock=global")?;
        }
        if self.idle {
            write!(f, " idle=wakeup-pipe")?;
        }
        if self.sender {
            write!(f, " replies=sender")?;
        }
        if self.feeder {
            write!(f, " feeder=idle-cond")?;
        }
        if self.chunks > 0 {
            write!(f, " chunks={}", self.chunks)?;
        }
        let transport = if self.unix_socket { "unix" } else { "tcp" };
        write!(
            f,
            " transport={transport} clients={} pipeline={} slow={}‰{} noise={}",
            self.clients,
            self.pipeline,
            self.slow_permille,
            if self.slow_commit && self.slow_permille > 0 {
                "+commit"
            } else {
                ""
            },
            self.noise
        )
    }
}
