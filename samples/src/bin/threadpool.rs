//! The threadpool sample (C, in `samples/c/threadpool.c`): acceptor, bounded queue, workers.

use std::os::raw::{c_char, c_int};

extern "C" {
    fn threadpool_main(argc: c_int, argv: *mut *mut c_char) -> c_int;
}

fn main() {
    scalpel_samples::run_c_main(threadpool_main)
}
