//! A temporary buffer in anonymous memory for reading whole small files such as
//! `/proc/self/maps`, without the allocator.

use crate::sys;

/// A temporary buffer in anonymous memory for whole small files such as `/proc/self/maps`.
pub(crate) struct Blob {
    ptr: *mut u8,
    cap: usize,
    len: usize,
}

impl Blob {
    const CAP: usize = 4 << 20;

    /// An empty blob (memory is mapped on first read).
    pub(crate) fn new() -> Self {
        Blob {
            ptr: core::ptr::null_mut(),
            cap: 0,
            len: 0,
        }
    }

    /// Reads a whole file (up to 4 MiB); false if it could not be opened.
    pub(crate) fn read_file(&mut self, path: &[u8]) -> bool {
        if self.ptr.is_null() {
            match sys::mmap_anon(Self::CAP) {
                Some(p) => {
                    self.ptr = p;
                    self.cap = Self::CAP;
                }
                None => return false,
            }
        }
        // SAFETY: ptr..ptr+cap is our private mapping.
        let buf = unsafe { core::slice::from_raw_parts_mut(self.ptr, self.cap) };
        let got = sys::read_file(path, buf);
        self.len = got.unwrap_or(0);
        got.is_some()
    }

    /// The bytes read.
    pub(crate) fn bytes(&self) -> &[u8] {
        if self.ptr.is_null() {
            return &[];
        }
        // SAFETY: the first `len` bytes were written by `read_file`.
        unsafe { core::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl Drop for Blob {
    fn drop(&mut self) {
        if !self.ptr.is_null() {
            sys::munmap(self.ptr, self.cap);
        }
    }
}
