//! The process title. PostgreSQL and nginx rename their processes by overwriting `argv`
//! (`postgres: walwriter`, `nginx: worker process`), which `/proc/self/cmdline` then shows; the
//! command line recorded at start is the parent's. So the agent reads the title again, at most
//! every 1/16 s per process and about 2 ms after a fork, and records it (a TITLE record in the
//! file of the thread that noticed) whenever it changed. Readers name a process by the title
//! it held longest. Each thread checks at every 16th event, and a check is one relaxed load, a subtraction
//! and a shift.

use core::sync::atomic::{AtomicU64, Ordering};

use scalpel_format::format::rec;
use scalpel_format::record::stable_hash;
use scalpel_format::wire::Enc;

use crate::global::Config;
use crate::sys;
use crate::writer::File;

/// A process's title is read at most every `ticks_per_sec >> EVERY_SHIFT` ticks (1/16 s).
const EVERY_SHIFT: u32 = 4;
/// After a fork, the child's first read comes `ticks_per_sec >> AFTER_FORK_SHIFT` ticks later
/// (about 2 ms): a forked server process names itself right away.
const AFTER_FORK_SHIFT: u32 = 9;
/// The longest title kept.
const MAX_TITLE: usize = 512;

/// The length of the process's argument area (`arg_end - arg_start` in `/proc/self/stat`), 0
/// while unknown. A program that joins its arguments in place overwrites their last NUL, and
/// the kernel's `cmdline` then runs on into the environment: the title is cut at this length,
/// so no environment string is ever recorded.
static ARG_LEN: AtomicU64 = AtomicU64::new(0);

/// Clock reading of the last check (0: never).
static LAST: AtomicU64 = AtomicU64::new(0);
/// Hash of the last title recorded (0: none yet).
static HASH: AtomicU64 = AtomicU64::new(0);

/// Records the title into `file` if it is time to look and it changed.
#[inline]
pub(crate) fn check(file: &mut File, cfg: &Config, ticks: u64) {
    let last = LAST.load(Ordering::Relaxed);
    if last != 0 && ticks.wrapping_sub(last) < cfg.ticks_per_sec >> EVERY_SHIFT {
        return;
    }
    if LAST
        .compare_exchange(last, ticks.max(1), Ordering::AcqRel, Ordering::Relaxed)
        .is_err()
    {
        return;
    }
    record(file, ticks);
}

#[cold]
fn record(file: &mut File, ticks: u64) {
    let Some(area) = arg_len() else {
        // Where the arguments end is unknown: a title could hold environment strings.
        return;
    };
    let mut buf = [0u8; MAX_TITLE];
    let Some(n) = sys::read_file(b"/proc/self/cmdline\0", &mut buf) else {
        return;
    };
    // A title written over argv ends with NUL padding: keep the text.
    let text = trim_nuls(&buf[..n.min(area)]);
    let h = stable_hash(&[text]) | 1;
    if HASH.swap(h, Ordering::Relaxed) == h {
        return;
    }
    let mut head = [0u8; 10];
    let mut e = Enc::new(&mut head);
    e.varint(ticks);
    let k = e.len();
    file.record(rec::TITLE, &head[..k], text);
}

/// The argument area's length, read once per process image from `/proc/self/stat`.
fn arg_len() -> Option<usize> {
    let known = ARG_LEN.load(Ordering::Relaxed);
    if known != 0 {
        return usize::try_from(known).ok();
    }
    let mut buf = [0u8; 1024];
    let n = sys::read_file(b"/proc/self/stat\0", &mut buf)?;
    let len = arg_area(&buf[..n])?;
    ARG_LEN.store(len as u64, Ordering::Relaxed);
    Some(len)
}

/// `arg_end - arg_start` from the text of `/proc/<pid>/stat` (fields 48 and 49; the command
/// name, field 2, is in parentheses and may hold spaces and parentheses itself).
fn arg_area(stat: &[u8]) -> Option<usize> {
    let close = stat.iter().rposition(|&b| b == b')')?;
    let mut fields = stat[close + 1..]
        .split(|&b| b == b' ' || b == b'\n')
        .filter(|f| !f.is_empty());
    // After the name come fields 3, 4, ...: arg_start is the 46th of them.
    let start = parse_u64(fields.nth(45)?)?;
    let end = parse_u64(fields.next()?)?;
    usize::try_from(end.checked_sub(start)?)
        .ok()
        .filter(|&l| l > 0)
}

fn parse_u64(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    s.iter().try_fold(0u64, |v, &d| {
        d.is_ascii_digit()
            .then(|| v.checked_mul(10)?.checked_add(u64::from(d - b'0')))
            .flatten()
    })
}

/// `b` without trailing NULs.
fn trim_nuls(b: &[u8]) -> &[u8] {
    let end = b.iter().rposition(|&c| c != 0).map_or(0, |i| i + 1);
    &b[..end]
}

/// In a fork child: look again soon.
pub(crate) fn after_fork(cfg: &Config, now: u64) {
    let every = cfg.ticks_per_sec >> EVERY_SHIFT;
    let early = every - (cfg.ticks_per_sec >> AFTER_FORK_SHIFT);
    LAST.store(now.saturating_sub(early).max(1), Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_argument_area_is_read_past_a_name_with_parentheses() {
        let mut stat = b"12 (a) b (c) S".to_vec();
        for f in 4..=47 {
            stat.extend_from_slice(format!(" {f}").as_bytes());
        }
        stat.extend_from_slice(b" 1000 1042 1042 2000 0\n");
        assert_eq!(arg_area(&stat), Some(42));
        assert_eq!(arg_area(b"12 (x) S 1 2"), None);
    }

    #[test]
    fn this_process_has_an_argument_area() {
        let stat = std::fs::read("/proc/self/stat").unwrap();
        let cmdline = std::fs::read("/proc/self/cmdline").unwrap();
        assert_eq!(arg_area(&stat), Some(cmdline.len()));
    }
}
