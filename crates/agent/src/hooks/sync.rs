//! Hooks for pthread mutexes, condition variables, rwlocks, semaphores, raw futexes and sleeps,
//! and `syscall(2)` (its futex, close and dup calls).

use libc::{
    c_int, c_long, c_uint, clockid_t, pthread_cond_t, pthread_mutex_t, pthread_rwlock_t, sem_t,
    timespec,
};
use scalpel_format::format::{ObjKind, Op};

use super::{
    enosys, pthread_acquire, pthread_release, pthread_release_with, pthread_result, release_event,
    sys_acquire, sys_result,
};
use crate::event::Ev;
use crate::lifecycle::{enter, enter_holding};
use crate::pshared::{futex_obj, mutex_countable, mutex_has_waiters, sync_obj};
use crate::real;

type MutexFn = unsafe extern "C-unwind" fn(*mut pthread_mutex_t) -> c_int;
type RwFn = unsafe extern "C-unwind" fn(*mut pthread_rwlock_t) -> c_int;
type RwTimedFn = unsafe extern "C-unwind" fn(*mut pthread_rwlock_t, *const timespec) -> c_int;
type RwClockFn =
    unsafe extern "C-unwind" fn(*mut pthread_rwlock_t, clockid_t, *const timespec) -> c_int;
type CondFn = unsafe extern "C-unwind" fn(*mut pthread_cond_t) -> c_int;
type SemFn = unsafe extern "C-unwind" fn(*mut sem_t) -> c_int;

/// An uncontended acquisition is recorded with one clock reading and may share a record with
/// its unlock (`Ctx::emit_held`). Whether it is uncontended is asked of the lock itself: a
/// `trylock` first, and the blocking call only when the mutex was busy (`EBUSY`). For every
/// mutex type that is what `pthread_mutex_lock` would have done: a free mutex is taken, a
/// recursive one the caller owns is counted up, and a busy one (an error-checking mutex the
/// caller owns included) goes to the real lock, which waits or returns its own error; a
/// robust mutex's `EOWNERDEAD` from `trylock` is an acquisition as it would be from `lock`.
#[no_mangle]
pub unsafe extern "C-unwind" fn pthread_mutex_lock(m: *mut pthread_mutex_t) -> c_int {
    let Some(f) = real!(pthread_mutex_lock: MutexFn) else {
        return libc::ENOSYS;
    };
    let Some(c) = enter() else {
        // SAFETY: forwarding the caller's argument.
        return unsafe { f(m) };
    };
    // Started before the mutex's own line is read, so that the two misses overlap.
    c.prefetch_obj(ObjKind::Mutex, m as u64);
    let o = sync_obj(ObjKind::Mutex, m);
    if let Some(try_lock) = real!(pthread_mutex_trylock: MutexFn) {
        // SAFETY: forwarding the caller's argument.
        let r = unsafe { try_lock(m) };
        if r == 0 {
            // Under `SCALPEL_LOCKS=count`, only counted (see `tstate::counted`).
            if c.cfg.count_locks && mutex_countable(m) && c.count_lock(o.key) {
                return 0;
            }
            // Read once the lock is taken: the number below orders it, the clock only dates it.
            let t0 = c.now();
            let seq = c.seq_pair(o.kind, o.key);
            c.hold_lock(Op::MutexLock, o, t0, seq);
            return 0;
        }
        if r != libc::EBUSY {
            let t0 = c.now();
            let seq = (r == libc::EOWNERDEAD).then(|| c.seq(o.kind, o.key));
            c.emit(&Ev {
                obj: Some((o, seq)),
                result: Some(pthread_result(r)),
                ..Ev::new(Op::MutexLock, t0, t0)
            });
            return r;
        }
    }
    let t0 = c.now();
    // SAFETY: forwarding the caller's argument.
    let r = unsafe { f(m) };
    let t1 = c.now();
    let seq = (r == 0).then(|| c.seq(o.kind, o.key));
    c.emit(&Ev {
        obj: Some((o, seq)),
        result: Some(pthread_result(r)),
        ..Ev::new(Op::MutexLock, t0, t1)
    });
    r
}

