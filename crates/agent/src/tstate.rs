//! Per-thread recording state: the reentrancy guard, the thread's trace file, its clock and its
//! table of interned objects.
//!
//! The state lives in anonymous memory obtained with mmap; thread-local storage holds only a
//! pointer and two flags, with const initializers and no destructors, so touching it never
//! allocates or registers anything.
//!
//! This module starts a thread's recording at its first event and writes its events; `ending`
//! ends it in the pthread-key destructor, and `samples` writes its on-CPU samples. What needs
//! the process setup (initializing on first use, a fork child's new directory) is handed in by
//! `lifecycle`, which sits above both.

use core::cell::Cell;
use core::ptr::null_mut;
use core::sync::atomic::{compiler_fence, AtomicBool, Ordering};

use scalpel_format::format::{self, rec, ObjKind, Op};
use scalpel_format::record::RawEvent;
use scalpel_format::wire::Enc;

use crate::event::{Ev, Obj};
use crate::global::{self, Config};
use crate::sampler::ThreadSampler;
use crate::stacks::Stacks;
use crate::sys::{self, ErrnoGuard};
use crate::writer::{self, File};

mod counted;
mod ending;
mod held;
mod samples;
use held::HeldLock;

pub(crate) use ending::{
    finish_thread, forget_after_fork, in_vfork_child, set_exit_how, set_fork_spawn, set_forking,
    set_stack, set_vforking, share_tls, take_child_passed, take_fork_spawn, thread_dtor,
};
pub(crate) use samples::{after_failed_exec, before_exec, on_sample, start_sampling};

/// Marks a thread whose recording has ended (exited, or its file could not be created).
const DEAD: *mut ThreadState = core::ptr::dangling_mut();
/// Marks a live [`ThreadState`].
const TAG: u64 = 0x5343_4c50_5354_4154;
/// Capacity of the object table (power of two).
const OBJ_SLOTS: usize = 4096;
/// The table is reset when it holds this many objects, keeping probes short.
const OBJ_LIMIT: u32 = 3072;

/// This thread's agent state in thread-local storage (`crate::tls`): every field is valid when
/// zeroed, which is how each new thread finds it.
struct Tls {
    state: Cell<*mut ThreadState>,
    busy: Cell<bool>,
    /// How the thread is leaving, plus one: 1 start routine returned, 2 pthread_exit, 0 other
    /// (the zeroed value).
    exit_how: Cell<u8>,
    /// Set from the fork prepare handler until the parent or child handler runs: other
    /// libraries' fork handlers then pass through, so a child never writes into the parent's
    /// files before it has its own.
    forking: Cell<bool>,
    /// Set by the `vfork` hook before the real vfork: the child runs on this thread's memory
    /// (stack, TLS, state) until it execs or exits, so its calls pass through; the parent clears
    /// it at its first hook after (see `ending::vfork_child`).
    vforking: Cell<bool>,
    /// The id of the thread this TLS block belongs to, once a `clone` with `CLONE_VM` and no
    /// `CLONE_SETTLS` made a child that shares it (0: never shared). Calls from any other
    /// thread on this block pass through and are counted lost (see `ending::share_tls`).
    owner: Cell<i32>,
    /// `forking`, `vforking` or `owner` is set: the one flag the common path reads.
    odd: Cell<bool>,
    /// The spawn key of a fork this thread is making, for the child handler (the child gets a
    /// copy of this thread's TLS, so concurrent forks on other threads cannot mix keys up).
    fork_spawn: Cell<u64>,
    /// This thread's stack as (top, lowest address), set by our thread trampoline; (0, 0) when
    /// unknown.
    stack: Cell<(usize, usize)>,
}

const _: () = assert!(core::mem::size_of::<Tls>() <= crate::tls::BLOCK_BYTES);
const _: () = assert!(core::mem::align_of::<Tls>() <= 16);

/// The calling thread's [`Tls`], with the interface `thread_local!` gives (it never fails).
struct TlsKey;

static TLS: TlsKey = TlsKey;

