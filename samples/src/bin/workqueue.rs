//! The work-queue sample (C, in `samples/c/workqueue.c`): dispatcher, queue, workers, pipes.

use std::os::raw::{c_char, c_int};

extern "C" {
    fn workqueue_main(argc: c_int, argv: *mut *mut c_char) -> c_int;
}

fn main() {
    scalpel_samples::run_c_main(workqueue_main)
}
