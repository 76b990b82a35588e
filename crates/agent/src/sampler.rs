//! On-CPU samples (`scalpel record --sample HZ`), taken without root: each recorded thread gets a
//! timer on its own CPU-time clock (`timer_create(CLOCK_THREAD_CPUTIME_ID)` with
//! `SIGEV_THREAD_ID`), and the timer's real-time signal interrupts the thread every `1/HZ`
//! seconds of CPU it uses. The handler (`lifecycle::on_sample_signal`, installed by the
//! constructor) walks the interrupted stack with the same unwinder as the hooks
//! ([`ThreadSampler::take`]) and writes a SAMPLE record (`tstate::on_sample`).
//!
//! The host must not notice. So:
//! - the signal is the third-highest real-time signal, which programs rarely use; the handler is
//!   installed with `SA_RESTART`, allocates nothing, takes no lock and keeps errno;
//! - the host still owns the signal: `sigaction` and `signal` for it record the host's action and
//!   answer with it, and our handler forwards every delivery that is not our timer's (its code
//!   is `SI_TIMER` and its value our cookie) to that action, as the kernel would;
//! - blocking it (`sigprocmask`, `pthread_sigmask`) leaves it unblocked, and waiting for it
//!   (`sigwait`, `sigwaitinfo`, `sigtimedwait`, `signalfd`) does not take it: only our timers send
//!   it, each to its own thread, so neither can change what the host sees (`hooks::sigmask`);
//! - before an exec the calling thread's timer is deleted and a pending signal dropped, so the
//!   new program never receives a signal it has no handler for.
//!
//! A sample that lands while the agent is writing for the thread is kept in the thread's state
//! and written as soon as the write ends (flagged DEFERRED); one more in that window is counted
//! lost. The timer's overruns (expiries the kernel merged into one signal, since CPU timers are
//! checked at scheduler ticks) make the sample stand for more CPU time, so the sum stays right.

use core::sync::atomic::{AtomicI32, AtomicU64, AtomicUsize, Ordering};

use libc::{c_int, c_void, siginfo_t};
use scalpel_format::format::sample;

use crate::stackcfg::MAX_DEPTH;
use crate::sys;
use crate::unwind::{self, Cache};
use crate::walk::{Chain, Start};

/// The timer's `sigev_value`, which tells our deliveries from anyone else's.
const COOKIE: usize = 0x5ca1_5a3e_5eed_0001;

/// The signal while sampling is on; 0 when it is off.
static SIG: AtomicI32 = AtomicI32::new(0);
/// The timer period, ns of thread CPU time.
static PERIOD_NS: AtomicU64 = AtomicU64::new(0);
/// The host's action for the signal: handler (`SIG_DFL` = 0), flags and the first 64 signals of
/// its mask. Kept in atomics because our handler reads them at any moment.
static HOST_HANDLER: AtomicUsize = AtomicUsize::new(libc::SIG_DFL);
static HOST_FLAGS: AtomicI32 = AtomicI32::new(0);
static HOST_MASK: AtomicU64 = AtomicU64::new(0);

type SigactionFn =
    unsafe extern "C-unwind" fn(c_int, *const libc::sigaction, *mut libc::sigaction) -> c_int;

/// The real `sigaction` (ours is a hook, see `hooks::sigmask`).
pub(crate) fn real_sigaction(
    sig: c_int,
    act: *const libc::sigaction,
    old: *mut libc::sigaction,
) -> c_int {
    match crate::real!(sigaction: SigactionFn) {
        // SAFETY: forwarding pointers the caller vouches for.
        Some(f) => unsafe { f(sig, act, old) },
        None => -1,
    }
}

/// The signal handler's type.
pub(crate) type Handler = extern "C" fn(c_int, *mut siginfo_t, *mut c_void);

