//! Hooks for the exec family and posix_spawn: the new program gets the agent and the recording's
//! settings back in its environment even when the caller built a clean one (nginx workers,
//! privilege-dropping daemons). The values come from the configuration read at start.

use libc::{c_char, c_int};
use scalpel_format::format::Op;

use super::{enosys, sys_result};
use crate::event::Ev;
use crate::global::{self, Config};
use crate::lifecycle::enter;
use crate::real;
use crate::sys;
use crate::tstate;

extern "C" {
    static environ: *const *const c_char;
}

const STACK_ENTRIES: usize = 512;
const OURS: [&[u8]; 9] = [
    b"LD_PRELOAD=",
    b"SCALPEL_DIR=",
    b"SCALPEL_BROKER=",
    b"SCALPEL_AGENT=",
    b"SCALPEL_CLOCK=",
    b"SCALPEL_STACKS=",
    b"SCALPEL_CPU_TIME=",
    b"SCALPEL_SAMPLE=",
    b"SCALPEL_LOCKS=",
];

fn starts_with(s: *const c_char, prefix: &[u8]) -> bool {
    // SAFETY: `s` is a NUL-terminated environment string; we stop at its NUL or the prefix end.
    prefix
        .iter()
        .enumerate()
        .all(|(i, &b)| unsafe { *s.add(i) } as u8 == b)
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}

/// The number of strings in `envp` if the array and the start of each string can be read, so
/// that an invalid `envp` reaches the kernel unchanged and fails with EFAULT as it would
/// untraced, instead of faulting in the agent's walk.
fn readable_env(envp: *const *const c_char) -> Option<usize> {
    if envp.is_null() {
        return Some(0);
    }
    let mut count = 0usize;
    loop {
        let mut slot = [0u8; core::mem::size_of::<usize>()];
        let at = (envp as usize).checked_add(count * slot.len())?;
        if sys::read_own(at, &mut slot) != slot.len() {
            return None;
        }
        let s = usize::from_ne_bytes(slot);
        if s == 0 {
            return Some(count);
        }
        // The longest prefix `with_env` compares, or up to the string's NUL.
        let mut head = [0u8; 20];
        let got = sys::read_own(s, &mut head);
        if !head[..got].contains(&0) && got < head.len() {
            return None;
        }
        count += 1;
    }
}

/// Whether `envp` sets up a recording of its own: a nested `scalpel record` passing its
/// broker (another recorder's) to its command. That recording's variables are kept, not
/// replaced by ours.
fn own_recording(envp: *const *const c_char, count: usize) -> bool {
    const KEY: &[u8] = b"SCALPEL_BROKER=";
    (0..count).any(|i| {
        // SAFETY: `readable_env` checked the `count` entries and each string's start.
        let s = unsafe { *envp.add(i) };
        if !starts_with(s, KEY) {
            return false;
        }
        let mut value = [0u8; 48];
        let got = sys::read_own(s as usize + KEY.len(), &mut value);
        let value = &value[..got];
        let end = value.iter().position(|&b| b == 0).unwrap_or(value.len());
        crate::broker::names_another_recorder(&value[..end])
    })
}

/// Calls `f` with `envp` plus the agent's variables.
fn with_env<R>(envp: *const *const c_char, f: impl FnOnce(*const *const c_char) -> R) -> R {
    let Some(cfg) = global::config_if_ready() else {
        return f(envp);
    };
    let Some(count) = readable_env(envp) else {
        return f(envp);
    };
    if own_recording(envp, count) {
        return f(envp);
    }
    // Our variables (as many as OURS names) and the closing null.
    let need = count + OURS.len() + 1;
    let mut stack = [core::ptr::null::<c_char>(); STACK_ENTRIES];
    let mut mapped = None;
    let arr: &mut [*const c_char] = if need <= STACK_ENTRIES {
        &mut stack[..need]
    } else {
        let bytes = need * core::mem::size_of::<*const c_char>();
        match sys::mmap_anon(bytes) {
            Some(p) => {
                mapped = Some((p, bytes));
                // SAFETY: a fresh zeroed mapping of `need` pointers.
                unsafe { core::slice::from_raw_parts_mut(p as *mut *const c_char, need) }
            }
            None => return f(envp),
        }
    };
    let mut preload = sys::PathBuf::<4096>::new();
    let mut n = 0;
    let mut old_preload: &[u8] = b"";
    for i in 0..count {
        // SAFETY: i < count, inside the array.
        let s = unsafe { *envp.add(i) };
        if starts_with(s, b"LD_PRELOAD=") {
            // SAFETY: a NUL-terminated string.
            old_preload = unsafe { core::ffi::CStr::from_ptr(s.add(11)) }.to_bytes();
            continue;
        }
        if OURS.iter().any(|p| starts_with(s, p)) {
            continue;
        }
        arr[n] = s;
        n += 1;
    }
    build_preload(cfg, old_preload, &mut preload);
    let mut broker = sys::PathBuf::<64>::new();
    for v in [
        cfg.env_dir.c_bytes(),
        crate::broker::env_var(&mut broker),
        cfg.env_agent.c_bytes(),
        cfg.env_clock.c_bytes(),
        cfg.env_stacks.c_bytes(),
        cfg.env_cpu.c_bytes(),
        cfg.env_sample.c_bytes(),
        cfg.env_locks.c_bytes(),
        preload.c_bytes(),
    ]
    .into_iter()
    .flatten()
    {
        if v.len() > 1 {
            arr[n] = v.as_ptr().cast();
            n += 1;
        }
    }
    arr[n] = core::ptr::null();
    let r = f(arr.as_ptr());
    if let Some((p, bytes)) = mapped {
        sys::munmap(p, bytes);
    }
    r
}

