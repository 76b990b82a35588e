//! Traces of several machines as one: which directories are one machine, which objects they
//! share (`keys`), the messages between them (`messages`), what those say of their clocks
//! (`fit`), every clock on the first machine's (`tree`), and the directories put together.
//!
//! Scope: machines that talk over TCP with addresses both ends see alike. A connection through
//! NAT or a proxy that rewrites addresses has different keys at its two ends and stays external
//! on each; so does one that was open before either recording began.

mod keys;
mod messages;
mod tree;

use std::path::{Path, PathBuf};

use scalpel_model::graph::{ClockGrade, HostClock, HostId, HostInfo};
use scalpel_model::read::{HostIdentity, Shift, TraceDir};

use crate::options::GraphWarning;
use crate::read::Read;
use keys::OnHost;
use tree::{HostTimes, Messages};

/// The directories put together, with the machines and what was noticed.
pub(crate) struct Merged {
    pub read: Read,
    pub hosts: Vec<HostInfo>,
    pub warnings: Vec<GraphWarning>,
}

/// Puts the reads of several trace directories (in the order given) together: one machine per
/// distinct host identity, the first the reference whose clock every time is put on.
pub(crate) fn merge(reads: Vec<Read>) -> Merged {
    let mut warnings = Vec::new();
    let host_of = machines(&reads, &mut warnings);
    let n = host_of.iter().max().map_or(0, |m| m + 1);
    let on: Vec<OnHost<'_>> = reads
        .iter()
        .zip(&host_of)
        .map(|(r, &host)| OnHost {
            host,
            trace: &r.trace,
            sinks: &r.sinks,
        })
        .collect();
    let shared = keys::shared(&on);
    let messages = messages::messages(&on, &shared);
    let mut addresses: Vec<Vec<std::net::IpAddr>> = vec![Vec::new(); n];
    for d in &on {
        addresses[d.host].extend(keys::addresses(d, &shared));
    }
    for a in &mut addresses {
        a.sort_unstable();
        a.dedup();
    }
    let times = host_times(&reads, &host_of, n);
    let placed = tree::align(&times, &messages);
    let names = names(&reads, &host_of, n);
    warn_about(&placed, &names, &reads, &host_of, &mut warnings);
    let clocks: Vec<HostClock> = placed.into_iter().map(|p| p.clock).collect();
    let mut reads = reads;
    for (r, &h) in reads.iter_mut().zip(&host_of) {
        keys::rekey(h, &shared, &mut r.trace, &mut r.sinks);
        shift(&mut r.trace, &clocks[h], times[h].start, h);
    }
    out_of_order(&messages, &clocks, &times, &names, &mut warnings);
    let hosts = (0..n)
        .map(|h| HostInfo {
            host: names[h].clone(),
            trace: traces(&reads, &host_of, h),
            start_ns: times[h].start,
            addresses: std::mem::take(&mut addresses[h]),
            clock: clocks[h].clone(),
        })
        .collect();
    Merged {
        read: concat(reads),
        hosts,
        warnings,
    }
}

/// The machine of each read: the first earlier one with the same identity, else a new one.
fn machines(reads: &[Read], warnings: &mut Vec<GraphWarning>) -> Vec<usize> {
    let mut firsts: Vec<(&HostIdentity, &Path, usize)> = Vec::new();
    let mut out = Vec::with_capacity(reads.len());
    let mut next = 0;
    for r in reads {
        let found = r.trace.host.as_ref().and_then(|id| {
            firsts
                .iter()
                .find(|(f, _, _)| f.same_host(id))
                .map(|&(_, p, h)| (p, h))
        });
        match (found, &r.trace.host) {
            (Some((first, h)), _) => {
                warnings.push(GraphWarning::OneMachine {
                    path: r.trace.path.clone(),
                    first: first.to_path_buf(),
                });
                out.push(h);
                continue;
            }
            (None, Some(id)) => firsts.push((id, &r.trace.path, next)),
            (None, None) => warnings.push(GraphWarning::NoHostFile {
                path: r.trace.path.clone(),
            }),
        }
        out.push(next);
        next += 1;
    }
    out
}

/// Each machine's start (its earliest file's), its wall clock against its monotonic one, and
/// which machine's clock it reads (one boot, one time namespace).
fn host_times(reads: &[Read], host_of: &[usize], n: usize) -> Vec<HostTimes> {
    let mut out: Vec<HostTimes> = (0..n)
        .map(|h| HostTimes {
            start: u64::MAX,
            wall: None,
            clock_of: h,
        })
        .collect();
    for (r, &h) in reads.iter().zip(host_of) {
        for (_, f) in r.trace.files() {
            let hd = &f.header;
            if hd.mono0 > 0 && hd.mono0 < out[h].start {
                out[h].start = hd.mono0;
                out[h].wall = hd.unix_offset_ns();
            }
        }
    }
    for h in 0..n {
        let id = |h: usize| {
            let r = host_of.iter().position(|&x| x == h)?;
            reads[r].trace.host.as_ref()
        };
        out[h].clock_of = (0..h)
            .find(|&g| matches!((id(g), id(h)), (Some(a), Some(b)) if a.same_clock(b)))
            .map_or(h, |g| out[g].clock_of);
        if out[h].start == u64::MAX {
            out[h].start = 0;
        }
    }
    out
}

