//! Which machine a trace directory was recorded on: the recorder's [`HOST_FILE`], written when
//! the recording starts, read back as a [`HostIdentity`].
//!
//! Why these fields: traces from several machines are merged by their TCP conversations, and
//! what must be known first is which directories share a clock and which share an address space.
//! Two recordings made on one boot in one time namespace read one `CLOCK_MONOTONIC`; two made in
//! one network namespace share its addresses, pipes and sockets. The host name is for people
//! only: containers and cloned machines repeat it.
//!
//! The file is text, one `key value` per line after its first line, so that a person can read it
//! and a later recorder can add keys that this reader skips.

use std::ffi::OsStr;
use std::io::Read;

use super::error::ReadError;
use crate::format::{HOST_FILE, HOST_HEADER};
use crate::open::Dir;

/// What the recorder knew of its machine when the recording started.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct HostIdentity {
    /// The node name (`uname -n`); for people only.
    pub hostname: String,
    /// The kernel's boot id (`/proc/sys/kernel/random/boot_id`): one per boot of one machine.
    pub boot_id: String,
    /// The network namespace's inode (`/proc/self/ns/net`): addresses, pipes and sockets are
    /// shared within it.
    pub net_ns: u64,
    /// The time namespace's inode (`/proc/self/ns/time`): within one boot, one monotonic clock.
    pub time_ns: u64,
}

/// The longest host file read: a few short lines.
const MAX_LEN: u64 = 4096;

impl HostIdentity {
    /// The file's text.
    pub fn render(&self) -> String {
        format!(
            "{HOST_HEADER}\nhostname {}\nboot_id {}\nnet_ns {}\ntime_ns {}\n",
            one_line(&self.hostname),
            one_line(&self.boot_id),
            self.net_ns,
            self.time_ns
        )
    }

    /// Whether two recordings read one monotonic clock: the same boot, the same time namespace.
    pub fn same_clock(&self, other: &HostIdentity) -> bool {
        !self.boot_id.is_empty() && self.boot_id == other.boot_id && self.time_ns == other.time_ns
    }

    /// Whether two recordings share a machine's addresses, pipes and sockets (and its clock).
    pub fn same_host(&self, other: &HostIdentity) -> bool {
        self.same_clock(other) && self.net_ns == other.net_ns
    }

    /// Parses the file's text; `path` names it in errors, which give the offset of the line and
    /// what was expected there. Unknown keys are skipped.
    pub fn parse(text: &str, path: &std::path::Path) -> Result<HostIdentity, ReadError> {
        let bad = |offset: usize, expected: &str| ReadError::Damaged {
            path: path.to_path_buf(),
            offset: offset as u64,
            expected: expected.to_string(),
        };
        let mut lines = text.split_inclusive('\n');
        if lines.next().map(str::trim_end) != Some(HOST_HEADER) {
            return Err(bad(0, &format!("the first line \"{HOST_HEADER}\"")));
        }
        let mut id = HostIdentity::default();
        let mut offset = text.find('\n').map_or(text.len(), |i| i + 1);
        for line in lines {
            let at = offset;
            offset += line.len();
            let line = line.trim_end_matches('\n');
            if line.is_empty() {
                continue;
            }
            let (key, value) = line.split_once(' ').ok_or_else(|| bad(at, "`key value`"))?;
            let inode = || {
                value
                    .parse::<u64>()
                    .map_err(|_| bad(at, &format!("a namespace inode number after `{key}`")))
            };
            match key {
                "hostname" => id.hostname = value.to_string(),
                "boot_id" => id.boot_id = value.to_string(),
                "net_ns" => id.net_ns = inode()?,
                "time_ns" => id.time_ns = inode()?,
                _ => {}
            }
        }
        if id.boot_id.is_empty() {
            return Err(bad(offset, "a `boot_id` line"));
        }
        Ok(id)
    }

