//! One fuzzer input as a damaged recording, and what `scalpel dump`, `summary` and `infer` do
//! with it, in process: for the `cargo fuzz` target `infer` (`fuzz/`), whose failing inputs
//! `scripts/fuzz.sh` writes as whole trace directories into `target/fuzz-failures/` (to keep in
//! `tests/regressions/` once fixed).
//!
//! An input stands for a real recording (the template) with one trace file replaced: its first
//! byte picks the file (process and thread files, sorted, counted modulo their number), the rest
//! is the file's new content. So the fuzzer starts from real files (the template's own files are
//! its seeds) and every input it makes is a whole trace directory the reader must take.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use scalpel::inspect::{dump, DumpOptions, Summary};
use scalpel::{Pipeline, PipelineOptions};
use scalpel_model::progress::{Quiet, Timings};
use scalpel_views::graph::write_graph_summary;
use scalpel_views::tree::{write_tree_head, TREE_HEAD_LINES};
use scalpel_views::{DrawOptions, ModelDraw};

/// A copy of a real recording that inputs are applied to, one at a time.
#[derive(Debug)]
pub struct Template {
    dir: PathBuf,
    files: Vec<PathBuf>,
    originals: Vec<Vec<u8>>,
}

impl Template {
    /// Copies the recording `from` into `into`.
    pub fn copy(from: &Path, into: &Path) -> io::Result<Template> {
        copy_trace(from, into)?;
        let files = trace_files(into);
        if files.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{}: no trace files", from.display()),
            ));
        }
        let originals = files.iter().map(fs::read).collect::<io::Result<_>>()?;
        Ok(Template {
            dir: into.to_path_buf(),
            files,
            originals,
        })
    }

    /// The trace directory inputs are applied to.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The fuzzer's seeds: one input per trace file, each standing for the intact recording
    /// ([`Template::seed`]).
    pub fn seeds(&self) -> impl Iterator<Item = Vec<u8>> + '_ {
        (0..self.files.len()).map(|i| self.seed(i))
    }

    /// The input that stands for the intact recording with file `i` written as it was.
    pub fn seed(&self, i: usize) -> Vec<u8> {
        let mut v = Vec::with_capacity(1 + self.originals[i].len());
        v.push(i as u8);
        v.extend_from_slice(&self.originals[i]);
        v
    }

    /// Writes `input`'s file into the directory; the next [`apply`](Self::apply) or
    /// [`restore`](Self::restore) puts the original back first. Returns the file's index.
    pub fn apply(&self, input: &[u8]) -> io::Result<usize> {
        self.restore()?;
        let Some((&pick, content)) = input.split_first() else {
            return Ok(usize::MAX);
        };
        let i = usize::from(pick) % self.files.len();
        fs::write(&self.files[i], content)?;
        Ok(i)
    }

    /// Puts every file back as it was recorded.
    pub fn restore(&self) -> io::Result<()> {
        for (f, o) in self.files.iter().zip(&self.originals) {
            if fs::metadata(f).map(|m| m.len()).ok() != Some(o.len() as u64) || fs::read(f)? != *o {
                fs::write(f, o)?;
            }
        }
        Ok(())
    }
}

/// The stages one worker thread runs, set up once per process.
pub fn pipeline() -> &'static Pipeline {
    static P: std::sync::OnceLock<Pipeline> = std::sync::OnceLock::new();
    P.get_or_init(|| {
        Pipeline::new(PipelineOptions {
            threads: Some(1),
            ..PipelineOptions::default()
        })
        .expect("the worker thread starts")
    })
}

/// What `scalpel dump`, `summary` and `infer` compute on the trace directory `dir`, the model's
/// files written into `out` as `infer` writes them (Graphviz is run when it is on `PATH`: the
/// fuzz targets clear `PATH` first, so that the time is ours). Any of them may refuse the input
/// with an error; none may panic.
pub fn dump_summary_infer(dir: &Path, out: &Path) {
    // First: the reader uses rayon too, and the worker thread must be set up before it is.
    let p = pipeline();
    let Ok(trace) = scalpel_model::read::read_dir(dir) else {
        return;
    };
    let _ = dump(&trace, &DumpOptions::default(), &mut io::sink());
    let _ = Summary::of(&trace).to_string();
    drop(trace);
    let mut t = Timings::new();
    let draw = DrawOptions { min_count: 1 };
    let Ok(mut step) = p.infer_graph(&[dir.to_path_buf()], out, &draw, &mut t, &Quiet) else {
        return;
    };
    let _ = write_graph_summary(&mut io::sink(), &step.built);
    let draw = ModelDraw {
        min_count: 1,
        ..ModelDraw::default()
    };
    let Ok(model) = p.infer_model(&mut step, out, &draw, &mut t, &Quiet) else {
        return;
    };
    let _ = write_tree_head(
        &mut io::sink(),
        &model.mined.model,
        TREE_HEAD_LINES,
        "model-tree.txt",
    );
}

/// The trace files of a trace directory (process and thread files), sorted.
pub fn trace_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            if let Ok(inner) = std::fs::read_dir(&p) {
                out.extend(
                    inner
                        .flatten()
                        .map(|f| f.path())
                        .filter(|f| f.extension().is_some_and(|x| x == "trace")),
                );
            }
        }
    }
    out.sort();
    out
}

/// Copies a trace directory (one level of process directories).
pub fn copy_trace(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        let p = e.path();
        let dest = to.join(e.file_name());
        if p.is_dir() {
            std::fs::create_dir_all(&dest)?;
            for f in std::fs::read_dir(&p)? {
                let f = f?;
                std::fs::copy(f.path(), dest.join(f.file_name()))?;
            }
        } else {
            std::fs::copy(&p, &dest)?;
        }
    }
    Ok(())
}
