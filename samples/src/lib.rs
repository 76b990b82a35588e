//! Helpers shared by the sample programs: running a C sample's entry point with the process's
//! arguments, the ground-truth side file (see `samples/TRUTH.md`), pipes, and the Rust
//! clients' `[COUNT] [--window W]` arguments.

pub mod args;
pub mod pipe;
pub mod truth;

use std::ffi::CString;
use std::os::raw::{c_char, c_int};

/// Calls a C `main`-like entry point with this process's arguments and exits with its status.
pub fn run_c_main(entry: unsafe extern "C" fn(c_int, *mut *mut c_char) -> c_int) -> ! {
    let args: Vec<CString> = std::env::args_os()
        .map(|a| {
            CString::new(std::os::unix::ffi::OsStrExt::as_bytes(a.as_os_str())).unwrap_or_default()
        })
        .collect();
    let mut argv: Vec<*mut c_char> = args.iter().map(|a| a.as_ptr() as *mut c_char).collect();
    argv.push(std::ptr::null_mut());
    // SAFETY: argv is a NULL-terminated array of NUL-terminated strings that outlive the call.
    let code = unsafe { entry(args.len() as c_int, argv.as_mut_ptr()) };
    std::process::exit(code)
}
