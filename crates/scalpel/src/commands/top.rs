//! `scalpel top`: where the time went, top down.

use std::io::Write;

use anyhow::Result;
use clap::{Args, ValueEnum};
use scalpel::pipeline::is_windowed;
use scalpel_analysis::rollup::{top_view, top_view_of, TopOptions};
use scalpel_model::progress::Timings;
use scalpel_views::csv::write_csv;
use scalpel_views::json::write_top_json;
use scalpel_views::table::{write_table_with, TableOptions, MIN_WIDTH};

use crate::args::SourceArgs;
use crate::output::{broken_pipe_is_fine, print_timings, terminal_width, text_stdout};
use crate::source::Source;

/// How `top` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    /// Aligned text tables.
    Table,
    /// One JSON document.
    Json,
    /// Comma-separated values, one row per task, child or contributor.
    Csv,
}

#[derive(Args, Debug)]
pub(crate) struct TopArgs {
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
    /// Every column (mean, rate, bandwidth), lines as long as they come.
    #[arg(long, conflicts_with = "width")]
    pub wide: bool,
    /// Columns the table fits in [default: the terminal's width, or 120 when the output is
    /// not a terminal; at least 100].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(MIN_WIDTH as i64..))]
    pub width: Option<u16>,
}

/// `top` in the library's terms.
#[derive(Debug)]
pub(crate) struct Top {
    pub source: Source,
    pub view: TopOptions,
    pub format: Format,
    pub table: TableOptions,
}

impl TopArgs {
    pub(crate) fn options(self) -> Top {
        Top {
            source: self.source.options(),
            view: TopOptions {
                expand: self.expand,
                limit: self.limit.max(1),
                ..TopOptions::default()
            },
            format: self.format,
            table: TableOptions {
                width: self
                    .width
                    .map(usize::from)
                    .or_else(terminal_width)
                    .unwrap_or(TableOptions::default().width),
                wide: self.wide,
            },
        }
    }
}

/// Prints the top-down view.
pub(crate) fn run(top: &Top) -> Result<()> {
    let mut t = Timings::new();
    let view = if is_windowed(&top.source.path) && top.source.more.is_empty() {
        let w = top.source.sum_windows(&mut t)?;
        top_view_of(&w.counts, &w.types, &w.rollup, &top.view)?
    } else {
        let (l, r) = top.source.load_rollups(&mut t)?;
        top_view(&l.graph, &l.model, &r, &top.view)?
    };
    if view.leaves == 0 {
        // An empty table alone says nothing about why.
        crate::say!(
            "scalpel: hint: {} holds no leaf: the program made none of the calls Scalpel \
             records, or nothing was recorded (`scalpel summary` on the trace says which)",
            top.source.path.display()
        );
    }
    let mut o = text_stdout();
    let written = match top.format {
        Format::Table => write_table_with(&mut o, &view, top.table),
        Format::Csv => write_csv(&mut o, &view),
        Format::Json => write_top_json(&mut o, &view),
    };
    let r = broken_pipe_is_fine(written.and_then(|()| o.flush()));
    print_timings(top.source.timings, &t);
    r
}
