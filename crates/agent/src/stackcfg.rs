//! Call-stack options, read from `SCALPEL_STACKS` once at start: when stacks are taken, how deep,
//! and how the stack cache is used.

/// The deepest stack the agent records.
pub(crate) const MAX_DEPTH: usize = scalpel_format::format::MAX_STACK_FRAMES;

/// When to take stacks.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Never.
    Off,
    /// At every event.
    All,
    /// At one event in `every` per call site.
    Sampled,
}

/// How the stack cache is used.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum CacheMode {
    /// Always walk the whole stack.
    Off,
    /// Answer from the cache when its slots still match.
    On,
    /// Answer from a full walk, and count how often the cache would have been wrong.
    Check,
}

/// Stack options, from `SCALPEL_STACKS` (for example `all`, `off`, `sampled:16,depth=16`,
/// `all,cache=check`).
#[derive(Clone, Copy)]
pub(crate) struct StackCfg {
    /// When to take stacks (default: all).
    pub mode: Mode,
    /// The sampling period for [`Mode::Sampled`].
    pub every: u32,
    /// Frames kept, 1..=64 (default 32).
    pub depth: u8,
    /// Cache use (default: on).
    pub cache: CacheMode,
}

impl StackCfg {
    /// The defaults: every event, 32 frames, cache on.
    pub(crate) const DEFAULT: StackCfg = StackCfg {
        mode: Mode::All,
        every: 1,
        depth: 32,
        cache: CacheMode::On,
    };

    /// Parses the option string; unknown words leave the defaults in place (the CLI checks
    /// them before the agent ever sees them).
    pub(crate) fn parse(s: &[u8]) -> StackCfg {
        let mut c = StackCfg::DEFAULT;
        for w in s.split(|&b| b == b',') {
            match w {
                b"off" => c.mode = Mode::Off,
                b"all" => c.mode = Mode::All,
                b"cache=on" => c.cache = CacheMode::On,
                b"cache=off" => c.cache = CacheMode::Off,
                b"cache=check" => c.cache = CacheMode::Check,
                _ => {
                    if let Some(n) = w.strip_prefix(b"sampled:").and_then(number) {
                        c.mode = Mode::Sampled;
                        c.every = n.clamp(1, u32::MAX as u64) as u32;
                    } else if let Some(n) = w.strip_prefix(b"depth=").and_then(number) {
                        c.depth = n.clamp(1, MAX_DEPTH as u64) as u8;
                    }
                }
            }
        }
        c
    }
}

fn number(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 9 {
        return None;
    }
    s.iter().try_fold(0u64, |v, &b| {
        b.is_ascii_digit().then(|| v * 10 + u64::from(b - b'0'))
    })
}
