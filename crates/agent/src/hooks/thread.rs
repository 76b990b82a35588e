//! Hooks for thread and process lifetimes: pthread create, join and exit, fork and vfork, and
//! dlclose (for the unwinder's module table). What they start and end lives below them: the
//! pthread-key destructor that closes a thread's trace in `tstate`, the fork handlers in
//! `lifecycle`.
//!
//! A new thread starts in our trampoline, which records its start with the spawn key its parent
//! recorded, so creation is linked to start without knowing the child's tid in advance. The
//! trampoline's arguments travel in a fixed pool of slots claimed with atomics: no allocation.

use core::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

use libc::{c_int, c_void, pthread_attr_t, pthread_t};
use scalpel_format::format::{ObjKind, Op};

use super::{enosys, pthread_acquire, pthread_result, sys_result};
use crate::event::{Ev, Obj};
use crate::global;
use crate::lifecycle::enter;
use crate::real;
use crate::tstate;

type StartFn = extern "C" fn(*mut c_void) -> *mut c_void;
type UnwindStartFn = extern "C-unwind" fn(*mut c_void) -> *mut c_void;

struct Slot {
    state: AtomicU32,
    start: AtomicUsize,
    arg: AtomicUsize,
    spawn: AtomicU64,
    parent: AtomicU32,
    stack_size: AtomicUsize,
}

const SLOTS: usize = 256;
#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: Slot = Slot {
    state: AtomicU32::new(0),
    start: AtomicUsize::new(0),
    arg: AtomicUsize::new(0),
    spawn: AtomicU64::new(0),
    parent: AtomicU32::new(0),
    stack_size: AtomicUsize::new(0),
};
static POOL: [Slot; SLOTS] = [EMPTY; SLOTS];
static NEXT: AtomicUsize = AtomicUsize::new(0);

fn claim() -> Option<&'static Slot> {
    let start = NEXT.fetch_add(1, Ordering::Relaxed);
    (0..SLOTS).map(|i| &POOL[(start + i) % SLOTS]).find(|s| {
        s.state
            .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    })
}

extern "C-unwind" fn trampoline(p: *mut c_void) -> *mut c_void {
    // SAFETY: `p` is one of POOL's slots, claimed by the parent for this thread.
    let slot = unsafe { &*(p as *const Slot) };
    // SAFETY: the parent stored a valid start routine address.
    // Called through a C-unwind type: pthread_exit and cancellation unwind out of it.
    let start =
        unsafe { core::mem::transmute::<usize, UnwindStartFn>(slot.start.load(Ordering::Acquire)) };
    let arg = slot.arg.load(Ordering::Acquire) as *mut c_void;
    let spawn = slot.spawn.load(Ordering::Acquire);
    let parent = slot.parent.load(Ordering::Acquire);
    let size = slot.stack_size.load(Ordering::Acquire);
    slot.state.store(0, Ordering::Release);
    // Stack walks read between the stack pointer and the top of the thread's stack. glibc puts
    // the thread descriptor (pthread_self) right above the stack, for stacks it allocates and for
    // stacks the caller supplies, so the libc frames below ours are reachable too. Should that
    // not hold, this local bounds the walk to the thread's own frames.
    let marker = 0u8;
    let here = core::hint::black_box(&marker) as *const u8 as usize;
    // SAFETY: pthread_self has no preconditions.
    let tcb = unsafe { libc::pthread_self() } as usize;
    let top = if tcb > here && tcb - here < size.max(1 << 16) {
        tcb
    } else {
        here
    };
    tstate::set_stack(top, top.saturating_sub(size));
    if let Some(c) = enter() {
        let t = c.now();
        let seq = c.seq(ObjKind::Spawn, spawn);
        // SAFETY: pthread_self has no preconditions.
        let me = unsafe { libc::pthread_self() } as u64;
        c.emit(&Ev {
            obj: Some((Obj::key(ObjKind::Spawn, spawn), Some(seq))),
            aux: Some(me),
            aux2: Some(u64::from(parent)),
            ..Ev::new(Op::ThreadStart, t, t)
        });
    }
    tstate::set_exit_how(2);
    let r = start(arg);
    tstate::set_exit_how(0);
    r
}

