//! Whether a module is a program or a library, from its ELF headers.
//!
//! A program that the loader starts names its interpreter (a `PT_INTERP` header: the dynamic
//! loader); a shared library does not, with one exception that matters: glibc's `libc.so.6`
//! names one too, so that it can be run to print its version. A program is therefore a module
//! that names an interpreter and is either a fixed-address executable (`ET_EXEC`), marked
//! position-independent (`DF_1_PIE` in `DT_FLAGS_1`, set by every linker since 2019), or has no
//! `DT_SONAME` (a library is linked against by its soname; an executable older than that flag
//! has none). Why this and not the process's command line: the first argument need not be the
//! executable's path (a wrapper, a renamed title, a relative path), while the headers are the
//! module's own. A statically linked program has no interpreter, and no libraries either, so
//! nothing depends on telling it apart.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// `e_type` of a fixed-address executable.
const ET_EXEC: u16 = 2;
/// `p_type` of the header that names the program interpreter.
const PT_INTERP: u32 = 3;
/// `p_type` of the dynamic section's header.
const PT_DYNAMIC: u32 = 2;
/// Dynamic tags: the end of the table, the library's soname, the second flags word.
const DT_NULL: u64 = 0;
const DT_SONAME: u64 = 14;
const DT_FLAGS_1: u64 = 0x6fff_fffb;
/// The `DT_FLAGS_1` bit of a position-independent executable.
const DF_1_PIE: u64 = 0x0800_0000;
/// More program headers than this is no module the loader maps (ELF files have a few dozen).
const MAX_HEADERS: u16 = 4096;
/// A dynamic table longer than this is not read (real ones hold a few dozen 16-byte entries).
const MAX_DYNAMIC: u64 = 1 << 20;

/// Whether the ELF file at `path` is a program (see the module docs). A file that cannot be
/// read or is not a 64-bit little-endian ELF file is no program (its frames are then treated
/// as a library's, which is what every frame was before this test existed).
pub(crate) fn is_program(path: &Path) -> bool {
    read_is_program(path).unwrap_or(false)
}

fn read_is_program(path: &Path) -> std::io::Result<bool> {
    let mut f = File::open(path)?;
    let mut eh = [0u8; 64];
    f.read_exact(&mut eh)?;
    // ELF magic, 64-bit class (2), little-endian data (1).
    if eh[..4] != *b"\x7fELF" || eh[4] != 2 || eh[5] != 1 {
        return Ok(false);
    }
    let e_type = u16::from_le_bytes([eh[0x10], eh[0x11]]);
    let phoff = u64_at(&eh, 0x20);
    let phentsize = u16::from_le_bytes([eh[0x36], eh[0x37]]);
    let phnum = u16::from_le_bytes([eh[0x38], eh[0x39]]);
    if phentsize < 0x38 || phnum > MAX_HEADERS {
        return Ok(false);
    }
    let mut table = vec![0u8; usize::from(phentsize) * usize::from(phnum)];
    f.seek(SeekFrom::Start(phoff))?;
    f.read_exact(&mut table)?;
    let headers = || table.chunks_exact(usize::from(phentsize));
    let p_type = |h: &[u8]| u32::from_le_bytes([h[0], h[1], h[2], h[3]]);
    if !headers().any(|h| p_type(h) == PT_INTERP) {
        return Ok(false);
    }
    if e_type == ET_EXEC {
        return Ok(true);
    }
    let Some(dynamic) = headers().find(|h| p_type(h) == PT_DYNAMIC) else {
        return Ok(true);
    };
    // p_offset at 8, p_filesz at 32 in a 64-bit program header.
    let (offset, size) = (u64_at(dynamic, 8), u64_at(dynamic, 32).min(MAX_DYNAMIC));
    let mut entries = vec![0u8; usize::try_from(size).unwrap_or(0)];
    f.seek(SeekFrom::Start(offset))?;
    f.read_exact(&mut entries)?;
    let (mut pie, mut soname) = (false, false);
    for e in entries.as_chunks::<16>().0 {
        match (u64_at(e, 0), u64_at(e, 8)) {
            (DT_NULL, _) => break,
            (DT_SONAME, _) => soname = true,
            (DT_FLAGS_1, flags) => pie = flags & DF_1_PIE != 0,
            _ => {}
        }
    }
    Ok(pie || !soname)
}

/// The little-endian u64 at `at` in `b` (0 past its end).
fn u64_at(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8)
        .and_then(|x| x.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The path of a module mapped into this process whose path contains `fragment`.
    fn mapped(fragment: &str) -> String {
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        maps.lines()
            .filter_map(|l| l.split_whitespace().nth(5))
            .find(|p| p.contains(fragment))
            .unwrap_or_else(|| panic!("{fragment} in this process's maps"))
            .to_owned()
    }

    #[test]
    fn this_test_binary_is_a_program_and_its_c_library_is_not() {
        let exe = std::env::current_exe().unwrap();
        assert!(is_program(&exe), "{}", exe.display());
        // Rust's runtime on linux-gnu links the unwinder as a shared library.
        let lib = mapped("libgcc_s");
        assert!(!is_program(Path::new(&lib)), "{lib}");
    }

    /// glibc's libc.so.6 names an interpreter (it can be run to print its version); it is a
    /// library all the same.
    #[test]
    fn the_c_library_is_no_program_though_it_can_be_run() {
        let libc = mapped("/libc.so");
        assert!(!is_program(Path::new(&libc)), "{libc}");
    }

    #[test]
    fn unreadable_and_foreign_files_are_no_program() {
        let dir = tempfile::tempdir().unwrap();
        let text = dir.path().join("notes.txt");
        std::fs::write(
            &text,
            "not an ELF file at all, but long enough to read a header from it",
        )
        .unwrap();
        assert!(!is_program(&text));
        assert!(!is_program(&dir.path().join("absent")));
        let short = dir.path().join("short");
        std::fs::write(&short, b"\x7fELF\x02\x01").unwrap();
        assert!(!is_program(&short));
    }
}
