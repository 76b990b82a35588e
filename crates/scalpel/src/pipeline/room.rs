//! How much memory this process may use: the machine's, its control group's, and its
//! address-space limit (`ulimit -v`, `prlimit --as`), read from `/proc` and `/sys/fs/cgroup`.
//!
//! Why: half the machine is no default inside a container whose control group allows a quarter
//! of it, and an address-space limit fails an allocation (which aborts the run) before the
//! resident set reaches it. Under such a limit every thread allocates from one arena
//! (`scalpel_model::memory::set_policy`), and the address space then grows about as the resident
//! set does, above what the process had mapped before inferring (the program, its libraries, the
//! threads' stacks): twice what inference holds and 64 MiB, above that, covers it (measured on
//! the written pipelines: 246–707 MiB of address space at `--memory` 128M–1G, with 144 MiB
//! mapped before; `docs/BENCHMARKS.md`).

use std::path::{Path, PathBuf};

/// Address space a run reserves per byte it holds resident, above what it had mapped before,
/// measured (see the module docs).
pub const ADDRESS_SPACE_PER_BYTE: u64 = 2;

/// Address space a run maps beyond what it had mapped before, whatever its limit: the worker
/// threads' stacks and what every inference holds (measured: 56 MiB under `--memory 16M`, on
/// 1.1 million events of Apache with two worker threads).
pub const ADDRESS_SPACE_FIXED: u64 = 64 << 20;

/// The limits that bound this process's memory, where they could be read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemoryRoom {
    /// The machine's memory (`MemTotal`).
    pub machine: Option<u64>,
    /// The tightest memory limit of this process's control group and its ancestors, with the
    /// file that set it.
    pub cgroup: Option<(u64, PathBuf)>,
    /// The address-space limit (`RLIMIT_AS`).
    pub address_space: Option<u64>,
    /// The address space this process has mapped already (`VmSize`).
    pub mapped: Option<u64>,
}

impl MemoryRoom {
    /// The limits of this process now.
    pub fn of_this_process() -> MemoryRoom {
        MemoryRoom {
            machine: mem_total(),
            cgroup: cgroup_limit(),
            address_space: address_space_limit(),
            mapped: mapped_now(),
        }
    }

    /// The most inference may hold resident: the tightest of the machine's memory, the control
    /// group's, and what the address-space limit leaves ([`MemoryRoom::space_left`]) over
    /// [`ADDRESS_SPACE_PER_BYTE`] (`None`: no limit could be read).
    pub fn usable(&self) -> Option<u64> {
        [
            self.machine,
            self.cgroup.as_ref().map(|c| c.0),
            self.space_left().map(|a| a / ADDRESS_SPACE_PER_BYTE),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// The address space the limit leaves for what inference holds: above what is mapped
    /// already and [`ADDRESS_SPACE_FIXED`] (`None`: no limit).
    pub fn space_left(&self) -> Option<u64> {
        self.address_space
            .map(|a| a.saturating_sub(self.mapped.unwrap_or(0) + ADDRESS_SPACE_FIXED))
    }

    /// The limit to keep when the user gave none: half the machine's memory or of the control
    /// group's limit, whichever is less, and at most [`MemoryRoom::usable`]; half of 16 GiB
    /// where nothing could be read.
    pub fn default_limit(&self) -> u64 {
        let memory = [self.machine, self.cgroup.as_ref().map(|c| c.0)]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(16 << 30);
        let half = memory / 2;
        self.usable().map_or(half, |u| half.min(u))
    }
}

/// Values at or past this are how the kernel says "no limit" (cgroup v1 writes 2^63 rounded
/// down to a page).
const UNLIMITED: u64 = 1 << 62;

/// `MemTotal` from `/proc/meminfo`, in bytes.
fn mem_total() -> Option<u64> {
    kib_field(&std::fs::read_to_string("/proc/meminfo").ok()?, "MemTotal:")
}

/// This process's address space now (`VmSize` in `/proc/self/status`), in bytes.
fn mapped_now() -> Option<u64> {
    kib_field(
        &std::fs::read_to_string("/proc/self/status").ok()?,
        "VmSize:",
    )
}

/// The value of the line `key  N kB` of a `/proc` file, in bytes.
fn kib_field(text: &str, key: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(key))?;
    let kib: u64 = line[key.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib.saturating_mul(1024))
}

/// The soft address-space limit from `/proc/self/limits` ("Max address space  unlimited …").
fn address_space_limit() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max address space"))?;
    let soft = line["Max address space".len()..]
        .split_whitespace()
        .next()?;
    soft.parse::<u64>().ok().filter(|&b| b < UNLIMITED)
}