/// A trylock never blocks: one clock reading (after it) stands for it, and a success may share
/// a record with its unlock.
#[no_mangle]
pub unsafe extern "C-unwind" fn pthread_mutex_trylock(m: *mut pthread_mutex_t) -> c_int {
    let Some(f) = real!(pthread_mutex_trylock: MutexFn) else {
        return libc::ENOSYS;
    };
    let Some(c) = enter() else {
        // SAFETY: forwarding the caller's argument.
        return unsafe { f(m) };
    };
    c.prefetch_obj(ObjKind::Mutex, m as u64);
    let o = sync_obj(ObjKind::Mutex, m);
    // SAFETY: forwarding the caller's argument.
    let r = unsafe { f(m) };
    // A success is an uncontended acquisition, counted as the lock's would be.
    if r == 0 && c.cfg.count_locks && mutex_countable(m) && c.count_lock(o.key) {
        return 0;
    }
    let t0 = c.now();
    if r == 0 {
        let seq = c.seq_pair(o.kind, o.key);
        c.hold_lock(Op::MutexTrylock, o, t0, seq);
    } else {
        c.emit(&Ev {
            obj: Some((o, None)),
            result: Some(pthread_result(r)),
            ..Ev::new(Op::MutexTrylock, t0, t0)
        });
    }
    r
}

/// The unlock enters without committing a held lock: it may be that lock's other half.
#[no_mangle]
pub unsafe extern "C-unwind" fn pthread_mutex_unlock(m: *mut pthread_mutex_t) -> c_int {
    let Some(f) = real!(pthread_mutex_unlock: MutexFn) else {
        return libc::ENOSYS;
    };
    let Some(c) = enter_holding() else {
        // SAFETY: forwarding the caller's argument.
        return unsafe { f(m) };
    };
    let key = m as u64;
    // The other half of a counted pair passes through, unless a thread waits: the contention
    // analysis needs the release it waited for.
    if c.count_unlock(key) && !mutex_has_waiters(m) {
        // SAFETY: forwarding the caller's argument.
        return unsafe { f(m) };
    }
    // The other half of a lock kept back: one record for both, written without an event.
    if let Some(seq) = c.held_unlock_seq(key) {
        let t0 = c.now();
        // SAFETY: forwarding the caller's argument.
        let r = unsafe { f(m) };
        if !c.unlock_kept(key, t0, r) {
            let o = sync_obj(ObjKind::Mutex, m);
            release_event(&c, Op::MutexUnlock, (o, seq), t0, r);
        }
        return r;
    }
    // SAFETY: forwarding the caller's argument.
    pthread_release_with(
        Some(c),
        Op::MutexUnlock,
        sync_obj(ObjKind::Mutex, m),
        || unsafe { f(m) },
    )
}

#[no_mangle]
pub unsafe extern "C-unwind" fn pthread_mutex_timedlock(
    m: *mut pthread_mutex_t,
    t: *const timespec,
) -> c_int {
    type F = unsafe extern "C-unwind" fn(*mut pthread_mutex_t, *const timespec) -> c_int;
    let Some(f) = real!(pthread_mutex_timedlock: F) else {
        return libc::ENOSYS;
    };
    // SAFETY: forwarding the caller's arguments.
    pthread_acquire(Op::MutexTimedlock, sync_obj(ObjKind::Mutex, m), || unsafe {
        f(m, t)
    })
}

#[no_mangle]
pub unsafe extern "C-unwind" fn pthread_mutex_clocklock(
    m: *mut pthread_mutex_t,
    c: clockid_t,
    t: *const timespec,
) -> c_int {
    type F = unsafe extern "C-unwind" fn(*mut pthread_mutex_t, clockid_t, *const timespec) -> c_int;
    let Some(f) = real!(pthread_mutex_clocklock: F) else {
        return libc::ENOSYS;
    };
    // SAFETY: forwarding the caller's arguments.
    pthread_acquire(Op::MutexClocklock, sync_obj(ObjKind::Mutex, m), || unsafe {
        f(m, c, t)
    })
}