/// Turns sampling on at `hz` for this process with `handler` (`lifecycle::on_sample_signal`,
/// which calls [`timer_overruns`] and hands a sample to the thread's state). False if the
/// signal's handler could not be installed; sampling then stays off.
pub(crate) fn install(hz: u32, handler: Handler) -> bool {
    if hz == 0 || signal().is_some() {
        return false;
    }
    let sig = libc::SIGRTMAX() - 2;
    // SAFETY: zeroed is a valid empty sigaction.
    let mut act: libc::sigaction = unsafe { core::mem::zeroed() };
    act.sa_sigaction = handler as *const () as usize;
    act.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
    // SAFETY: zeroed is a valid sigaction to receive the old action.
    let mut old: libc::sigaction = unsafe { core::mem::zeroed() };
    if real_sigaction(sig, &act, &mut old) != 0 {
        return false;
    }
    // A handler inherited through exec cannot exist (exec resets handlers); an ignored signal
    // can, and stays the host's choice.
    HOST_HANDLER.store(old.sa_sigaction, Ordering::Relaxed);
    HOST_FLAGS.store(old.sa_flags, Ordering::Relaxed);
    PERIOD_NS.store(1_000_000_000 / u64::from(hz), Ordering::Relaxed);
    SIG.store(sig, Ordering::Release);
    true
}

/// Our signal while sampling is on.
#[inline]
pub(crate) fn signal() -> Option<c_int> {
    let s = SIG.load(Ordering::Acquire);
    (s != 0).then_some(s)
}

/// The host's view of our signal's action, into `old`.
pub(crate) fn host_action(old: &mut libc::sigaction) {
    // SAFETY: zeroed is a valid sigaction.
    *old = unsafe { core::mem::zeroed() };
    old.sa_sigaction = HOST_HANDLER.load(Ordering::Acquire);
    old.sa_flags = HOST_FLAGS.load(Ordering::Relaxed);
    let mask = HOST_MASK.load(Ordering::Relaxed);
    for s in 1..=64 {
        if mask & (1u64 << (s - 1)) != 0 {
            // SAFETY: a valid sigset and signal number.
            unsafe { libc::sigaddset(&mut old.sa_mask, s) };
        }
    }
}

/// Records `act` as the host's action for our signal.
pub(crate) fn set_host_action(act: &libc::sigaction) {
    let mut mask = 0u64;
    for s in 1..=64 {
        // SAFETY: a valid sigset and signal number.
        if unsafe { libc::sigismember(&act.sa_mask, s) } == 1 {
            mask |= 1u64 << (s - 1);
        }
    }
    HOST_MASK.store(mask, Ordering::Relaxed);
    HOST_FLAGS.store(act.sa_flags, Ordering::Relaxed);
    HOST_HANDLER.store(act.sa_sigaction, Ordering::Release);
}

/// A sample waiting for the agent to finish a write (see the module docs). Valid when zeroed.
#[derive(Clone, Copy)]
pub(crate) struct Pending {
    pub(crate) set: bool,
    pub(crate) ticks: u64,
    pub(crate) overruns: u64,
    pub(crate) flags: u8,
    pub(crate) len: usize,
    pub(crate) frames: [u64; MAX_DEPTH],
}

/// One thread's sampling state, inside its mmap'd state. Valid when zeroed (no timer).
pub(crate) struct ThreadSampler {
    /// The kernel timer id plus one (0: none).
    timer: i32,
    /// The unwinder's rule cache for the handler, apart from the hooks' (a sample can interrupt
    /// a hook's walk). Null when none.
    cache: *mut Cache,
    /// The sample taken while the agent was writing.
    pub(crate) pending: Pending,
}

impl ThreadSampler {
    /// Starts this thread's timer, if sampling is on.
    pub(crate) fn start(&mut self) {
        let Some(sig) = signal() else { return };
        if self.timer != 0 {
            return;
        }
        self.cache = unwind::new_cache();
        // SAFETY: zeroed is a valid sigevent; the fields set are those SIGEV_THREAD_ID reads.
        let mut sev: libc::sigevent = unsafe { core::mem::zeroed() };
        sev.sigev_notify = libc::SIGEV_THREAD_ID;
        sev.sigev_signo = sig;
        sev.sigev_value = libc::sigval {
            sival_ptr: COOKIE as *mut c_void,
        };
        sev.sigev_notify_thread_id = sys::gettid();
        let mut id: c_int = 0;
        // The system call, not glibc's wrapper: glibc's timer_t is its own object, and the raw
        // call allocates nothing.
        let r = sys::sys(
            libc::SYS_timer_create,
            libc::CLOCK_THREAD_CPUTIME_ID as usize,
            &sev as *const _ as usize,
            &mut id as *mut c_int as usize,
        );
        if r != 0 {
            return;
        }
        self.timer = id + 1;
        self.arm(PERIOD_NS.load(Ordering::Relaxed));
    }