/// The tightest memory limit on the path of this process's control group, cgroup v2
/// (`memory.max`) or v1 (`memory.limit_in_bytes` under the memory controller's hierarchy).
fn cgroup_limit() -> Option<(u64, PathBuf)> {
    let groups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let mut found = None;
    for line in groups.lines() {
        let mut f = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        let (root, file) = if controllers.is_empty() {
            (Path::new("/sys/fs/cgroup"), "memory.max")
        } else if controllers.split(',').any(|c| c == "memory") {
            (Path::new("/sys/fs/cgroup/memory"), "memory.limit_in_bytes")
        } else {
            continue;
        };
        found = tightest(found, on_path(root, path, file));
    }
    found
}

/// The tightest limit in `file` of the group at `path` under `root` and of its ancestors.
fn on_path(root: &Path, path: &str, file: &str) -> Option<(u64, PathBuf)> {
    let mut dir = root.join(path.trim_start_matches('/'));
    let mut found = None;
    while dir.starts_with(root) {
        let f = dir.join(file);
        let limit = std::fs::read_to_string(&f)
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .filter(|&b| b < UNLIMITED);
        found = tightest(found, limit.map(|b| (b, f)));
        if !dir.pop() {
            break;
        }
    }
    found
}

fn tightest(a: Option<(u64, PathBuf)>, b: Option<(u64, PathBuf)>) -> Option<(u64, PathBuf)> {
    match (a, b) {
        (Some(a), Some(b)) => Some(if b.0 < a.0 { b } else { a }),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tightest_limit_is_usable_and_address_space_counts_half() {
        let room = MemoryRoom {
            machine: Some(24 << 30),
            cgroup: Some((8 << 30, PathBuf::from("/sys/fs/cgroup/memory.max"))),
            address_space: Some(4 << 30),
            mapped: Some((1 << 30) - ADDRESS_SPACE_FIXED),
        };
        // 3 GiB of address space left: 1.5 GiB may be held.
        assert_eq!(room.usable(), Some(3 << 29));
        let room = MemoryRoom {
            address_space: None,
            ..room
        };
        assert_eq!(room.usable(), Some(8 << 30));
        assert_eq!(room.default_limit(), 4 << 30);
        assert_eq!(MemoryRoom::default().usable(), None);
        assert_eq!(MemoryRoom::default().default_limit(), 8 << 30);
    }

    #[test]
    fn the_tightest_group_on_the_path_sets_the_limit_and_max_is_none() {
        let root = tempfile::tempdir().unwrap();
        let leaf = root.path().join("a/b");
        std::fs::create_dir_all(&leaf).unwrap();
        std::fs::write(root.path().join("memory.max"), "max\n").unwrap();
        std::fs::write(root.path().join("a/memory.max"), "1073741824\n").unwrap();
        std::fs::write(leaf.join("memory.max"), "4294967296\n").unwrap();
        let found = on_path(root.path(), "/a/b", "memory.max");
        assert_eq!(
            found,
            Some((1 << 30, root.path().join("a/memory.max"))),
            "the parent's 1 GiB binds a child allowed 4 GiB"
        );
        // cgroup v1's "no limit" (2^63 rounded down to a page) and v2's "max" are no limit.
        std::fs::write(root.path().join("a/memory.max"), "9223372036854771712\n").unwrap();
        std::fs::write(leaf.join("memory.max"), "max\n").unwrap();
        assert_eq!(on_path(root.path(), "/a/b", "memory.max"), None);
    }

    #[test]
    fn this_process_has_a_machine() {
        assert!(MemoryRoom::of_this_process().machine.is_some_and(|m| m > 0));
    }
}
