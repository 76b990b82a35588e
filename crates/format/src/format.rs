//! The on-disk layout of a Scalpel trace file: header offsets, record kinds, operation codes.
//!
//! This module is the single definition of the format. The agent encodes with it (it is compiled
//! without `std` features there) and the reader decodes with it, so the two cannot drift apart.
//!
//! # File layout (version 1)
//!
//! ```text
//! 0      header, HEADER_SIZE bytes (one page), fields at the offsets below, little-endian
//! 4096   records: kind:u8, then for every kind but PAD a varint payload length and the payload
//! ```
//!
//! The writer publishes the header's `committed` field after each record; bytes past it are not
//! part of the trace (they may be a record being written when the process died). Readers skip
//! record kinds they do not know by their length, skip `PAD` bytes (zeros left at the end of a
//! mapped window), skip (with a warning) a record whose payload does not decode, and stop at the
//! first record whose length runs past `committed` or does not decode.

/// Magic bytes at offset 0.
pub const MAGIC: [u8; 8] = *b"SCALPEL\0";
/// Format version written by this code. Readers accept any version up to this one.
pub const VERSION: u16 = 1;
/// Size of the fixed header. Records start here.
pub const HEADER_SIZE: usize = 4096;

/// Header field offsets (all little-endian).
pub mod hdr {
    /// `[u8; 8]` magic.
    pub const MAGIC: usize = 0;
    /// `u16` format version.
    pub const VERSION: usize = 8;
    /// `u16` header size in bytes.
    pub const HEADER_SIZE: usize = 10;
    /// `u8` file kind, see [`super::FileKind`].
    pub const FILE_KIND: usize = 12;
    /// `u8` flags, see [`super::flags`].
    pub const FLAGS: usize = 13;
    /// `u32` process id.
    pub const PID: usize = 16;
    /// `u32` thread id (0 for a process file).
    pub const TID: usize = 20;
    /// `u32` parent process id.
    pub const PPID: usize = 24;
    /// `u32` real user id when the file was created.
    pub const UID: usize = 28;
    /// `u64` clock reading (ticks) of the calibration point.
    pub const CLOCK0: usize = 32;
    /// `u64` CLOCK_MONOTONIC nanoseconds at the calibration point.
    pub const MONO0: usize = 40;
    /// `u64` clock ticks per second (measured; 1e9 when the clock is CLOCK_MONOTONIC itself).
    pub const TICKS_PER_SEC: usize = 48;
    /// `u64` CLOCK_REALTIME nanoseconds at the calibration point (for display only).
    pub const REALTIME0: usize = 56;
    /// `u64` number of record bytes after the header that are complete.
    pub const COMMITTED: usize = 64;
    /// `u64` events the writer had to drop (full disk, failed mapping).
    pub const DROPPED: usize = 72;
    /// `u32` thread sequence number within the process (0 = first thread seen).
    pub const THREAD_INDEX: usize = 80;
    /// `u32` writer state, see [`super::state`].
    pub const STATE: usize = 84;
    /// `u32` stacks answered from the agent's stack cache and re-walked to check them (only in
    /// the cache's check mode).
    pub const STACK_CHECKED: usize = 88;
    /// `u32` of those checks where the cached stack differed from the walked one.
    pub const STACK_MISMATCHED: usize = 92;
    /// `[u8; 16]` thread name (NUL padded) at file creation; updated at clean thread exit.
    pub const THREAD_NAME: usize = 96;
    /// `u64` events that wanted a call stack the agent could not take (the stack pointer outside
    /// the thread's stack, as on a signal stack, or a walk that failed); sampled-out events
    /// are not counted.
    pub const STACKS_MISSED: usize = 112;
    /// Length of the thread name field.
    pub const THREAD_NAME_LEN: usize = 16;
    /// `[u8; 256]` executable path (NUL padded, truncated).
    pub const EXE: usize = 128;
    /// Length of the executable path field.
    pub const EXE_LEN: usize = 256;
    /// `u64` the state of the counts table below (`SCALPEL_LOCKS=count`): the table's
    /// generation in the high 32 bits (how many times it was written out as
    /// [`super::Op::MutexCounted`] events, which carry it in `aux2`), its entries in the low 32.
    /// Zero in files that have no table.
    pub const COUNTS_STATE: usize = 384;
    /// `[u64; COUNT_SLOTS]` the mutexes (keys) of the counts table: uncontended pairs counted
    /// since the table was last written out. Kept in the header so that counts a thread had not
    /// written out when it was killed, or when another thread ended the process, are still read:
    /// an entry whose key has no `mutex_counted` event of the table's generation in the file is
    /// read as one at the file's last event.
    pub const COUNT_KEYS: usize = 392;
    /// `[u64; COUNT_SLOTS]` the pair count of each key of [`COUNT_KEYS`].
    pub const COUNT_VALUES: usize = COUNT_KEYS + 8 * COUNT_SLOTS;
    /// Entries of the counts table.
    pub const COUNT_SLOTS: usize = 16;
    /// Where the counts table ends: files whose header is shorter have none.
    pub const COUNTS_END: usize = COUNT_VALUES + 8 * COUNT_SLOTS;
}

