//! Function names from symbol names: Rust's as `rustc-demangle` writes them without the hash
//! (what blazesym gives), C++'s without parameters and return type.
//!
//! Why not blazesym's demangling: it gives C++ names whole, `store::Queue<store::Item>::pop(
//! store::Hint, store::Who const*)`, and a task name made of that is mostly parameter list;
//! cutting it to its last path segments by counting `::` outside `<>` cut inside the
//! parameters instead (`Who const*)`). `cpp_demangle` parses the mangled name and can leave
//! the parameters and return type out, so the name is the function's own: two overloads get
//! one name, which is what a task name wants.
//!
//! Rust has two manglings. Rust 1.99 builds with the newer one (`_R…`, "v0") by default; 1.95
//! still built with the legacy one (`_ZN…`). For the same function their demangled texts
//! differ: `<replicated_store::Primary>::session` for `replicated_store::Primary::session`,
//! `replicated_store::recv_packet::<std::net::tcp::TcpStream>` for
//! `replicated_store::recv_packet`, `<store::Port<store::Work>>::close` (the types a generic
//! was used with) for `store::Port<T>::close` (its parameters' names), `main::{closure#0}` for
//! `main::{{closure}}`. Rust names are written one way whichever mangling the program was
//! built with: without generic arguments (neither form can be made into the other), an
//! inherent impl's type as a path, closures and shims as the legacy form writes them. So one
//! program built by two toolchains gets the same task names, and the skip list's prefixes
//! (`std::net::`) match either way.

use cpp_demangle::{DemangleOptions, Symbol};

/// The function name for the symbol `name`: tried as Rust's, then as C++'s (the order blazesym
/// takes when the language is not known; a symbol table does not say); the name itself when it
/// is not mangled or does not parse.
pub(crate) fn demangle(name: &str) -> String {
    let rust = || {
        let text = format!("{:#}", rustc_demangle::try_demangle(name).ok()?);
        Some(rust_path(&text))
    };
    let cpp = || {
        let options = DemangleOptions::new().no_params().no_return_type();
        Symbol::new(name)
            .ok()
            .and_then(|s| s.demangle_with_options(&options).ok())
    };
    rust().or_else(cpp).unwrap_or_else(|| name.to_owned())
}

/// A demangled Rust path (either mangling) in one form: generic arguments (`Vec<u8>`, `Vec<T>`,
/// `::<…>`) left out, an inherent impl's `<Type>::` written `Type::`, closures `{{closure}}` and
/// vtable shims `{{vtable.shim}}`. Trait impls (`<Type as Trait>::`) stay. A path whose angle
/// brackets do not pair is returned as it is, closures and shims aside.
fn rust_path(demangled: &str) -> String {
    let text = closures_as_legacy(demangled);
    let b = text.as_bytes();
    let Some(pairs) = angle_pairs(b) else {
        return text;
    };
    let mut drop = vec![false; b.len()];
    for &(open, close) in &pairs {
        if text[..open].ends_with("::") {
            drop[open - 2..=close].fill(true);
        } else if !starts_segment(b, open) {
            drop[open..=close].fill(true);
        } else if text[close + 1..].starts_with("::") && !has_top_level_as(&text[open + 1..close]) {
            drop[open] = true;
            drop[close] = true;
        }
    }
    let kept: Vec<u8> = b
        .iter()
        .zip(&drop)
        .filter(|(_, d)| !**d)
        .map(|(c, _)| *c)
        .collect();
    // Only whole ASCII brackets and colons were dropped, so the rest is still UTF-8.
    String::from_utf8(kept).unwrap_or(text)
}

/// v0's `{closure#N}` as `{{closure}}`, and `::{shim:vtable#N}` as `{{vtable.shim}}`.
fn closures_as_legacy(v0: &str) -> String {
    let shims = numbered_as(v0, "::{shim:vtable#", "{{vtable.shim}}");
    numbered_as(&shims, "{closure#", "{{closure}}")
}

/// `text` with every `{prefix}N}` (N decimal digits) written `with`.
fn numbered_as(text: &str, prefix: &str, with: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(prefix) {
        out.push_str(&rest[..at]);
        let tail = &rest[at + prefix.len()..];
        let digits = tail.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 && tail[digits..].starts_with('}') {
            out.push_str(with);
            rest = &tail[digits + 1..];
        } else {
            out.push_str(prefix);
            rest = tail;
        }
    }
    out.push_str(rest);
    out
}