/// A condition wait: releases the mutex (a synthesized unlock), waits, and re-acquires the mutex
/// without calling `pthread_mutex_lock` (a synthesized relock).
#[inline(always)]
fn cond_wait(
    op: Op,
    cv: *mut pthread_cond_t,
    m: *mut pthread_mutex_t,
    call: impl FnOnce() -> c_int,
) -> c_int {
    let Some(c) = enter() else { return call() };
    let mo = sync_obj(ObjKind::Mutex, m);
    let co = sync_obj(ObjKind::Cond, cv);
    c.cond_wait_on(mo.key);
    let unlock_seq = c.seq(ObjKind::Mutex, mo.key);
    let t0 = c.now();
    c.emit(&Ev {
        obj: Some((mo, Some(unlock_seq))),
        result: Some(0),
        ..Ev::new(Op::CondUnlock, t0, t0)
    });
    let r = call();
    let t1 = c.now();
    // Whatever the result (even a timeout), the mutex is held again on return.
    let cond_seq = (r == 0).then(|| c.seq(ObjKind::Cond, co.key));
    let relock_seq = c.seq(ObjKind::Mutex, mo.key);
    c.emit(&Ev {
        obj: Some((co, cond_seq)),
        result: Some(pthread_result(r)),
        ..Ev::new(op, t0, t1)
    });
    c.emit(&Ev {
        obj: Some((mo, Some(relock_seq))),
        result: Some(0),
        ..Ev::new(Op::CondRelock, t1, t1)
    });
    r
}

#[no_mangle]
pub unsafe extern "C-unwind" fn pthread_cond_wait(
    cv: *mut pthread_cond_t,
    m: *mut pthread_mutex_t,
) -> c_int {
    type F = unsafe extern "C-unwind" fn(*mut pthread_cond_t, *mut pthread_mutex_t) -> c_int;
    let Some(f) = real!(pthread_cond_wait @ "GLIBC_2.3.2": F) else {
        return libc::ENOSYS;
    };
    // SAFETY: forwarding the caller's arguments.
    cond_wait(Op::CondWait, cv, m, || unsafe { f(cv, m) })
}

#[no_mangle]
pub unsafe extern "C-unwind" fn pthread_cond_timedwait(
    cv: *mut pthread_cond_t,
    m: *mut pthread_mutex_t,
    t: *const timespec,
) -> c_int {
    type F = unsafe extern "C-unwind" fn(
        *mut pthread_cond_t,
        *mut pthread_mutex_t,
        *const timespec,
    ) -> c_int;
    let Some(f) = real!(pthread_cond_timedwait @ "GLIBC_2.3.2": F) else {
        return libc::ENOSYS;
    };
    // SAFETY: forwarding the caller's arguments.
    cond_wait(Op::CondTimedwait, cv, m, || unsafe { f(cv, m, t) })
}

#[no_mangle]
pub unsafe extern "C-unwind" fn pthread_cond_clockwait(
    cv: *mut pthread_cond_t,
    m: *mut pthread_mutex_t,
    clk: clockid_t,
    t: *const timespec,
) -> c_int {
    type F = unsafe extern "C-unwind" fn(
        *mut pthread_cond_t,
        *mut pthread_mutex_t,
        clockid_t,
        *const timespec,
    ) -> c_int;
    let Some(f) = real!(pthread_cond_clockwait: F) else {
        return libc::ENOSYS;
    };
    // SAFETY: forwarding the caller's arguments.
    cond_wait(Op::CondClockwait, cv, m, || unsafe { f(cv, m, clk, t) })
}

#[no_mangle]
pub unsafe extern "C-unwind" fn pthread_cond_signal(cv: *mut pthread_cond_t) -> c_int {
    let Some(f) = real!(pthread_cond_signal @ "GLIBC_2.3.2": CondFn) else {
        return libc::ENOSYS;
    };
    // SAFETY: forwarding the caller's argument.
    pthread_release(Op::CondSignal, sync_obj(ObjKind::Cond, cv), || unsafe {
        f(cv)
    })
}

#[no_mangle]
pub unsafe extern "C-unwind" fn pthread_cond_broadcast(cv: *mut pthread_cond_t) -> c_int {
    let Some(f) = real!(pthread_cond_broadcast @ "GLIBC_2.3.2": CondFn) else {
        return libc::ENOSYS;
    };
    // SAFETY: forwarding the caller's argument.
    pthread_release(Op::CondBroadcast, sync_obj(ObjKind::Cond, cv), || unsafe {
        f(cv)
    })
}

