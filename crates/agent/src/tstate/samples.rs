//! On-CPU samples (`sampler`) as they reach this thread's state: taken in the signal handler,
//! written at once or held back until the agent's write they interrupted ends; and the timer's
//! start, stop and resumption around exec.

use core::sync::atomic::{compiler_fence, Ordering};

use scalpel_format::format::rec;
use scalpel_format::wire::Enc;

use super::{ThreadState, DEAD, TAG, TLS};
use crate::global::{self, Config};
use crate::sampler::Pending;

/// From the sampling signal's handler: a sample of this thread taken at the interrupted context
/// `uc`, standing for `1 + overruns` timer periods (see `sampler`). Written at once, or kept until the agent's
/// write that it interrupted ends.
pub(crate) fn on_sample(uc: *const libc::c_void, overruns: u64) {
    let _ = TLS.try_with(|t| {
        let ts = t.state.get();
        if ts.is_null() || ts == DEAD || t.forking.get() {
            return;
        }
        let Some(cfg) = global::config_if_ready() else {
            return;
        };
        // SAFETY: a non-null, non-DEAD pointer is our state's mapping; the handler runs on the
        // thread that owns it, which does not run meanwhile.
        let st = unsafe { &mut *ts };
        if st.tag != TAG {
            return;
        }
        let ticks = global::now(cfg);
        let bounds = st.stacks.bounds();
        let depth = usize::from(cfg.stacks.depth);
        if st.busy.load(Ordering::Relaxed) {
            if st.sampler.pending.set {
                st.file.count_lost();
                return;
            }
            let mut p = st.sampler.pending;
            st.sampler.take(uc, bounds, depth, true, &mut p);
            p.ticks = ticks;
            p.overruns = overruns;
            p.flags |= scalpel_format::format::sample::DEFERRED;
            p.set = true;
            st.sampler.pending = p;
            return;
        }
        // SAFETY: zeroed is an empty pending sample.
        let mut p: Pending = unsafe { core::mem::zeroed() };
        st.sampler.take(uc, bounds, depth, false, &mut p);
        p.ticks = ticks;
        p.overruns = overruns;
        st.busy.store(true, Ordering::Relaxed);
        compiler_fence(Ordering::SeqCst);
        st.write_sample(&p);
        compiler_fence(Ordering::SeqCst);
        st.busy.store(false, Ordering::Relaxed);
    });
}

/// Starts this thread's sampling timer if its recording started before sampling was installed
/// (a hook called from another library's constructor, before ours).
pub(crate) fn start_sampling() {
    let _ = TLS.try_with(|t| {
        let ts = t.state.get();
        // SAFETY: as in `after_failed_exec`.
        if !ts.is_null() && ts != DEAD && unsafe { (*ts).tag } == TAG {
            // SAFETY: as above; `start` does nothing when the timer exists.
            unsafe { (*ts).sampler.start() };
        }
    });
}

/// Before an exec on this thread: its sampling timer stops (see `sampler::before_exec`).
pub(crate) fn before_exec() {
    let _ = TLS.try_with(|t| {
        let ts = t.state.get();
        // SAFETY: as in `on_sample`; only the tag and the timer id are read.
        let live = !ts.is_null() && ts != DEAD && unsafe { (*ts).tag } == TAG;
        // SAFETY: a live state, as just checked.
        crate::sampler::before_exec(live.then(|| unsafe { &(*ts).sampler }));
    });
}

/// After an exec that failed: this thread's sampling timer runs again.
pub(crate) fn after_failed_exec() {
    let _ = TLS.try_with(|t| {
        let ts = t.state.get();
        // SAFETY: as in `before_exec`.
        if !ts.is_null() && ts != DEAD && unsafe { (*ts).tag } == TAG {
            // SAFETY: as above.
            unsafe { (*ts).sampler.resume() };
        }
    });
}

impl ThreadState {
    /// Writes the sample a write of ours held back (see `sampler`).
    #[cold]
    #[inline(never)]
    pub(super) fn flush_sample(&mut self, _cfg: &Config) {
        if self.busy.load(Ordering::Relaxed) {
            return;
        }
        self.busy.store(true, Ordering::Relaxed);
        compiler_fence(Ordering::SeqCst);
        let p = self.sampler.pending;
        self.write_sample(&p);
        self.sampler.pending.set = false;
        compiler_fence(Ordering::SeqCst);
        self.busy.store(false, Ordering::Relaxed);
    }

    /// Writes a SAMPLE record (with its STACK record first, if the stack is new here).
    fn write_sample(&mut self, p: &Pending) {
        let stack = if p.len > 0 {
            self.stacks
                .intern_frames(&p.frames[..p.len], &mut self.file)
                .unwrap_or(0)
        } else {
            0
        };
        let mut buf = [0u8; 40];
        let mut e = Enc::new(&mut buf);
        e.varint(p.ticks);
        e.varint(crate::sampler::period_ns());
        e.varint(p.overruns);
        e.varint(stack);
        e.u8(p.flags);
        let n = e.len();
        self.file.record(rec::SAMPLE, &buf[..n], &[]);
    }
}