/// Header flag bits.
pub mod flags {
    /// The event clock is the CPU timestamp counter (else CLOCK_MONOTONIC nanoseconds).
    pub const CLOCK_TSC: u8 = 1;
}

/// Writer states stored at [`hdr::STATE`].
pub mod state {
    /// The writer is (or was, if it died) recording.
    pub const OPEN: u32 = 0;
    /// The thread exited and the writer closed the file cleanly.
    pub const CLOSED: u32 = 1;
}

/// What a file describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum FileKind {
    /// One thread's events.
    Thread = 0,
    /// One process incarnation's metadata (command line, module map).
    Process = 1,
}

impl FileKind {
    /// Decodes the header byte.
    pub fn from_u8(v: u8) -> Option<Self> {
        match v {
            0 => Some(Self::Thread),
            1 => Some(Self::Process),
            _ => None,
        }
    }
}

/// Record kinds. New kinds are appended; readers skip the ones they do not know.
pub mod rec {
    /// A single filler byte (no length follows).
    pub const PAD: u8 = 0;
    /// An event, see [`super::field`].
    pub const EVENT: u8 = 1;
    /// Defines a per-file object index: index, object kind, key, identity bytes.
    pub const OBJECT: u8 = 2;
    /// A clock calibration point: clock ticks, CLOCK_MONOTONIC ns, and the width in ticks of
    /// the two TSC reads that bracket the clock read (0 without the TSC; absent from traces of
    /// earlier agents). The ticks are the bracket's middle, so a point is off by up to half
    /// its width.
    pub const CALIBRATION: u8 = 3;
    /// The process's `/proc/self/maps` text at a point in time: clock ticks, then the text. The
    /// process file holds the map at start; thread files hold a new one whenever the loader's
    /// module counters moved (checked at thread start and at calibration points).
    pub const MAPS: u8 = 4;
    /// The NUL-separated command line.
    pub const CMDLINE: u8 = 5;
    /// The thread's name at a point in time: clock ticks, then the name.
    pub const THREAD_NAME: u8 = 6;
    /// Events lost since the previous record: count.
    pub const LOST: u8 = 7;
    /// A call stack, written once per thread file before the first event naming it:
    /// `id:varint, count:varint`, then `count` return addresses, innermost first, the first as a
    /// varint and each next one as a zigzag varint difference from the previous. Events name it
    /// in their STACK field; id 0 is never defined.
    pub const STACK: u8 = 8;
    /// Forgets every object index defined so far in this file (the writer's table filled up).
    pub const OBJECT_RESET: u8 = 9;
    /// The executable path (full length).
    pub const EXE: u8 = 10;
    /// What the readiness wait just before it (epoll, poll, select) reported ready for input:
    /// `form:u8` (see [`super::ready`]), `reported:varint` (how many descriptors the call found
    /// ready for input), `listed:varint`, then `listed` varint values (at most
    /// [`super::ready::MAX_LISTED`]). It follows its event directly; a reader that finds it after
    /// anything else ignores it.
    pub const READY: u8 = 11;
    /// The process title as `/proc/self/cmdline` showed it at a point in time: clock ticks,
    /// then the NUL-separated text. Written by whichever thread noticed a change (processes
    /// that rename themselves by overwriting argv); the one held longest names the process.
    pub const TITLE: u8 = 12;
    /// An on-CPU sample (`record --sample HZ`): `ticks:varint`, `period_ns:varint` (the
    /// timer's period, thread CPU time), `overruns:varint` (expiries the kernel merged into this
    /// one: the sample stands for `period_ns * (1 + overruns)`), `stack:varint` (a STACK id of
    /// this file, 0 for none), `flags:u8` (see [`super::sample`]). A sample's stack starts at the
    /// interrupted instruction, stored plus one so that, like every other frame, it reads as a
    /// return address.
    pub const SAMPLE: u8 = 13;
    /// An uncontended mutex acquisition and the release that followed it with no other record
    /// of the thread in between: two events in one record. The payload is an EVENT payload
    /// whose `op` is the acquisition (`mutex_lock` or `mutex_trylock`, result 0, no duration),
    /// `dt`, `obj`, `seq` and `stack` are the acquisition's, `duration` is the ticks from the
    /// acquisition to the `mutex_unlock` (result 0), `aux` is the unlock's sequence number
    /// minus the acquisition's (at least 1) and `aux2` the unlock's stack id. The next record's
    /// time delta and the object's next sequence delta count from the unlock. See
    /// [`crate::record::RawEvent::split_held`].
    pub const HELD: u8 = 14;
}

