//! Per-thread recording state: the reentrancy guard, the thread's trace file, its clock and its
//! table of interned objects.
//!
//! The state lives in anonymous memory obtained with mmap; thread-local storage holds only a
//! pointer and two flags, with const initializers and no destructors, so touching it never
//! allocates or registers anything.
//!
//! This module starts a thread's recording at its first event and ends it in the pthread-key
//! destructor; what needs the process setup (initializing on first use, a fork child's new
//! directory) is handed in by `lifecycle`, which sits above both.

use core::cell::Cell;
use core::ptr::null_mut;
use core::sync::atomic::{compiler_fence, AtomicBool, Ordering};

use scalpel_format::format::{self, rec, ObjKind, Op};
use scalpel_format::record::RawEvent;
use scalpel_format::wire::Enc;

use crate::event::{Ev, Obj};
use crate::global::{self, Config};
use crate::stacks::Stacks;
use crate::sys::{self, ErrnoGuard};
use crate::writer::{self, File};

/// Marks a thread whose recording has ended (exited, or its file could not be created).
const DEAD: *mut ThreadState = core::ptr::dangling_mut();
/// Marks a live [`ThreadState`].
const TAG: u64 = 0x5343_4c50_5354_4154;
/// Capacity of the object table (power of two).
const OBJ_SLOTS: usize = 4096;
/// The table is reset when it holds this many objects, keeping probes short.
const OBJ_LIMIT: u32 = 3072;

struct Tls {
    state: Cell<*mut ThreadState>,
    busy: Cell<bool>,
    /// How the thread is leaving: 0 start routine returned, 1 pthread_exit, 2 other.
    exit_how: Cell<u8>,
    /// Set from the fork prepare handler until the parent or child handler runs: other
    /// libraries' fork handlers then pass through, so a child never writes into the parent's
    /// files before it has its own.
    forking: Cell<bool>,
    /// The spawn key of a fork this thread is making, for the child handler (the child gets a
    /// copy of this thread's TLS, so concurrent forks on other threads cannot mix keys up).
    fork_spawn: Cell<u64>,
    /// This thread's stack as (top, lowest address), set by our thread trampoline; (0, 0) when
    /// unknown.
    stack: Cell<(usize, usize)>,
}

thread_local! {
    static TLS: Tls = const {
        Tls {
            state: Cell::new(null_mut()),
            busy: Cell::new(false),
            exit_how: Cell::new(2),
            forking: Cell::new(false),
            fork_spawn: Cell::new(0),
            stack: Cell::new((0, 0)),
        }
    };
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
    next_idx: u32,
    objects: [ObjSlot; OBJ_SLOTS],
    stacks: Stacks,
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
        if ts == DEAD || t.forking.get() {
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
    let mem = sys::mmap_anon(core::mem::size_of::<ThreadState>())? as *mut ThreadState;
    sys::sys(
        libc::SYS_madvise,
        mem as usize,
        core::mem::size_of::<ThreadState>(),
        libc::MADV_WIPEONFORK as usize,
    );
    let tid = sys::gettid();
    let Some(file) = File::create(cfg, tid, global::next_thread_index()) else {
        global::table(cfg).count_loss(scalpel_format::format::shared_loss::THREADS_WITHOUT_FILE);
        sys::munmap(mem.cast(), core::mem::size_of::<ThreadState>());
        t.state.set(DEAD);
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
        let mut buf = [0u8; 24];
        let n = writer::calibration(cfg, &mut buf);
        (*mem).file.record(rec::CALIBRATION, &buf[..n], &[]);
        crate::modules::check(&mut (*mem).file, global::now(cfg));
        (*mem).tag = TAG;
    }
    t.state.set(mem);
    // SAFETY: the key was created at init; the value is only read back by our destructor.
    unsafe { libc::pthread_setspecific(cfg.key, mem as *const libc::c_void) };
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
        global::table(self.cfg).next_seq(kind.code(), key)
    }

    /// Records an event.
    #[inline]
    pub(crate) fn emit(&self, ev: &Ev<'_>) {
        // SAFETY: `ts` is this thread's live state. A load then a store is enough for `busy`: the
        // only other code that can run on this thread in between is a signal handler, which
        // finishes before we resume.
        let st = unsafe { &mut *self.ts };
        // A fork child returning into a hook that its parent entered has a wiped state.
        if st.tag != TAG {
            return;
        }
        if st.busy.load(Ordering::Relaxed) {
            st.file.count_lost();
            return;
        }
        st.busy.store(true, Ordering::Relaxed);
        compiler_fence(Ordering::SeqCst);
        // Writing the record touches memory only (and raw syscalls when a window is remapped),
        // so errno needs no saving here.
        st.write(self.cfg, ev);
        compiler_fence(Ordering::SeqCst);
        st.busy.store(false, Ordering::Relaxed);
    }
}

impl Ctx {
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
    }
}

