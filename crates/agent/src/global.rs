//! Process-wide agent state: configuration read once at start, the process's trace directory,
//! the clock calibration and the shared counter table.
//!
//! Initialization runs once, from the constructor or from whichever hook comes first. It never
//! waits: a hook that finds another thread initializing simply passes its call through. This
//! module only keeps the state; the setup steps themselves (`setup`, which sits above it) are
//! handed in by the caller, `lifecycle`.

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering};

use scalpel_format::format;

use crate::shared::Table;
use crate::sys::{self, PathBuf};

const UNINIT: u8 = 0;
const BUSY: u8 = 1;
const READY: u8 = 2;
const OFF: u8 = 3;

/// Configuration and per-process values, written only while `state` is BUSY by the one thread
/// that set it, and read only after `state` is READY.
pub(crate) struct Config {
    /// `SCALPEL_DIR=...` ready to put back into an environment.
    pub env_dir: PathBuf<1100>,
    /// The agent's own path (from SCALPEL_AGENT), re-injected into LD_PRELOAD across exec.
    pub agent: PathBuf<1024>,
    /// `SCALPEL_AGENT=...`.
    pub env_agent: PathBuf<1100>,
    /// `SCALPEL_CLOCK=...` if it was set.
    pub env_clock: PathBuf<64>,
    /// `SCALPEL_STACKS=...` if it was set.
    pub env_stacks: PathBuf<96>,
    /// Call-stack options.
    pub stacks: crate::stackcfg::StackCfg,
    /// `SCALPEL_CPU_TIME=...` if it was set.
    pub env_cpu: PathBuf<32>,
    /// Every event carries the thread's CPU time.
    pub cpu_time: bool,
    /// `SCALPEL_SAMPLE=...` if it was set.
    pub env_sample: PathBuf<32>,
    /// `SCALPEL_LOCKS=...` if it was set.
    pub env_locks: PathBuf<32>,
    /// Uncontended mutex pairs are counted, not recorded (`SCALPEL_LOCKS=count`; see
    /// `tstate::counted`).
    pub count_locks: bool,
    /// On-CPU samples per second of each thread's CPU time (0: off; see `sampler`).
    pub sample_hz: u32,
    /// The incarnation number of this process's directory `<pid>.<incarnation>`.
    pub incarnation: u32,
    /// This process's id.
    pub pid: i32,
    /// Whether events use the TSC.
    pub tsc: bool,
    /// Calibration point: clock ticks, CLOCK_MONOTONIC ns, CLOCK_REALTIME ns.
    pub clock0: u64,
    /// CLOCK_MONOTONIC at the calibration point.
    pub mono0: u64,
    /// CLOCK_REALTIME at the calibration point.
    pub real0: u64,
    /// Measured ticks per second.
    pub ticks_per_sec: u64,
    /// Ticks in [`format::CALIBRATION_GAP_NS`].
    pub calibration_gap: u64,
    /// The widest bracket of a calibration point written a millisecond after the last (see
    /// `setup::calibrate`): four times the narrowest this process read, at least
    /// [`crate::sys::TIGHT_FLOOR`], at most [`crate::sys::TIGHT_TICKS`].
    pub tight_ticks: u64,
    /// The shared counters.
    pub table: *const Table,
    /// Executable path (truncated for the header).
    pub exe: [u8; format::hdr::EXE_LEN],
    /// pthread key whose destructor finishes a thread's trace.
    pub key: libc::pthread_key_t,
}

struct Global {
    state: AtomicU8,
    cfg: UnsafeCell<Config>,
    spawn_counter: AtomicU64,
    thread_counter: AtomicU32,
    local_counter: AtomicU64,
}

// SAFETY: `cfg` is written only by the thread that moved `state` from UNINIT/READY to BUSY, and
// read only after observing READY with Acquire ordering.
unsafe impl Sync for Global {}

