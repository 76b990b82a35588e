//! The lowlock sample (C, in `samples/c/lowlock.c`): the CppCon study's two-lock queue.

use std::os::raw::{c_char, c_int};

extern "C" {
    fn lowlock_main(argc: c_int, argv: *mut *mut c_char) -> c_int;
}

fn main() {
    scalpel_samples::run_c_main(lowlock_main)
}