impl TlsKey {
    #[inline(always)]
    fn try_with<R>(&self, f: impl FnOnce(&Tls) -> R) -> Result<R, core::convert::Infallible> {
        // SAFETY: the block is this thread's, large and aligned enough (asserted above), zeroed
        // at thread start, and every field of `Tls` is valid when zeroed. Only this thread
        // touches it (a signal handler on this thread runs to completion in between), and the
        // reference does not outlive the call.
        Ok(f(unsafe { &*(crate::tls::block() as *const Tls) }))
    }
}

#[derive(Clone, Copy)]
struct ObjSlot {
    key: u64,
    kind: u8,
    idx: u32,
    last_seq: u64,
}

/// One thread's recording state.
pub(crate) struct ThreadState {
    /// [`TAG`] while the state is live. The mapping is marked MADV_WIPEONFORK, so in a child
    /// made by a fork that ran no handlers (`_Fork`, `clone`, a raw fork syscall) it reads 0 and
    /// the child starts afresh instead of writing into its parent's file.
    tag: u64,
    /// Set while the agent writes for this thread; a hook reached meanwhile (from a signal
    /// handler) passes through.
    busy: AtomicBool,
    file: File,
    last_ticks: u64,
    /// The thread's CPU time at the last event written with one (see `Config::cpu_time`).
    last_cpu: u64,
    since_calib: u32,
    /// The ticks of the thread's last calibration point.
    calib_ticks: u64,
    next_idx: u32,
    /// The slot the last event's object took, plus one (0: none): consecutive events on one
    /// object (a lock and its unlock) skip the hash probe.
    last_slot: u32,
    objects: [ObjSlot; OBJ_SLOTS],
    stacks: Stacks,
    sampler: ThreadSampler,
    /// The uncontended lock not yet written, if any.
    held: HeldLock,
    /// Counted mutex pairs (`SCALPEL_LOCKS=count`).
    counted: counted::Counted,
}

/// Runs `$body` with `$st` bound to the thread state of the context `$c` under the state's
/// `busy` flag, then writes a sample that a write of ours held back; Some of the body's value,
/// or None (an event lost and counted) when the state is busy: a signal handler's hook
/// interrupted ours. None too, counting nothing, in a fork child returning into a hook that
/// its parent entered (its state is wiped). A load then a store is enough for `busy`: the only
/// other code that can run on this thread in between is a signal handler, which finishes
/// before we resume. A macro, not a function taking a closure, so that the body is always
/// inlined: the hot paths depend on it.
macro_rules! guarded {
    ($c:expr, $st:ident => $body:expr) => {{
        let c: &Ctx = $c;
        // SAFETY: `ts` is this thread's live state (see `Ctx`).
        let $st = unsafe { &mut *c.ts };
        if $st.tag != TAG {
            None
        } else if $st.busy.load(Ordering::Relaxed) {
            $st.file.count_lost();
            None
        } else {
            $st.busy.store(true, Ordering::Relaxed);
            compiler_fence(Ordering::SeqCst);
            // Writing touches memory only (and raw syscalls when a window is remapped), so
            // errno needs no saving here.
            let r = $body;
            compiler_fence(Ordering::SeqCst);
            $st.busy.store(false, Ordering::Relaxed);
            if $st.sampler.pending.set {
                $st.flush_sample(c.cfg);
            }
            Some(r)
        }
    }};
}

/// A recording thread: the configuration and its state. Obtained from [`enter_with`] (hooks call
/// `lifecycle::enter`).
#[derive(Clone, Copy)]
pub(crate) struct Ctx {
    /// The process configuration.
    pub cfg: &'static Config,
    ts: *mut ThreadState,
}