static G: Global = Global {
    state: AtomicU8::new(UNINIT),
    cfg: UnsafeCell::new(Config {
        env_dir: PathBuf::new(),
        agent: PathBuf::new(),
        env_agent: PathBuf::new(),
        env_clock: PathBuf::new(),
        env_stacks: PathBuf::new(),
        stacks: crate::stackcfg::StackCfg::DEFAULT,
        env_cpu: PathBuf::new(),
        cpu_time: false,
        env_sample: PathBuf::new(),
        env_locks: PathBuf::new(),
        count_locks: false,
        sample_hz: 0,
        incarnation: 0,
        pid: 0,
        tsc: false,
        clock0: 0,
        mono0: 0,
        real0: 0,
        ticks_per_sec: 1_000_000_000,
        calibration_gap: format::CALIBRATION_GAP_NS,
        tight_ticks: crate::sys::TIGHT_TICKS,
        table: core::ptr::null(),
        exe: [0; format::hdr::EXE_LEN],
        key: 0,
    }),
    spawn_counter: AtomicU64::new(0),
    thread_counter: AtomicU32::new(0),
    local_counter: AtomicU64::new(0),
};

/// The configuration if recording is on, initializing on first use with `configure` (the
/// process setup, which sits above this module: `lifecycle::config` passes `setup::configure`).
#[inline]
pub(crate) fn config(configure: impl FnOnce(&mut Config) -> bool) -> Option<&'static Config> {
    match G.state.load(Ordering::Acquire) {
        // SAFETY: READY means initialization finished and cfg is no longer written.
        READY => Some(unsafe { &*G.cfg.get() }),
        UNINIT => init(configure),
        _ => None,
    }
}

/// The configuration only if it is already initialized (never starts initialization).
#[inline]
pub(crate) fn config_if_ready() -> Option<&'static Config> {
    // SAFETY: as in `config`.
    (G.state.load(Ordering::Acquire) == READY).then(|| unsafe { &*G.cfg.get() })
}

/// The shared table.
#[inline]
pub(crate) fn table(c: &Config) -> &'static Table {
    // SAFETY: `table` was mapped at init and is never unmapped.
    unsafe { &*c.table }
}

/// A new spawn key (thread creation or fork) unique in this recording.
pub(crate) fn next_spawn_key(c: &Config) -> u64 {
    ((c.pid as u64) << 32) | (G.spawn_counter.fetch_add(1, Ordering::Relaxed) + 1)
}

/// A number unique within this process for objects that have no kernel identity.
pub(crate) fn next_local(c: &Config) -> u64 {
    let _ = c;
    G.local_counter.fetch_add(1, Ordering::Relaxed) + 1
}

/// The index of a new thread within this process.
pub(crate) fn next_thread_index() -> u32 {
    G.thread_counter.fetch_add(1, Ordering::Relaxed)
}

/// Reads the current clock.
#[inline]
pub(crate) fn now(c: &Config) -> u64 {
    if c.tsc {
        sys::rdtsc()
    } else {
        sys::clock_ns(libc::CLOCK_MONOTONIC)
    }
}

#[cold]
fn init(configure: impl FnOnce(&mut Config) -> bool) -> Option<&'static Config> {
    if G.state
        .compare_exchange(UNINIT, BUSY, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        return config_if_ready();
    }
    // SAFETY: we own BUSY, so nobody else reads or writes cfg.
    let cfg = unsafe { &mut *G.cfg.get() };
    let ok = configure(cfg);
    G.state
        .store(if ok { READY } else { OFF }, Ordering::Release);
    ok.then_some(&*cfg)
}

/// Re-initializes the per-process part in a forked child with `new_process` (new pid, new
/// process directory: `setup::new_process`, passed by `lifecycle`). Called in the child with only
/// one thread alive.
pub(crate) fn after_fork_child(new_process: impl FnOnce(&mut Config) -> bool) {
    match G.state.load(Ordering::Acquire) {
        READY => {}
        // A fork while another thread was initializing leaves that thread absent in the child.
        BUSY => {
            G.state.store(OFF, Ordering::Release);
            return;
        }
        _ => return,
    }
    G.state.store(BUSY, Ordering::Release);
    // SAFETY: single-threaded child, and we hold BUSY.
    let cfg = unsafe { &mut *G.cfg.get() };
    G.thread_counter.store(0, Ordering::Relaxed);
    let ok = new_process(cfg);
    G.state
        .store(if ok { READY } else { OFF }, Ordering::Release);
}