/// The (open, close) byte positions of every pair of angle brackets, outermost first; `None`
/// when they do not pair. The `>` of a function type's `->` is not a bracket.
fn angle_pairs(b: &[u8]) -> Option<Vec<(usize, usize)>> {
    let mut open = Vec::new();
    let mut pairs = Vec::new();
    for (i, &c) in b.iter().enumerate() {
        match c {
            b'<' => open.push(i),
            b'>' if i > 0 && b[i - 1] == b'-' => {}
            b'>' => pairs.push((open.pop()?, i)),
            _ => {}
        }
    }
    pairs.sort_unstable();
    open.is_empty().then_some(pairs)
}

/// Whether the `<` at `open` begins a path (`<T>::f`, `<T as U>::f`) rather than a type's
/// generic arguments (`Vec<u8>`), which always follow a name.
fn starts_segment(b: &[u8], open: usize) -> bool {
    open == 0 || !matches!(b[open - 1], b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'>')
}

/// Whether `inner` (the text between a pair of brackets) is `Type as Trait` at its own level.
fn has_top_level_as(inner: &str) -> bool {
    let mut depth = 0i32;
    let b = inner.as_bytes();
    for (i, &c) in b.iter().enumerate() {
        match c {
            b'<' => depth += 1,
            b'>' if i > 0 && b[i - 1] == b'-' => {}
            b'>' => depth -= 1,
            b' ' if depth == 0 && inner[i..].starts_with(" as ") => return true,
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpp_names_lose_their_parameters_and_rust_names_their_hash() {
        // store::Queue<store::Item>::pop(store::Hint, store::Who const*)
        let pop = "_ZN5store5QueueINS_4ItemEE3popENS_4HintEPKNS_3WhoE";
        assert_eq!(demangle(pop), "store::Queue<store::Item>::pop");
        // a::B::f(c::D, c::E*)
        let f = "_ZN1a1B1fEN1c1DEPNS1_1EE";
        assert_eq!(demangle(f), "a::B::f");
        let rust = "_ZN16replicated_store7Primary11send_packet17h0123456789abcdefE";
        assert_eq!(demangle(rust), "replicated_store::Primary::send_packet");
        assert_eq!(demangle("ap_queue_pop_something"), "ap_queue_pop_something");
    }

    /// Symbols rustc 1.95 wrote with `-C symbol-mangling-version=v0` for a crate `t` holding
    /// `impl Primary { fn session(&self) }`, `fn recv<T>(t: T)` called with `u8` and `&str`, and
    /// a closure in `main`: each reads as the legacy mangling's demangled name.
    #[test]
    fn rust_names_read_the_same_in_either_mangling() {
        let cases = [
            (
                "_RNvMCsjMaewn57Afh_1tNtB2_7Primary7session",
                "t::Primary::session",
            ),
            ("_RINvCsjMaewn57Afh_1t4recvReEB2_", "t::recv"),
            ("_RINvCsjMaewn57Afh_1t4recvhEB2_", "t::recv"),
            ("_RNCNvCsjMaewn57Afh_1t4main0B3_", "t::main::{{closure}}"),
            ("_RNvCsjMaewn57Afh_1t4main", "t::main"),
        ];
        for (mangled, legacy) in cases {
            assert_eq!(demangle(mangled), legacy, "{mangled}");
        }
    }

    #[test]
    fn generic_arguments_go_and_trait_impls_stay() {
        let write = "<&std::net::tcp::TcpStream as std::io::Write>::write";
        assert_eq!(rust_path(write), write);
        // Legacy writes a generic impl's parameters, v0 the types it was used with.
        assert_eq!(rust_path("store::Port<T>::close"), "store::Port::close");
        assert_eq!(
            rust_path("<store::Port<store::Work>>::close"),
            "store::Port::close"
        );
        assert_eq!(
            rust_path("<alloc::vec::Vec<T,A> as core::ops::drop::Drop>::drop"),
            "<alloc::vec::Vec as core::ops::drop::Drop>::drop"
        );
        assert_eq!(
            rust_path("<app::Conn<fn() -> u8>>::run::<u8>"),
            "app::Conn::run"
        );
        assert_eq!(
            rust_path("app::serve::<<app::Tcp as app::Io>::Stream>::{closure#12}"),
            "app::serve::{{closure}}"
        );
        assert_eq!(
            rust_path("<F as core::ops::function::FnOnce<()>>::call_once::{shim:vtable#0}"),
            "<F as core::ops::function::FnOnce>::call_once{{vtable.shim}}"
        );
        // Brackets that do not pair: left as they are.
        assert_eq!(rust_path("a::<b::c"), "a::<b::c");
    }
}
