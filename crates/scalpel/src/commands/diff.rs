//! `scalpel diff`: what changed between two runs, task type by task type.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use scalpel_analysis::diff::{diff, DiffOptions};
use scalpel_model::progress::Timings;
use scalpel_views::diff::{write_diff_csv, write_diff_json, write_diff_table};

use crate::args::PipelineArgs;
use crate::output::{broken_pipe_is_fine, print_timings, text_stdout};
use crate::source::Source;

/// How `diff` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    /// A summary and a row per changed task type, 120 columns wide.
    Table,
    /// One JSON document (schema scalpel-diff/1).
    Json,
    /// Comma-separated values, one row per changed task type.
    Csv,
}

#[derive(Args, Debug)]
pub(crate) struct DiffArgs {
    /// The run before: a model.json, a directory `scalpel infer` wrote (window by window too,
    /// its windows taken as one run), or a trace directory.
    pub old: PathBuf,
    /// The run after, in any of the same forms.
    pub new: PathBuf,
    /// The options for inferring a trace directory apply to both runs.
    #[command(flatten)]
    pub pipeline: PipelineArgs,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
    /// Rows in the table.
    #[arg(long, value_name = "N", default_value = "20")]
    pub limit: usize,
    /// The chance, over all the types compared, of calling an unchanged type changed.
    #[arg(long, value_name = "P", default_value = "0.01", value_parser = probability)]
    pub alpha: f64,
    /// The smallest move of a type's median latency, over the old median, that counts as a
    /// change (0.1: 10%).
    #[arg(long, value_name = "SHARE", default_value = "0.1", value_parser = share)]
    pub min_effect: f64,
    /// The smallest move of a type's median latency that counts, whatever its share: a
    /// duration such as 20us, 1.5ms or 0 (a bare number is in ns).
    #[arg(long, value_name = "DURATION", default_value = "20us", value_parser = crate::args::duration_ns)]
    pub min_shift: u64,
}

fn probability(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(p) if p > 0.0 && p < 1.0 => Ok(p),
        _ => Err(format!("expected a probability between 0 and 1, not {s:?}")),
    }
}

fn share(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(p) if (0.0..=100.0).contains(&p) => Ok(p),
        _ => Err(format!("expected a share such as 0.1 (10%), not {s:?}")),
    }
}

/// `diff` in the library's terms.
#[derive(Debug)]
pub(crate) struct Diff {
    pub old: Source,
    pub new: Source,
    pub options: DiffOptions,
    pub format: Format,
    pub limit: usize,
}

impl DiffArgs {
    pub(crate) fn options(self) -> Diff {
        let source = |path| Source {
            path,
            more: Vec::new(),
            pipeline: self.pipeline.options(),
            timings: self.pipeline.timings,
            memory: self.pipeline.memory_limit(),
        };
        Diff {
            old: source(self.old.clone()),
            new: source(self.new.clone()),
            options: DiffOptions {
                alpha: self.alpha,
                min_effect: self.min_effect,
                min_shift_ns: self.min_shift,
                ..DiffOptions::default()
            },
            format: self.format,
            limit: self.limit.max(1),
        }
    }
}

/// Loads both runs and prints what changed.
pub(crate) fn run(d: &Diff) -> Result<()> {
    let mut t = Timings::new();
    let label = |s: &Source, which: &str| format!("the {which} run, {}", s.path.display());
    let old = d.old.rolled(&mut t).with_context(|| label(&d.old, "old"))?;
    let new = d.new.rolled(&mut t).with_context(|| label(&d.new, "new"))?;
    let found = diff(old.run(), new.run(), &d.options);
    let mut o = text_stdout();
    let written = match d.format {
        Format::Table => write_diff_table(&mut o, &found, d.limit),
        Format::Csv => write_diff_csv(&mut o, &found),
        Format::Json => write_diff_json(
            &mut o,
            &found,
            &d.old.path.to_string_lossy(),
            &d.new.path.to_string_lossy(),
        ),
    };
    let r = broken_pipe_is_fine(written.and_then(|()| o.flush()));
    print_timings(d.old.timings, &t);
    r
}
