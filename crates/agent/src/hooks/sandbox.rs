//! The host entering a seccomp sandbox (`prctl(PR_SET_SECCOMP)`, `seccomp(2)`): the agent's
//! own system calls stop before the filter applies (`sys::enter_sandbox`), since an allow-list
//! written for the host kills the process at the first call the host never makes (a new
//! window's `socketpair`, the name read at thread exit). Threads keep writing into the windows
//! they have; new threads and full windows are counted lost.

/// Runs the host's `call`, with the agent's own system calls off first when it `installs` a
/// sandbox, and back on if the install failed and they were on before.
pub(crate) fn guard<R: PartialEq + From<i8>>(installs: bool, call: impl FnOnce() -> R) -> R {
    if !installs {
        return call();
    }
    let was = crate::sys::enter_sandbox();
    let r = call();
    if r == R::from(-1) {
        // The kernel refused (no NO_NEW_PRIVS, a bad filter): nothing applies.
        crate::sys::leave_sandbox(was);
    }
    r
}
