//! Making a recorded trace directory independent of the machine that recorded it, before it
//! joins the corpus.
//!
//! Leaf types are keyed by symbolized stacks, and the symbolizer reads the module files the
//! trace's module maps name (checking their inodes): the same trace would give one set of types
//! where the recorded executables and libraries are present and another in a fresh clone. So
//! every module path in the MAPS records loses its leading `/` (it becomes `.`): the symbolizer
//! then knows no module for any frame, every frame is named by its recorded address, and the
//! types depend on the trace alone. The bytes are replaced in place, so every record keeps its
//! length and `files.list` stays right.

use std::path::Path;

use scalpel_model::format::{hdr, rec, HEADER_SIZE};
use scalpel_model::wire::Dec;

/// Why a file could not be scrubbed.
#[derive(Debug, thiserror::Error)]
pub enum ScrubError {
    /// Reading or writing the file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// What failed.
        source: std::io::Error,
    },
    /// The records do not frame.
    #[error("{path}: broken record framing at offset {offset}")]
    Framing {
        /// The file.
        path: String,
        /// Where.
        offset: usize,
    },
}

/// Rewrites the module paths of every MAPS record in the trace file at `path` so that none is
/// absolute; returns how many paths changed.
pub fn scrub_file(path: &Path) -> Result<usize, ScrubError> {
    let name = path.display().to_string();
    let io = |source| ScrubError::Io {
        path: name.clone(),
        source,
    };
    let mut bytes = std::fs::read(path).map_err(io)?;
    if bytes.len() < HEADER_SIZE {
        return Ok(0);
    }
    let committed = u64::from_le_bytes(
        bytes[hdr::COMMITTED..hdr::COMMITTED + 8]
            .try_into()
            .unwrap_or_default(),
    );
    let end = (HEADER_SIZE + committed as usize).min(bytes.len());
    let mut changed = 0;
    let mut at = HEADER_SIZE;
    while at < end {
        let framing = ScrubError::Framing {
            path: name.clone(),
            offset: at,
        };
        let kind = bytes[at];
        if kind == rec::PAD {
            at += 1;
            continue;
        }
        let mut d = Dec::new(&bytes[at + 1..end]);
        let Some(len) = d.varint().ok() else {
            return Err(framing);
        };
        let start = end - d.remaining();
        let stop = start + len as usize;
        if stop > end {
            return Err(framing);
        }
        if kind == rec::MAPS {
            let mut p = Dec::new(&bytes[start..stop]);
            if p.varint().is_err() {
                return Err(framing);
            }
            let text = stop - p.remaining();
            changed += scrub_maps_text(&mut bytes[text..stop]);
        }
        at = stop;
    }
    if changed > 0 {
        std::fs::write(path, &bytes).map_err(io)?;
    }
    Ok(changed)
}

/// Replaces the leading `/` of each line's path (the sixth field of `/proc/self/maps`) by `.`;
/// returns how many lines changed.
pub fn scrub_maps_text(text: &mut [u8]) -> usize {
    let mut changed = 0;
    for line in text.split_mut(|&b| b == b'\n') {
        let mut fields = 0;
        let mut i = 0;
        while i < line.len() && fields < 5 {
            while i < line.len() && line[i].is_ascii_whitespace() {
                i += 1;
            }
            while i < line.len() && !line[i].is_ascii_whitespace() {
                i += 1;
            }
            fields += 1;
        }
        while i < line.len() && line[i].is_ascii_whitespace() {
            i += 1;
        }
        if fields == 5 && line.get(i) == Some(&b'/') {
            line[i] = b'.';
            changed += 1;
        }
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_absolute_module_paths_change() {
        let mut text = b"55d0-55e0 r-xp 00001000 fd:01 42 /usr/bin/prog\n\
                         7f00-7f10 r-xp 00000000 00:00 0 [vdso]\n\
                         7f20-7f30 rw-p 00000000 00:00 0\n\
                         7f40-7f50 r-xp 00000000 fd:01 7 /lib/a b.so\n"
            .to_vec();
        assert_eq!(scrub_maps_text(&mut text), 2);
        let text = String::from_utf8(text).unwrap();
        assert!(text.contains(" .usr/bin/prog\n"), "{text}");
        assert!(text.contains(" .lib/a b.so\n"), "{text}");
        assert!(text.contains(" [vdso]\n"), "{text}");
    }
}