impl ThreadState {
    fn write(&mut self, cfg: &Config, ev: &Ev<'_>) {
        self.since_calib += 1;
        // Every 16th event of a thread looks at the clock for the title check.
        if self.since_calib & 15 == 0 {
            self.check_title(cfg, ev.t0);
        }
        if self.since_calib >= format::CALIBRATION_EVERY {
            self.since_calib = 0;
            let mut buf = [0u8; 24];
            let n = writer::calibration(cfg, &mut buf);
            self.file.record(rec::CALIBRATION, &buf[..n], &[]);
            crate::modules::check(&mut self.file, ev.t0);
        }
        // A thread's start and exit are recorded from our trampoline and key destructor: no
        // frame of the program is on the stack there.
        let stack = match ev.op {
            Op::ThreadStart | Op::ThreadExit => None,
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
        let mut i = (mix(o.kind.code(), o.key) as usize) & (OBJ_SLOTS - 1);
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
            return self.intern(o);
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

#[inline]
fn mix(kind: u8, key: u64) -> u64 {
    let h = (key ^ u64::from(kind)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    h ^ (h >> 29)
}

/// Notes how the current thread is leaving (see `Tls::exit_how`).
pub(crate) fn set_exit_how(how: u8) {
    let _ = TLS.try_with(|t| t.exit_how.set(how));
}

/// Ends this thread's recording: called from the pthread key destructor with our state pointer.
pub(crate) fn finish_thread(ev: impl FnOnce(&Ctx, u8)) {
    let _ = TLS.try_with(|t| {
        let ts = t.state.get();
        if ts.is_null() || ts == DEAD {
            return;
        }
        if let Some(cfg) = global::config_if_ready() {
            let ctx = Ctx { cfg, ts };
            ev(&ctx, t.exit_how.get());
            // A last calibration point: with the one the file starts with it spans the
            // thread's whole life, so the clock line the reader fits through all files gets its
            // slope from the length of the run, not from the few milliseconds in which threads
            // start. (A slope off by 10 ppm moved a 2-second trace by microseconds against
            // CLOCK_MONOTONIC.)
            // SAFETY: `ts` is this thread's live state; `busy` guards against a signal handler
            // writing to the same file, as in `Ctx::emit`.
            unsafe {
                let st = &mut *ts;
                if st.tag == TAG && !st.busy.load(Ordering::Relaxed) {
                    st.busy.store(true, Ordering::Relaxed);
                    compiler_fence(Ordering::SeqCst);
                    let mut buf = [0u8; 24];
                    let n = writer::calibration(cfg, &mut buf);
                    st.file.record(rec::CALIBRATION, &buf[..n], &[]);
                    compiler_fence(Ordering::SeqCst);
                    st.busy.store(false, Ordering::Relaxed);
                }
            }
        }
        t.state.set(DEAD);
        // SAFETY: `ts` was our live state; the thread is marked DEAD first, so nothing else
        // reaches it any more.
        unsafe {
            (*ts).busy.store(true, Ordering::Relaxed);
            (*ts).file.close();
            (*ts).stacks.release();
            sys::munmap(ts.cast(), core::mem::size_of::<ThreadState>());
        }
    });
}

/// The pthread-key destructor (registered by `setup::configure`): runs in an exiting thread
/// whatever the way it exits (return, `pthread_exit`, cancellation), records the exit and closes
/// the trace.
pub(crate) extern "C" fn thread_dtor(_state: *mut libc::c_void) {
    finish_thread(|c, how| {
        let t = c.now();
        // SAFETY: pthread_self has no preconditions.
        let me = unsafe { libc::pthread_self() } as u64;
        let seq = c.seq(ObjKind::Thread, me);
        c.emit(&Ev {
            obj: Some((Obj::key(ObjKind::Thread, me), Some(seq))),
            aux: Some(u64::from(how)),
            ..Ev::new(Op::ThreadExit, t, t)
        });
    });
}

/// Notes this thread's stack bounds (from the thread trampoline, before its first event).
pub(crate) fn set_stack(top: usize, lo: usize) {
    let _ = TLS.try_with(|t| t.stack.set((top, lo)));
}

/// Sets the spawn key of the fork this thread is about to make (0 when done).
pub(crate) fn set_fork_spawn(key: u64) {
    let _ = TLS.try_with(|t| t.fork_spawn.set(key));
}

/// Takes the spawn key of the fork that made this process (0 when unknown).
pub(crate) fn take_fork_spawn() -> u64 {
    TLS.try_with(|t| t.fork_spawn.replace(0)).unwrap_or(0)
}

/// Marks (or unmarks) this thread as being inside fork.
pub(crate) fn set_forking(on: bool) {
    let _ = TLS.try_with(|t| t.forking.set(on));
}

/// In a forked child: forget the parent's open file without writing to it.
pub(crate) fn forget_after_fork() {
    let _ = TLS.try_with(|t| {
        let ts = t.state.get();
        // Unpublish first: a signal handler must not find the old state.
        t.state.set(null_mut());
        if !ts.is_null() && ts != DEAD {
            // SAFETY: the child's copy of our state (already zeroed where MADV_WIPEONFORK
            // worked). It is left mapped, tagged dead, so a hook its parent was inside when it
            // forked finds nothing to write to (the file holds no descriptor to close).
            unsafe { (*ts).tag = 0 };
        }
        t.busy.set(false);
        t.forking.set(false);
    });
}