macro_rules! rw_hook {
    ($name:ident, $op:expr, timed) => {
        #[no_mangle]
        pub unsafe extern "C-unwind" fn $name(l: *mut pthread_rwlock_t, t: *const timespec) -> c_int {
            let Some(f) = real!($name: RwTimedFn) else { return libc::ENOSYS };
            // SAFETY: forwarding the caller's arguments.
            pthread_acquire($op, sync_obj(ObjKind::Rwlock, l), || unsafe { f(l, t) })
        }
    };
    ($name:ident, $op:expr, clock) => {
        #[no_mangle]
        pub unsafe extern "C-unwind" fn $name(l: *mut pthread_rwlock_t, c: clockid_t, t: *const timespec) -> c_int {
            let Some(f) = real!($name: RwClockFn) else { return libc::ENOSYS };
            // SAFETY: forwarding the caller's arguments.
            pthread_acquire($op, sync_obj(ObjKind::Rwlock, l), || unsafe { f(l, c, t) })
        }
    };
    ($name:ident, $op:expr, $side:ident) => {
        #[no_mangle]
        pub unsafe extern "C-unwind" fn $name(l: *mut pthread_rwlock_t) -> c_int {
            let Some(f) = real!($name: RwFn) else { return libc::ENOSYS };
            // SAFETY: forwarding the caller's argument.
            $side($op, sync_obj(ObjKind::Rwlock, l), || unsafe { f(l) })
        }
    };
}

rw_hook!(pthread_rwlock_rdlock, Op::RwRdlock, pthread_acquire);
rw_hook!(pthread_rwlock_tryrdlock, Op::RwTryrdlock, pthread_acquire);
rw_hook!(pthread_rwlock_wrlock, Op::RwWrlock, pthread_acquire);
rw_hook!(pthread_rwlock_trywrlock, Op::RwTrywrlock, pthread_acquire);
rw_hook!(pthread_rwlock_unlock, Op::RwUnlock, pthread_release);
rw_hook!(pthread_rwlock_timedrdlock, Op::RwTimedrdlock, timed);
rw_hook!(pthread_rwlock_timedwrlock, Op::RwTimedwrlock, timed);
rw_hook!(pthread_rwlock_clockrdlock, Op::RwClockrdlock, clock);
rw_hook!(pthread_rwlock_clockwrlock, Op::RwClockwrlock, clock);

#[no_mangle]
pub unsafe extern "C-unwind" fn sem_wait(s: *mut sem_t) -> c_int {
    let Some(f) = real!(sem_wait: SemFn) else {
        return enosys();
    };
    // SAFETY: forwarding the caller's argument.
    sys_acquire(Op::SemWait, sync_obj(ObjKind::Sem, s), || unsafe { f(s) })
}

#[no_mangle]
pub unsafe extern "C-unwind" fn sem_trywait(s: *mut sem_t) -> c_int {
    let Some(f) = real!(sem_trywait: SemFn) else {
        return enosys();
    };
    // SAFETY: forwarding the caller's argument.
    sys_acquire(Op::SemTrywait, sync_obj(ObjKind::Sem, s), || unsafe {
        f(s)
    })
}

#[no_mangle]
pub unsafe extern "C-unwind" fn sem_timedwait(s: *mut sem_t, t: *const timespec) -> c_int {
    type F = unsafe extern "C-unwind" fn(*mut sem_t, *const timespec) -> c_int;
    let Some(f) = real!(sem_timedwait: F) else {
        return enosys();
    };
    // SAFETY: forwarding the caller's arguments.
    sys_acquire(Op::SemTimedwait, sync_obj(ObjKind::Sem, s), || unsafe {
        f(s, t)
    })
}

#[no_mangle]
pub unsafe extern "C-unwind" fn sem_clockwait(
    s: *mut sem_t,
    c: clockid_t,
    t: *const timespec,
) -> c_int {
    type F = unsafe extern "C-unwind" fn(*mut sem_t, clockid_t, *const timespec) -> c_int;
    let Some(f) = real!(sem_clockwait: F) else {
        return enosys();
    };
    // SAFETY: forwarding the caller's arguments.
    sys_acquire(Op::SemClockwait, sync_obj(ObjKind::Sem, s), || unsafe {
        f(s, c, t)
    })
}

