//! Offline symbolization of recorded instruction addresses with blazesym, through the module map
//! the agent recorded for the process.
//!
//! An address is turned into a file offset in the module that was mapped there, and the module
//! on disk is checked against the map (device and inode) before it is read: a module replaced or
//! deleted since the recording is reported as such, never given a wrong name. Results are cached
//! per module and offset, so each distinct frame is looked up once per run.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use blazesym::symbolize::source::{Elf, Source};
use blazesym::symbolize::{Input, Symbolized, Symbolizer as Blaze};
use scalpel_model::read::{MapEntry, ModuleMap};

use super::aliases::Aliases;
use super::demangle::demangle;
use super::program::is_program;

/// A module whose frames could not be symbolized, and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}: {problem}; its frames show addresses only", .path.display())]
pub struct ModuleWarning {
    /// The module file, as the module map named it.
    pub path: PathBuf,
    /// What is wrong with it.
    pub problem: ModuleProblem,
}

/// What is wrong with a module file.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ModuleProblem {
    /// It was deleted after the recording.
    #[error("missing since the recording")]
    Missing,
    /// Another file is at its path now.
    #[error("replaced since the recording (another inode)")]
    Replaced,
    /// It does not parse as ELF.
    #[error("cannot be read as ELF ({0})")]
    NotElf(String),
}

/// Why a frame has no name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Missing {
    /// No file-backed mapping holds the address (JIT code, the vDSO, a stale map).
    NoModule,
    /// The module's file is gone (deleted, or `(deleted)` in the map).
    ModuleDeleted(PathBuf),
    /// A different file now sits at the module's path.
    ModuleReplaced(PathBuf),
    /// The module is there but has no symbol for the address.
    NoSymbol(PathBuf),
}

/// One symbolized frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    /// The recorded address.
    pub addr: u64,
    /// The module's path, when a mapping holds the address.
    pub module: Option<PathBuf>,
    /// The address as an offset into the module's file, when a mapping holds it.
    pub offset: Option<u64>,
    /// The function (demangled; a C++ function without its parameters), when found.
    pub function: Option<String>,
    /// Source file and line, when debug information has them.
    pub line: Option<(String, u32)>,
    /// Why there is no function name.
    pub missing: Option<Missing>,
    /// Whether the module is a program (it names an interpreter), not a shared library.
    pub program: bool,
}

impl std::fmt::Display for Frame {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let module = self
            .module
            .as_ref()
            .and_then(|m| m.file_name())
            .map(|n| n.to_string_lossy());
        match (&self.function, &self.missing) {
            (Some(name), _) => write!(f, "{name}")?,
            (None, Some(Missing::ModuleDeleted(_))) => {
                write!(f, "[{:#x} in a deleted module]", self.addr)?
            }
            (None, Some(Missing::ModuleReplaced(_))) => {
                write!(f, "[{:#x} in a replaced module]", self.addr)?
            }
            // A function with no symbol (a stripped static function): its offset in the module
            // file still tells call sites apart and can be looked up once debug info is at hand.
            (None, Some(Missing::NoSymbol(_))) if self.offset.is_some() => {
                write!(f, "[+{:#x}]", self.offset.unwrap_or_default())?
            }
            _ => write!(f, "[{:#x}]", self.addr)?,
        }
        if let Some((file, line)) = &self.line {
            write!(f, " ({file}:{line})")?;
        }
        if let Some(m) = module {
            write!(f, " in {m}")?;
        }
        Ok(())
    }
}

/// A looked-up name and source line for one module offset.
type Found = (Option<String>, Option<(String, u32)>);

/// What the disk says about a module, checked once per path.
#[derive(Clone, Debug)]
enum OnDisk {
    Same,
    Deleted,
    Replaced,
}

/// Symbolizes addresses of one recording; keep one per trace (its caches are per module).
#[derive(Default)]
pub struct Symbolizer {
    blaze: Option<Blaze>,
    modules: HashMap<(PathBuf, u64), OnDisk>,
    programs: HashMap<PathBuf, bool>,
    frames: HashMap<(PathBuf, u64), Found>,
    aliases: Aliases,
    /// One warning per module that could not be used, in the order they were met.
    warnings: Vec<ModuleWarning>,
    warned: std::collections::HashSet<PathBuf>,
}

impl Symbolizer {
    /// A symbolizer with empty caches.
    pub fn new() -> Self {
        Self::default()
    }

    /// Symbolizes `addr` as mapped by `map`.
    pub fn frame(&mut self, map: &ModuleMap, addr: u64) -> Frame {
        let mut frame = Frame {
            addr,
            module: None,
            offset: None,
            function: None,
            line: None,
            missing: None,
            program: false,
        };
        let Some(entry) = map
            .find(addr)
            .filter(|e| e.path.as_deref().is_some_and(|p| p.starts_with('/')))
        else {
            // The kernel's pseudo-modules ([vdso], where clock_gettime runs) have no file to
            // read symbols from; their name still says where the code was.
            frame.function = map
                .find(addr)
                .and_then(|e| e.path.clone())
                .filter(|p| p.starts_with('[') && p.ends_with(']'));
            frame.missing = Some(Missing::NoModule);
            return frame;
        };
        let raw = entry.path.as_deref().unwrap_or_default();
        let (path, deleted) = match raw.strip_suffix(" (deleted)") {
            Some(p) => (PathBuf::from(p), true),
            None => (PathBuf::from(raw), false),
        };
        frame.module = Some(path.clone());
        let state = if deleted {
            OnDisk::Deleted
        } else {
            self.check(&path, entry)
        };
        match state {
            OnDisk::Deleted => frame.missing = Some(Missing::ModuleDeleted(path)),
            OnDisk::Replaced => frame.missing = Some(Missing::ModuleReplaced(path)),
            OnDisk::Same => {
                frame.program = *self
                    .programs
                    .entry(path.clone())
                    .or_insert_with(|| is_program(&path));
                let offset = addr - entry.start + entry.offset;
                frame.offset = Some(offset);
                let (function, line) = self.lookup(&path, offset);
                if function.is_none() {
                    frame.missing = Some(Missing::NoSymbol(path));
                }
                frame.function = function;
                frame.line = line;
            }
        }
        frame
    }

