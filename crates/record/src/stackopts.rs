//! Call-stack options for `scalpel record`, checked here and handed to the agent as one
//! environment variable (the agent cannot report a bad value to anyone).

use std::fmt;
use std::str::FromStr;

/// The deepest stack the agent records.
pub const MAX_STACK_DEPTH: u8 = 64;

/// A stack option that does not parse, as the command line gave it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StackOptError {
    /// Not `off`, `all` or `sampled:N`.
    #[error("`{0}`: expected `off`, `all` or `sampled:N` with N from 1 to 999999999")]
    Mode(String),
    /// Not a frame count in range.
    #[error("`{0}`: expected a frame count from 1 to {MAX_STACK_DEPTH}")]
    Depth(String),
}

/// When the agent takes a call stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StackMode {
    /// Never.
    Off,
    /// At every event.
    All,
    /// At one event in N per call site.
    Sampled(u32),
}

impl FromStr for StackMode {
    type Err = StackOptError;

    fn from_str(s: &str) -> Result<Self, StackOptError> {
        match s {
            "off" => Ok(StackMode::Off),
            "all" => Ok(StackMode::All),
            _ => match s.strip_prefix("sampled:").map(str::parse::<u32>) {
                Some(Ok(n)) if (1..1_000_000_000).contains(&n) => Ok(StackMode::Sampled(n)),
                _ => Err(StackOptError::Mode(s.to_owned())),
            },
        }
    }
}

/// How the agent's stack cache is used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StackCache {
    /// Answer repeated stacks from the cache after checking their stack slots.
    On,
    /// Walk every stack in full.
    Off,
    /// Walk every stack and count how often the cache would have disagreed (for testing).
    Check,
}

scalpel_model::named!(StackCache, "stack cache mode" { On => "on", Off => "off", Check => "check" });

/// Call-stack options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StackOptions {
    /// When to take stacks. Default: [`StackMode::All`].
    pub mode: StackMode,
    /// Frames kept, 1..=[`MAX_STACK_DEPTH`]. Default: 32.
    pub depth: u8,
    /// Cache use. Default: [`StackCache::On`].
    pub cache: StackCache,
}

impl Default for StackOptions {
    fn default() -> Self {
        StackOptions {
            mode: StackMode::All,
            depth: 32,
            cache: StackCache::On,
        }
    }
}

/// Parses a `--stack-depth` value.
pub fn parse_depth(s: &str) -> Result<u8, StackOptError> {
    match s.parse::<u8>() {
        Ok(n) if (1..=MAX_STACK_DEPTH).contains(&n) => Ok(n),
        _ => Err(StackOptError::Depth(s.to_owned())),
    }
}

impl fmt::Display for StackOptions {
    /// The agent's `SCALPEL_STACKS` value.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.mode {
            StackMode::Off => f.write_str("off")?,
            StackMode::All => f.write_str("all")?,
            StackMode::Sampled(n) => write!(f, "sampled:{n}")?,
        }
        let cache = match self.cache {
            StackCache::On => "on",
            StackCache::Off => "off",
            StackCache::Check => "check",
        };
        write!(f, ",depth={},cache={cache}", self.depth)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints() {
        assert_eq!("all".parse::<StackMode>(), Ok(StackMode::All));
        assert_eq!("sampled:8".parse::<StackMode>(), Ok(StackMode::Sampled(8)));
        for bad in [
            "",
            "some",
            "sampled:",
            "sampled:0",
            "sampled:-1",
            "sampled:x",
        ] {
            assert!(bad.parse::<StackMode>().is_err(), "{bad}");
        }
        assert_eq!(parse_depth("16"), Ok(16));
        assert!(parse_depth("0").is_err() && parse_depth("65").is_err());
        let o = StackOptions {
            mode: StackMode::Sampled(4),
            depth: 16,
            cache: StackCache::Check,
        };
        assert_eq!(o.to_string(), "sampled:4,depth=16,cache=check");
        assert_eq!(StackOptions::default().to_string(), "all,depth=32,cache=on");
    }
}