    /// Sets the timer to fire every `ns` of CPU time (0 stops it).
    fn arm(&self, ns: u64) {
        if self.timer == 0 {
            return;
        }
        let ts = libc::timespec {
            tv_sec: (ns / 1_000_000_000) as libc::time_t,
            tv_nsec: (ns % 1_000_000_000) as libc::c_long,
        };
        let spec = libc::itimerspec {
            it_interval: ts,
            it_value: ts,
        };
        sys::syscall6(
            libc::SYS_timer_settime,
            [
                (self.timer - 1) as usize,
                0,
                &spec as *const _ as usize,
                0,
                0,
                0,
            ],
        );
    }

    /// Deletes the timer and frees the handler's cache (at thread exit).
    pub(crate) fn stop(&mut self) {
        if self.timer != 0 {
            sys::sys(libc::SYS_timer_delete, (self.timer - 1) as usize, 0, 0);
            self.timer = 0;
        }
        // A signal already pending may still arrive: it finds no cache and walks nothing.
        let c = core::mem::replace(&mut self.cache, core::ptr::null_mut());
        core::sync::atomic::compiler_fence(Ordering::SeqCst);
        // SAFETY: the cache came from `unwind::new_cache` and no handler holds it now.
        unsafe { unwind::free_cache(c) };
    }

    /// Before an exec: no more samples on this thread, and none pending.
    pub(crate) fn pause(&self) {
        self.arm(0);
    }

    /// After an exec that failed.
    pub(crate) fn resume(&self) {
        self.arm(PERIOD_NS.load(Ordering::Relaxed));
    }

    /// Walks the interrupted stack of `uc` into `p`. `bounds` are the thread's stack (top,
    /// lowest address; top 0 when unknown); `writing` says the agent was writing for the thread.
    /// A sample inside the agent (its code, or a libc function it called while writing) keeps
    /// only the program's frames beyond the agent's and is flagged IN_AGENT.
    pub(crate) fn take(
        &mut self,
        uc: *const c_void,
        bounds: (u64, u64),
        depth: usize,
        writing: bool,
        p: &mut Pending,
    ) {
        // SAFETY: the kernel passes the interrupted context as the handler's third argument.
        let g = unsafe { &(*(uc as *const libc::ucontext_t)).uc_mcontext.gregs };
        let (pc, sp, bp) = (
            g[libc::REG_RIP as usize] as u64,
            g[libc::REG_RSP as usize] as u64,
            g[libc::REG_RBP as usize] as u64,
        );
        p.len = 0;
        p.flags = 0;
        let in_agent = writing || unwind::in_agent(pc);
        if in_agent {
            p.flags |= sample::IN_AGENT;
        } else {
            // Plus one: readers look up every frame as a return address, one byte back.
            p.frames[0] = pc.wrapping_add(1);
            p.len = 1;
        }
        let (top, lo) = bounds;
        // SAFETY: our own cache, used by this thread's handler only, which does not nest (the
        // signal is blocked while its handler runs).
        let Some(cache) = (unsafe { self.cache.as_mut() }) else {
            return;
        };
        // Only the thread's own stack is read: not a signal stack, not an unknown thread's.
        if top == 0 || sp < lo || sp >= top {
            return;
        }
        // Never rebuilt here (that allocates): a sample during a dlclose keeps its first frame.
        let Some(table) = unwind::table() else { return };
        let start = Start { pc, sp, bp, top };
        let want = depth.min(MAX_DEPTH).saturating_sub(p.len);
        if let Ok(chain) = Chain::walk_with(table, &start, want, cache, false) {
            let mut rest = [0u64; MAX_DEPTH];
            let n = if in_agent {
                chain.frames_beyond_agent(&mut rest)
            } else {
                chain.frames(&mut rest)
            };
            for &f in &rest[..n.min(MAX_DEPTH - p.len)] {
                p.frames[p.len] = f;
                p.len += 1;
            }
        }
    }
}