fn build_preload(cfg: &Config, old: &[u8], out: &mut sys::PathBuf<4096>) {
    out.push(b"LD_PRELOAD=");
    let agent = cfg.agent.as_bytes();
    if agent.is_empty() || contains(old, agent) {
        out.push(old);
    } else {
        out.push(agent);
        if !old.is_empty() {
            out.push(b":").push(old);
        }
    }
    if out.c_bytes().is_none() {
        out.clear();
    }
}

/// Records the exec attempt, then the failure if the call returns.
fn exec_event(call: impl FnOnce() -> c_int) -> c_int {
    // A vfork child execs on its parent's memory: only the environment is ours to fix.
    if tstate::in_vfork_child() {
        return call();
    }
    let Some(c) = enter() else {
        return sampled_exec(call);
    };
    let t0 = c.now();
    c.emit(&Ev::new(Op::Exec, t0, t0));
    let r = sampled_exec(call);
    let t1 = c.now();
    let res = sys_result(i64::from(r));
    c.emit(&Ev {
        result: Some(res),
        ..Ev::new(Op::Exec, t0, t1)
    });
    r
}

/// Runs an exec with this thread's sampling timer stopped (a signal arriving in the new program
/// before the agent is set up there would kill it), started again if the exec fails.
fn sampled_exec(call: impl FnOnce() -> c_int) -> c_int {
    tstate::before_exec();
    let r = call();
    tstate::after_failed_exec();
    r
}

type ExecveFn =
    unsafe extern "C-unwind" fn(*const c_char, *const *const c_char, *const *const c_char) -> c_int;

#[no_mangle]
pub unsafe extern "C-unwind" fn execve(
    p: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
) -> c_int {
    let Some(f) = real!(execve: ExecveFn) else {
        return enosys();
    };
    // SAFETY: forwarding the caller's arguments with an extended environment.
    exec_event(|| with_env(envp, |e| unsafe { f(p, argv, e) }))
}

#[no_mangle]
pub unsafe extern "C-unwind" fn execv(p: *const c_char, argv: *const *const c_char) -> c_int {
    let Some(f) = real!(execve: ExecveFn) else {
        return enosys();
    };
    // SAFETY: execv is execve with the current environment.
    exec_event(|| with_env(unsafe { environ }, |e| unsafe { f(p, argv, e) }))
}

#[no_mangle]
pub unsafe extern "C-unwind" fn execvpe(
    p: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
) -> c_int {
    let Some(f) = real!(execvpe: ExecveFn) else {
        return enosys();
    };
    // SAFETY: forwarding the caller's arguments with an extended environment.
    exec_event(|| with_env(envp, |e| unsafe { f(p, argv, e) }))
}

#[no_mangle]
pub unsafe extern "C-unwind" fn execvp(p: *const c_char, argv: *const *const c_char) -> c_int {
    let Some(f) = real!(execvpe: ExecveFn) else {
        return enosys();
    };
    // SAFETY: execvp is execvpe with the current environment.
    exec_event(|| with_env(unsafe { environ }, |e| unsafe { f(p, argv, e) }))
}

#[no_mangle]
pub unsafe extern "C-unwind" fn fexecve(
    fd: c_int,
    argv: *const *const c_char,
    envp: *const *const c_char,
) -> c_int {
    type F =
        unsafe extern "C-unwind" fn(c_int, *const *const c_char, *const *const c_char) -> c_int;
    let Some(f) = real!(fexecve: F) else {
        return enosys();
    };
    // SAFETY: forwarding the caller's arguments with an extended environment.
    exec_event(|| with_env(envp, |e| unsafe { f(fd, argv, e) }))
}

type SpawnFn = unsafe extern "C-unwind" fn(
    *mut libc::pid_t,
    *const c_char,
    *const libc::posix_spawn_file_actions_t,
    *const libc::posix_spawnattr_t,
    *const *const c_char,
    *const *const c_char,
) -> c_int;

