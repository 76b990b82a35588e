//! The end of a thread's recording (the pthread-key destructor, which writes its exit, its
//! counts and a last calibration point), and what fork and the thread trampoline leave in
//! thread-local storage for it.

use core::ptr::null_mut;
use core::sync::atomic::{compiler_fence, AtomicU64, Ordering};

use scalpel_format::format::{rec, ObjKind, Op};

use super::{Ctx, ThreadState, DEAD, TAG, TLS};
use crate::event::{Ev, Obj};
use crate::global;
use crate::sys;
use crate::writer;

/// Notes how the current thread is leaving (see `Tls::exit_how`).
pub(crate) fn set_exit_how(how: u8) {
    let _ = TLS.try_with(|t| t.exit_how.set(how + 1));
}

/// Ends this thread's recording: called from the pthread key destructor with our state pointer.
pub(crate) fn finish_thread(ev: impl FnOnce(&Ctx, u8)) {
    let _ = TLS.try_with(|t| {
        let ts = t.state.get();
        if ts.is_null() || ts == DEAD {
            return;
        }
        if let Some(cfg) = global::config_if_ready() {
            let ctx = Ctx { cfg, ts };
            ev(&ctx, t.exit_how.get().checked_sub(1).unwrap_or(2));
            // A last calibration point: with the one the file starts with it spans the
            // thread's whole life, so the clock line the reader fits through all files gets its
            // slope from the length of the run, not from the few milliseconds in which threads
            // start. (A slope off by 10 ppm moved a 2-second trace by microseconds against
            // CLOCK_MONOTONIC.)
            // SAFETY: `ts` is this thread's live state; `busy` guards against a signal handler
            // writing to the same file, as in `Ctx::emit`.
            unsafe {
                let st = &mut *ts;
                if st.tag == TAG && !st.busy.load(Ordering::Relaxed) {
                    st.busy.store(true, Ordering::Relaxed);
                    compiler_fence(Ordering::SeqCst);
                    if st.counted.pending() {
                        st.write_counts(global::now(cfg));
                    }
                    let mut buf = [0u8; 32];
                    let (n, _, _) = writer::calibration(cfg, &mut buf);
                    st.file.record(rec::CALIBRATION, &buf[..n], &[]);
                    compiler_fence(Ordering::SeqCst);
                    st.busy.store(false, Ordering::Relaxed);
                }
            }
        }
        // SAFETY: our live state; the timer goes before the state does.
        unsafe { (*ts).sampler.stop() };
        t.state.set(DEAD);
        // SAFETY: `ts` was our live state; the thread is marked DEAD first, so nothing else
        // reaches it any more.
        unsafe {
            (*ts).busy.store(true, Ordering::Relaxed);
            (*ts).file.close();
            (*ts).stacks.release();
            sys::munmap(ts.cast(), core::mem::size_of::<ThreadState>());
        }
    });
}

/// The pthread-key destructor (registered by `setup::configure`): runs in an exiting thread
/// whatever the way it exits (return, `pthread_exit`, cancellation), records the exit and closes
/// the trace.
pub(crate) extern "C" fn thread_dtor(_state: *mut libc::c_void) {
    finish_thread(|c, how| {
        let t = c.now();
        // SAFETY: pthread_self has no preconditions.
        let me = unsafe { libc::pthread_self() } as u64;
        let seq = c.seq(ObjKind::Thread, me);
        c.emit(&Ev {
            obj: Some((Obj::key(ObjKind::Thread, me), Some(seq))),
            aux: Some(u64::from(how)),
            ..Ev::new(Op::ThreadExit, t, t)
        });
    });
}

/// Notes this thread's stack bounds (from the thread trampoline, before its first event).
pub(crate) fn set_stack(top: usize, lo: usize) {
    let _ = TLS.try_with(|t| t.stack.set((top, lo)));
}

/// Sets the spawn key of the fork this thread is about to make (0 when done).
pub(crate) fn set_fork_spawn(key: u64) {
    let _ = TLS.try_with(|t| t.fork_spawn.set(key));
}

/// Takes the spawn key of the fork that made this process (0 when unknown).
pub(crate) fn take_fork_spawn() -> u64 {
    TLS.try_with(|t| t.fork_spawn.replace(0)).unwrap_or(0)
}

