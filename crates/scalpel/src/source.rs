//! What the views share: loading the model (running the pipeline on a trace directory, or
//! reading what `infer` wrote), and where a view's file goes.

use std::ffi::OsString;
use std::io::{self, BufWriter};
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use scalpel::pipeline::is_windowed;
use scalpel::pipeline::{trace_bytes, Loaded, MemoryRoom, PEAK_PER_TRACE_BYTE};
use scalpel::{Pipeline, PipelineOptions};
use scalpel_analysis::diff::Run;
use scalpel_analysis::rollup::{leaves_held, LeavesHeld, Rollup, WindowsSum};
use scalpel_model::lookup::task_named;
use scalpel_model::progress::Timings;
use scalpel_model::task::{Model, TaskTypeId};
use scalpel_views::outfile::OutDir;

use crate::memory::{mib, within_room};
use crate::output::warn;
use crate::spinner::Spinner;

/// Where a view's model comes from, in the library's terms.
#[derive(Debug)]
pub(crate) struct Source {
    /// A model.json, a directory `infer` wrote, or a trace directory.
    pub path: PathBuf,
    /// The trace directories of other machines, inferred with `path` (empty for one).
    pub more: Vec<PathBuf>,
    /// How the pipeline runs on a trace directory.
    pub pipeline: PipelineOptions,
    /// Print the phase timings at the end.
    pub timings: bool,
    /// The memory limit for inferring on the spot, and whether the user gave it.
    pub memory: (u64, bool),
}

impl Source {
    /// Runs the pipeline (or reads what `infer` wrote) for a view.
    pub(crate) fn load(&self, t: &mut Timings, spinner: &Spinner) -> Result<(Pipeline, Loaded)> {
        self.within_memory()?;
        let pipeline = Pipeline::new(self.pipeline.clone())?;
        let loaded = if self.more.is_empty() {
            pipeline.load(&self.path, spinner, t)?
        } else {
            let all: Vec<PathBuf> = std::iter::once(self.path.clone())
                .chain(self.more.iter().cloned())
                .collect();
            pipeline.load_all(&all, spinner, t)?
        };
        warn(&loaded.warnings, 10, "");
        Ok((pipeline, loaded))
    }

    /// Refuses to infer trace directories on the spot that would need more than the memory
    /// limit: a view infers a trace whole, and only `scalpel infer` makes windows.
    fn within_memory(&self) -> Result<()> {
        let (limit, given) = self.memory;
        within_room(limit, given, &MemoryRoom::of_this_process())?;
        let dirs = || std::iter::once(&self.path).chain(&self.more);
        // A model or a directory `infer` wrote holds no trace files: it needs nothing here.
        let needs: u64 = dirs()
            .map(|d| trace_bytes(d).saturating_mul(PEAK_PER_TRACE_BYTE))
            .sum();
        if needs <= limit {
            return Ok(());
        }
        let named = if given {
            format!("--memory {}", mib(limit))
        } else {
            format!(
                "the default memory limit ({}; --memory sets it)",
                mib(limit)
            )
        };
        // As the flag takes it: whole MiB, rounded down so that it is kept.
        let flag = (limit >> 20).max(1);
        bail!(
            "{}: inferring it whole needs about {}, more than {named}; a view infers a trace \
             whole: run `scalpel infer {} --memory {flag}M`, which infers it in time windows, \
             and give this view one window's directory (OUT/window-NNNN), or give a larger \
             --memory",
            self.path.display(),
            mib(needs),
            self.path.display(),
        )
    }

    /// The rollups of the windows of a directory `infer` wrote window by window, added up.
    pub(crate) fn sum_windows(&self, t: &mut Timings) -> Result<WindowsSum> {
        let spinner = Spinner::new();
        let pipeline = Pipeline::new(self.pipeline.clone())?;
        Ok(pipeline.sum_windows(&self.path, &spinner, t)?)
    }

    /// The catalog of task types and its rollups, of one model or of the windows of a
    /// directory `infer` wrote window by window added up: what `diff` compares.
    pub(crate) fn rolled(&self, t: &mut Timings) -> Result<Rolled> {
        if self.more.is_empty() && is_windowed(&self.path) {
            let w = self.sum_windows(t)?;
            return Ok(Rolled {
                model: Model::of_types(w.types, w.counts.leaves as u64),
                rollup: w.rollup,
                held: w.held,
            });
        }
        let (l, rollup) = self.load_rollups(t)?;
        Ok(Rolled {
            held: leaves_held(&l.model),
            model: l.model,
            rollup,
        })
    }

    /// [`Source::load`], and the rollups.
    pub(crate) fn load_rollups(&self, t: &mut Timings) -> Result<(Loaded, Rollup)> {
        let spinner = Spinner::new();
        let (pipeline, loaded) = self.load(t, &spinner)?;
        let r = t.phase("rollups", &spinner, || {
            pipeline.rollup(&loaded.graph, &loaded.model)
        });
        Ok((loaded, r))
    }
}

/// A run's task types and rollups, as `diff` compares them (see [`Source::rolled`]).
pub(crate) struct Rolled {
    pub model: Model,
    pub rollup: Rollup,
    pub held: Vec<LeavesHeld>,
}

impl Rolled {
    /// The run as `diff` takes it.
    pub(crate) fn run(&self) -> Run<'_> {
        Run {
            model: &self.model,
            rollup: &self.rollup,
            held: &self.held,
        }
    }
}

/// The task type a view was asked to keep, by name (an error naming the closest names when none
/// has it), or none when it was not asked for one.
pub(crate) fn task_in(l: &Loaded, name: Option<&str>) -> Result<Option<TaskTypeId>> {
    Ok(name.map(|n| task_named(&l.model, n)).transpose()?)
}

/// Where a view's file goes: its directory, held open, and its name and path there.
pub(crate) struct Output {
    pub dir: OutDir,
    pub name: OsString,
    pub path: PathBuf,
}

impl Output {
    /// Writes the file through `body` (see [`OutDir::write`]).
    pub(crate) fn write<T>(
        &self,
        body: impl FnOnce(&mut BufWriter<std::fs::File>) -> io::Result<T>,
    ) -> Result<T> {
        Ok(self.dir.write(&self.name, body)?)
    }
}

/// Where a view's file goes: the path given (whose directory must exist), or `name` beside
/// `from`, the file the view read (the model; `windows.json` for a trace inferred in windows),
/// in `DIR/model` when `from` is a trace directory (created if needed).
pub(crate) fn output_path(given: Option<&PathBuf>, from: &Path, name: &str) -> Result<Output> {
    let out = match given {
        Some(p) => p.clone(),
        None if from.is_dir() => from.join("model").join(name),
        None => from
            .parent()
            .map(|p| p.join(name))
            .unwrap_or_else(|| PathBuf::from(name)),
    };
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        if given.is_some() {
            // A path the user gave is written where it says, or not at all: a typo in it must
            // not leave a tree of new directories behind.
            anyhow::ensure!(
                dir.is_dir(),
                "cannot write {}: the directory {} does not exist",
                out.display(),
                dir.display()
            );
        } else if from.is_dir() {
            // `DIR/model`, made as `scalpel infer` makes it.
            let dir = OutDir::create(dir)?;
            return Ok(Output {
                dir,
                name: OsString::from(name),
                path: out,
            });
        }
    }
    let (dir, name) = OutDir::parent_of(&out)?;
    Ok(Output {
        dir,
        name,
        path: out,
    })
}