/// The flags of a SAMPLE record.
pub mod sample {
    /// The thread was inside the agent's own code when it was sampled.
    pub const IN_AGENT: u8 = 1 << 0;
    /// The sample was taken while the agent was writing and written just after.
    pub const DEFERRED: u8 = 1 << 1;
}

/// The forms of a READY record's values.
pub mod ready {
    /// epoll: the user data (`epoll_event.data.u64`) of each event; the EPOLL_CTL event that
    /// registered the same data on the same instance says which descriptor it stands for.
    pub const EPOLL_DATA: u8 = 1;
    /// poll and select: the key of each ready descriptor's incoming stream (the STREAM object
    /// key its reads use); descriptors with no stream are left out.
    pub const STREAM_KEYS: u8 = 2;
    /// The most values one record lists; the rest are only counted in `reported`. An event
    /// loop reports every connection that sent something in one wait (nginx under 32 clients:
    /// 32 or 33 descriptors in a third of its waits), and what matters (a thread pool's
    /// eventfd) can come anywhere in that list.
    pub const MAX_LISTED: usize = 64;
}

/// Optional event fields, present when their bit is set in the event's field mask, encoded in
/// this order after `op`, `mask`, `time delta` and `duration`.
pub mod field {
    /// varint object index (per file, defined by an earlier OBJECT record).
    pub const OBJ: u8 = 1 << 0;
    /// zigzag varint: sequence number minus the previous sequence number of the object bound to
    /// this index since the OBJECT record that bound it (0 before the first).
    pub const SEQ: u8 = 1 << 1;
    /// zigzag varint: the call's result (negative errno on failure).
    pub const RESULT: u8 = 1 << 2;
    /// varint file descriptor.
    pub const FD: u8 = 1 << 3;
    /// varint byte offset of the first byte of this call in its stream.
    pub const OFFSET: u8 = 1 << 4;
    /// varint auxiliary value, meaning given per operation.
    pub const AUX: u8 = 1 << 5;
    /// varint second auxiliary value, meaning given per operation.
    pub const AUX2: u8 = 1 << 6;
    /// varint stack id (0 = no stack).
    pub const STACK: u8 = 1 << 7;
}

/// Optional event fields of the second mask, which follows the fields of the first when any of
/// them is present. A reader that predates it stops at the end of the first mask's fields and
/// ignores the rest of the payload, so adding these changed no version.
pub mod field2 {
    /// varint: the thread's CPU time (CLOCK_THREAD_CPUTIME_ID, ns) when the call returned, minus
    /// its value at the previous event of this file that carried one (0 before the first).
    /// Written only when recording with CPU times (`SCALPEL_CPU_TIME=on`).
    pub const CPU: u8 = 1 << 0;
}

