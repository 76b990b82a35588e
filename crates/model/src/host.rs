//! The machines a graph was recorded on, and how each one's clock was put on the reference
//! machine's: the rows of `scalpel export --table hosts`.

use serde::{Deserialize, Serialize};

/// How well a host's clock is known on the reference host's, best first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClockGrade {
    /// Messages both ways, spread over enough time to bound the drift too.
    Accurate,
    /// Messages both ways bound the offset, but the drift only by what clocks can do.
    Approximate,
    /// No messages with the other hosts: placed by its wall clock, with no bound.
    WallClock,
    /// The messages contradict each other: no offset satisfies them all.
    Fail,
}

impl std::fmt::Display for ClockGrade {
    /// Its name in files (`accurate`, `approximate`, `wall-clock`, `fail`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ClockGrade::Accurate => "accurate",
            ClockGrade::Approximate => "approximate",
            ClockGrade::WallClock => "wall-clock",
            ClockGrade::Fail => "fail",
        })
    }
}

/// A host's clock on the reference host's: `t_ref = t + offset_ns + drift_ppb * 1e-9 * (t -
/// start)`, where `start` is the host's first time.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostClock {
    /// It is the reference host.
    pub reference: bool,
    /// Added to the host's times at its start to get the reference host's (ns).
    pub offset_ns: i64,
    /// How much faster the reference clock runs, parts per billion.
    pub drift_ppb: i64,
    /// Half the width of the drifts its messages allow (ppb); none when placed by wall clock.
    /// Short recordings bound the drift loosely; the offset at the start is bounded all the
    /// same.
    pub drift_bound_ppb: Option<u64>,
    /// Half the width of the offsets its messages allow (ns); none when placed by wall clock.
    pub bound_ns: Option<u64>,
    /// Messages that bound it (both ways, with the host it was placed against).
    pub pairs: u64,
    /// How well it is known.
    pub grade: ClockGrade,
}

impl HostClock {
    /// The reference host's clock: itself.
    pub fn reference() -> HostClock {
        HostClock {
            reference: true,
            offset_ns: 0,
            drift_ppb: 0,
            drift_bound_ppb: Some(0),
            bound_ns: Some(0),
            pairs: 0,
            grade: ClockGrade::Accurate,
        }
    }
}

/// One machine of a graph recorded on several.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostInfo {
    /// Its name (the node name it was recorded under, made unique among the hosts).
    pub host: String,
    /// The trace directories recorded on it, as given.
    pub trace: String,
    /// Its first time, on its own clock (ns): where `offset_ns` holds.
    pub start_ns: u64,
    /// Its addresses that its traces show (the local ends of its connections with the other
    /// machines), sorted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub addresses: Vec<std::net::IpAddr>,
    /// Its clock.
    #[serde(flatten)]
    pub clock: HostClock,
}

impl HostInfo {
    /// A time of this machine's clock (ns) on the reference machine's.
    pub fn on_reference(&self, ns: u64) -> u64 {
        self.shift().apply(ns)
    }

    /// The map of this machine's clock to the reference's, as the reader applies it.
    pub fn shift(&self) -> crate::read::Shift {
        crate::read::Shift {
            offset_ns: self.clock.offset_ns,
            drift_ppb: self.clock.drift_ppb,
            start_ns: self.start_ns,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_is_one_flat_json_object() {
        let h = HostInfo {
            host: "db".into(),
            trace: "t-db".into(),
            start_ns: 5,
            addresses: Vec::new(),
            clock: HostClock::reference(),
        };
        let text = serde_json::to_string(&h).unwrap();
        assert_eq!(
            text,
            r#"{"host":"db","trace":"t-db","start_ns":5,"reference":true,"offset_ns":0,"drift_ppb":0,"drift_bound_ppb":0,"bound_ns":0,"pairs":0,"grade":"accurate"}"#
        );
        assert_eq!(serde_json::from_str::<HostInfo>(&text).unwrap(), h);
        let ahead = HostInfo {
            start_ns: 1_000_000_000,
            clock: HostClock {
                reference: false,
                offset_ns: -500,
                drift_ppb: 1_000,
                ..HostClock::reference()
            },
            ..h
        };
        // 1 s after its start: 500 ns off and 1 µs of drift.
        assert_eq!(ahead.on_reference(2_000_000_000), 2_000_000_500);
        for g in [
            ClockGrade::Accurate,
            ClockGrade::Approximate,
            ClockGrade::WallClock,
            ClockGrade::Fail,
        ] {
            assert_eq!(serde_json::to_string(&g).unwrap(), format!("\"{g}\""));
        }
    }
}
