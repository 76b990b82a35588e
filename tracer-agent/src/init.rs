//! The library constructor: initializes early and registers the fork handler.

use crate::lifecycle;

extern "C" fn scalpel_agent_init() {
    // Reading the configuration here (not only at the first hook) fixes it before the program can
    // change its environment.
    crate::real::resolve_all();
    if lifecycle::config().is_some_and(|c| c.stacks.mode != crate::stackcfg::Mode::Off) {
        crate::unwind::rebuild();
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
