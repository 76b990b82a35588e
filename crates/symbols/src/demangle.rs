//! Function names from symbol names: Rust's as `rustc-demangle` writes them without the hash
//! (what blazesym gives), C++'s without parameters and return type.
//!
//! Why not blazesym's demangling: it gives C++ names whole, `store::Queue<store::Item>::pop(
//! store::Hint, store::Who const*)`, and a task name made of that is mostly parameter list;
//! cutting it to its last path segments by counting `::` outside `<>` cut inside the
//! parameters instead (`Who const*)`). `cpp_demangle` parses the mangled name and can leave
//! the parameters and return type out, so the name is the function's own: two overloads get
//! one name, which is what a task name wants.

use cpp_demangle::{DemangleOptions, Symbol};

/// The function name for the symbol `name`: tried as Rust's, then as C++'s (the order blazesym
/// takes when the language is not known; a symbol table does not say); the name itself when it
/// is not mangled or does not parse.
pub(crate) fn demangle(name: &str) -> String {
    let rust = || {
        rustc_demangle::try_demangle(name)
            .ok()
            .map(|d| format!("{d:#}"))
    };
    let cpp = || {
        let options = DemangleOptions::new().no_params().no_return_type();
        Symbol::new(name)
            .ok()
            .and_then(|s| s.demangle_with_options(&options).ok())
    };
    rust().or_else(cpp).unwrap_or_else(|| name.to_owned())
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
}