#[no_mangle]
pub unsafe extern "C-unwind" fn sem_post(s: *mut sem_t) -> c_int {
    let Some(f) = real!(sem_post: SemFn) else {
        return enosys();
    };
    let Some(c) = enter() else {
        // SAFETY: forwarding the caller's argument.
        return unsafe { f(s) };
    };
    let o = sync_obj(ObjKind::Sem, s);
    let seq = c.seq(o.kind, o.key);
    // A post never blocks: one clock read, as for the pthread releases.
    let t0 = c.now();
    // SAFETY: forwarding the caller's argument.
    let r = unsafe { f(s) };
    let res = sys_result(i64::from(r));
    c.emit(&Ev {
        obj: Some((o, Some(seq))),
        result: Some(res),
        ..Ev::new(Op::SemPost, t0, t0)
    });
    r
}

const FUTEX_CMD_MASK: c_long = !(libc::FUTEX_PRIVATE_FLAG | libc::FUTEX_CLOCK_REALTIME) as c_long;

/// `syscall(long n, ...)`. Defined with seven fixed arguments: on x86_64 a variadic call passes
/// them in the same registers and stack slot, and reading six arguments whatever the caller passed
/// is what glibc's own `syscall` does.
#[no_mangle]
pub unsafe extern "C-unwind" fn syscall(
    n: c_long,
    a: c_long,
    b: c_long,
    cc: c_long,
    d: c_long,
    e: c_long,
    g: c_long,
) -> c_long {
    type F = unsafe extern "C-unwind" fn(c_long, ...) -> c_long;
    let Some(f) = real!(syscall: F) else {
        return enosys();
    };
    // SAFETY: forwarding all six argument registers, as the variadic original would read them.
    let call = || unsafe { f(n, a, b, cc, d, e, g) };
    match n {
        libc::SYS_futex => {}
        // A seccomp filter or strict mode is about to apply: the agent's own calls stop first.
        libc::SYS_seccomp => {
            let installs = a == c_long::from(libc::SECCOMP_SET_MODE_STRICT)
                || a == c_long::from(libc::SECCOMP_SET_MODE_FILTER);
            return super::sandbox::guard(installs, call);
        }
        libc::SYS_prctl => {
            return super::sandbox::guard(a == c_long::from(libc::PR_SET_SECCOMP), call);
        }
        // A raw clone whose child keeps this thread's TLS block (see the `clone` hook).
        libc::SYS_clone if super::thread::shares_tls(a) => {
            let _errno = crate::sys::ErrnoGuard::save();
            crate::tstate::share_tls();
        }
        // Descriptor calls made through syscall(2) get the care their wrappers get: the agent's
        // socket to the recorder is neither closed nor replaced, and the call is recorded alike.
        // The call itself stays the raw system call the caller made (glibc's `close` wrapper
        // is a cancellation point, and its `close_range` may be missing where the kernel has it).
        libc::SYS_close => return super::fd::close_with(a as c_int, call),
        libc::SYS_close_range => {
            let (first, last) = (a as c_uint, b as c_uint);
            return c_long::from(super::open::close_range_around_agent(
                first,
                last,
                cc as c_int,
                // SAFETY: the caller's system call, on a sub-range of its range.
                |lo, hi, fl| unsafe { f(n, c_long::from(lo), c_long::from(hi), c_long::from(fl)) }
                    as c_int,
            ));
        }
        libc::SYS_dup2 | libc::SYS_dup3 => {
            crate::broker::make_way(b as c_int);
            let op = if n == libc::SYS_dup2 {
                Op::Dup2
            } else {
                Op::Dup3
            };
            return c_long::from(super::fd::dup_common(
                op,
                a as c_int,
                Some(b as c_int),
                || call() as c_int,
            ));
        }
        _ => return call(),
    }
    let Some(c) = enter() else { return call() };
    let cmd = b & FUTEX_CMD_MASK;
    let o = futex_obj(a as u64, b & c_long::from(libc::FUTEX_PRIVATE_FLAG) != 0);
    let (op, release) = match cmd as c_int {
        libc::FUTEX_WAIT | libc::FUTEX_WAIT_BITSET | libc::FUTEX_WAIT_REQUEUE_PI | libc::FUTEX_LOCK_PI
        | libc::FUTEX_TRYLOCK_PI | 13 /* FUTEX_LOCK_PI2 */ => (Op::FutexWait, false),
        libc::FUTEX_WAKE | libc::FUTEX_WAKE_BITSET | libc::FUTEX_REQUEUE | libc::FUTEX_CMP_REQUEUE
        | libc::FUTEX_WAKE_OP | libc::FUTEX_UNLOCK_PI | libc::FUTEX_CMP_REQUEUE_PI => (Op::FutexWake, true),
        _ => (Op::FutexOther, false),
    };
    let pre = release.then(|| c.seq(o.kind, o.key));
    let t0 = c.now();
    let r = call();
    let t1 = c.now();
    let res = sys_result(r);
    let seq = if op == Op::FutexWait {
        (res == 0).then(|| c.seq(o.kind, o.key))
    } else {
        pre
    };
    c.emit(&Ev {
        obj: Some((o, seq)),
        result: Some(res),
        aux: Some(cmd as u64),
        aux2: Some(cc as u32 as u64),
        ..Ev::new(op, t0, t1)
    });
    r
}