#[no_mangle]
pub unsafe extern "C-unwind" fn pthread_create(
    th: *mut pthread_t,
    attr: *const pthread_attr_t,
    start: StartFn,
    arg: *mut c_void,
) -> c_int {
    type F = unsafe extern "C-unwind" fn(
        *mut pthread_t,
        *const pthread_attr_t,
        extern "C-unwind" fn(*mut c_void) -> *mut c_void,
        *mut c_void,
    ) -> c_int;
    let Some(f) = real!(pthread_create: F) else {
        return libc::EAGAIN;
    };
    // SAFETY: the original start routine has the same ABI as a C-unwind one.
    let plain = || unsafe {
        f(
            th,
            attr,
            core::mem::transmute::<StartFn, extern "C-unwind" fn(*mut c_void) -> *mut c_void>(
                start,
            ),
            arg,
        )
    };
    let Some(c) = enter() else { return plain() };
    let Some(slot) = claim() else { return plain() };
    let spawn = global::next_spawn_key(c.cfg);
    slot.start.store(start as usize, Ordering::Relaxed);
    slot.arg.store(arg as usize, Ordering::Relaxed);
    slot.stack_size
        .store(crate::unwind::thread_stack_size(attr), Ordering::Relaxed);
    slot.spawn.store(spawn, Ordering::Relaxed);
    slot.parent
        .store(crate::sys::gettid() as u32, Ordering::Release);
    let seq = c.seq(ObjKind::Spawn, spawn);
    let t0 = c.now();
    // SAFETY: forwarding the caller's thread and attributes with our trampoline and its slot.
    let r = unsafe { f(th, attr, trampoline, slot as *const Slot as *mut c_void) };
    let t1 = c.now();
    if r != 0 {
        slot.state.store(0, Ordering::Release);
    }
    // SAFETY: on success the real call wrote the new handle.
    let handle = (r == 0).then(|| unsafe { *th });
    c.emit(&Ev {
        obj: Some((Obj::key(ObjKind::Spawn, spawn), Some(seq))),
        result: Some(pthread_result(r)),
        aux: handle,
        ..Ev::new(Op::ThreadCreate, t0, t1)
    });
    r
}

#[no_mangle]
pub unsafe extern "C-unwind" fn pthread_join(th: pthread_t, ret: *mut *mut c_void) -> c_int {
    type F = unsafe extern "C-unwind" fn(pthread_t, *mut *mut c_void) -> c_int;
    let Some(f) = real!(pthread_join: F) else {
        return libc::ENOSYS;
    };
    let o = Obj::key(ObjKind::Thread, th);
    // SAFETY: forwarding the caller's arguments.
    pthread_acquire(Op::ThreadJoin, o, || unsafe { f(th, ret) })
}

#[no_mangle]
pub unsafe extern "C-unwind" fn pthread_exit(ret: *mut c_void) -> ! {
    type F = unsafe extern "C-unwind" fn(*mut c_void) -> !;
    tstate::set_exit_how(1);
    match real!(pthread_exit: F) {
        // SAFETY: forwarding the caller's argument; it does not return.
        Some(f) => unsafe { f(ret) },
        None => std::process::abort(),
    }
}

#[no_mangle]
pub unsafe extern "C-unwind" fn fork() -> libc::pid_t {
    type F = unsafe extern "C-unwind" fn() -> libc::pid_t;
    let Some(f) = real!(fork: F) else {
        return enosys();
    };
    let Some(c) = enter() else {
        // SAFETY: plain forward.
        return unsafe { f() };
    };
    let spawn = global::next_spawn_key(c.cfg);
    tstate::set_fork_spawn(spawn);
    let seq = c.seq(ObjKind::Spawn, spawn);
    let t0 = c.now();
    // SAFETY: plain forward; the child side is handled by our atfork child handler.
    let r = unsafe { f() };
    if r != 0 {
        tstate::set_fork_spawn(0);
        let t1 = c.now();
        let res = sys_result(i64::from(r));
        c.emit(&Ev {
            obj: Some((Obj::key(ObjKind::Spawn, spawn), Some(seq))),
            result: Some(res),
            ..Ev::new(Op::Fork, t0, t1)
        });
    }
    r
}

