//! The library constructor: initializes early and registers the fork handler.

use crate::lifecycle;

extern "C" fn scalpel_agent_init() {
    // Reading the configuration here (not only at the first hook) fixes it before the program can
    // change its environment.
    crate::real::resolve_all();
    let cfg = lifecycle::config();
    if cfg.is_some_and(|c| c.stacks.mode != crate::stackcfg::Mode::Off || c.sample_hz > 0) {
        crate::unwind::rebuild();
    }
    if let Some(hz) = cfg.map(|c| c.sample_hz).filter(|&hz| hz > 0) {
        // Installed here, before the program's main runs and after any earlier hook set the
        // process up. The main thread's recording (and so its sampling timer) starts now, not
        // at its first synchronization call: a program that computes without one is sampled.
        crate::sampler::install(hz, lifecycle::on_sample_signal);
        let _ = lifecycle::enter();
        crate::tstate::start_sampling();
    }
    // SAFETY: registering a plain extern "C" handler; done here rather than lazily because
    // pthread_atfork may allocate, which must not happen inside a hook called from malloc.
    unsafe {
        libc::pthread_atfork(
            Some(lifecycle::atfork_prepare),
            Some(lifecycle::atfork_parent),
            Some(lifecycle::atfork_child),
        )
    };
}

#[used]
#[link_section = ".init_array"]
static INIT: extern "C" fn() = scalpel_agent_init;

/// At process exit, trims the exiting thread's file to its committed length. Hooks called later
/// (by other libraries' destructors) pass through.
extern "C" fn scalpel_agent_fini() {
    crate::tstate::finish_thread(|_, _| {});
}

#[used]
#[link_section = ".fini_array"]
static FINI: extern "C" fn() = scalpel_agent_fini;
