//! The files `scalpel infer` writes: `graph.json` (with its bulk tables in `graph.bin`),
//! `types.dot`, `types.svg` and `graph-summary.txt` for the graph; `model.json` (with
//! `model.bin`), `model.dot`, `model.svg` and `model-tree.txt` for the model; each created as
//! [`super::outfile`] says (a directory of the user's, files 0600, never through a link).

use std::ffi::OsStr;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use scalpel_model::graph::Graph;
use scalpel_model::store::{encode_graph, encode_model, GRAPH_TABLES, MODEL_TABLES};
use scalpel_model::task::Model;

use super::graph::{write_graph_summary, write_type_dot, DrawOptions};
use super::graphviz::{render_svg, DrawError};
use super::model::{fitted_dot, svg_of, ModelDraw};
use super::outfile::OutDir;
use super::tree::write_tree;
use super::ViewError;
use scalpel_graph::Built;
use scalpel_model::progress::{Progress, Timings};

/// The graph files written, and why the SVG is missing if it is.
#[derive(Debug)]
pub struct GraphFiles {
    /// `graph.json` (its tables are in `graph.bin` beside it).
    pub json: PathBuf,
    /// `types.dot`.
    pub dot: PathBuf,
    /// `types.svg`, or why it could not be made.
    pub svg: Result<PathBuf, ViewError>,
    /// `graph-summary.txt`.
    pub summary: PathBuf,
}

/// The model files written, and why the SVG is missing if it is.
#[derive(Debug)]
pub struct ModelFiles {
    /// `model.json` (its occurrences are in `model.bin` beside it).
    pub json: PathBuf,
    /// `model.dot`.
    pub dot: PathBuf,
    /// `model.svg`, or why it could not be made.
    pub svg: Result<PathBuf, ViewError>,
    /// `model-tree.txt`.
    pub tree: PathBuf,
}

/// Writes `name` in `dir` through `body` (see [`OutDir::write`]); returns its path.
pub fn write_file(
    dir: &OutDir,
    name: &str,
    body: impl FnOnce(&mut BufWriter<File>) -> std::io::Result<()>,
) -> Result<PathBuf, ViewError> {
    dir.write(OsStr::new(name), body)?;
    Ok(dir.path().join(name))
}

/// Writes a stored graph or model: its JSON file `json` and its tables beside it, as `encode`
/// makes them.
fn write_stored(
    dir: &OutDir,
    json: &str,
    tables: &str,
    encode: impl FnOnce() -> std::io::Result<(Vec<u8>, Vec<u8>)>,
) -> Result<PathBuf, ViewError> {
    let (text, bin) = encode().map_err(|source| ViewError::Io {
        path: dir.path().join(json),
        source,
    })?;
    write_file(dir, tables, |w| w.write_all(&bin))?;
    write_file(dir, json, |w| w.write_all(&text))
}

fn write_svg(
    dir: &OutDir,
    name: &str,
    svg: Result<Vec<u8>, DrawError>,
) -> Result<PathBuf, ViewError> {
    let bytes = svg?;
    write_file(dir, name, |w| w.write_all(&bytes))
}

/// Writes the graph files into `dir` (created if needed), each phase timed in `t`.
pub fn write_graph_files(
    built: &Built,
    dir: &Path,
    draw: &DrawOptions,
    t: &mut Timings,
    progress: &dyn Progress,
) -> Result<GraphFiles, ViewError> {
    let dir = &OutDir::create(dir)?;
    let json = t.phase("writing graph.json and graph.bin", progress, || {
        write_stored(dir, "graph.json", GRAPH_TABLES, || {
            encode_graph(&built.graph)
        })
    })?;
    let mut dot_text = Vec::new();
    t.phase("drawing types.dot", progress, || {
        write_type_dot(&mut dot_text, &built.graph, draw)
    })
    .map_err(ViewError::Format)?;
    let dot = write_file(dir, "types.dot", |w| w.write_all(&dot_text))?;
    let dot_text =
        String::from_utf8(dot_text).map_err(|e| ViewError::Format(std::io::Error::other(e)))?;
    let svg = t.phase("laying out types.svg (Graphviz)", progress, || {
        write_svg(dir, "types.svg", render_svg(dot_text))
    });
    let summary = write_file(dir, "graph-summary.txt", |w| write_graph_summary(w, built))?;
    Ok(GraphFiles {
        json,
        dot,
        svg,
        summary,
    })
}

/// Writes the model files into `dir` (created if needed). Without `--depth` or `--task`, the
/// drawing keeps as many levels as fit, then leaves out the rarest nodes if it must (the DOT
/// file's first line says what was drawn).
pub fn write_model_files(
    model: &Model,
    graph: &Graph,
    dir: &Path,
    draw: &ModelDraw,
    t: &mut Timings,
    progress: &dyn Progress,
) -> Result<ModelFiles, ViewError> {
    let dir = &OutDir::create(dir)?;
    let (dot_text, size) = t.phase("drawing model.dot", progress, || {
        fitted_dot(model, graph, draw)
    })?;
    let json = t.phase("writing model.json and model.bin", progress, || {
        write_stored(dir, "model.json", MODEL_TABLES, || encode_model(model))
    })?;
    let dot = write_file(dir, "model.dot", |w| w.write_all(dot_text.as_bytes()))?;
    let svg = t.phase("laying out model.svg (Graphviz)", progress, || {
        write_svg(dir, "model.svg", svg_of(dot_text, size))
    });
    let tree = t.phase("writing model-tree.txt", progress, || {
        write_file(dir, "model-tree.txt", |w| write_tree(w, model))
    })?;
    Ok(ModelFiles {
        json,
        dot,
        svg,
        tree,
    })
}
