//! Module maps: the `/proc/self/maps` text of MAPS records parsed into entries.

/// One line of `/proc/<pid>/maps`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MapEntry {
    /// First address of the mapping.
    pub start: u64,
    /// One past the last address.
    pub end: u64,
    /// Permissions, e.g. `r-xp`.
    pub perms: String,
    /// Offset of the mapping in the file.
    pub offset: u64,
    /// Device, `major:minor` in hex as the kernel prints it.
    pub dev: String,
    /// Inode number (0 for anonymous mappings).
    pub inode: u64,
    /// Path or pseudo-name (`[heap]`, `[stack]`), `None` for anonymous mappings.
    pub path: Option<String>,
}

/// A snapshot of the process's mappings from one MAPS record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModuleMap {
    /// Clock ticks when the snapshot was taken.
    pub ticks: u64,
    /// The same instant in CLOCK_MONOTONIC nanoseconds.
    pub ts_ns: u64,
    /// The mappings, in the order of the text.
    pub entries: Vec<MapEntry>,
    /// Non-empty lines that did not parse (and were left out).
    pub bad_lines: usize,
}

impl ModuleMap {
    /// Parses maps text (lossy UTF-8) taken at `ticks`; `ts_ns` is filled in by the reader.
    pub fn parse(ticks: u64, text: &[u8]) -> ModuleMap {
        let text = String::from_utf8_lossy(text);
        let mut entries = Vec::new();
        let mut bad_lines = 0;
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            match MapEntry::parse(line) {
                Some(e) => entries.push(e),
                None => bad_lines += 1,
            }
        }
        ModuleMap {
            ticks,
            ts_ns: 0,
            entries,
            bad_lines,
        }
    }

    /// The mapping containing `addr`.
    pub fn find(&self, addr: u64) -> Option<&MapEntry> {
        self.entries
            .iter()
            .find(|e| e.start <= addr && addr < e.end)
    }
}

/// Splits off the next whitespace-separated field.
fn field(s: &str) -> Option<(&str, &str)> {
    let s = s.trim_start();
    if s.is_empty() {
        return None;
    }
    let end = s.find(char::is_whitespace).unwrap_or(s.len());
    Some((&s[..end], &s[end..]))
}

impl MapEntry {
    /// Parses one line: `start-end perms offset dev inode [path]`. The path keeps inner spaces.
    pub fn parse(line: &str) -> Option<MapEntry> {
        let (range, rest) = field(line)?;
        let (perms, rest) = field(rest)?;
        let (offset, rest) = field(rest)?;
        let (dev, rest) = field(rest)?;
        let (inode, rest) = field(rest)?;
        let (start, end) = range.split_once('-')?;
        let path = rest.trim();
        Some(MapEntry {
            start: u64::from_str_radix(start, 16).ok()?,
            end: u64::from_str_radix(end, 16).ok()?,
            perms: perms.to_string(),
            offset: u64::from_str_radix(offset, 16).ok()?,
            dev: dev.to_string(),
            inode: inode.parse().ok()?,
            path: (!path.is_empty()).then(|| path.to_string()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_maps() {
        let text = b"55d0c0a0b000-55d0c0a0d000 r--p 00000000 08:01 1234   /usr/bin/my prog\n\
            7ffd1000-7ffd2000 rw-p 00000000 00:00 0 \n\
            7ffe0000-7ffe1000 rw-p 00000000 00:00 0                          [stack]\n\
            garbage\n\n";
        let m = ModuleMap::parse(7, text);
        assert_eq!(m.entries.len(), 3);
        assert_eq!(m.bad_lines, 1);
        let e = &m.entries[0];
        assert_eq!(
            (e.start, e.end, e.offset, e.inode),
            (0x55d0c0a0b000, 0x55d0c0a0d000, 0, 1234)
        );
        assert_eq!(e.perms, "r--p");
        assert_eq!(e.dev, "08:01");
        assert_eq!(e.path.as_deref(), Some("/usr/bin/my prog"));
        assert_eq!(m.entries[1].path, None);
        assert_eq!(m.entries[2].path.as_deref(), Some("[stack]"));
        assert_eq!(m.find(0x7ffd1800), Some(&m.entries[1]));
        assert_eq!(m.find(0x10), None);
    }
}