    /// The identity in the trace directory `dir`: `None` when the file is missing (a recording
    /// made before the recorder wrote one).
    pub(super) fn read(dir: &Dir) -> Result<Option<HostIdentity>, ReadError> {
        let opened = match dir.file(OsStr::new(HOST_FILE), MAX_LEN) {
            Ok(f) => f,
            Err(e) if e.is_missing() => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let path = dir.path().join(HOST_FILE);
        let mut bytes = Vec::new();
        opened
            .file
            .take(MAX_LEN)
            .read_to_end(&mut bytes)
            .map_err(|error| ReadError::Io {
                path: path.clone(),
                error,
            })?;
        let text = std::str::from_utf8(&bytes).map_err(|e| ReadError::Damaged {
            path: path.clone(),
            offset: e.valid_up_to() as u64,
            expected: "UTF-8 text".to_string(),
        })?;
        HostIdentity::parse(text, &path).map(Some)
    }

    /// This machine as seen from the calling process now (what `scalpel record` writes).
    /// Fields that cannot be read stay empty or zero.
    pub fn of_this_machine() -> HostIdentity {
        let ns = |name: &str| {
            std::fs::read_link(format!("/proc/self/ns/{name}"))
                .ok()
                .and_then(|l| namespace_inode(&l.to_string_lossy()))
                .unwrap_or(0)
        };
        let boot_id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
            .map(|s| s.trim().to_string())
            .unwrap_or_default();
        let hostname = rustix::system::uname()
            .nodename()
            .to_string_lossy()
            .into_owned();
        HostIdentity {
            hostname,
            boot_id,
            net_ns: ns("net"),
            time_ns: ns("time"),
        }
    }
}

/// The inode in a namespace link's text (`net:[4026531833]`).
fn namespace_inode(link: &str) -> Option<u64> {
    let inner = link.split_once('[')?.1.strip_suffix(']')?;
    inner.parse().ok()
}

/// A value on one line: line breaks would start a key of their own.
fn one_line(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn sample() -> HostIdentity {
        HostIdentity {
            hostname: "db-1".into(),
            boot_id: "1b4c-77".into(),
            net_ns: 4026531833,
            time_ns: 4026531834,
        }
    }

    #[test]
    fn renders_and_parses_back() {
        let id = sample();
        assert_eq!(
            HostIdentity::parse(&id.render(), Path::new("h")).unwrap(),
            id
        );
    }

    #[test]
    fn unknown_keys_are_skipped() {
        let text = format!("{}extra 12 13\n", sample().render());
        assert_eq!(
            HostIdentity::parse(&text, Path::new("h")).unwrap(),
            sample()
        );
    }

    #[test]
    fn errors_name_the_offset_and_what_was_expected() {
        let e = HostIdentity::parse("nonsense\n", Path::new("t/host.id")).unwrap_err();
        assert!(e.to_string().contains("offset 0"), "{e}");
        let text = format!("{HOST_HEADER}\nboot_id x\nnet_ns twelve\n");
        let e = HostIdentity::parse(&text, Path::new("t/host.id")).unwrap_err();
        let at = text.find("net_ns").unwrap();
        assert!(e.to_string().contains(&format!("offset {at}")), "{e}");
        assert!(e.to_string().contains("namespace inode"), "{e}");
        let e = HostIdentity::parse(&format!("{HOST_HEADER}\n"), Path::new("h")).unwrap_err();
        assert!(e.to_string().contains("boot_id"), "{e}");
    }

    #[test]
    fn clocks_and_hosts_compare_by_boot_and_namespaces() {
        let a = sample();
        let mut b = sample();
        b.hostname = "other name, same machine".into();
        assert!(a.same_host(&b));
        b.net_ns += 1;
        assert!(a.same_clock(&b) && !a.same_host(&b));
        b.time_ns += 1;
        assert!(!a.same_clock(&b));
        assert!(!HostIdentity::default().same_clock(&HostIdentity::default()));
    }

    #[test]
    fn this_machine_has_a_boot_id() {
        let id = HostIdentity::of_this_machine();
        assert!(!id.boot_id.is_empty());
        assert!(id.net_ns != 0);
        assert_eq!(namespace_inode("net:[4026531833]"), Some(4026531833));
    }
}
