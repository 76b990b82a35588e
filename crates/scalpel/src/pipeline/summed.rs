//! A directory `scalpel infer` wrote window by window, read as one: each window's model and
//! graph are read, rolled up and let go in turn, and the rollups added up by task name
//! ([`WindowsRollup`]). The memory is one window's, as when the windows were inferred.

use std::path::{Path, PathBuf};

use scalpel_analysis::rollup::{WindowsRollup, WindowsSum};
use scalpel_model::graph::Graph;
use scalpel_model::progress::{Progress, Timings};
use scalpel_model::task::Model;
use serde::Deserialize;

use super::load::{load, SourceError};
use super::Pipeline;

/// What is read of `windows.json`: the windows' directories, in order.
#[derive(Deserialize)]
struct WindowsFile {
    windows: Vec<WindowEntry>,
}

#[derive(Deserialize)]
struct WindowEntry {
    dir: String,
    #[serde(default)]
    start_ns: Option<u64>,
    #[serde(default)]
    end_ns: Option<u64>,
    #[serde(default)]
    leaves: u64,
}

/// Where a window of a trace inferred in windows lies, as `windows.json` lists it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowBounds {
    /// Its place among the windows, from 0.
    pub index: usize,
    /// Where its events begin (ns on the trace's clock); none for the first window.
    pub start_ns: Option<u64>,
    /// Where the next window's begin; none for the last window.
    pub end_ns: Option<u64>,
    /// How many leaves its graph holds.
    pub leaves: u64,
}

/// Whether `path` is a directory `infer` wrote window by window.
pub fn is_windowed(path: &Path) -> bool {
    path.is_dir() && !path.join("model.json").exists() && path.join("windows.json").is_file()
}

/// How many windows `path` holds when it is a directory `infer` began to write window by window
/// and did not finish: `window-0000` and on, with neither `windows.json` (written last) nor a
/// model or a trace of its own. `None` for anything else.
pub fn unfinished_windows(path: &Path) -> Option<usize> {
    let done = ["windows.json", "model.json"]
        .iter()
        .any(|f| path.join(f).exists());
    if done || !path.join(super::window_dir_name(0)).is_dir() {
        return None;
    }
    let windows = (0..)
        .take_while(|&k| path.join(super::window_dir_name(k)).is_dir())
        .count();
    Some(windows)
}

/// The windows `dir/windows.json` lists, in order.
pub fn window_bounds(dir: &Path) -> Result<Vec<WindowBounds>, SourceError> {
    Ok(window_dirs(dir)?.into_iter().map(|(_, b)| b).collect())
}

/// The windows' directories `dir/windows.json` lists, each checked to hold a model, with where
/// each window lies.
fn window_dirs(dir: &Path) -> Result<Vec<(PathBuf, WindowBounds)>, SourceError> {
    let file = dir.join("windows.json");
    let bad = |problem: String| SourceError::WindowList {
        path: file.clone(),
        problem,
    };
    let text = std::fs::read_to_string(&file).map_err(|e| bad(e.to_string()))?;
    let list: WindowsFile = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
    if list.windows.is_empty() {
        return Err(bad("it lists no window".into()));
    }
    let mut dirs = Vec::with_capacity(list.windows.len());
    for (index, w) in list.windows.into_iter().enumerate() {
        if !scalpel_model::open::is_plain_name(w.dir.as_ref()) {
            return Err(bad(format!(
                "{:?} is not a directory name beside it",
                w.dir
            )));
        }
        let d = dir.join(&w.dir);
        if !d.join("model.json").is_file() {
            return Err(SourceError::WindowWithoutModel { dir: d });
        }
        let bounds = WindowBounds {
            index,
            start_ns: w.start_ns,
            end_ns: w.end_ns,
            leaves: w.leaves,
        };
        dirs.push((d, bounds));
    }
    Ok(dirs)
}

impl Pipeline {
    /// Reads the windows of `dir` (see [`is_windowed`]) one by one, in order, and gives each
    /// window's graph and model to `each` with the window's timings, before letting them go.
    /// Each window's phases are timed in `t`, one line per phase over all windows.
    pub fn each_window<E: From<SourceError>>(
        &self,
        dir: &Path,
        progress: &dyn Progress,
        t: &mut Timings,
        mut each: impl FnMut(&Graph, &Model, &mut Timings) -> Result<(), E>,
    ) -> Result<(), E> {
        self.each_window_where(dir, progress, t, |_| true, |_, g, m, wt| each(g, m, wt))
    }

    /// [`Pipeline::each_window`] for the windows `wanted` asks for, asked in order before each
    /// window is read; `each` is given the window's bounds too.
    pub fn each_window_where<E: From<SourceError>>(
        &self,
        dir: &Path,
        progress: &dyn Progress,
        t: &mut Timings,
        mut wanted: impl FnMut(&WindowBounds) -> bool,
        mut each: impl FnMut(&WindowBounds, &Graph, &Model, &mut Timings) -> Result<(), E>,
    ) -> Result<(), E> {
        for (w, bounds) in window_dirs(dir)? {
            if !wanted(&bounds) {
                continue;
            }
            let mut wt = Timings::new();
            let l = load(self, &w, progress, &mut wt)?;
            each(&bounds, &l.graph, &l.model, &mut wt)?;
            t.absorb(wt);
        }
        Ok(())
    }

    /// Reads the windows of `dir` (see [`is_windowed`]) one by one and adds up their rollups.
    /// Each window's phases are timed in `t`, one line per phase over all windows.
    pub fn sum_windows(
        &self,
        dir: &Path,
        progress: &dyn Progress,
        t: &mut Timings,
    ) -> Result<WindowsSum, SourceError> {
        let mut sum = WindowsRollup::new();
        self.each_window(dir, progress, t, |g, m, wt| {
            let r = wt.phase("rollups", progress, || self.rollup(g, m));
            wt.phase("adding up the windows", progress, || sum.add(g, m, &r));
            Ok::<(), SourceError>(())
        })?;
        Ok(sum.finish())
    }
}
