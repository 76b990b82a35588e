//! Whether a module is a program or a library, from its ELF program headers.
//!
//! A program that the loader starts names its interpreter (a `PT_INTERP` header: the dynamic
//! loader); a shared library does not. Why this and not the process's command line: the first
//! argument need not be the executable's path (a wrapper, a renamed title, a relative path),
//! while the headers are the module's own. A statically linked program has no interpreter, and
//! no libraries either, so nothing depends on telling it apart.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// `p_type` of the header that names the program interpreter.
const PT_INTERP: u32 = 3;
/// More program headers than this is no module the loader maps (ELF files have a few dozen).
const MAX_HEADERS: u16 = 4096;

/// Whether the ELF file at `path` names a program interpreter. A file that cannot be read or is
/// not a 64-bit little-endian ELF file is no program (its frames are then treated as a
/// library's, which is what every frame was before this test existed).
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
    let phoff = u64::from_le_bytes(eh[0x20..0x28].try_into().unwrap_or_default());
    let phentsize = u16::from_le_bytes([eh[0x36], eh[0x37]]);
    let phnum = u16::from_le_bytes([eh[0x38], eh[0x39]]);
    if phentsize < 4 || phnum > MAX_HEADERS {
        return Ok(false);
    }
    let mut table = vec![0u8; usize::from(phentsize) * usize::from(phnum)];
    f.seek(SeekFrom::Start(phoff))?;
    f.read_exact(&mut table)?;
    Ok(table
        .chunks_exact(usize::from(phentsize))
        .any(|h| u32::from_le_bytes([h[0], h[1], h[2], h[3]]) == PT_INTERP))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_test_binary_is_a_program_and_its_c_library_is_not() {
        let exe = std::env::current_exe().unwrap();
        assert!(is_program(&exe), "{}", exe.display());
        // Rust's runtime on linux-gnu links the unwinder as a shared library.
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let lib = maps
            .lines()
            .filter_map(|l| l.split_whitespace().nth(5))
            .find(|p| p.contains("libgcc_s"))
            .expect("libgcc_s in this process's maps");
        assert!(!is_program(Path::new(lib)), "{lib}");
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
