//! `libscalpel_agent.so`: the LD_PRELOAD agent that records every synchronization event of a
//! process into one trace file per thread.
//!
//! Scope: interposing the libc entry points of [`hooks`] (pthread, semaphores, futex, poll and
//! epoll, descriptors and byte transfers, threads, fork and exec), numbering events per object,
//! naming byte channels so both ends agree, and writing crash-safe files (the layers are in
//! `docs/ARCHITECTURE.md`). Non-goals: any analysis,
//! any allocation or locking on the hot path, and recording the agent's own activity.

// Every public unsafe function here is a libc entry point; its safety contract is libc's.
#![allow(clippy::missing_safety_doc)]

extern crate alloc;

mod agentfd;
mod alloc_arena;
mod blob;
mod broker;
mod channel;
mod event;
mod fdtab;
mod global;
pub mod hooks;
mod init;
mod lifecycle;
mod modules;
mod pshared;
mod real;
mod sampler;
mod setup;
mod shared;
mod sock;
mod stackcache;
mod stackcfg;
mod stacks;
mod sys;
mod title;
mod tls;
mod tstate;
mod unwind;
mod walk;
mod writer;
