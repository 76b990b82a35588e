//! Lazily resolved pointers to the real libc functions the hooks forward to.
//!
//! Each hook names its real function with `real!(name: type)`. The pointer is looked up with
//! `dlsym(RTLD_NEXT, name)` the first time and cached in a static atomic, so hooks work even when
//! they run before the agent's constructor (from another library's constructor).

use core::sync::atomic::{AtomicUsize, Ordering};

/// A cached symbol address (0 = not yet resolved).
#[repr(C)]
pub(crate) struct Sym {
    addr: AtomicUsize,
    name: &'static [u8],
    version: Option<&'static [u8]>,
}

impl Sym {
    /// A symbol resolved by name (NUL-terminated).
    pub(crate) const fn new(name: &'static [u8]) -> Self {
        Sym {
            addr: AtomicUsize::new(0),
            name,
            version: None,
        }
    }

    /// A symbol resolved by name and symbol version (both NUL-terminated).
    pub(crate) const fn versioned(name: &'static [u8], version: &'static [u8]) -> Self {
        Sym {
            addr: AtomicUsize::new(0),
            name,
            version: Some(version),
        }
    }

    /// The address of the next definition after ours, or 0 if there is none.
    #[inline]
    pub(crate) fn get(&self) -> usize {
        let a = self.addr.load(Ordering::Relaxed);
        if a != 0 {
            return a;
        }
        self.resolve()
    }

    #[cold]
    fn resolve(&self) -> usize {
        // SAFETY: name and version are NUL-terminated literals; dlsym/dlvsym are thread-safe and,
        // on success, allocate nothing, so they are safe to call from inside any hook.
        let a = unsafe {
            match self.version {
                Some(v) => libc::dlvsym(
                    libc::RTLD_NEXT,
                    self.name.as_ptr().cast(),
                    v.as_ptr().cast(),
                ),
                None => libc::dlsym(libc::RTLD_NEXT, self.name.as_ptr().cast()),
            }
        } as usize;
        if a != 0 {
            self.addr.store(a, Ordering::Relaxed);
        }
        a
    }
}

extern "C" {
    // Bounds of the `scalpel_syms` section, defined by the linker.
    #[link_name = "__start_scalpel_syms"]
    static START: [usize; 0];
    #[link_name = "__stop_scalpel_syms"]
    static STOP: [usize; 0];
}

/// Every symbol a hook forwards to.
pub(crate) fn registered() -> &'static [&'static Sym] {
    // SAFETY: the linker places every `REG` static of `real!` contiguously between the two
    // bounds; each is a valid `&'static Sym`.
    unsafe {
        let start = core::ptr::addr_of!(START) as *const &'static Sym;
        let stop = core::ptr::addr_of!(STOP) as *const &'static Sym;
        core::slice::from_raw_parts(start, stop.offset_from(start).max(0) as usize)
    }
}

/// Resolves every hook's real function now. Called from the constructor: a first use of
/// `dlsym` later, inside a hook, could wait for the loader lock while its holder waits for a lock
/// the hook's caller holds.
pub(crate) fn resolve_all() {
    for s in registered() {
        s.get();
    }
}

/// Resolves the real function `$name` with the function type `$ty` (with `C-unwind` ABI, so a
/// thread cancelled inside it unwinds through our frame). If no definition exists the hook's
/// `$fallback` expression is returned instead.
#[macro_export]
macro_rules! real {
    ($name:ident : $ty:ty) => {
        $crate::real!(@sym $name, $crate::real::Sym::new(concat!(stringify!($name), "\0").as_bytes()), $ty)
    };
    ($name:ident @ $ver:literal : $ty:ty) => {
        $crate::real!(@sym $name, $crate::real::Sym::versioned(
            concat!(stringify!($name), "\0").as_bytes(), concat!($ver, "\0").as_bytes()), $ty)
    };
    (@sym $name:ident, $sym:expr, $ty:ty) => {{
        static SYM: $crate::real::Sym = $sym;
        // Registered in a linker section, so the constructor can resolve every symbol up front.
        #[used]
        #[link_section = "scalpel_syms"]
        static REG: &$crate::real::Sym = &SYM;
        let a = SYM.get();
        if a == 0 {
            None
        } else {
            // SAFETY: `a` is the address dlsym returned for this exact symbol, whose C prototype is
            // `$ty`.
            Some(unsafe { core::mem::transmute::<usize, $ty>(a) })
        }
    }};
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_hook_registers_its_symbol() {
        let n = super::registered().len();
        assert!(n > 80, "only {n} symbols registered");
        super::resolve_all();
        assert!(super::registered().iter().filter(|s| s.get() != 0).count() > 80);
    }
}