/// A kind byte of the format as an enum: each variant with its code and name, `ALL` in code
/// order, `code`, `from_code` (unknown codes are `None`: readers keep them as numbers) and `name`.
macro_rules! kinds {
    ($(#[$doc:meta])* $kind:ident { $( $(#[$vdoc:meta])* $v:ident = $code:literal, $name:literal; )* }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u8)]
        pub enum $kind { $( $(#[$vdoc])* $v = $code, )* }

        impl $kind {
            /// Every kind, by code.
            pub const ALL: &'static [$kind] = &[$($kind::$v,)*];

            /// The byte the format holds for this kind.
            #[inline]
            pub const fn code(self) -> u8 {
                self as u8
            }

            /// The kind a byte names, if this version knows it.
            #[inline]
            pub const fn from_code(code: u8) -> Option<$kind> {
                match code {
                    $($code => Some($kind::$v),)*
                    _ => None,
                }
            }

            /// Its name (`mutex`, `tcp` …).
            pub const fn name(self) -> &'static str {
                match self {
                    $($kind::$v => $name,)*
                }
            }
        }
    };
}

kinds! {
    /// Kinds of objects named by OBJECT records (the record holds [`ObjKind::code`]).
    ObjKind {
        /// `pthread_mutex_t` address.
        Mutex = 1, "mutex";
        /// `pthread_cond_t` address.
        Cond = 2, "cond";
        /// `pthread_rwlock_t` address.
        Rwlock = 3, "rwlock";
        /// `sem_t` address.
        Sem = 4, "sem";
        /// futex word address.
        Futex = 5, "futex";
        /// One direction of a byte channel; identity: see [`ChanKind`].
        Stream = 6, "stream";
        /// A listening endpoint that connects and accepts meet at; identity: channel kind +
        /// address.
        Endpoint = 7, "endpoint";
        /// A thread handle (`pthread_t`).
        Thread = 8, "thread";
        /// A spawn (thread creation or fork) joining parent and child.
        Spawn = 9, "spawn";
        /// An epoll instance.
        Epoll = 10, "epoll";
    }
}

impl ObjKind {
    /// Whether objects of this kind belong to one process unless their identity says otherwise:
    /// pthread objects and futex words are named by address, and processes forked from one
    /// parent have the same addresses for different objects.
    pub const fn process_scoped(self) -> bool {
        matches!(
            self,
            ObjKind::Mutex
                | ObjKind::Cond
                | ObjKind::Rwlock
                | ObjKind::Sem
                | ObjKind::Futex
                | ObjKind::Thread
        )
    }
}

/// The identity byte of a mutex, cond, rwlock, semaphore or futex object that its process declared
/// process-shared (`PTHREAD_PROCESS_SHARED`, `sem_init` with `pshared`, a futex call without
/// `FUTEX_PRIVATE_FLAG`). Objects of those kinds without it (and every thread handle) are their own
/// process's: another process's object at the same address is a different object.
pub const SHARED_IDENTITY: u8 = 1;

kinds! {
    /// Channel kinds used in STREAM and ENDPOINT identities (the identity holds
    /// [`ChanKind::code`]).
    ChanKind {
        /// Unknown or unsupported descriptor.
        Other = 0, "other";
        /// TCP over IPv4 or IPv6.
        Tcp = 1, "tcp";
        /// UDP over IPv4 or IPv6.
        Udp = 2, "udp";
        /// Unix domain socket.
        Unix = 3, "unix";
        /// Pipe or FIFO.
        Pipe = 4, "pipe";
        /// eventfd.
        Eventfd = 5, "eventfd";
        /// Regular file.
        File = 6, "file";
        /// Terminal or character device.
        Char = 7, "char";
    }
}

/// Sides of an operation with respect to the per-object sequence number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// Releases or notifies: its number is taken before the real call.
    Release,
    /// Acquires or observes: its number is taken after the real call returns.
    Acquire,
    /// Carries no sequence number.
    None,
}

macro_rules! ops {
    ($( $(#[$doc:meta])* $name:ident = $code:literal, $text:literal, $side:ident; )*) => {
        /// Operation codes of events.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u8)]
        pub enum Op { $( $(#[$doc])* $name = $code, )* }

        impl Op {
            /// Every known operation.
            pub const ALL: &'static [Op] = &[$(Op::$name,)*];

            /// Decodes an operation code.
            pub fn from_u8(v: u8) -> Option<Op> {
                Op::from_code(v)
            }

            /// The byte the format holds for this operation.
            #[inline]
            pub const fn code(self) -> u8 {
                self as u8
            }

            /// The operation a byte names, if this version knows it.
            #[inline]
            pub const fn from_code(v: u8) -> Option<Op> {
                match v { $( $code => Some(Op::$name), )* _ => None }
            }

            /// The name used by `scalpel dump` and its `--op` filter.
            pub fn name(self) -> &'static str {
                match self { $( Op::$name => $text, )* }
            }

            /// Which side of the sequence-number protocol this operation is on.
            pub fn side(self) -> Side {
                match self { $( Op::$name => Side::$side, )* }
            }
        }
    };
}

ops! {
    /// `pthread_mutex_lock` returned.
    MutexLock = 1, "mutex_lock", Acquire;
    /// `pthread_mutex_trylock` returned (result tells whether it got the lock).
    MutexTrylock = 2, "mutex_trylock", Acquire;
    /// `pthread_mutex_timedlock` returned.
    MutexTimedlock = 3, "mutex_timedlock", Acquire;
    /// `pthread_mutex_clocklock` returned.
    MutexClocklock = 4, "mutex_clocklock", Acquire;
    /// `pthread_mutex_unlock`.
    MutexUnlock = 5, "mutex_unlock", Release;
    /// Synthesized: a condition wait released its mutex (obj = the mutex); the wait follows.
    CondUnlock = 6, "cond_unlock", Release;
    /// Synthesized: a condition wait re-acquired its mutex (obj = the mutex); the wait precedes.
    CondRelock = 7, "cond_relock", Acquire;
    /// Synthesized under `SCALPEL_LOCKS=count`: `aux` uncontended lock+unlock pairs of the
    /// mutex `obj`, made since the thread's counts were last written out and recorded only as
    /// this count (no times, no sequence numbers, no stacks); `aux2` the generation of the
    /// header's counts table they were written from ([`hdr::COUNTS_STATE`]). See [`ENV_LOCKS`].
    MutexCounted = 8, "mutex_counted", None;
    /// `pthread_cond_wait` returned (obj = the cond; a sequence number only when it returned 0).
    CondWait = 10, "cond_wait", Acquire;
    /// `pthread_cond_timedwait` returned.
    CondTimedwait = 11, "cond_timedwait", Acquire;
    /// `pthread_cond_clockwait` returned.
    CondClockwait = 12, "cond_clockwait", Acquire;
    /// `pthread_cond_signal`.
    CondSignal = 13, "cond_signal", Release;
    /// `pthread_cond_broadcast`.
    CondBroadcast = 14, "cond_broadcast", Release;
    /// `pthread_rwlock_rdlock` returned.
    RwRdlock = 20, "rwlock_rdlock", Acquire;
    /// `pthread_rwlock_tryrdlock` returned.
    RwTryrdlock = 21, "rwlock_tryrdlock", Acquire;
    /// `pthread_rwlock_timedrdlock` returned.
    RwTimedrdlock = 22, "rwlock_timedrdlock", Acquire;
    /// `pthread_rwlock_clockrdlock` returned.
    RwClockrdlock = 23, "rwlock_clockrdlock", Acquire;
    /// `pthread_rwlock_wrlock` returned.
    RwWrlock = 24, "rwlock_wrlock", Acquire;
    /// `pthread_rwlock_trywrlock` returned.
    RwTrywrlock = 25, "rwlock_trywrlock", Acquire;
    /// `pthread_rwlock_timedwrlock` returned.
    RwTimedwrlock = 26, "rwlock_timedwrlock", Acquire;
    /// `pthread_rwlock_clockwrlock` returned.
    RwClockwrlock = 27, "rwlock_clockwrlock", Acquire;
    /// `pthread_rwlock_unlock`.
    RwUnlock = 28, "rwlock_unlock", Release;
    /// `sem_wait` returned.
    SemWait = 30, "sem_wait", Acquire;
    /// `sem_timedwait` returned.
    SemTimedwait = 31, "sem_timedwait", Acquire;
    /// `sem_clockwait` returned.
    SemClockwait = 32, "sem_clockwait", Acquire;
    /// `sem_trywait` returned.
    SemTrywait = 33, "sem_trywait", Acquire;
    /// `sem_post`.
    SemPost = 34, "sem_post", Release;
    /// `syscall(SYS_futex)` with a waiting operation returned (aux = futex op, aux2 = value).
    FutexWait = 40, "futex_wait", Acquire;
    /// `syscall(SYS_futex)` with a waking operation (aux = futex op, aux2 = count).
    FutexWake = 41, "futex_wake", Release;
    /// Any other futex operation (aux = futex op).
    FutexOther = 42, "futex_other", None;
    /// `epoll_wait` returned (obj = epoll instance, result = ready count).
    EpollWait = 50, "epoll_wait", Acquire;
    /// `epoll_pwait` returned.
    EpollPwait = 51, "epoll_pwait", Acquire;
    /// `epoll_pwait2` returned.
    EpollPwait2 = 52, "epoll_pwait2", Acquire;
    /// `poll` returned (aux = number of fds).
    Poll = 53, "poll", None;
    /// `ppoll` returned (aux = number of fds).
    Ppoll = 54, "ppoll", None;
    /// `select` returned (aux = nfds).
    Select = 55, "select", None;
    /// `pselect` returned (aux = nfds).
    Pselect = 56, "pselect", None;
    /// `read` returned (obj = incoming stream, offset = stream offset of the first byte). On a
    /// pipe or socket the offset orders it and there is no sequence number; an eventfd, file
    /// or terminal has one (the same for every transfer below).
    Read = 60, "read", Acquire;
    /// `readv` returned.
    Readv = 61, "readv", Acquire;
    /// `pread` returned (aux = file position).
    Pread = 62, "pread", Acquire;
    /// `recv` returned (aux2 = flags when not 0; a `MSG_PEEK` consumes nothing, so it has no
    /// sequence number and no offset).
    Recv = 63, "recv", Acquire;
    /// `recvfrom` returned.
    Recvfrom = 64, "recvfrom", Acquire;
    /// `recvmsg` returned.
    Recvmsg = 65, "recvmsg", Acquire;
    /// `write` (obj = outgoing stream, offset = stream offset of the first byte).
    Write = 70, "write", Release;
    /// `writev`.
    Writev = 71, "writev", Release;
    /// `pwrite` (aux = file position).
    Pwrite = 72, "pwrite", Release;
    /// `send`.
    Send = 73, "send", Release;
    /// `sendto`.
    Sendto = 74, "sendto", Release;
    /// `sendmsg`.
    Sendmsg = 75, "sendmsg", Release;
    /// `sendfile` (fd = output, aux = input fd).
    Sendfile = 76, "sendfile", Release;
    /// `accept` returned (obj = endpoint, result = new fd, aux = connection channel key).
    Accept = 80, "accept", Acquire;
    /// `accept4` returned.
    Accept4 = 81, "accept4", Acquire;
    /// `connect` (obj = endpoint connected to, aux = connection channel key when known).
    Connect = 82, "connect", Release;
    /// `close`.
    Close = 83, "close", None;
    /// `dup` (fd = old, result = new).
    Dup = 84, "dup", None;
    /// `dup2` (fd = old, aux = new).
    Dup2 = 85, "dup2", None;
    /// `dup3` (fd = old, aux = new).
    Dup3 = 86, "dup3", None;
    /// `pipe` (fd = read end, aux = write end).
    Pipe = 87, "pipe", None;
    /// `pipe2` (fd = read end, aux = write end).
    Pipe2 = 88, "pipe2", None;
    /// `socketpair` (fd = first, aux = second).
    Socketpair = 89, "socketpair", None;
    /// `eventfd` (result = fd, aux = initial value).
    Eventfd = 90, "eventfd", None;
    /// `socket` (result = fd, aux = domain, aux2 = type).
    Socket = 91, "socket", None;
    /// `epoll_create` / `epoll_create1` (result = fd).
    EpollCreate = 92, "epoll_create", None;
    /// `epoll_ctl` that added or changed a registration (obj = the target's incoming stream,
    /// fd = target, aux = the epoll instance's key, aux2 = the user data it registered). Lets a
    /// reader map the user data a wait reports (READY record) back to a descriptor.
    EpollCtl = 93, "epoll_ctl", None;
    /// `pthread_create` (obj = spawn, result = error number, aux = new `pthread_t`).
    ThreadCreate = 100, "thread_create", Release;
    /// First event of a thread started by `pthread_create` (obj = spawn, aux = own `pthread_t`,
    /// aux2 = parent tid).
    ThreadStart = 101, "thread_start", Acquire;
    /// The thread is exiting (obj = own `pthread_t`; aux = 0 when its start routine returned,
    /// 1 by `pthread_exit`, 2 otherwise: cancellation, or a thread not started by
    /// `pthread_create`).
    ThreadExit = 102, "thread_exit", Release;
    /// `pthread_join` returned (obj = joined `pthread_t`).
    ThreadJoin = 103, "thread_join", Acquire;
    /// `fork` (obj = spawn, result = child pid).
    Fork = 104, "fork", Release;
    /// First event of a forked child (obj = spawn, aux = parent pid).
    ForkChild = 105, "fork_child", Acquire;
    /// An exec-family call is about to replace the process (result set only if it failed).
    Exec = 106, "exec", None;
    /// A sleep (`nanosleep`, `clock_nanosleep`, `usleep`, `sleep`); aux = requested ns.
    Sleep = 110, "sleep", None;
    /// `fsync` (fd, obj = the file's stream when known).
    Fsync = 111, "fsync", None;
    /// `fdatasync`.
    Fdatasync = 112, "fdatasync", None;
    /// `sync_file_range` (aux = flags).
    SyncFileRange = 113, "sync_file_range", None;
    /// `msync` (aux = flags).
    Msync = 114, "msync", None;
    /// `syncfs`.
    Syncfs = 115, "syncfs", None;
    /// `sync`.
    Sync = 116, "sync", None;
    /// `kill`, recorded before the call (aux = target pid, as u32; aux2 = signal).
    Kill = 117, "kill", None;
    /// `tgkill` (aux = target tid, aux2 = signal).
    Tgkill = 118, "tgkill", None;
    /// `pthread_kill` (aux = target `pthread_t`, aux2 = signal).
    PthreadKill = 119, "pthread_kill", None;
    /// `sigqueue` (aux = target pid, aux2 = signal).
    Sigqueue = 123, "sigqueue", None;
    /// `raise` (aux2 = signal; the target is the calling thread).
    Raise = 124, "raise", None;
    /// Reserved: the agent does not interpose `dlopen` (glibc resolves `$ORIGIN` from its
    /// caller); module changes appear as MAPS records instead.
    Dlopen = 120, "dlopen", None;
    /// Reserved, as [`Op::Dlopen`].
    Dlclose = 121, "dlclose", None;
    /// `pthread_detach` (obj = thread).
    ThreadDetach = 122, "thread_detach", None;
}

/// Clock ticks are converted with the calibration points; this many events at most pass between
/// two CALIBRATION records in one thread.
pub const CALIBRATION_EVERY: u32 = 1 << 14;

/// A thread's event more than this long (in nanoseconds of its clock) after the thread's last
/// CALIBRATION record is followed by another. Why: the kernel slews CLOCK_MONOTONIC (NTP, a
/// virtual machine's clock) against the TSC, and the reader can follow the slew only where it
/// has points; one a millisecond keeps every event within a microsecond of CLOCK_MONOTONIC at
/// the kernel's largest slew rate, for a few hundred bytes a second per busy thread.
pub const CALIBRATION_GAP_NS: u64 = 1_000_000;

/// Endpoint tags inside OBJECT identities.
///
/// An OBJECT record's payload is `index:varint, kind:u8, key:varint` followed by an identity
/// that depends on the kind:
/// - [`ObjKind::Stream`]: `chan:u8, channel_key:varint, sender:endpoint, receiver:endpoint`. The
///   key is the same at both ends of the channel: the writer's outgoing stream and the reader's
///   incoming stream of one direction have equal keys, and byte offsets count from the first
///   byte ever sent in that direction.
/// - [`ObjKind::Endpoint`]: `chan:u8, endpoint`.
/// - every other kind: nothing.
///
/// An endpoint is a tag byte followed by its data.
pub mod ep {
    /// No identity.
    pub const NONE: u8 = 0;
    /// `dev:varint, ino:varint`: pipes, unix sockets, files.
    pub const INODE: u8 = 1;
    /// `len:varint, bytes`: a unix socket path (abstract names start with NUL).
    pub const PATH: u8 = 2;
    /// `pid:varint, counter:varint`: an object numbered by the process that created it
    /// (eventfd, epoll), carried to children by fork.
    pub const LOCAL: u8 = 3;
    /// `addr:[u8;4], port:u16 big-endian`.
    pub const IPV4: u8 = 4;
    /// `addr:[u8;16], port:u16 big-endian`.
    pub const IPV6: u8 = 6;
}

/// The most frames a STACK record holds: the agent never takes deeper stacks, and readers refuse
/// longer records (a planted file could otherwise make one record worth gigabytes of text).
pub const MAX_STACK_FRAMES: usize = 64;

/// Environment variable naming the trace directory, for the traced command's information: the
/// agent opens no path in it (it gets its files through [`crate::broker`]).
pub const ENV_DIR: &str = "SCALPEL_DIR";
/// Environment variable with the agent's own path, re-injected into `LD_PRELOAD` across exec.
pub const ENV_AGENT: &str = "SCALPEL_AGENT";
/// Environment variable choosing the clock: `tsc` (default where invariant) or `monotonic`.
pub const ENV_CLOCK: &str = "SCALPEL_CLOCK";
/// Environment variable with the agent's call-stack options: `off`, `all` or `sampled:N`,
/// optionally followed by `,depth=N` (1..=64) and `,cache=on|off|check`.
pub const ENV_STACKS: &str = "SCALPEL_STACKS";
/// Environment variable that turns on CPU times: `on` makes every event carry the thread's
/// CPU time (one `clock_gettime(CLOCK_THREAD_CPUTIME_ID)` system call per event).
pub const ENV_CPU_TIME: &str = "SCALPEL_CPU_TIME";
/// Environment variable choosing how uncontended mutex acquisitions are recorded: `record`
/// (the default: every lock and unlock is an event) or `count` (a `pthread_mutex_lock` that
/// finds a private mutex free, and its unlock when that finds no waiter, are only counted, per
/// mutex and leaf, in [`Op::MutexCounted`] events; a mutex ever waited on with a condition
/// variable is always recorded, as are robust, priority and process-shared ones).
pub const ENV_LOCKS: &str = "SCALPEL_LOCKS";
/// Environment variable that turns on on-CPU samples: the rate, samples per second of each
/// thread's CPU time (1 to 10000; absent or 0: off). See [`rec::SAMPLE`].
pub const ENV_SAMPLE: &str = "SCALPEL_SAMPLE";

/// Name of the table of shared counters (sequence numbers, stream offsets) in a trace directory.
/// It is not a trace; readers ignore it.
pub const SHARED_TABLE: &str = "shared.tbl";
/// Losses no thread file can hold, counted in `shared.tbl` by every process of a recording: little
/// endian `u64` counters at [`shared_loss::OFFSET`] (after the agent's sequence and stream slots),
/// one per index below. Readers that find the file shorter read them as zero.
pub mod shared_loss {
    /// Byte offset of the counters in `shared.tbl`.
    pub const OFFSET: u64 = 1_572_864;
    /// How many counters there are room for (the rest are reserved).
    pub const COUNT: usize = 8;
    /// Threads that made a call the agent would record but could not get a trace file.
    pub const THREADS_WITHOUT_FILE: usize = 0;
    /// Processes (or exec'd images) that could not get a process directory.
    pub const PROCESSES_WITHOUT_DIR: usize = 1;
    /// Files the recorder made that their process never wrote a header into (it died or lost
    /// its recording at start); the recorder removes them when the recording ends.
    pub const UNFINISHED_FILES: usize = 2;
}

/// Name of the list of files the recorder made, written when the recording ends: a first line
/// [`MANIFEST_HEADER`], then one path per line relative to the trace directory
/// (`<pid>.<n>/process.trace`, `<pid>.<n>/t<tid>.trace`), sorted. Readers that find it report
/// a listed file that is missing and a trace file that is not listed.
pub const MANIFEST: &str = "files.list";
/// First line of [`MANIFEST`].
pub const MANIFEST_HEADER: &str = "scalpel-files 1";

/// Name of the process metadata file inside a process directory `<pid>.<incarnation>`.
pub const PROCESS_FILE: &str = "process.trace";
/// Extension of thread files `t<tid>.trace` (or `t<tid>.<k>.trace` when a tid is reused).
pub const TRACE_EXT: &str = "trace";

/// Name of the file that says which machine a trace directory was recorded on, written by the
/// recorder when the recording starts: a first line [`HOST_HEADER`], then one `key value` per
/// line: `hostname` (for people), `boot_id` (the kernel's), `net_ns` and `time_ns` (the inode
/// numbers of the recorder's network and time namespaces). Readers skip keys they do not know.
pub const HOST_FILE: &str = "host.id";
/// First line of [`HOST_FILE`].
pub const HOST_HEADER: &str = "scalpel-host 1";

#[cfg(test)]
mod kind_tests {
    use super::*;

    #[test]
    fn kinds_round_trip_through_their_codes() {
        for &k in ObjKind::ALL {
            assert_eq!(ObjKind::from_code(k.code()), Some(k));
        }
        for &k in ChanKind::ALL {
            assert_eq!(ChanKind::from_code(k.code()), Some(k));
        }
        assert_eq!(ObjKind::from_code(0), None);
        assert_eq!(ObjKind::from_code(11), None);
        assert_eq!(ChanKind::from_code(8), None);
        assert_eq!((ObjKind::Mutex.code(), ObjKind::Epoll.code()), (1, 10));
        assert_eq!((ChanKind::Other.code(), ChanKind::Char.code()), (0, 7));
    }
}
