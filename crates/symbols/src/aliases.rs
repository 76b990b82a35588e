//! Functions folded into one: the names that share a function's start address.
//!
//! Compilers and linkers fold functions whose machine code is identical into one copy (LLVM's
//! function merging, GCC's `-fipa-icf`, a linker's `--icf`), and every name stays in the symbol
//! table at the same address. A frame there ran one of them and nothing in the binary says
//! which: Rust's `<TcpStream as Write>::write` and `<UdpSocket>::send` are one copy, and the
//! symbolizer would name whichever it met first. So a frame in folded code is named by all of
//! its names (`A or B`, sorted, at most [`SHOWN`] with a count of the rest), never by a guess.
//!
//! Non-goal: choosing the alias a caller meant (that needs the call's source, which a stripped
//! or moved tree lacks).

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use blazesym::inspect::source::{Elf, Source};
use blazesym::inspect::Inspector;
use blazesym::SymType;

use super::demangle::demangle;

/// The most names a frame shows; the rest are counted.
const SHOWN: usize = 3;

/// Per module: the start addresses that carry more than one function name, with the names
/// (demangled, sorted, deduplicated).
#[derive(Default)]
pub(crate) struct Aliases {
    inspector: Option<Inspector>,
    modules: HashMap<PathBuf, HashMap<u64, Vec<String>>>,
}

impl Aliases {
    /// The name of a frame in the function that starts at `start` in `path`, whose symbolizer
    /// name is `name`: `name` itself unless other names share the address.
    pub(crate) fn name(&mut self, path: &Path, start: u64, name: String) -> String {
        if !self.modules.contains_key(path) {
            let table = self.read(path);
            self.modules.insert(path.to_path_buf(), table);
        }
        // The symbol tables' names, not only the one the symbolizer gave: it may have read it
        // from debug information, spelled otherwise.
        match self.modules.get(path).and_then(|m| m.get(&start)) {
            Some(names) => joined(names),
            None => name,
        }
    }

    fn read(&mut self, path: &Path) -> HashMap<u64, Vec<String>> {
        let inspector = self.inspector.get_or_insert_with(Inspector::new);
        let mut src = Elf::new(path);
        // The symbol tables alone: folded copies are aliases there, and debug information
        // (one subprogram per copy kept) would not show them.
        src.debug_syms = false;
        let mut by_addr: HashMap<u64, Vec<String>> = HashMap::new();
        // A module that does not parse has no aliases; the symbolizer reports it already.
        let _ = inspector.for_each(&Source::Elf(src), |sym| {
            if sym.sym_type == SymType::Function && sym.size.is_some_and(|s| s > 0) {
                by_addr
                    .entry(sym.addr)
                    .or_default()
                    .push(demangle(&sym.name));
            }
            ControlFlow::Continue(())
        });
        by_addr.retain(|_, names| {
            names.sort_unstable();
            names.dedup();
            names.len() > 1
        });
        by_addr
    }
}

/// `A or B or C`, and `(+N more)` past [`SHOWN`].
fn joined(names: &[String]) -> String {
    let mut out = names[..names.len().min(SHOWN)].join(" or ");
    if names.len() > SHOWN {
        out.push_str(&format!(" (+{} more)", names.len() - SHOWN));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_joined_sorted_and_counted_past_three() {
        let names: Vec<String> = ["a", "b", "c", "d", "e"].map(String::from).to_vec();
        assert_eq!(joined(&names[..2]), "a or b");
        assert_eq!(joined(&names), "a or b or c (+2 more)");
    }
}
