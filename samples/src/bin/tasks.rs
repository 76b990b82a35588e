//! The tasks sample (C, in `samples/c/tasks.c`): stages, mixed request types, nested fan-out.

use std::os::raw::{c_char, c_int};

extern "C" {
    fn tasks_main(argc: c_int, argv: *mut *mut c_char) -> c_int;
}

fn main() {
    scalpel_samples::run_c_main(tasks_main)
}