#[no_mangle]
pub unsafe extern "C-unwind" fn posix_spawn(
    pid: *mut libc::pid_t,
    p: *const c_char,
    fa: *const libc::posix_spawn_file_actions_t,
    at: *const libc::posix_spawnattr_t,
    argv: *const *const c_char,
    envp: *const *const c_char,
) -> c_int {
    let Some(f) = real!(posix_spawn: SpawnFn) else {
        return libc::ENOSYS;
    };
    // SAFETY: forwarding the caller's arguments with an extended environment.
    let r = with_env(envp, |e| unsafe { f(pid, p, fa, at, argv, e) });
    super::spawn::spawned(fa, r, pid);
    r
}

#[no_mangle]
pub unsafe extern "C-unwind" fn posix_spawnp(
    pid: *mut libc::pid_t,
    p: *const c_char,
    fa: *const libc::posix_spawn_file_actions_t,
    at: *const libc::posix_spawnattr_t,
    argv: *const *const c_char,
    envp: *const *const c_char,
) -> c_int {
    let Some(f) = real!(posix_spawnp: SpawnFn) else {
        return libc::ENOSYS;
    };
    // SAFETY: forwarding the caller's arguments with an extended environment.
    let r = with_env(envp, |e| unsafe { f(pid, p, fa, at, argv, e) });
    super::spawn::spawned(fa, r, pid);
    r
}

/// Which list-form exec a naked entry point stands for.
const L_EXECL: usize = 0;
const L_EXECLP: usize = 1;
const L_EXECLE: usize = 2;

/// Gathers the arguments of `execl`, `execlp` and `execle` and calls the vector form (our hook).
/// `regs` holds the five argument registers after `path`, `stack` the caller's stack arguments.
extern "C-unwind" fn execl_impl(
    path: *const c_char,
    regs: *const usize,
    stack: *const usize,
    kind: usize,
) -> c_int {
    // SAFETY: index < 5 reads the spilled registers, beyond that the caller's stack arguments,
    // which the caller's NULL terminator (and execle's envp after it) bounds.
    let arg = |i: usize| unsafe {
        if i < 5 {
            *regs.add(i)
        } else {
            *stack.add(i - 5)
        }
    };
    let mut argc = 0;
    while arg(argc) != 0 {
        argc += 1;
    }
    let envp = if kind == L_EXECLE {
        arg(argc + 1) as *const *const c_char
    } else {
        core::ptr::null()
    };
    let mut small = [core::ptr::null::<c_char>(); 256];
    let bytes = (argc + 1) * core::mem::size_of::<usize>();
    let mapped = (argc >= small.len()).then(|| sys::mmap_anon(bytes));
    let argv: &mut [*const c_char] = match mapped {
        None => &mut small[..argc + 1],
        // SAFETY: a fresh zeroed mapping of argc + 1 pointers.
        Some(Some(p)) => unsafe {
            core::slice::from_raw_parts_mut(p as *mut *const c_char, argc + 1)
        },
        Some(None) => {
            // SAFETY: this thread's errno slot.
            unsafe { *libc::__errno_location() = libc::E2BIG };
            return -1;
        }
    };
    for (i, a) in argv.iter_mut().enumerate().take(argc) {
        *a = arg(i) as *const c_char;
    }
    argv[argc] = core::ptr::null();
    // SAFETY: a NULL-terminated argument vector, forwarded to our own vector-form hooks.
    let r = unsafe {
        match kind {
            L_EXECLP => execvp(path, argv.as_ptr()),
            L_EXECLE => execve(path, argv.as_ptr(), envp),
            _ => execv(path, argv.as_ptr()),
        }
    };
    if let Some(Some(p)) = mapped {
        sys::munmap(p, bytes);
    }
    r
}

/// Defines a list-form exec as a naked function that spills its register arguments next to its
/// stack arguments and calls `execl_impl` (stable Rust cannot define C-variadic functions).
macro_rules! execl_entry {
    ($name:ident, $kind:expr) => {
        #[no_mangle]
        #[unsafe(naked)]
        pub unsafe extern "C" fn $name(path: *const c_char, arg: *const c_char) -> c_int {
            core::arch::naked_asm!(
                "push rbp",
                "mov rbp, rsp",
                "sub rsp, 48",
                "mov [rsp], rsi",
                "mov [rsp + 8], rdx",
                "mov [rsp + 16], rcx",
                "mov [rsp + 24], r8",
                "mov [rsp + 32], r9",
                "mov rsi, rsp",
                "lea rdx, [rbp + 16]",
                "mov ecx, {kind}",
                "call {imp}",
                "leave",
                "ret",
                kind = const $kind,
                imp = sym execl_impl,
            )
        }
    };
}

execl_entry!(execl, L_EXECL);
execl_entry!(execlp, L_EXECLP);
execl_entry!(execle, L_EXECLE);
