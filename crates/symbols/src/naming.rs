//! Naming a leaf task from a call stack: the most informative frame is the first one (from the
//! innermost) that belongs to the program rather than to the C library, the thread library, the
//! loader, the agent, or a runtime's synchronization wrappers.

use super::symbolize::Frame;

/// Modules whose frames never name a task (matched against the module's file name).
pub const DEFAULT_SKIP_MODULES: &[&str] = &[
    "libc.so",
    "libpthread.so",
    "ld-linux",
    "libscalpel_agent.so",
    "libapr-",
    "libaprutil-",
];

/// Function-name prefixes of wrappers that never name a task (runtimes' lock and channel code).
pub const DEFAULT_SKIP_FUNCTIONS: &[&str] = &[
    "apr_",
    "std::sync::",
    "std::sys::",
    "std::thread::",
    "std::io::",
    "std::net::",
    "core::",
    "alloc::",
    "<std::",
    "<core::",
    "<alloc::",
    // Trait impls on references: `<&std::net::TcpStream as std::io::Write>::write`.
    "<&std::",
    "<&mut std::",
    "parking_lot::",
    "parking_lot_core::",
    "crossbeam_channel::",
    "__pthread",
    "pthread_",
    "__libc_",
    "__GI_",
];

/// Source-file prefixes whose frames never name a task: Rust's own library (`std`, `core`,
/// `alloc`), whose sources a toolchain records as `/rustc/<commit>/library/…`. Why the file
/// and not only the function prefixes: a program built with line tables only (`debug =
/// "line-tables-only"`, common in release profiles) names an inlined library function without
/// its path (`default_read_exact<…>`, not `std::io::default_read_exact<…>`).
pub const DEFAULT_SKIP_SOURCES: &[&str] = &["/rustc/"];

/// Which frames a leaf name skips. `Default` holds the lists above.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkipList {
    /// Module file-name fragments to skip.
    pub modules: Vec<String>,
    /// Function-name prefixes to skip.
    pub functions: Vec<String>,
    /// Source-file prefixes to skip.
    pub sources: Vec<String>,
}

impl Default for SkipList {
    fn default() -> Self {
        SkipList {
            modules: DEFAULT_SKIP_MODULES.iter().map(|s| s.to_string()).collect(),
            functions: DEFAULT_SKIP_FUNCTIONS
                .iter()
                .map(|s| s.to_string())
                .collect(),
            sources: DEFAULT_SKIP_SOURCES.iter().map(|s| s.to_string()).collect(),
        }
    }
}

impl SkipList {
    /// Whether `frame` is one to look past.
    pub fn skips(&self, frame: &Frame) -> bool {
        let module = frame
            .module
            .as_ref()
            .and_then(|m| m.file_name())
            .map(|n| n.to_string_lossy().into_owned());
        if module.is_some_and(|m| self.modules.iter().any(|s| m.contains(s.as_str()))) {
            return true;
        }
        let source = frame.line.as_ref().map(|(file, _)| file.as_str());
        if source.is_some_and(|f| self.sources.iter().any(|s| f.starts_with(s.as_str()))) {
            return true;
        }
        match &frame.function {
            Some(f) => self.functions.iter().any(|p| f.starts_with(p.as_str())),
            None => false,
        }
    }
}

/// The index of the frame that names the task: the first named frame not skipped; failing that,
/// the first frame not skipped even with no symbol (a stripped static function of the program
/// names its call site by offset better than an outer library frame would); failing that, the
/// first named frame; failing that, the innermost frame.
///
/// Frames of a shared library outside the program's innermost frame are never chosen before
/// the last two fallbacks: a library that called into the program is a loop dispatching to it
/// (an event loop's callbacks, a thread pool's jobs), and the program's code it called is the
/// work. Where the program is stripped that code has no name, and its module says more than the
/// loop's exported name would (`tcp read → sendmsg in memcached`, not `in event_base_loop`).
pub fn naming_frame(frames: &[Frame], skip: &SkipList) -> Option<usize> {
    let program = frames.iter().position(|f| f.program);
    let dispatches =
        |i: usize, f: &Frame| program.is_some_and(|p| i > p) && !f.program && f.module.is_some();
    let candidate = |i: usize, f: &Frame| !skip.skips(f) && !dispatches(i, f);
    let enumerated = || frames.iter().enumerate();
    enumerated()
        .position(|(i, f)| f.function.is_some() && candidate(i, f))
        .or_else(|| enumerated().position(|(i, f)| candidate(i, f)))
        .or_else(|| frames.iter().position(|f| f.function.is_some()))
        .or(if frames.is_empty() { None } else { Some(0) })
}

