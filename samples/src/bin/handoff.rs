//! The handoff sample (C, in `samples/c/handoff.c`): ground truth for causal edges between threads
//! and processes (condvar, pipe, semaphore, TCP, fork, thread create and join).

use std::os::raw::{c_char, c_int};

extern "C" {
    fn handoff_main(argc: c_int, argv: *mut *mut c_char) -> c_int;
}

fn main() {
    scalpel_samples::run_c_main(handoff_main)
}