    fn check(&mut self, path: &PathBuf, entry: &MapEntry) -> OnDisk {
        let state = self
            .modules
            .entry((path.clone(), entry.inode))
            .or_insert_with(|| match std::fs::metadata(path) {
                Err(_) => OnDisk::Deleted,
                Ok(m) if m.ino() != entry.inode || !same_dev(&entry.dev, m.dev()) => {
                    OnDisk::Replaced
                }
                Ok(_) => OnDisk::Same,
            })
            .clone();
        match state {
            OnDisk::Deleted => self.warn(path, ModuleProblem::Missing),
            OnDisk::Replaced => self.warn(path, ModuleProblem::Replaced),
            OnDisk::Same => {}
        }
        state
    }

    fn warn(&mut self, path: &Path, problem: ModuleProblem) {
        if self.warned.insert(path.to_path_buf()) {
            self.warnings.push(ModuleWarning {
                path: path.to_path_buf(),
                problem,
            });
        }
    }

    /// Warnings about modules that could not be used (missing, replaced, unreadable or
    /// corrupt), one per module, in the order they were met. Symbolization never fails on them.
    pub fn warnings(&self) -> &[ModuleWarning] {
        &self.warnings
    }

    fn lookup(&mut self, path: &PathBuf, offset: u64) -> Found {
        if let Some(hit) = self.frames.get(&(path.clone(), offset)) {
            return hit.clone();
        }
        // Names demangled here (`demangle`): C++ names without their parameters.
        let blaze = self
            .blaze
            .get_or_insert_with(|| Blaze::builder().enable_demangling(false).build());
        let src = Source::Elf(Elf::new(path));
        let found = match blaze.symbolize(&src, Input::FileOffset(&[offset][..])) {
            Ok(mut v) => match v.pop() {
                Some(Symbolized::Sym(s)) => {
                    let line = s
                        .code_info
                        .as_ref()
                        .and_then(|c| Some((c.to_path().display().to_string(), c.line?)));
                    let name = self.aliases.name(path, s.addr, demangle(&s.name));
                    (Some(name), line)
                }
                _ => (None, None),
            },
            Err(e) => {
                self.warn(path, ModuleProblem::NotElf(e.to_string()));
                (None, None)
            }
        };
        self.frames.insert((path.clone(), offset), found.clone());
        found
    }
}

/// Whether a maps device field ("fd:01", hex major:minor) names the device `dev`.
fn same_dev(field: &str, dev: u64) -> bool {
    let Some((major, minor)) = field.split_once(':') else {
        return true;
    };
    let (Ok(major), Ok(minor)) = (
        u64::from_str_radix(major, 16),
        u64::from_str_radix(minor, 16),
    ) else {
        return true;
    };
    let (dmaj, dmin) = (u64::from(libc::major(dev)), u64::from(libc::minor(dev)));
    (major, minor) == (dmaj, dmin)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[inline(never)]
    fn a_marked_function() -> u64 {
        std::hint::black_box(42)
    }

    fn own_map() -> ModuleMap {
        ModuleMap::parse(0, &std::fs::read("/proc/self/maps").unwrap())
    }

    #[test]
    fn names_a_function_of_this_binary_with_its_line() {
        assert_eq!(a_marked_function(), 42);
        let addr = a_marked_function as *const () as u64;
        let mut s = Symbolizer::new();
        let f = s.frame(&own_map(), addr);
        let name = f.function.clone().unwrap_or_default();
        assert!(name.contains("a_marked_function"), "{f:?}");
        assert!(
            f.line
                .as_ref()
                .is_some_and(|(file, _)| file.ends_with("symbolize.rs")),
            "{f:?}"
        );
        assert!(f.to_string().contains("a_marked_function"));
        // Cached the second time, same answer.
        assert_eq!(s.frame(&own_map(), addr), f);
    }

    #[test]
    fn replaced_deleted_and_unmapped_modules_get_no_name() {
        let mut map = own_map();
        let addr = a_marked_function as *const () as u64;
        let idx = map
            .entries
            .iter()
            .position(|e| e.start <= addr && addr < e.end)
            .unwrap();
        let mut s = Symbolizer::new();
        map.entries[idx].inode += 1;
        let f = s.frame(&map, addr);
        assert!(
            matches!(f.missing, Some(Missing::ModuleReplaced(_))) && f.function.is_none(),
            "{f:?}"
        );
        let p = map.entries[idx].path.clone().unwrap();
        map.entries[idx].path = Some(format!("{p} (deleted)"));
        let f = s.frame(&map, addr);
        assert!(
            matches!(f.missing, Some(Missing::ModuleDeleted(_))) && f.function.is_none(),
            "{f:?}"
        );
        let f = s.frame(&map, 8);
        assert_eq!(f.missing, Some(Missing::NoModule));
        assert_eq!(f.to_string(), "[0x8]");
    }
}
