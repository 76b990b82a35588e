//! The wakeups sample (C, in `samples/c/wakeups.c`): ground truth for the hand-offs that no read
//! or wait names directly (an eventfd completion that edge-triggered epoll reports and nobody
//! reads).

use std::os::raw::{c_char, c_int};

extern "C" {
    fn wakeups_main(argc: c_int, argv: *mut *mut c_char) -> c_int;
}

fn main() {
    scalpel_samples::run_c_main(wakeups_main)
}