/// A function name cut to what tells it apart in a task name: the last two path segments
/// (three when the last is a closure), so `replicated_store::Primary::send_packet` reads
/// `Primary::send_packet`. Generic arguments and `<T as Trait>` prefixes stay whole.
pub fn short_name(f: &str) -> String {
    let mut cuts = Vec::new();
    let mut depth = 0i32;
    let b = f.as_bytes();
    let mut i = 0;
    while i + 1 < b.len() {
        match b[i] {
            b'<' => depth += 1,
            b'>' => depth -= 1,
            b':' if depth == 0 && b[i + 1] == b':' => {
                cuts.push(i);
                i += 1;
            }
            _ => {}
        }
        i += 1;
    }
    let keep = if f.ends_with("{{closure}}") { 3 } else { 2 };
    if cuts.len() < keep {
        return f.to_string();
    }
    f[cuts[cuts.len() - keep] + 2..].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn frame(module: &str, function: Option<&str>) -> Frame {
        Frame {
            addr: 1,
            module: Some(PathBuf::from(module)),
            offset: Some(0),
            function: function.map(str::to_string),
            line: None,
            missing: None,
            program: !module.contains(".so"),
        }
    }

    #[test]
    fn short_names_keep_the_last_segments() {
        assert_eq!(
            short_name("replicated_store::Primary::send_packet"),
            "Primary::send_packet"
        );
        assert_eq!(
            short_name("replicated_store::write_frame"),
            "replicated_store::write_frame"
        );
        assert_eq!(
            short_name("a::b::main::{{closure}}"),
            "b::main::{{closure}}"
        );
        assert_eq!(
            short_name("<std::net::UdpSocket>::recv"),
            "<std::net::UdpSocket>::recv"
        );
        assert_eq!(short_name("serve_put"), "serve_put");
    }

    #[test]
    fn skips_libraries_and_runtime_wrappers() {
        let stack = [
            frame(
                "/usr/lib/x86_64-linux-gnu/libc.so.6",
                Some("__futex_abstimed_wait_common"),
            ),
            frame(
                "/work/target/libscalpel_agent.so",
                Some("pthread_cond_wait"),
            ),
            frame(
                "/usr/lib/x86_64-linux-gnu/libapr-1.so.0",
                Some("apr_thread_cond_wait"),
            ),
            frame("/srv/store", Some("std::sync::condvar::Condvar::wait")),
            frame("/srv/store", Some("store::Session::recv_packet")),
            frame("/srv/store", Some("store::main")),
        ];
        let skip = SkipList::default();
        assert_eq!(naming_frame(&stack, &skip), Some(4));
        // A custom list: nothing skipped.
        let none = SkipList {
            modules: vec![],
            functions: vec![],
            sources: vec![],
        };
        assert_eq!(naming_frame(&stack, &none), Some(0));
        // Only skipped frames: the first named one; no names at all: the innermost.
        assert_eq!(naming_frame(&stack[..3], &skip), Some(0));
        assert_eq!(naming_frame(&[frame("/x", None)], &skip), Some(0));
        // A stripped function of the program names the site, not an outer library frame.
        let stripped = [
            frame("/usr/lib/x86_64-linux-gnu/libc.so.6", Some("epoll_wait")),
            frame("/usr/lib/apache2/modules/mod_mpm_event.so", None),
            frame("/usr/lib/x86_64-linux-gnu/libc.so.6", Some("start_thread")),
        ];
        assert_eq!(naming_frame(&stripped, &skip), Some(1));
        // A named frame of the program further out still wins over a stripped one.
        let mut outer = stripped.to_vec();
        outer.insert(2, frame("/usr/sbin/apache2", Some("ap_core_output_filter")));
        assert_eq!(naming_frame(&outer, &skip), Some(2));
        assert_eq!(naming_frame(&[], &skip), None);
    }

    #[test]
    fn skips_rust_library_frames_named_without_their_path() {
        // Line tables only: an inlined `std::io::default_read_exact` keeps its source file,
        // not its path.
        let mut inlined = frame(
            "/srv/store",
            Some("default_read_exact<std::net::tcp::TcpStream>"),
        );
        inlined.line = Some(("/rustc/0123abcd/library/std/src/io/mod.rs".into(), 480));
        let mut own = frame("/srv/store", Some("recv_packet<std::net::tcp::TcpStream>"));
        own.line = Some(("/home/dev/store/src/main.rs".into(), 42));
        let skip = SkipList::default();
        assert_eq!(
            naming_frame(&[inlined.clone(), own.clone()], &skip),
            Some(1)
        );
        // With no source file known the name alone decides.
        inlined.line = None;
        assert_eq!(naming_frame(&[inlined, own], &skip), Some(0));
    }

    #[test]
    fn a_library_loop_that_called_the_program_never_names_its_work() {
        let skip = SkipList::default();
        // A stripped program under libevent: its callback has no name, the loop has one.
        let mut stack = vec![
            frame("/usr/lib/x86_64-linux-gnu/libc.so.6", Some("sendmsg")),
            frame("/usr/bin/memcached", None),
            frame("/usr/lib/x86_64-linux-gnu/libevent-2.1.so.7", None),
            frame(
                "/usr/lib/x86_64-linux-gnu/libevent-2.1.so.7",
                Some("event_base_loop"),
            ),
            frame("/usr/bin/memcached", None),
            frame("/usr/lib/x86_64-linux-gnu/libc.so.6", Some("start_thread")),
        ];
        assert_eq!(naming_frame(&stack, &skip), Some(1));
        // The program's callback named: it names the work, as before.
        stack[1].function = Some("drive_machine".into());
        assert_eq!(naming_frame(&stack, &skip), Some(1));
        // A library the program called (inside its innermost frame) still names the site.
        let called = [
            frame(
                "/usr/lib/x86_64-linux-gnu/libc.so.6",
                Some("pthread_cond_signal"),
            ),
            frame("/usr/lib/x86_64-linux-gnu/liblzma.so.5", None),
            frame("/usr/lib/x86_64-linux-gnu/liblzma.so.5", Some("lzma_code")),
            frame("/usr/bin/xz", None),
        ];
        assert_eq!(naming_frame(&called, &skip), Some(2));
        // No program frame at all (a library's own thread): libraries name it as before.
        let own = [
            frame("/usr/lib/x86_64-linux-gnu/libc.so.6", Some("epoll_wait")),
            frame(
                "/usr/lib/x86_64-linux-gnu/libevent-2.1.so.7",
                Some("event_base_loop"),
            ),
        ];
        assert_eq!(naming_frame(&own, &skip), Some(1));
    }
}
