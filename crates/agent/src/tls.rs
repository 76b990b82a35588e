//! The agent's thread-local block, reached with the initial-exec TLS model.
//!
//! Rust's `thread_local!` in a shared library uses the general-dynamic model: every access calls
//! `__tls_get_addr`. The agent is always preloaded, so its TLS sits in the static TLS area the
//! loader sets up at start, at a fixed offset from the thread pointer; the initial-exec model
//! reads that offset from the GOT and adds the thread pointer (`%fs:0`): two loads, no call.
//! Stable Rust cannot ask for the model, so the block is declared in assembly (`.tbss`, zeroed
//! for every new thread) and found with the initial-exec sequence. The library gets the
//! `STATIC_TLS` flag, which is what a preloaded library may have; it could not be `dlopen`ed
//! late into a process whose static TLS surplus is used up, which the agent never is.

use core::arch::{asm, global_asm};

/// Size of the block, bytes: what `tstate` keeps per thread (checked there).
pub(crate) const BLOCK_BYTES: usize = 64;

global_asm!(
    ".section .tbss,\"awT\",@nobits",
    ".p2align 4",
    // Global, so that every code unit of the crate links to it, and hidden, so that it stays
    // inside the library (and is never looked up by name at run time).
    ".globl scalpel_agent_tls",
    ".hidden scalpel_agent_tls",
    ".type scalpel_agent_tls, @tls_object",
    ".size scalpel_agent_tls, 64",
    "scalpel_agent_tls:",
    ".zero 64",
    ".text",
);

/// This thread's block: `BLOCK_BYTES` zeroed bytes when the thread started, 16-byte aligned.
#[inline(always)]
pub(crate) fn block() -> *mut u8 {
    let p: *mut u8;
    // SAFETY: the initial-exec sequence: the GOT slot holds the block's offset from the thread
    // pointer, which `%fs:0` holds (the x86-64 TCB points to itself). Reads memory only.
    unsafe {
        asm!(
            "mov {p}, qword ptr [rip + scalpel_agent_tls@GOTTPOFF]",
            "add {p}, qword ptr fs:0",
            p = out(reg) p,
            options(nostack, readonly, preserves_flags, pure)
        );
    }
    p
}
