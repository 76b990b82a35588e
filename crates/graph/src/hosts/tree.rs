//! Every host's clock on the reference host's: the best-bounded pairs chained along a spanning
//! tree from the reference, and a host no tree reaches placed by its wall clock.

use std::collections::BTreeMap;

use scalpel_model::graph::{ClockGrade, HostClock};

use scalpel_model::clockfit::{fit, Message, PairFit};

/// What one host brings to the alignment.
#[derive(Clone, Debug)]
pub(crate) struct HostTimes {
    /// Its first time (ns on its own clock): offsets are given there.
    pub start: u64,
    /// Its `CLOCK_REALTIME` minus `CLOCK_MONOTONIC` (ns), from its trace files' headers.
    pub wall: Option<i128>,
    /// The first host that reads the same clock (one boot, one time namespace): itself if none.
    pub clock_of: usize,
}

/// Where a host's clock was placed.
#[derive(Clone, Debug)]
pub(crate) struct Placed {
    /// Its clock on the reference's.
    pub clock: HostClock,
    /// The host it was placed against, and by how much their messages contradict each other
    /// (ns) when they do.
    pub via: Option<(usize, Option<u64>)>,
}

/// Two hosts on one clock: the same times, exactly.
fn same_clock() -> PairFit {
    PairFit {
        offset: 0.0,
        drift: 0.0,
        bound: 0.0,
        drift_bound: 0.0,
        drift_known: true,
        messages: 0,
        crossed: false,
    }
}

/// The messages from host `from` to host `to` (indices), keyed `(from, to)`.
pub(crate) type Messages = BTreeMap<(usize, usize), Vec<Message>>;

/// The clock of every host (indices as in `hosts`), host 0 the reference.
pub(crate) fn align(hosts: &[HostTimes], messages: &Messages) -> Vec<Placed> {
    let n = hosts.len();
    // Each ordered pair is fitted once, when a round of the tree first asks for it: the fit
    // sorts its messages, and a round looks at every pair across the tree's edge.
    let mut fits: BTreeMap<(usize, usize), Option<PairFit>> = BTreeMap::new();
    let mut pair = |a: usize, b: usize| {
        *fits.entry((a, b)).or_insert_with(|| {
            if hosts[a].clock_of == hosts[b].clock_of {
                return Some(same_clock());
            }
            let none = Vec::new();
            let fwd = messages.get(&(a, b)).unwrap_or(&none);
            let back = messages.get(&(b, a)).unwrap_or(&none);
            fit(fwd, back, hosts[b].start)
        })
    };
    let mut clocks: Vec<Option<Placed>> = vec![None; n];
    clocks[0] = Some(Placed {
        clock: HostClock::reference(),
        via: None,
    });
    // Prim's tree: at each step the reached host and new host whose pair is best bounded
    // (failed pairs last); ties go to the lower indices, so the tree is the same every run.
    loop {
        let mut best: Option<(usize, usize, PairFit)> = None;
        let reached: Vec<bool> = clocks.iter().map(Option::is_some).collect();
        for a in (0..n).filter(|&a| reached[a]) {
            for b in (0..n).filter(|&b| !reached[b]) {
                let Some(f) = pair(a, b) else { continue };
                let better = best
                    .as_ref()
                    .is_none_or(|(_, _, g)| (f.crossed, f.bound) < (g.crossed, g.bound));
                if better {
                    best = Some((a, b, f));
                }
            }
        }
        let Some((a, b, f)) = best else { break };
        let via = clocks[a]
            .as_ref()
            .map_or_else(HostClock::reference, |p| p.clock.clone());
        clocks[b] = Some(Placed {
            clock: chain(&via, hosts[a].start, hosts[b].start, &f),
            via: Some((a, f.crossed.then(|| (2.0 * f.bound).ceil() as u64))),
        });
    }
    let reference_wall = hosts[0].wall;
    clocks
        .into_iter()
        .zip(hosts)
        .map(|(c, h)| {
            c.unwrap_or_else(|| Placed {
                clock: by_wall_clock(reference_wall, h.wall),
                via: None,
            })
        })
        .collect()
}

