//! The lifecycle of the recording, where the per-thread state meets the process setup: the
//! configuration made on first use, a thread's recording started at its first hook, and the fork
//! handlers that give a child its own process directory.
//!
//! `tstate` (per-thread state) and `setup` (process setup) sit below this module; neither calls
//! the other's lifecycle steps directly. The hooks sit above it and enter through [`enter`].

use scalpel_format::format::{ObjKind, Op};

use crate::event::{Ev, Obj};
use crate::global::{self, Config};
use crate::setup;
use crate::tstate::{self, Ctx};

/// The configuration if recording is on, setting up the process on first use.
#[inline]
pub(crate) fn config() -> Option<&'static Config> {
    global::config(setup::configure)
}

/// The recording context of this thread, or None when this call must pass through untraced:
/// recording is off, the thread already finished, or we are inside the agent itself. A thread's
/// first call starts its recording (and the first call of all sets up the process).
///
/// An uncontended lock the thread recorded last is committed here (see `Ctx::emit_held`), so a
/// call that blocks, or never returns, leaves it in the trace.
#[inline]
pub(crate) fn enter() -> Option<Ctx> {
    let c = enter_holding()?;
    c.commit_held();
    Some(c)
}

/// [`enter`] without committing the held lock: for the mutex unlock, which may share its
/// record.
#[inline]
pub(crate) fn enter_holding() -> Option<Ctx> {
    tstate::enter_with(config, child_without_handlers)
}

/// Registered with pthread_atfork: runs in the parent before any fork.
pub(crate) extern "C" fn atfork_prepare() {
    tstate::set_forking(true);
}

/// Registered with pthread_atfork: runs in the parent after any fork.
pub(crate) extern "C" fn atfork_parent() {
    tstate::set_forking(false);
}

/// Registered with pthread_atfork: runs in every forked child, including forks made inside libc
/// (daemon) that never pass through our `fork` hook.
pub(crate) extern "C" fn atfork_child() {
    tstate::forget_after_fork();
    global::after_fork_child(setup::new_process);
    let spawn = tstate::take_fork_spawn();
    if let Some(c) = enter() {
        let t = c.now();
        crate::title::after_fork(c.cfg, t);
        let parent = crate::sys::sys(libc::SYS_getppid, 0, 0, 0) as u64;
        let o = (spawn != 0).then(|| {
            (
                Obj::key(ObjKind::Spawn, spawn),
                Some(c.seq(ObjKind::Spawn, spawn)),
            )
        });
        c.emit(&Ev {
            obj: o,
            aux: Some(parent),
            ..Ev::new(Op::ForkChild, t, t)
        });
        // Fork handlers the host registered before ours ran in this child before this one.
        let passed = tstate::take_child_passed();
        if passed > 0 {
            c.count_lost(passed);
        }
    }
}

/// A child of a fork that ran no fork handlers (`_Fork`, `clone`, a raw fork system call),
/// noticed at its first hook: it gets its own process directory.
pub(crate) fn child_without_handlers() {
    global::after_fork_child(setup::new_process);
}

/// The sampling signal's handler (see `sampler`): a sample for this thread's state, or the
/// host's own delivery of the signal passed on to the host's action.
pub(crate) extern "C" fn on_sample_signal(
    sig: libc::c_int,
    info: *mut libc::siginfo_t,
    uc: *mut libc::c_void,
) {
    let _errno = crate::sys::ErrnoGuard::save();
    match crate::sampler::timer_overruns(info) {
        Some(overruns) => tstate::on_sample(uc, overruns),
        None => crate::sampler::forward(sig, info, uc),
    }
}