/// The recording context of this thread, or None when this call must pass through untraced:
/// recording is off, the thread already finished, or we are inside the agent itself.
///
/// The two slow paths call up into the process's lifecycle, so the caller hands them in (see
/// `lifecycle::enter`, which is what hooks call): `config` gives the configuration, initializing
/// the process on first use, and `wiped` runs in a child of a fork that bypassed our handlers.
#[inline]
pub(crate) fn enter_with(
    config: impl FnOnce() -> Option<&'static Config>,
    wiped: impl FnOnce(),
) -> Option<Ctx> {
    TLS.try_with(|t| {
        let ts = t.state.get();
        if ts == DEAD || (t.odd.get() && !ending::ordinary(t, ts)) {
            return None;
        }
        if !ts.is_null() {
            // SAFETY: a non-null, non-DEAD pointer is our state's mapping (live, or wiped by fork).
            let st = unsafe { &*ts };
            if st.tag != TAG {
                // A child of a fork that bypassed our handlers: its copy of the state was wiped.
                t.state.set(null_mut());
                wiped();
                return None;
            }
            if st.busy.load(Ordering::Relaxed) {
                // Only a signal handler interrupting the agent gets here: the agent itself calls
                // no hooked function. Its event is counted as lost.
                st.file.count_lost();
                return None;
            }
            // READY was seen when the state was created; the configuration is never torn down.
            return Some(Ctx {
                cfg: global::config_if_ready()?,
                ts,
            });
        }
        if t.busy.get() {
            return None;
        }
        t.busy.set(true);
        let ctx = start_thread(t, config);
        t.busy.set(false);
        ctx
    })
    .ok()
    .flatten()
}

#[cold]
fn start_thread(t: &Tls, config: impl FnOnce() -> Option<&'static Config>) -> Option<Ctx> {
    let _errno = ErrnoGuard::save();
    let cfg = config()?;
    let unrecorded = || {
        global::table(cfg).count_loss(scalpel_format::format::shared_loss::THREADS_WITHOUT_FILE);
        t.state.set(DEAD);
    };
    // In a sandbox the agent makes no call of its own (`sys::sandboxed`): a new thread there
    // gets no state and no file, and is counted (its first call, not every later one).
    if sys::sandboxed() {
        unrecorded();
        return None;
    }
    let Some(mem) = sys::mmap_anon(core::mem::size_of::<ThreadState>()) else {
        unrecorded();
        return None;
    };
    let mem = mem as *mut ThreadState;
    sys::sys(
        libc::SYS_madvise,
        mem as usize,
        core::mem::size_of::<ThreadState>(),
        libc::MADV_WIPEONFORK as usize,
    );
    let tid = sys::gettid();
    let Some(file) = File::create(cfg, tid, global::next_thread_index()) else {
        sys::munmap(mem.cast(), core::mem::size_of::<ThreadState>());
        unrecorded();
        return None;
    };
    // SAFETY: `mem` is a fresh zeroed mapping large enough for ThreadState; every field is
    // valid when zeroed except `file`, which we write before any read.
    // The first record is written before the state is published, so a signal handler cannot
    // interleave with it.
    unsafe {
        core::ptr::addr_of_mut!((*mem).file).write(file);
        (*mem).last_ticks = cfg.clock0;
        (*mem).next_idx = 1;
        let (top, lo) = match t.stack.get() {
            (0, _) if tid == cfg.pid => crate::unwind::main_stack(),
            b => b,
        };
        (*mem).stacks.set_bounds(top, lo);
        let mut buf = [0u8; 32];
        let (n, ticks, _) = writer::calibration(cfg, &mut buf);
        (*mem).file.record(rec::CALIBRATION, &buf[..n], &[]);
        (*mem).calib_ticks = ticks;
        crate::modules::check(&mut (*mem).file, global::now(cfg));
        (*mem).tag = TAG;
    }
    t.state.set(mem);
    // SAFETY: the key was created at init; the value is only read back by our destructor.
    unsafe { libc::pthread_setspecific(cfg.key, mem as *const libc::c_void) };
    // SAFETY: our state, just published; its timer's handler reads it only through `TLS`.
    unsafe { (*mem).sampler.start() };
    Some(Ctx { cfg, ts: mem })
}

impl Ctx {
    /// The clock now.
    #[inline]
    pub(crate) fn now(&self) -> u64 {
        global::now(self.cfg)
    }

    /// Takes the next sequence number of an object.
    #[inline]
    pub(crate) fn seq(&self, kind: ObjKind, key: u64) -> u64 {
        global::table(self.cfg).next_seqs(kind.code(), key, 1)
    }

    /// Starts loading the object table slot a lock hook will probe, so that its miss overlaps
    /// the lock's own instead of following it.
    #[inline(always)]
    pub(crate) fn prefetch_obj(&self, kind: ObjKind, key: u64) {
        // SAFETY: `ts` is this thread's live state; a read of our own fields.
        unsafe { (*self.ts).prefetch_slot(kind, key) };
    }