/// The CPU time one timer expiry stands for, ns.
pub(crate) fn period_ns() -> u64 {
    PERIOD_NS.load(Ordering::Relaxed)
}

/// For the signal handler: the overruns of a delivery from one of our timers (expiries the
/// kernel merged into it), or None for anyone else's, which goes to [`forward`].
pub(crate) fn timer_overruns(info: *const siginfo_t) -> Option<u64> {
    // SAFETY: SA_SIGINFO handlers get a valid siginfo.
    let (code, value) = unsafe { ((*info).si_code, (*info).si_value().sival_ptr as usize) };
    if code != libc::SI_TIMER || value != COOKIE {
        return None;
    }
    // SAFETY: for a timer, the overrun count follows the timer id in the union (offset 20).
    let overruns = unsafe { (info as *const u8).add(20).cast::<i32>().read() };
    Some(overruns.max(0) as u64)
}

/// Delivers a signal that is not our timer's the way the host's action says.
pub(crate) fn forward(sig: c_int, info: *mut siginfo_t, uc: *mut c_void) {
    let h = HOST_HANDLER.load(Ordering::Acquire);
    let flags = HOST_FLAGS.load(Ordering::Relaxed);
    if h == libc::SIG_IGN {
        return;
    }
    if h == libc::SIG_DFL {
        // The default action of a real-time signal ends the process: put it back and resend.
        // SAFETY: zeroed is SIG_DFL with an empty mask.
        let dfl: libc::sigaction = unsafe { core::mem::zeroed() };
        real_sigaction(sig, &dfl, core::ptr::null_mut());
        let tid = sys::gettid() as usize;
        sys::sys(libc::SYS_tgkill, sys::getpid() as usize, tid, sig as usize);
        return;
    }
    if flags & libc::SA_RESETHAND != 0 {
        HOST_HANDLER.store(libc::SIG_DFL, Ordering::Release);
    }
    // The host's mask, for the length of its handler; the kernel restores ours on return.
    let mask = HOST_MASK.load(Ordering::Relaxed);
    if mask != 0 {
        sys::syscall6(
            libc::SYS_rt_sigprocmask,
            [
                libc::SIG_BLOCK as usize,
                &mask as *const u64 as usize,
                0,
                8,
                0,
                0,
            ],
        );
    }
    if flags & libc::SA_SIGINFO != 0 {
        type F = extern "C" fn(c_int, *mut siginfo_t, *mut c_void);
        // SAFETY: the host installed this address as an SA_SIGINFO handler.
        let f: F = unsafe { core::mem::transmute::<usize, F>(h) };
        f(sig, info, uc);
    } else {
        type F = extern "C" fn(c_int);
        // SAFETY: the host installed this address as a plain handler.
        let f: F = unsafe { core::mem::transmute::<usize, F>(h) };
        f(sig);
    }
}

/// Before an exec on this thread: stops its timer and drops a signal already pending, which the
/// new program (with no handler yet) would die of.
pub(crate) fn before_exec(t: Option<&ThreadSampler>) {
    let Some(sig) = signal() else { return };
    if let Some(t) = t {
        t.pause();
    }
    // Setting a pending signal to ignored discards it; then our handler goes back.
    // SAFETY: zeroed is a valid sigaction; SIG_IGN is 1.
    let mut ign: libc::sigaction = unsafe { core::mem::zeroed() };
    ign.sa_sigaction = libc::SIG_IGN;
    // SAFETY: as above.
    let mut ours: libc::sigaction = unsafe { core::mem::zeroed() };
    if real_sigaction(sig, &ign, &mut ours) == 0 {
        real_sigaction(sig, &ours, core::ptr::null_mut());
    }
}
