//! Where a query runs: in this process, or on a Ballista cluster given by its scheduler.

use std::fmt;
use std::str::FromStr;

use crate::error::SqlError;

/// Where an [`Engine`](crate::Engine) runs its queries.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum Place {
    /// DataFusion embedded in this process (the default).
    #[default]
    Embedded,
    /// A Ballista cluster: its scheduler's host and port. The plan is made here and run by the
    /// cluster's executors, which read the dataset's files by the paths this process sees, so
    /// they must share its file system (executors on this machine, or a shared mount).
    Ballista {
        /// The scheduler's host name or address.
        host: String,
        /// The scheduler's gRPC port.
        port: u16,
    },
}

/// The scheme of a Ballista scheduler's address.
const BALLISTA: &str = "ballista://";

impl FromStr for Place {
    type Err = SqlError;

    /// `embedded`, or `ballista://HOST:PORT`.
    fn from_str(s: &str) -> Result<Place, SqlError> {
        let bad = |what: &str| SqlError::Place {
            given: s.to_owned(),
            what: what.to_owned(),
        };
        if s == "embedded" {
            return Ok(Place::Embedded);
        }
        let Some(rest) = s.strip_prefix(BALLISTA) else {
            return Err(bad("expected `embedded` or `ballista://HOST:PORT`"));
        };
        let rest = rest.trim_end_matches('/');
        let (host, port) = rest
            .rsplit_once(':')
            .ok_or_else(|| bad("expected `ballista://HOST:PORT`: the port is missing"))?;
        if host.is_empty() || host.contains(['/', '?', '#', '@']) {
            return Err(bad(
                "expected `ballista://HOST:PORT`: the host is missing or not a host",
            ));
        }
        let port: u16 = port
            .parse()
            .ok()
            .filter(|p| *p != 0)
            .ok_or_else(|| bad("the port is not a number from 1 to 65535"))?;
        Ok(Place::Ballista {
            host: host.to_owned(),
            port,
        })
    }
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Place::Embedded => f.write_str("embedded"),
            Place::Ballista { host, port } => write!(f, "{BALLISTA}{host}:{port}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_parse_and_print_back() {
        for s in [
            "embedded",
            "ballista://127.0.0.1:50050",
            "ballista://scheduler.lan:9",
        ] {
            assert_eq!(s.parse::<Place>().unwrap().to_string(), s);
        }
        assert_eq!(
            "ballista://h:1/".parse::<Place>().unwrap(),
            Place::Ballista {
                host: "h".into(),
                port: 1
            }
        );
    }

    #[test]
    fn a_bad_place_says_what_was_expected() {
        for (s, want) in [
            ("ballista", "expected `embedded` or `ballista://HOST:PORT`"),
            ("df://h:1", "expected `embedded`"),
            ("ballista://h", "the port is missing"),
            ("ballista://:50050", "the host is missing"),
            ("ballista://h:0", "from 1 to 65535"),
            ("ballista://h:70000", "from 1 to 65535"),
            ("ballista://u@h:1", "not a host"),
        ] {
            let e = s.parse::<Place>().unwrap_err().to_string();
            assert!(e.contains(s) && e.contains(want), "{s}: {e}");
        }
    }
}