    /// Takes the next two sequence numbers of a mutex just acquired without waiting; returns
    /// the first, the lock's. The second is its unlock's, should that come next and share the
    /// lock's record ([`Ctx::unlock_seq`]): one atomic operation on the shared table for both.
    #[inline]
    pub(crate) fn seq_pair(&self, kind: ObjKind, key: u64) -> u64 {
        global::table(self.cfg).next_seqs(kind.code(), key, 2)
    }

    /// The sequence number of a mutex unlock: the one its lock reserved ([`Ctx::seq_pair`])
    /// when that lock is still kept back, else the next one.
    ///
    /// Why the reserved number is right: it was taken before the lock returned, so before this
    /// unlock, and every later acquisition of the mutex takes its number after this unlock,
    /// hence a larger one; while the lock was held no other thread could acquire the mutex and
    /// take one between them.
    #[inline]
    pub(crate) fn unlock_seq(&self, kind: ObjKind, key: u64) -> u64 {
        // SAFETY: `ts` is this thread's live state; a read of our own fields. A signal handler
        // that writes the kept-back lock in between leaves the reserved number just as right.
        match unsafe { (*self.ts).reserved_unlock_seq(kind, key) } {
            Some(seq) => seq,
            None => self.seq(kind, key),
        }
    }

    /// [`Ctx::emit_held`] of an uncontended acquisition `op` of `o` at `t0` with sequence
    /// number `seq` (from [`Ctx::seq_pair`]), written without building the event.
    #[inline(always)]
    pub(crate) fn hold_lock(&self, op: Op, o: Obj<'_>, t0: u64, seq: u64) {
        if self.cfg.cpu_time {
            // The HELD record has no room for CPU times.
            self.emit_held(&Ev {
                obj: Some((o, Some(seq))),
                result: Some(0),
                ..Ev::new(op, t0, t0)
            });
            return;
        }
        guarded!(self, st => {
            st.since_calib += 1;
            if st.counted.pending() {
                st.counts_due(op, t0);
            }
            if st.held.on {
                st.write_held();
            }
            st.hold_at(self.cfg, op, &o, t0, seq);
        });
    }

    /// When this thread keeps back a lock of the mutex `key` ([`Ctx::emit_held`]), the
    /// sequence number that lock reserved for its unlock ([`Ctx::unlock_seq`]), which
    /// [`Ctx::unlock_kept`] may then record.
    #[inline(always)]
    pub(crate) fn held_unlock_seq(&self, key: u64) -> Option<u64> {
        // SAFETY: `ts` is this thread's live state; a read of our own fields (a signal handler
        // that writes the lock in between is seen by `unlock_kept`, which checks again, and
        // leaves the reserved number just as right).
        let st = unsafe { &*self.ts };
        if st.tag != TAG {
            return None;
        }
        st.reserved_unlock_seq(ObjKind::Mutex, key)
    }

    /// Records the unlock at `t0`, with result `r`, of the mutex `key` whose lock is kept back:
    /// both in one HELD record, as [`Ctx::emit`] would write them, without building the event.
    /// False, with nothing written, when that is not what happened (a failed unlock, the lock
    /// written meanwhile, the state busy): the caller then emits the unlock as usual.
    #[inline(always)]
    pub(crate) fn unlock_kept(&self, key: u64, t0: u64, r: libc::c_int) -> bool {
        if r != 0 {
            return false;
        }
        // `guarded!` spelled out, because a busy state is left to the caller's `emit` here
        // (which counts the event lost): with the macro (counting it here, and the caller then
        // doing nothing) the mutex loop measured 6-9 ns slower per event for the same
        // instructions, a layout effect (`scripts/bench-agent.sh`, hot, both builds in one run).
        // SAFETY: `ts` is this thread's live state (as in `guarded!`).
        let st = unsafe { &mut *self.ts };
        if st.tag != TAG || st.busy.load(Ordering::Relaxed) {
            return false;
        }
        st.busy.store(true, Ordering::Relaxed);
        compiler_fence(Ordering::SeqCst);
        let done = st.unlock_pair(self.cfg, key, t0);
        compiler_fence(Ordering::SeqCst);
        st.busy.store(false, Ordering::Relaxed);
        if st.sampler.pending.set {
            st.flush_sample(self.cfg);
        }
        done
    }