/// Each machine's name: its host name when no other machine has it, else its (first)
/// directory's name, numbered if that repeats too.
fn names(reads: &[Read], host_of: &[usize], n: usize) -> Vec<String> {
    let first = |h: usize| host_of.iter().position(|&x| x == h).map(|i| &reads[i]);
    let hostname = |h: usize| {
        first(h)
            .and_then(|r| r.trace.host.as_ref())
            .map(|i| i.hostname.clone())
    };
    let dirname = |h: usize| {
        first(h)
            .and_then(|r| r.trace.path.file_name())
            .map_or_else(|| format!("host{h}"), |n| n.to_string_lossy().into_owned())
    };
    let all: Vec<Option<String>> = (0..n).map(hostname).collect();
    let mut out: Vec<String> = (0..n)
        .map(|h| match &all[h] {
            Some(name)
                if !name.is_empty()
                    && all.iter().filter(|o| o.as_ref() == Some(name)).count() == 1 =>
            {
                name.clone()
            }
            _ => dirname(h),
        })
        .collect();
    for h in 0..n {
        if out[..h].contains(&out[h]) {
            out[h] = format!("{}.{h}", out[h]);
        }
    }
    out
}

/// The directories of machine `h`, as given, joined by commas.
fn traces(reads: &[Read], host_of: &[usize], h: usize) -> String {
    let dirs: Vec<String> = reads
        .iter()
        .zip(host_of)
        .filter(|(_, &x)| x == h)
        .map(|(r, _)| r.trace.path.display().to_string())
        .collect();
    dirs.join(",")
}

/// Warnings for machines placed by wall clock and pairs whose messages contradict each other.
fn warn_about(
    placed: &[tree::Placed],
    names: &[String],
    reads: &[Read],
    host_of: &[usize],
    warnings: &mut Vec<GraphWarning>,
) {
    for (h, p) in placed.iter().enumerate() {
        let path = || {
            host_of
                .iter()
                .position(|&x| x == h)
                .map_or_else(PathBuf::new, |i| reads[i].trace.path.clone())
        };
        match (p.clock.grade, p.via) {
            (ClockGrade::WallClock, _) => warnings.push(GraphWarning::Unaligned {
                host: names[h].clone(),
                path: path(),
            }),
            (_, Some((with, Some(overlap_ns)))) => warnings.push(GraphWarning::ClocksCross {
                host: names[h].clone(),
                with: names[with].clone(),
                overlap_ns,
            }),
            _ => {}
        }
    }
}

/// Puts every file of `trace` on the reference machine's clock.
fn shift(trace: &mut TraceDir, clock: &HostClock, start: u64, host: usize) {
    let id = HostId::at(host);
    for p in &mut trace.processes {
        p.host = id;
        if clock.reference {
            continue;
        }
        for f in p.process.iter_mut().chain(p.threads.iter_mut()) {
            f.clock = f.clock.clone().shifted(Shift {
                offset_ns: clock.offset_ns,
                drift_ppb: clock.drift_ppb,
                start_ns: start,
            });
        }
    }
}

/// Counts the messages that, once aligned, end before they begin.
fn out_of_order(
    messages: &Messages,
    clocks: &[HostClock],
    times: &[HostTimes],
    names: &[String],
    warnings: &mut Vec<GraphWarning>,
) {
    let on_ref = |h: usize, t: u64| {
        let c = &clocks[h];
        let shift = Shift {
            offset_ns: c.offset_ns,
            drift_ppb: c.drift_ppb,
            start_ns: times[h].start,
        };
        i128::from(shift.apply(t))
    };
    for (&(from, to), ms) in messages {
        let gaps = ms
            .iter()
            .map(|m| on_ref(from, m.sent) - on_ref(to, m.received))
            .filter(|&g| g > 0);
        let (count, worst) = gaps.fold((0u64, 0i128), |(n, w), g| (n + 1, w.max(g)));
        if count > 0 {
            warnings.push(GraphWarning::OutOfOrder {
                from: names[from].clone(),
                to: names[to].clone(),
                count,
                worst_ns: u64::try_from(worst).unwrap_or(u64::MAX),
            });
        }
    }
}

/// The reads one after the other: processes in the order of the directories, each machine's
/// events on the reference clock, references to processes renumbered.
fn concat(reads: Vec<Read>) -> Read {
    let mut it = reads.into_iter();
    let mut all = it.next().expect("merge is given two reads or more");
    for r in it {
        let base = all.trace.processes.len();
        all.trace.processes.extend(r.trace.processes);
        all.trace.warnings.extend(r.trace.warnings);
        all.sinks.extend(r.sinks);
        all.latched.extend(
            r.latched
                .into_iter()
                .map(|((p1, f1, e1), (p2, f2, e2))| ((p1 + base, f1, e1), (p2 + base, f2, e2))),
        );
    }
    all
}
