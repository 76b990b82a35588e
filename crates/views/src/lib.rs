//! Views: everything Scalpel writes for a person or another tool, from the artefacts the stages
//! compute (`Graph`, `Model`, `Rollup`, `TopView`).
//!
//! Scope: DOT and SVG drawings ([`graph`], [`model`]), the model tree ([`tree`]), the top-down
//! table, CSV and JSON ([`table`], [`csv`], [`json`]), the HTML report ([`report`]), the files `scalpel infer`
//! writes ([`outputs`]) and how any output file is created ([`outfile`]), the phase timings ([`timings`]), the wait-for graph ([`waitfor`]), the Perfetto timeline ([`timeline`]), the
//! stored tables in JSON ([`export`]), and the units they share ([`units`]). Every writer takes an
//! `impl io::Write` and returns a typed error. Non-goals: computing anything a stage could
//! (views choose, order and format; the numbers come from `graph`, `mine` and `rollup`).

pub mod budget;
pub mod csv;
pub mod diff;
pub mod export;
pub mod flame;
pub mod flamediff;
mod glance;
pub mod graph;
pub mod graphviz;
mod html;
pub mod json;
pub mod model;
pub mod otlp;
pub mod outfile;
pub mod outputs;

pub mod report;
pub mod table;
pub mod timeline;
pub mod timings;
pub mod tree;
pub mod units;
pub mod waitfor;

use std::path::PathBuf;

pub use graph::DrawOptions;
pub use graphviz::DrawError;
pub use model::ModelDraw;
pub use outputs::{write_graph_files, write_model_files, GraphFiles, ModelFiles};
pub use report::ReportOptions;

/// Why a view could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    /// A file could not be created or written.
    #[error("{}: {source}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Writing to a stream failed.
    #[error("cannot write: {0}")]
    Format(#[source] std::io::Error),
    /// An output file or directory could not be created safely.
    #[error(transparent)]
    Output(#[from] outfile::OutputError),
    /// A drawing could not be made.
    #[error(transparent)]
    Draw(#[from] DrawError),
}