    /// Records an event.
    #[inline]
    pub(crate) fn emit(&self, ev: &Ev<'_>) {
        self.emit_as(ev, false);
    }

    /// Records an uncontended lock (result 0, one clock reading). Its record waits: when the
    /// thread's next event is the unlock of the same mutex, one HELD record stands for both.
    /// Any other event of the thread, and the entry of every hook but the mutex unlock's,
    /// writes it first ([`Ctx::commit_held`]). So a crash loses it only before the thread's
    /// next intercepted call; a lock the thread holds while it blocks in one is always written.
    ///
    /// The lock's sequence number must come from [`Ctx::seq_pair`]: its unlock takes the next.
    #[inline]
    pub(crate) fn emit_held(&self, ev: &Ev<'_>) {
        self.emit_as(ev, true);
    }

    /// Writes the lock [`Ctx::emit_held`] kept back, if any.
    #[inline]
    pub(crate) fn commit_held(&self) {
        // SAFETY: `ts` is this thread's live state; a read of our own flag (see `emit` for why
        // the writes need `busy`).
        if unsafe { (*self.ts).held.on } {
            self.commit_held_now();
        }
    }

    #[cold]
    #[inline(never)]
    fn commit_held_now(&self) {
        self.with_state(ThreadState::write_held);
    }

    /// Runs `f` on this thread's state under its `busy` flag (a signal handler's hook then
    /// passes through instead of seeing a half-made change); None when the state is not live
    /// or already busy.
    #[inline(always)]
    fn with_state<R>(&self, f: impl FnOnce(&mut ThreadState) -> R) -> Option<R> {
        // SAFETY: `ts` is this thread's live state (as in `emit`).
        let st = unsafe { &mut *self.ts };
        if st.tag != TAG || st.busy.load(Ordering::Relaxed) {
            return None;
        }
        st.busy.store(true, Ordering::Relaxed);
        compiler_fence(Ordering::SeqCst);
        let r = f(st);
        compiler_fence(Ordering::SeqCst);
        st.busy.store(false, Ordering::Relaxed);
        Some(r)
    }

    /// [`Ctx::emit`] for a transfer of bytes (`Read` … `Sendfile`): every read and write hook's
    /// event, with its own copy of the writing code, inlined where the event's fields are known
    /// (a quarter fewer instructions per event than the shared copy, for 45 KB of code).
    #[inline(always)]
    pub(crate) fn emit_transfer(&self, ev: &Ev<'_>) {
        guarded!(self, st => st.write_inline(self.cfg, ev, false));
    }

    #[inline(always)]
    fn emit_as(&self, ev: &Ev<'_>, hold: bool) {
        guarded!(self, st => st.write(self.cfg, ev, hold));
    }
}

impl Ctx {
    /// Counts `n` events of this thread lost (calls that passed through unrecorded).
    pub(crate) fn count_lost(&self, n: u64) {
        // SAFETY: as in `emit`; the header counter is atomic.
        let st = unsafe { &*self.ts };
        if st.tag == TAG {
            st.file.add_lost(n);
        }
    }

    /// Records that this thread renamed itself (a THREAD_NAME record: clock, name), and puts the
    /// name in the file's header, so a thread killed before its clean exit keeps it too.
    pub(crate) fn renamed(&self, name: &[u8]) {
        // SAFETY: as in `emit`.
        let st = unsafe { &mut *self.ts };
        if st.tag != TAG || st.busy.load(Ordering::Relaxed) {
            return;
        }
        st.busy.store(true, Ordering::Relaxed);
        compiler_fence(Ordering::SeqCst);
        let name = &name[..name.len().min(format::hdr::THREAD_NAME_LEN - 1)];
        let mut head = [0u8; 10];
        let mut e = Enc::new(&mut head);
        e.varint(self.now());
        let n = e.len();
        st.file.record(rec::THREAD_NAME, &head[..n], name);
        st.file.set_name(name);
        compiler_fence(Ordering::SeqCst);
        st.busy.store(false, Ordering::Relaxed);
        if st.sampler.pending.set {
            st.flush_sample(self.cfg);
        }
    }
}