/// `vfork` stays a vfork: the child shares its parent's memory and the parent waits until the
/// child execs or exits, which spawners rely on (one that stores its child's exec error in a
/// variable reads it after vfork returns). The hook cannot be an ordinary function, since the
/// child would return from it and then the parent into a frame the child has reused: it marks
/// the thread (`tstate::set_vforking`, so the child's calls pass through and change nothing of
/// the agent's) and jumps to the real vfork, which returns straight to the caller. The child's
/// exec still gets the agent's environment; the model sees the exec'd program as a process of
/// its own, with no fork event.
///
/// # Safety
/// Called as `vfork` by the host.
#[unsafe(naked)]
#[no_mangle]
pub unsafe extern "C" fn vfork() -> libc::pid_t {
    // The stack is 8 off 16-byte alignment at entry (the return address): realigned for the
    // call, then left exactly as the caller made it for the real vfork.
    core::arch::naked_asm!(
        "sub rsp, 8",
        "call {prepare}",
        "add rsp, 8",
        "jmp rax",
        prepare = sym vfork_target,
    )
}

/// Marks the thread and returns where `vfork` jumps: the real vfork, or our `fork` hook when
/// the real one cannot be found.
extern "C" fn vfork_target() -> usize {
    let _errno = crate::sys::ErrnoGuard::save();
    type F = unsafe extern "C" fn() -> libc::pid_t;
    match real!(vfork: F) {
        Some(f) => {
            tstate::set_vforking();
            f as usize
        }
        None => fork as *const () as usize,
    }
}

/// glibc's `clone(fn, stack, flags, arg, ...)`: nothing is recorded (a child process gets its
/// own directory at its first hook, as after any fork that ran no handlers), but a child that
/// shares this thread's memory and keeps its thread pointer (`CLONE_VM` without `CLONE_SETTLS`)
/// would run the agent on this thread's TLS block: the block is marked shared first
/// (`tstate::share_tls`), so the child's calls pass through and are counted lost instead of
/// being written under this thread's id. Defined with the wrapper's seven arguments, as
/// `syscall` is: the variadic ones travel in the same registers.
#[no_mangle]
pub unsafe extern "C" fn clone(
    f: *mut c_void,
    stack: *mut c_void,
    flags: c_int,
    arg: *mut c_void,
    ptid: *mut c_void,
    tls: *mut c_void,
    ctid: *mut c_void,
) -> c_int {
    type F = unsafe extern "C" fn(
        *mut c_void,
        *mut c_void,
        c_int,
        *mut c_void,
        *mut c_void,
        *mut c_void,
        *mut c_void,
    ) -> c_int;
    let Some(real) = real!(clone: F) else {
        return enosys();
    };
    if shares_tls(i64::from(flags)) {
        let _errno = crate::sys::ErrnoGuard::save();
        tstate::share_tls();
    }
    // SAFETY: forwarding the caller's arguments.
    unsafe { real(f, stack, flags, arg, ptid, tls, ctid) }
}

/// Whether a clone with `flags` makes a child that runs on the caller's TLS block.
pub(super) fn shares_tls(flags: i64) -> bool {
    flags & i64::from(libc::CLONE_VM) != 0 && flags & i64::from(libc::CLONE_SETTLS) == 0
}

/// dlclose: stack walks pause while a module may be unmapped, and the unwinder's module table is
/// rebuilt afterwards. Nothing is recorded (the next MAPS record shows the change).
#[no_mangle]
pub unsafe extern "C-unwind" fn dlclose(handle: *mut c_void) -> c_int {
    type F = unsafe extern "C-unwind" fn(*mut c_void) -> c_int;
    let Some(f) = real!(dlclose: F) else {
        return -1;
    };
    crate::unwind::close_begin();
    // SAFETY: forwarding the caller's handle.
    let r = unsafe { f(handle) };
    let _errno = crate::sys::ErrnoGuard::save();
    crate::unwind::close_end();
    r
}
