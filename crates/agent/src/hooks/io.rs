//! Hooks for the byte-moving calls: the read, write, send and recv families, and sendfile.
//!
//! Each records the stream it moved bytes on and the offset of its first byte in that stream, so
//! the reader of bytes [a, b) can be matched with the writes that produced them.

use libc::{c_int, c_void, iovec, msghdr, size_t, sockaddr, socklen_t, ssize_t};
use scalpel_format::format::Op;

use super::{enosys, sys_result};
use crate::event::Ev;
use crate::fdtab;
use crate::lifecycle::enter;
use crate::real;

/// Records an incoming transfer on `fd`.
#[inline(always)]
fn input(
    op: Op,
    fd: c_int,
    aux: Option<u64>,
    flags: c_int,
    call: impl FnOnce() -> ssize_t,
) -> ssize_t {
    let Some(c) = enter() else { return call() };
    let t0 = c.now();
    let r = call();
    let t1 = c.now();
    let res = sys_result(r as i64);
    let Ok(info) = fdtab::lookup(c.cfg, fd) else {
        c.count_lost(1);
        return r;
    };
    let stream = info.and_then(|i| i.rx());
    let slot = info.and_then(|i| i.rx_slot());
    // A peek leaves the bytes in the socket: they are consumed (and numbered) by a later read.
    let moved = res > 0 && flags & libc::MSG_PEEK == 0;
    let slot = slot.filter(|_| moved);
    // One atomic operation per call on a byte stream (its offset); an eventfd also takes a
    // sequence number, a file or terminal only that.
    let offset = slot
        .filter(|_| info.is_some_and(|i| i.has_offsets()))
        .map(|s| s.received(res as u64));
    let seq = slot
        .filter(|_| info.is_some_and(|i| i.needs_seq()))
        .map(|s| s.next_seq());
    let obj = stream.map(|o| (o, seq));
    c.emit_transfer(&Ev {
        obj,
        result: Some(res),
        fd: Some(fd),
        offset,
        aux,
        aux2: (flags != 0).then_some(flags as u32 as u64),
        ..Ev::new(op, t0, t1)
    });
    r
}

/// Records an outgoing transfer on `fd`. Where bytes have positions the offset is reserved once
/// the call returns (the byte count is known only then). Where readers need a sequence number
/// (`Info::needs_seq`) it is taken before the call, so that it is lower than that of any read
/// the written bytes cause. A byte stream thus costs one atomic operation per call: readers
/// match its bytes by offset and need no sequence number there.
#[inline(always)]
fn output(
    op: Op,
    fd: c_int,
    aux: Option<u64>,
    flags: c_int,
    call: impl FnOnce() -> ssize_t,
) -> ssize_t {
    let Some(c) = enter() else { return call() };
    // A signal handler that interrupted this thread while it described `fd` passes through.
    let Ok(info) = fdtab::lookup(c.cfg, fd) else {
        c.count_lost(1);
        return call();
    };
    let stream = info.and_then(|i| i.tx());
    let slot = info.and_then(|i| i.tx_slot());
    let offsets = info.is_some_and(|i| i.has_offsets());
    let seq = slot
        .filter(|_| info.is_some_and(|i| i.needs_seq()))
        .map(|s| s.next_seq());
    let t0 = c.now();
    let r = call();
    let t1 = c.now();
    let res = sys_result(r as i64);
    let offset = slot
        .filter(|_| res > 0 && offsets)
        .map(|s| s.sent(res as u64));
    let obj = stream.map(|o| (o, seq));
    c.emit_transfer(&Ev {
        obj,
        result: Some(res),
        fd: Some(fd),
        offset,
        aux,
        aux2: (flags != 0).then_some(flags as u32 as u64),
        ..Ev::new(op, t0, t1)
    });
    r
}