impl ThreadState {
    /// Writes an event (see `write_inline`); the one copy most hooks share.
    #[inline(never)]
    fn write(&mut self, cfg: &Config, ev: &Ev<'_>, hold: bool) {
        self.write_inline(cfg, ev, hold);
    }

    /// Writes an event: the lock kept back first (or with it, when this is its unlock), its
    /// stack and its object's definition when new, then what follows every so often. Inlined
    /// only where a caller's fields are known to be of one shape ([`Ctx::emit_transfer`]): the
    /// checks of the others' fields then go.
    #[inline(always)]
    fn write_inline(&mut self, cfg: &Config, ev: &Ev<'_>, hold: bool) {
        self.since_calib += 1;
        if self.counted.pending() {
            self.counts_due(ev.op, ev.t0);
        }
        // A lock kept back goes out with its unlock in one record, or alone before anything
        // else.
        if self.held.on {
            if ev.op == Op::MutexUnlock && self.write_pair(cfg, ev) {
                return;
            }
            self.write_held();
        }
        if hold && self.hold(cfg, ev) {
            return;
        }
        // A thread's start and exit are recorded from our trampoline and key destructor: no
        // frame of the program is on the stack there.
        let stack = match ev.op {
            Op::ThreadStart | Op::ThreadExit => None,
            // Checked here, not only in `capture`: a call into its large frame costs about 20
            // instructions per event even when stacks are off.
            _ if cfg.stacks.mode == crate::stackcfg::Mode::Off => None,
            _ => self.stacks.capture(&cfg.stacks, &mut self.file, ev.t0),
        };
        // Read after the call returned, so the call's own CPU time counts to the leaf it ends.
        let cpu = cfg.cpu_time.then(sys::thread_cpu_ns);
        let mut raw = RawEvent {
            op: ev.op as u8,
            cpu: cpu.map(|c| c.saturating_sub(self.last_cpu)),
            stack,
            dt: ev.t0.saturating_sub(self.last_ticks),
            dur: ev.t1.saturating_sub(ev.t0),
            result: ev.result,
            fd: ev.fd.map(|f| f as u64),
            offset: ev.offset,
            aux: ev.aux,
            aux2: ev.aux2,
            ..RawEvent::default()
        };
        let mut seq_slot = None;
        if let Some((o, seq)) = ev.obj {
            let Some(slot) = self.intern(&o) else {
                self.file.drop_event();
                return;
            };
            let s = &self.objects[slot];
            raw.obj = Some(u64::from(s.idx));
            if let Some(seq) = seq {
                raw.seq_delta = Some(seq as i64 - s.last_seq as i64);
                seq_slot = Some((slot, seq));
            }
        }
        // The reader sums deltas, so the bases move only when the event is really written.
        if self.file.event(&raw) {
            if let Some(r) = ev.ready {
                self.write_ready(r);
            }
            self.last_ticks = self.last_ticks.max(ev.t0);
            if let Some(c) = cpu {
                self.last_cpu = self.last_cpu.max(c);
            }
            if let Some((slot, seq)) = seq_slot {
                self.objects[slot].last_seq = seq;
            }
        }
        self.after_write(cfg, ev.t0);
    }

    /// The stack of an event, when stacks are on.
    #[inline]
    fn stack(&mut self, cfg: &Config, ticks: u64) -> Option<u64> {
        if cfg.stacks.mode == crate::stackcfg::Mode::Off {
            return None;
        }
        self.stacks.capture(&cfg.stacks, &mut self.file, ticks)
    }

    /// What follows an event every so often: the title check (every 16th event) and a
    /// calibration point (see `format::CALIBRATION_EVERY` and `format::CALIBRATION_GAP_NS`)
    /// with a look at the loaded modules.
    #[inline(always)]
    fn after_write(&mut self, cfg: &Config, ticks: u64) {
        // Every 16th event of a thread looks at the clock for the title check.
        if self.since_calib & 15 == 0 {
            self.check_title(cfg, ticks);
        }
        if self.since_calib >= format::CALIBRATION_EVERY {
            self.since_calib = 0;
            self.calibrate(cfg, true);
            crate::modules::check(&mut self.file, ticks);
        } else if ticks.saturating_sub(self.calib_ticks) >= cfg.calibration_gap {
            // Why not the module check too: it takes the loader's lock, which a thousand
            // points a second per thread should not contend for.
            self.calibrate(cfg, false);
        }
    }

