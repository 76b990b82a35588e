//! Anonymous pipes for the Rust samples (std has no pipe constructor at our MSRV).

use std::fs::File;
use std::os::fd::FromRawFd;

/// A pipe, as (reader, writer), both close-on-exec.
pub fn pipe() -> (File, File) {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into the array.
    let r = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    assert_eq!(r, 0, "pipe2: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors are fresh and owned by nobody else.
    unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) }
}