/// Host `b`'s clock on the reference's, through host `a` (whose clock on the reference's is
/// `via`) and the fit of `b` to `a`. Offsets are at each host's start; bounds add.
fn chain(via: &HostClock, start_a: u64, start_b: u64, f: &PairFit) -> HostClock {
    let (o1, d1) = (via.offset_ns as f64, via.drift_ppb as f64 * 1e-9);
    // b's start on a's clock, then on the reference's.
    let on_a = start_b as f64 + f.offset;
    let offset = f.offset + o1 + d1 * (on_a - start_a as f64);
    let drift = (1.0 + f.drift) * (1.0 + d1) - 1.0;
    let pair = if f.crossed {
        ClockGrade::Fail
    } else if f.drift_known {
        ClockGrade::Accurate
    } else {
        ClockGrade::Approximate
    };
    HostClock {
        reference: false,
        offset_ns: offset.round() as i64,
        drift_ppb: (drift * 1e9).round() as i64,
        drift_bound_ppb: via
            .drift_bound_ppb
            .map(|b| b + (f.drift_bound * 1e9).ceil() as u64),
        bound_ns: via.bound_ns.map(|b| b + f.bound.ceil() as u64),
        pairs: f.messages as u64,
        // The worse of the way there and this pair.
        grade: via.grade.max(pair),
    }
}

/// A host no message reaches: its wall clock against the reference's, bound unknown.
fn by_wall_clock(reference: Option<i128>, own: Option<i128>) -> HostClock {
    let offset = match (reference, own) {
        (Some(r), Some(o)) => i64::try_from(o - r).unwrap_or(0),
        _ => 0,
    };
    HostClock {
        reference: false,
        offset_ns: offset,
        drift_ppb: 0,
        drift_bound_ppb: None,
        bound_ns: None,
        pairs: 0,
        grade: ClockGrade::WallClock,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` messages each way between hosts whose clocks read `t - offset_a` and `t - offset_b`
    /// at true time `t`, 10 µs of latency.
    fn talk(m: &mut Messages, (a, off_a): (usize, i64), (b, off_b): (usize, i64), n: u64) {
        let on = |off: i64, t: u64| (t as i64 - off) as u64;
        for i in 0..n {
            let t = 10_000_000_000 + i * 1_000_000;
            m.entry((a, b)).or_default().push(Message {
                sent: on(off_a, t),
                received: on(off_b, t + 10_000),
            });
            m.entry((b, a)).or_default().push(Message {
                sent: on(off_b, t + 500_000),
                received: on(off_a, t + 510_000),
            });
        }
    }

    fn host(start: u64) -> HostTimes {
        HostTimes {
            start,
            wall: None,
            clock_of: usize::MAX,
        }
    }

    fn clocks(hosts: &mut [HostTimes], m: &Messages) -> Vec<HostClock> {
        for (i, h) in hosts.iter_mut().enumerate() {
            h.clock_of = h.clock_of.min(i);
        }
        align(hosts, m).into_iter().map(|p| p.clock).collect()
    }

    #[test]
    fn a_chain_of_three_hosts_reaches_the_reference() {
        let mut m = Messages::new();
        // Host 1 talks to host 0 and host 2 only to host 1.
        // Host 1's clock is 1000 s ahead of host 0's, host 2's 3 s behind.
        talk(&mut m, (0, 0), (1, -1_000_000_000_000), 200);
        talk(&mut m, (1, -1_000_000_000_000), (2, 3_000_000_000), 200);
        let mut hosts = [
            host(10_000_000_000),
            host(10_000_000_000 + 1_000_000_000_000),
            host(7_000_000_000),
        ];
        let c = clocks(&mut hosts, &m);
        assert!(c[0].reference);
        assert!(
            (c[1].offset_ns + 1_000_000_000_000).abs() <= 10_000,
            "{:?}",
            c[1]
        );
        assert!(
            (c[2].offset_ns - 3_000_000_000).abs() <= 20_000,
            "{:?}",
            c[2]
        );
        let b2 = c[2].bound_ns.unwrap() as i64;
        assert!((c[2].offset_ns - 3_000_000_000).abs() <= b2, "{:?}", c[2]);
        assert!(c[2].bound_ns > c[1].bound_ns);
    }

    #[test]
    fn a_host_nobody_talks_to_keeps_its_wall_clock() {
        let mut m = Messages::new();
        talk(&mut m, (0, 0), (1, 5), 10);
        let mut hosts = [
            HostTimes {
                wall: Some(100),
                ..host(10_000_000_000)
            },
            host(10_000_000_000),
            HostTimes {
                wall: Some(7_100),
                ..host(1)
            },
        ];
        let c = clocks(&mut hosts, &m);
        assert_eq!(c[2].grade, ClockGrade::WallClock);
        assert_eq!(c[2].offset_ns, 7_000);
        assert_eq!(c[2].bound_ns, None);
        assert_ne!(c[1].grade, ClockGrade::WallClock);
    }

    #[test]
    fn hosts_on_one_clock_need_no_message() {
        let mut hosts = [host(5), host(7)];
        hosts[1].clock_of = 0;
        let c = clocks(&mut hosts, &Messages::new());
        assert_eq!((c[1].offset_ns, c[1].bound_ns), (0, Some(0)));
        assert_eq!(c[1].grade, ClockGrade::Accurate);
    }
}