/// Records a sleep. `requested` is read after the call, once the kernel has accepted the
/// caller's pointer (a bad one fails with EFAULT instead of crashing in our hook).
fn sleep_event(requested: impl FnOnce() -> u64, call: impl FnOnce() -> c_int) -> c_int {
    let Some(c) = enter() else { return call() };
    let t0 = c.now();
    let r = call();
    let t1 = c.now();
    let res = sys_result(i64::from(r));
    let efault = res == -i64::from(libc::EFAULT) || r == libc::EFAULT;
    let ns = (!efault).then(requested);
    c.emit(&Ev {
        result: Some(res),
        aux: ns,
        ..Ev::new(Op::Sleep, t0, t1)
    });
    r
}

fn ts_ns(t: *const timespec) -> u64 {
    if t.is_null() {
        return 0;
    }
    // SAFETY: the caller passes a valid timespec to the sleep function.
    let t = unsafe { &*t };
    (t.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(t.tv_nsec as u64)
}

#[no_mangle]
pub unsafe extern "C-unwind" fn nanosleep(req: *const timespec, rem: *mut timespec) -> c_int {
    type F = unsafe extern "C-unwind" fn(*const timespec, *mut timespec) -> c_int;
    let Some(f) = real!(nanosleep: F) else {
        return enosys();
    };
    // SAFETY: forwarding the caller's arguments.
    sleep_event(|| ts_ns(req), || unsafe { f(req, rem) })
}

#[no_mangle]
pub unsafe extern "C-unwind" fn clock_nanosleep(
    clk: clockid_t,
    fl: c_int,
    req: *const timespec,
    rem: *mut timespec,
) -> c_int {
    type F = unsafe extern "C-unwind" fn(clockid_t, c_int, *const timespec, *mut timespec) -> c_int;
    let Some(f) = real!(clock_nanosleep: F) else {
        return libc::ENOSYS;
    };
    // SAFETY: forwarding the caller's arguments. (clock_nanosleep returns an error number.)
    sleep_event(|| ts_ns(req), || unsafe { f(clk, fl, req, rem) })
}

#[no_mangle]
pub unsafe extern "C-unwind" fn usleep(us: libc::useconds_t) -> c_int {
    type F = unsafe extern "C-unwind" fn(libc::useconds_t) -> c_int;
    let Some(f) = real!(usleep: F) else {
        return enosys();
    };
    // SAFETY: forwarding the caller's argument.
    sleep_event(|| u64::from(us) * 1000, || unsafe { f(us) })
}

#[no_mangle]
pub unsafe extern "C-unwind" fn sleep(s: libc::c_uint) -> libc::c_uint {
    type F = unsafe extern "C-unwind" fn(libc::c_uint) -> libc::c_uint;
    let Some(f) = real!(sleep: F) else { return s };
    let mut left = 0;
    sleep_event(
        || u64::from(s) * 1_000_000_000,
        || {
            // SAFETY: forwarding the caller's argument.
            left = unsafe { f(s) };
            0
        },
    );
    left
}
