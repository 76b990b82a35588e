//! Text rendering of events, objects, results and thread headings for `scalpel dump`.

use std::collections::HashMap;
use std::fmt::Write as _;

use scalpel_model::format::Op;
use scalpel_model::read::{Event, FileTrace, Identity, ObjectRef, ProcessTrace, ReadyForm};

use scalpel_views::units::seconds;

/// Identities of objects by (kind, key), as [`scalpel_model::read::TraceDir::identities`] gives.
pub type Identities<'a> = HashMap<(u8, u64), &'a Identity>;

/// `kind:0xkey`, followed by ` [identity]` when the trace says more about the object.
pub fn object_text(obj: &ObjectRef, ids: &Identities<'_>) -> String {
    match ids.get(&(obj.kind, obj.key)) {
        Some(id) if !matches!(id, Identity::None) => format!("{obj} [{id}]"),
        _ => obj.to_string(),
    }
}

/// Operations whose non-negative result is a byte count.
fn moves_bytes(op: Option<Op>) -> bool {
    matches!(op, Some(op) if (Op::Read as u8..=Op::Sendfile as u8).contains(&(op as u8)))
}

/// The symbolic name of a common errno value.
fn errno_name(e: i64) -> Option<&'static str> {
    Some(match e {
        1 => "EPERM",
        2 => "ENOENT",
        4 => "EINTR",
        5 => "EIO",
        9 => "EBADF",
        11 => "EAGAIN",
        12 => "ENOMEM",
        13 => "EACCES",
        14 => "EFAULT",
        16 => "EBUSY",
        17 => "EEXIST",
        22 => "EINVAL",
        32 => "EPIPE",
        35 => "EDEADLK",
        38 => "ENOSYS",
        88 => "ENOTSOCK",
        98 => "EADDRINUSE",
        104 => "ECONNRESET",
        107 => "ENOTCONN",
        110 => "ETIMEDOUT",
        111 => "ECONNREFUSED",
        115 => "EINPROGRESS",
        _ => return None,
    })
}

/// One event line: time, pid/tid, op, then the fields that are present.
pub fn event_line(
    first_ts: u64,
    process: &ProcessTrace,
    file: &FileTrace,
    e: &Event,
    ids: &Identities<'_>,
) -> String {
    let t = seconds(e.ts_ns.saturating_sub(first_ts));
    let who = format!("{}/{}", process.pid, file.header.tid);
    let mut s = format!("{t:>14} {who:>13} {:<18}", e.op_name());
    if let Some(o) = &e.obj {
        let _ = write!(s, " obj={}", object_text(o, ids));
    }
    if let Some(v) = e.seq {
        let _ = write!(s, " seq={v}");
    }
    match e.result {
        Some(r) if r >= 0 && moves_bytes(e.op) => {
            let _ = write!(s, " bytes={r}");
        }
        Some(r) if r < 0 => {
            let _ = write!(s, " result={r}");
            if let Some(name) = errno_name(-r) {
                let _ = write!(s, "({name})");
            }
        }
        Some(r) => {
            let _ = write!(s, " result={r}");
        }
        None => {}
    }
    if let Some(fd) = e.fd {
        // The agent stores a C int; -1 (and other negatives) arrive sign-extended.
        let _ = write!(s, " fd={}", fd as i64);
    }
    if let Some(v) = e.offset {
        let _ = write!(s, " offset={v}");
    }
    // Auxiliary values are small numbers or addresses and keys: the latter read better in hex.
    for (name, v) in [("aux", e.aux), ("aux2", e.aux2)] {
        match v {
            Some(v) if v > u64::from(u32::MAX) => {
                let _ = write!(s, " {name}={v:#x}");
            }
            Some(v) => {
                let _ = write!(s, " {name}={v}");
            }
            None => {}
        }
    }
    if let Some(v) = e.stack {
        let _ = write!(s, " stack={v}");
    }
    if e.dur_ns > 0 {
        let _ = write!(s, " dur={}ns", e.dur_ns);
    }
    if let Some(v) = e.cpu_ns {
        let _ = write!(s, " cpu={v}ns");
    }
    if let Some(r) = &e.ready {
        let form = match r.form {
            ReadyForm::EpollData => "data",
            ReadyForm::StreamKeys => "streams",
            ReadyForm::Other(_) => "values",
        };
        let vals: Vec<String> = r.values.iter().map(|v| format!("{v:#x}")).collect();
        let _ = write!(s, " ready={}[{form} {}]", r.reported, vals.join(","));
    }
    s.truncate(s.trim_end().len());
    s
}

/// A thread's heading in grouped output.
pub fn thread_heading(process: &ProcessTrace, file: &FileTrace, shown: usize) -> String {
    heading(process, file, file.events.len(), shown)
}

/// [`thread_heading`] for a file of `total` events, read without keeping them.
pub(super) fn heading(
    process: &ProcessTrace,
    file: &FileTrace,
    total: usize,
    shown: usize,
) -> String {
    let mut s = format!("== pid {}", process.pid);
    if process.incarnation != 0 {
        let _ = write!(s, " (incarnation {})", process.incarnation);
    }
    if file.header.tid == 0 {
        s.push_str(" process file");
    } else {
        let _ = write!(
            s,
            " tid {} \"{}\"",
            file.header.tid,
            file.thread_name().escape_debug()
        );
    }
    if let Some(exe) = process.exe() {
        let _ = write!(s, " exe {}", exe.display());
    }
    let _ = write!(s, ": {total} events");
    if shown != total {
        let _ = write!(s, " ({shown} shown)");
    }
    let _ = write!(s, ", {} lost ==", file.lost_events());
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_ops() {
        assert!(moves_bytes(Some(Op::Read)));
        assert!(moves_bytes(Some(Op::Sendfile)));
        assert!(!moves_bytes(Some(Op::Accept)));
        assert!(!moves_bytes(None));
        assert_eq!(errno_name(11), Some("EAGAIN"));
    }
}