/// Whether this forking thread is the parent's: fork handlers the host registered before ours
/// run while the thread is marked forking (their prepare handlers after ours, their parent
/// handlers before ours), and the parent records their calls. A child, until our child handler
/// has given it its own files, still holds the parent's (a pid differs from the one the
/// configuration was made for), so its calls pass through. Only called while forking.
/// A child's calls are counted, and the count goes to its first file as lost events
/// ([`take_child_passed`]).
#[cold]
fn in_forking_parent() -> bool {
    let Some(c) = global::config_if_ready() else {
        return false;
    };
    if sys::sys(libc::SYS_getpid, 0, 0, 0) == c.pid as isize {
        return true;
    }
    CHILD_PASSED.fetch_add(1, Ordering::Relaxed);
    false
}

/// Calls a fork child made while its thread was still marked forking (see `in_forking_parent`).
static CHILD_PASSED: AtomicU64 = AtomicU64::new(0);

/// Takes the count of calls this fork child made before its files existed.
pub(crate) fn take_child_passed() -> u64 {
    CHILD_PASSED.swap(0, Ordering::Relaxed)
}

/// Marks (or unmarks) this thread as being inside fork.
pub(crate) fn set_forking(on: bool) {
    let _ = TLS.try_with(|t| {
        t.forking.set(on);
        refresh_odd(t);
    });
}

/// Marks this thread as making a `vfork` (see `Tls::vforking`).
pub(crate) fn set_vforking() {
    let _ = TLS.try_with(|t| {
        t.vforking.set(true);
        refresh_odd(t);
    });
}

/// Keeps `Tls::odd` the union of the marks it stands for.
fn refresh_odd(t: &super::Tls) {
    t.odd
        .set(t.forking.get() || t.vforking.get() || t.owner.get() != 0);
}

/// Whether a call on a thread with one of the marks `Tls::odd` stands for may be recorded: not
/// in a child running on this thread's memory between fork and its handler, or after a vfork,
/// nor on a TLS block shared with another thread that is not this one.
pub(super) fn ordinary(t: &super::Tls, ts: *mut ThreadState) -> bool {
    if t.forking.get() && !in_forking_parent() {
        return false;
    }
    if t.vforking.get() && vfork_child(t) {
        return false;
    }
    !(t.owner.get() != 0 && not_owner(t, ts))
}

/// Whether this call runs in the child of a `vfork` the thread made: the process is not the
/// one the configuration was made for. In the parent (the child has exec'd or exited) the mark
/// is cleared, so the check costs one system call per vfork.
fn vfork_child(t: &super::Tls) -> bool {
    let Some(c) = global::config_if_ready() else {
        return true;
    };
    if sys::getpid() != c.pid {
        return true;
    }
    t.vforking.set(false);
    refresh_odd(t);
    false
}

/// Marks this thread's TLS block as shared with a child about to be made by a `clone` with
/// `CLONE_VM` and without `CLONE_SETTLS`: the child runs with the same thread pointer, so
/// without the mark its calls would be written under this thread's id, into this thread's
/// file, racing with it.
pub(crate) fn share_tls() {
    let _ = TLS.try_with(|t| {
        if t.owner.get() == 0 {
            t.owner.set(sys::gettid());
            refresh_odd(t);
        }
    });
}

/// Whether a call on a shared TLS block comes from a thread other than its owner: such a call
/// is counted lost in the owner's file (the header's counter is atomic) and passes through.
/// One system call per hook, on such blocks only.
fn not_owner(t: &super::Tls, ts: *mut ThreadState) -> bool {
    if sys::gettid() == t.owner.get() {
        return false;
    }
    if !ts.is_null() && ts != DEAD {
        // SAFETY: a non-null, non-DEAD pointer is the owner's live state; only its header's
        // atomic counter is touched.
        let st = unsafe { &*ts };
        if st.tag == TAG {
            st.file.add_lost(1);
        }
    }
    true
}

/// Whether the calling code runs in a `vfork` child, on its parent's memory: it must change
/// nothing of the agent's (the exec hooks ask before touching the thread's sampler).
pub(crate) fn in_vfork_child() -> bool {
    TLS.try_with(|t| t.vforking.get() && vfork_child(t))
        .unwrap_or(false)
}

/// In a forked child: forget the parent's open file without writing to it.
pub(crate) fn forget_after_fork() {
    let _ = TLS.try_with(|t| {
        let ts = t.state.get();
        // Unpublish first: a signal handler must not find the old state.
        t.state.set(null_mut());
        if !ts.is_null() && ts != DEAD {
            // SAFETY: the child's copy of our state (already zeroed where MADV_WIPEONFORK
            // worked). It is left mapped, tagged dead, so a hook its parent was inside when it
            // forked finds nothing to write to (the file holds no descriptor to close).
            unsafe { (*ts).tag = 0 };
        }
        t.busy.set(false);
        t.forking.set(false);
        refresh_odd(t);
    });
}
