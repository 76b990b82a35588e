//! The command-line arguments every subcommand that runs the pipeline shares, declared once and
//! flattened into `infer` and every view, and converted once into the library's terms.

use std::path::PathBuf;

use clap::Args;
use scalpel::PipelineOptions;
use scalpel_graph::{Filter, GraphOptions};
use scalpel_mine::{MineOptions, DEFAULT_MIN_SUPPORT};

use crate::source::Source;

/// How the pipeline runs on a trace directory.
#[derive(Args, Debug, Clone)]
pub(crate) struct PipelineArgs {
    /// Fail on any data loss (a damaged or unreadable file, lost events) instead of warning.
    #[arg(long)]
    pub strict: bool,
    /// Cut leaves at mutex and rwlock calls too, so that each critical section is a leaf: for
    /// programs that hand work over under locks alone (lock order still draws no edges).
    #[arg(long)]
    pub cut_at_locks: bool,
    /// Keep only leaves matching FILTER: pid:N, tid:N, process:NAME, thread:NAME, host:NAME (of
    /// traces of several machines) or time:A..B (seconds from the start). Repeatable; one
    /// match per kind given is needed.
    #[arg(long = "include", value_name = "FILTER")]
    pub include: Vec<Filter>,
    /// Drop leaves matching FILTER (same forms as --include). Repeatable.
    #[arg(long = "exclude", value_name = "FILTER")]
    pub exclude: Vec<Filter>,
    /// Fewest non-overlapping occurrences a repeated pattern needs to become a task
    /// [default: 5].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(2..))]
    pub min_support: Option<u32>,
    /// A TOML file renaming tasks: a `[names]` table of "generated name" = "new name".
    #[arg(long, value_name = "FILE")]
    pub names: Option<PathBuf>,
    /// Worker threads [default: one per core].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub threads: Option<u16>,
    /// Print how long each phase took (on stderr, at the end).
    #[arg(long)]
    pub timings: bool,
    /// Keep inference within LIMIT of memory (such as 2G or 512M; K, M, G and T are powers of
    /// 1024) [default: half the machine's memory or of the control group's limit, within the
    /// address-space limit]. `infer` infers a trace that would need more in time windows, each
    /// written to OUT/window-NNNN/ as a model of its own, with OUT/windows.json listing them;
    /// the views infer a trace whole, and refuse one that would need more (give them one
    /// window's directory).
    #[arg(long, value_name = "LIMIT", value_parser = memory_size)]
    pub memory: Option<u64>,
}

impl PipelineArgs {
    /// The memory limit, and whether the user gave it (else the default).
    pub(crate) fn memory_limit(&self) -> (u64, bool) {
        match self.memory {
            Some(m) => (m, true),
            None => (scalpel::pipeline::default_memory_limit(), false),
        }
    }

    /// The arguments in the library's terms.
    pub(crate) fn options(&self) -> PipelineOptions {
        let mut infer_only = Vec::new();
        for (set, name) in [
            (self.strict, "--strict"),
            (self.cut_at_locks, "--cut-at-locks"),
            (!self.include.is_empty(), "--include"),
            (!self.exclude.is_empty(), "--exclude"),
            (self.min_support.is_some(), "--min-support"),
            (self.names.is_some(), "--names"),
            (self.memory.is_some(), "--memory"),
        ] {
            if set {
                infer_only.push(name);
            }
        }
        PipelineOptions {
            graph: GraphOptions {
                strict: self.strict,
                lock_cuts: self.cut_at_locks,
                include: self.include.clone(),
                exclude: self.exclude.clone(),
                ..GraphOptions::default()
            },
            mine: MineOptions {
                min_support: self.min_support.unwrap_or(DEFAULT_MIN_SUPPORT),
                ..MineOptions::default()
            },
            names: self.names.clone(),
            threads: self.threads,
            infer_only,
        }
    }
}

/// Where the model comes from (shared by every view).
#[derive(Args, Debug)]
pub(crate) struct SourceArgs {
    /// A model.json, a directory `scalpel infer` wrote, or a trace directory (inferred on the
    /// spot, with the options below, which only a trace directory takes); several trace
    /// directories, recorded on several machines, are inferred together.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    #[command(flatten)]
    pub pipeline: PipelineArgs,
}

impl SourceArgs {
    /// The source in the library's terms.
    pub(crate) fn options(self) -> Source {
        let mut paths = self.paths.into_iter();
        Source {
            pipeline: self.pipeline.options(),
            timings: self.pipeline.timings,
            memory: self.pipeline.memory_limit(),
            path: paths.next().unwrap_or_default(),
            more: paths.collect(),
        }
    }
}

/// A duration with a unit (`ns`, `us`, `µs`, `ms`, `s`; none: ns) in ns.
pub(crate) fn duration_ns(s: &str) -> Result<u64, String> {
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (n, unit) = s.split_at(split);
    let scale = match unit.trim() {
        "" | "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => {
            return Err(format!(
                "expected a duration such as 20us or 1.5ms, not {s:?}"
            ))
        }
    };
    match n.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok((v * scale).round() as u64),
        _ => Err(format!(
            "expected a duration such as 20us or 1.5ms, not {s:?}"
        )),
    }
}

/// A size in bytes, with an optional unit (K, M, G, T: powers of 1024; an optional `B` or `iB`
/// after it).
pub(crate) fn memory_size(s: &str) -> Result<u64, String> {
    let bad = || format!("expected a size such as 2G, 512M or 1048576, not {s:?}");
    let t = s.trim();
    let t = t
        .strip_suffix("iB")
        .or_else(|| t.strip_suffix('B'))
        .unwrap_or(t);
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (n, unit) = t.split_at(split);
    let shift = match unit.to_ascii_uppercase().as_str() {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        "T" => 40,
        _ => return Err(bad()),
    };
    let n: u64 = n.parse().map_err(|_| bad())?;
    n.checked_mul(1u64 << shift)
        .filter(|&v| v > 0)
        .ok_or_else(bad)
}
