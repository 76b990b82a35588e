//! `scalpel top` and `scalpel report`: their command lines, and running them.

use std::io::{self, Write};
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use scalpel_inferencer::graph::{Filter, GraphOptions};
use scalpel_inferencer::mine::{MineOptions, DEFAULT_MIN_SUPPORT};
use scalpel_inferencer::rollup::{
    csv, load, report_html, rollup, table, top_view, Loaded, ReportOptions, SourceOptions,
    TopOptions,
};

/// How `top` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Aligned text tables.
    Table,
    /// One JSON document.
    Json,
    /// Comma-separated values, one row per task, child or contributor.
    Csv,
}

/// Where the model comes from (shared by `top` and `report`).
#[derive(Args, Debug)]
pub struct SourceArgs {
    /// A model.json, a directory `scalpel infer` wrote, or a trace directory (inferred on the
    /// spot, with the options below).
    pub path: PathBuf,
    /// When PATH is a trace directory: fewest occurrences a pattern needs to become a task, as
    /// `infer --min-support`, with the same default.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(2..))]
    pub min_support: Option<u32>,
    /// When PATH is a trace directory: cut leaves at mutex and rwlock calls too, as
    /// `infer --cut-at-locks`.
    #[arg(long)]
    pub cut_at_locks: bool,
    /// When PATH is a trace directory: keep only leaves matching FILTER, as `infer --include`.
    #[arg(long = "include", value_name = "FILTER")]
    pub include: Vec<Filter>,
    /// When PATH is a trace directory: drop leaves matching FILTER, as `infer --exclude`.
    #[arg(long = "exclude", value_name = "FILTER")]
    pub exclude: Vec<Filter>,
}

impl SourceArgs {
    /// The command line in the library's terms.
    fn options(&self) -> SourceOptions {
        let mut infer_only = Vec::new();
        for (set, name) in [
            (self.min_support.is_some(), "--min-support"),
            (self.cut_at_locks, "--cut-at-locks"),
            (!self.include.is_empty(), "--include"),
            (!self.exclude.is_empty(), "--exclude"),
        ] {
            if set {
                infer_only.push(name);
            }
        }
        SourceOptions {
            graph: GraphOptions {
                lock_cuts: self.cut_at_locks,
                include: self.include.clone(),
                exclude: self.exclude.clone(),
                ..GraphOptions::default()
            },
            mine: MineOptions {
                min_support: self.min_support.unwrap_or(DEFAULT_MIN_SUPPORT),
                ..MineOptions::default()
            },
            infer_only,
        }
    }
}

#[derive(Args, Debug)]
pub struct TopArgs {
    #[command(flatten)]
    pub source: SourceArgs,
    /// Descend into the task type named NAME: its children, the leaves and waits on its
    /// critical path, and the calls and stacks behind them.
    #[arg(long, value_name = "NAME")]
    pub expand: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
    /// Rows per list.
    #[arg(long, value_name = "N", default_value = "20")]
    pub limit: usize,
}

#[derive(Args, Debug)]
pub struct ReportArgs {
    #[command(flatten)]
    pub source: SourceArgs,
    /// The HTML file to write [default: report.html beside the model, or in DIR/model].
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// How many top-level tasks get a drill-down section.
    #[arg(long, value_name = "N", default_value = "5")]
    pub tasks: usize,
}

fn load_source(s: &SourceArgs) -> Result<Loaded> {
    let loaded = load(&s.path, &s.options())?;
    for w in loaded.warnings.iter().take(10) {
        let _ = writeln!(io::stderr(), "scalpel: warning: {w}");
    }
    Ok(loaded)
}

/// Prints the top-down view.
pub fn run_top(a: &TopArgs) -> Result<()> {
    let l = load_source(&a.source)?;
    let r = rollup(&l.graph, &l.model);
    let opts = TopOptions {
        expand: a.expand.clone(),
        limit: a.limit.max(1),
        ..TopOptions::default()
    };
    let view = top_view(&l.graph, &l.model, &r, &opts)?;
    let text = match a.format {
        Format::Table => table(&view),
        Format::Csv => csv(&view),
        Format::Json => serde_json::to_string_pretty(&view)? + "\n",
    };
    match io::stdout().lock().write_all(text.as_bytes()) {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => Err(e).context("cannot write"),
        _ => Ok(()),
    }
}

/// Writes the HTML report and says where.
pub fn run_report(a: &ReportArgs) -> Result<()> {
    let l = load_source(&a.source)?;
    let r = rollup(&l.graph, &l.model);
    let out = match &a.output {
        Some(p) => p.clone(),
        None if l.from.is_dir() => l.from.join("model").join("report.html"),
        None => l
            .from
            .parent()
            .map(|p| p.join("report.html"))
            .unwrap_or_else(|| PathBuf::from("report.html")),
    };
    let opts = ReportOptions {
        tasks: a.tasks,
        title: l.from.display().to_string(),
    };
    let (html, svg_err) = report_html(&l.graph, &l.model, &r, &opts);
    if let Some(e) = svg_err {
        let _ = writeln!(
            io::stderr(),
            "scalpel: warning: the report has no drawing: {e}"
        );
    }
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    std::fs::write(&out, html).with_context(|| format!("cannot write {}", out.display()))?;
    let _ = writeln!(io::stdout(), "wrote {}", out.display());
    Ok(())
}