// Newer compilers check a definition of a symbol their standard library calls (`close`,
// `read`, `write`) against the declaration it uses: `extern "C"`. This hook is `C-unwind` on
// purpose (a thread cancelled inside the call unwinds through it; see the module docs of
// `hooks`), which changes only what an unwind may do, not how the call is made.
// `unknown_lints`: compilers older than that check do not know its name.
macro_rules! io_hook {
    ($dir:ident, $op:expr, $name:ident ( $fd:ident : c_int $(, $a:ident : $t:ty)* ) $(aux $aux:ident)? $(flags $fl:ident)?) => {
        #[allow(unknown_lints, invalid_runtime_symbol_definitions)]
        #[no_mangle]
        pub unsafe extern "C-unwind" fn $name($fd: c_int $(, $a: $t)*) -> ssize_t {
            type F = unsafe extern "C-unwind" fn(c_int $(, $t)*) -> ssize_t;
            let Some(f) = real!($name: F) else { return enosys() };
            #[allow(unused_mut, unused_assignments)]
            let mut aux: Option<u64> = None;
            $( aux = Some($aux as u64); )?
            #[allow(unused_mut, unused_assignments)]
            let mut flags: c_int = 0;
            $( flags = $fl; )?
            // SAFETY: forwarding the caller's arguments.
            $dir($op, $fd, aux, flags, || unsafe { f($fd $(, $a)*) })
        }
    };
}

io_hook!(
    input,
    Op::Read,
    read(fd: c_int, buf: *mut c_void, n: size_t)
);
io_hook!(
    input,
    Op::Readv,
    readv(fd: c_int, iov: *const iovec, cnt: c_int)
);
io_hook!(input, Op::Pread, pread(fd: c_int, buf: *mut c_void, n: size_t, off: libc::off_t) aux off);
io_hook!(input, Op::Pread, pread64(fd: c_int, buf: *mut c_void, n: size_t, off: libc::off64_t) aux off);
io_hook!(input, Op::Recv, recv(fd: c_int, buf: *mut c_void, n: size_t, fl: c_int) flags fl);
io_hook!(input, Op::Recvfrom, recvfrom(fd: c_int, buf: *mut c_void, n: size_t, fl: c_int, a: *mut sockaddr, l: *mut socklen_t) flags fl);
io_hook!(input, Op::Recvmsg, recvmsg(fd: c_int, m: *mut msghdr, fl: c_int) flags fl);
io_hook!(
    input,
    Op::Read,
    __read_chk(fd: c_int, buf: *mut c_void, n: size_t, cap: size_t)
);
io_hook!(input, Op::Pread, __pread_chk(fd: c_int, buf: *mut c_void, n: size_t, off: libc::off_t, cap: size_t) aux off);
io_hook!(input, Op::Pread, __pread64_chk(fd: c_int, buf: *mut c_void, n: size_t, off: libc::off64_t, cap: size_t) aux off);
io_hook!(input, Op::Recv, __recv_chk(fd: c_int, buf: *mut c_void, n: size_t, cap: size_t, fl: c_int) flags fl);
io_hook!(input, Op::Recvfrom, __recvfrom_chk(fd: c_int, buf: *mut c_void, n: size_t, cap: size_t, fl: c_int, a: *mut sockaddr, l: *mut socklen_t) flags fl);

io_hook!(
    output,
    Op::Write,
    write(fd: c_int, buf: *const c_void, n: size_t)
);
io_hook!(
    output,
    Op::Writev,
    writev(fd: c_int, iov: *const iovec, cnt: c_int)
);
io_hook!(output, Op::Pwrite, pwrite(fd: c_int, buf: *const c_void, n: size_t, off: libc::off_t) aux off);
io_hook!(output, Op::Pwrite, pwrite64(fd: c_int, buf: *const c_void, n: size_t, off: libc::off64_t) aux off);
io_hook!(output, Op::Send, send(fd: c_int, buf: *const c_void, n: size_t, fl: c_int) flags fl);
io_hook!(output, Op::Sendto, sendto(fd: c_int, buf: *const c_void, n: size_t, fl: c_int, a: *const sockaddr, l: socklen_t) flags fl);
io_hook!(output, Op::Sendmsg, sendmsg(fd: c_int, m: *const msghdr, fl: c_int) flags fl);
io_hook!(output, Op::Sendfile, sendfile(fd: c_int, input_fd: c_int, off: *mut libc::off_t, n: size_t) aux input_fd);
io_hook!(output, Op::Sendfile, sendfile64(fd: c_int, input_fd: c_int, off: *mut libc::off64_t, n: size_t) aux input_fd);