    /// A calibration point, out of line: most events skip it.
    #[cold]
    #[inline(never)]
    fn calibrate(&mut self, cfg: &Config, always: bool) {
        let mut buf = [0u8; 32];
        let (n, now, tight) = writer::calibration(cfg, &mut buf);
        // Why: a pair the thread was preempted in the middle of is off by the preemption
        // (milliseconds); the points a millisecond are extra, so such a one is left out and the
        // next event tries again.
        if always || tight {
            self.file.record(rec::CALIBRATION, &buf[..n], &[]);
            self.calib_ticks = now;
        }
    }

    /// The title check (see `title`), out of line: 15 events in 16 skip it.
    #[cold]
    #[inline(never)]
    fn check_title(&mut self, cfg: &Config, ticks: u64) {
        crate::title::check(&mut self.file, cfg, ticks);
    }

    /// Writes a readiness wait's list after its event; kept out of line, off the hot path.
    #[cold]
    #[inline(never)]
    fn write_ready(&mut self, r: &crate::event::Ready) {
        if r.is_empty() {
            return;
        }
        let mut buf = [0u8; crate::event::READY_BYTES];
        let n = r.encode(&mut buf);
        // A list that does not fit is lost alone: its event is already written.
        self.file.record(rec::READY, &buf[..n], &[]);
    }

    /// The table slot of an object, defining it in the file first if it is new here.
    #[inline]
    fn intern(&mut self, o: &Obj<'_>) -> Option<usize> {
        if let Some(i) = self.last_slot.checked_sub(1).map(|i| i as usize) {
            let s = &self.objects[i];
            // A table reset zeroes `idx`, so a stale slot never matches.
            if s.idx != 0 && s.key == o.key && s.kind == o.kind.code() {
                return Some(i);
            }
        }
        let i = self.intern_probe(o)?;
        self.last_slot = i as u32 + 1;
        Some(i)
    }

    /// Starts loading the object table slot where `(kind, key)`'s probe begins.
    #[inline(always)]
    fn prefetch_slot(&self, kind: ObjKind, key: u64) {
        let i = home_slot(kind.code(), key);
        crate::sys::prefetch_read(core::ptr::from_ref(&self.objects[i]).cast());
    }

    /// [`ThreadState::intern`] past the last-object check: the hash probe, and the definition.
    #[inline(never)]
    fn intern_probe(&mut self, o: &Obj<'_>) -> Option<usize> {
        let mut i = home_slot(o.kind.code(), o.key);
        loop {
            let s = &self.objects[i];
            if s.idx == 0 {
                break;
            }
            if s.key == o.key && s.kind == o.kind.code() {
                return Some(i);
            }
            i = (i + 1) & (OBJ_SLOTS - 1);
        }
        if self.next_idx > OBJ_LIMIT {
            if !self.file.record(rec::OBJECT_RESET, &[], &[]) {
                return None;
            }
            // A loop, not an array literal: a 96 KiB temporary could overflow a small thread stack.
            for s in self.objects.iter_mut() {
                s.idx = 0;
            }
            self.next_idx = 1;
            return self.intern_probe(o);
        }
        let idx = self.next_idx;
        let mut head = [0u8; 24];
        let mut e = Enc::new(&mut head);
        e.varint(u64::from(idx));
        e.u8(o.kind.code());
        e.varint(o.key);
        let n = e.len();
        if !self.file.record(rec::OBJECT, &head[..n], o.ident) {
            return None;
        }
        self.next_idx += 1;
        self.objects[i] = ObjSlot {
            key: o.key,
            kind: o.kind.code(),
            idx,
            last_seq: 0,
        };
        Some(i)
    }
}

/// The object table slot where the probe for `(kind, key)` begins.
#[inline(always)]
fn home_slot(kind: u8, key: u64) -> usize {
    (mix(kind, key) as usize) & (OBJ_SLOTS - 1)
}

#[inline]
fn mix(kind: u8, key: u64) -> u64 {
    let h = (key ^ u64::from(kind)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    h ^ (h >> 29)
}
