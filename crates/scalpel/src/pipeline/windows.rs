//! `infer` on a trace too large to hold whole: the trace read in time windows (see
//! [`Windows`]), each window's graph built and written on its own, then each window mined on its
//! own, so that memory follows a window's events rather than the trace's.
//!
//! The miner's rules are learned once, on a sample made of the first and the last window
//! ([`MineInput::joined`]; those two hold half as many events as the others, so the sample is
//! one window's worth): where the counts of two ways to build a task are nearly equal, the
//! whole trace's choice comes from where its threads begin and end, and only those two windows
//! hold that. Every window replays the sample's rules ([`scalpel_mine::mine_with`]) and mines
//! only what they leave, so a task keeps its type and name from window to window. So every
//! graph is written before any window is mined, and each is read back for its model.
//!
//! The graphs are built one after the other: each window's graph takes what the windows before
//! it left open ([`WindowCarry`]). Reading a window needs only what reading the ones before it
//! left, so the next window is read while one is built and the one before is written. The models are independent of each other once the sample's
//! rules are known, so they are mined side by side on the worker threads, [`super::WindowPlan::at_once`]
//! at a time, each window as large as the memory limit's share allows.
//!
//! What a window cannot see is the other side of what crosses its boundary: a wake-up whose
//! signal came before it, a leaf or a task cut in two. `windows.json` lists each window with its
//! events, leaves, edges and top-level task types, so that those differences can be counted.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Mutex};

use scalpel_graph::{
    build_read_window, read_graph_window, Built, PassCarry, ReadCarry, WindowCarry, WindowRead,
};
use scalpel_mine::{Grammar, MineInput, Places, SamplePart};
use scalpel_model::graph::Graph;
use scalpel_model::progress::{Progress, Timings};
use scalpel_model::read::Windows;
use scalpel_model::store::read_graph;
use scalpel_model::task::Model;
use std::io::Write;

use scalpel_views::outfile::OutDir;
use scalpel_views::outputs::{write_file, write_graph_files, GraphFiles};
use scalpel_views::{DrawOptions, ModelDraw, ViewError};
use serde::Serialize;

use super::{GraphStep, InferError, Pipeline, PipelineError, Warning};

/// What a window of the trace made.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WindowSummary {
    /// Its number, from 0.
    pub index: usize,
    /// Its output directory's name in the output directory (`window-NNNN`).
    pub dir: String,
    /// Where it begins on the trace's clock, in ns (`None`: the trace's start).
    pub start_ns: Option<u64>,
    /// Where the next one begins (`None`: this is the last).
    pub end_ns: Option<u64>,
    /// Events read.
    pub events: u64,
    /// Leaves of its graph.
    pub leaves: u64,
    /// Edges of its graph.
    pub edges: u64,
    /// Calls on conditions, semaphores and the like left out of matching because their partner
    /// was in an earlier window (a post that returned after the boundary whose wait returned
    /// before it).
    pub crossed: u64,
    /// Rules of the previous window's grammar that contracted something here.
    pub replayed: usize,
    /// Its top-level task types: name and instances, most instances first.
    pub top_level: Vec<(String, u64)>,
}

/// The whole run: every window, in order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WindowsSummary {
    /// Events in the trace.
    pub events: u64,
    /// The events a window was given (the memory limit's share).
    pub events_per_window: u64,
    /// How many times the windows were mined: once, and once more after the sample's grammar
    /// kept a class the windows together found apart (see `kept_apart`).
    pub passes: u32,
    /// Classes the sample inlined that the windows together found standing apart (under two
    /// parents, or alone), kept as tasks in every window (`scalpel_mine::Places`).
    pub kept_apart: usize,
    /// Each window.
    pub windows: Vec<WindowSummary>,
}

/// The name of window `k`'s output directory.
pub fn window_dir_name(k: usize) -> String {
    format!("window-{k:04}")
}

/// How `infer_windows` draws and how far it goes.
#[derive(Clone, Debug)]
pub struct WindowedInfer<'a> {
    /// Windows of about this many events.
    pub events_per_window: u64,
    /// Windows mined side by side (at least 1).
    pub at_once: usize,
    /// Mine each window (else only its graph).
    pub model: bool,
    /// How the type graph is drawn.
    pub draw: &'a DrawOptions,
    /// How the model is drawn.
    pub model_draw: &'a ModelDraw,
}

impl Pipeline {
    /// Infers the trace in `dir` window by window into `out/window-NNNN/` (see the module
    /// docs) and writes `out/windows.json`. `each` hears of every window once it is written.
    pub fn infer_windows(
        &self,
        dir: &Path,
        out: &Path,
        how: &WindowedInfer<'_>,
        t: &mut Timings,
        progress: &dyn Progress,
        each: &mut dyn FnMut(&WindowSummary, &[Warning]),
    ) -> Result<WindowsSummary, InferError> {
        let survey = |source| InferError::Survey {
            dir: dir.to_path_buf(),
            source,
        };
        let mut windows = t
            .phase("surveying the trace", progress, || {
                self.install(|| Windows::survey(dir, how.events_per_window))
            })
            .map_err(survey)?;
        let mut summary = WindowsSummary {
            events: windows.events(),
            events_per_window: how.events_per_window,
            passes: 1,
            kept_apart: 0,
            windows: Vec::new(),
        };
        let graphs = self.window_graphs(&mut windows, out, how, t, progress)?;
        if how.model {
            let mut grammar = t.phase("rules of the first and last windows", progress, || {
                self.sample_grammar(&graphs, progress)
            })?;
            let mut mined =
                self.window_models((graphs, grammar.as_ref()), out, how, t, progress)?;
            // A class the sample inlined that the windows together find apart is a task, as in
            // the whole trace (`scalpel_mine::Places`): every window is mined again with it kept.
            // Each pass keeps at least one more class, so the passes end; a bound keeps a
            // pathological grammar from taking one pass per class.
            while let Some(g) = grammar.as_mut().filter(|_| summary.passes < MAX_PASSES) {
                let mut places = Places::default();
                for m in &mined {
                    places.merge(&m.places);
                }
                let changed = g.keep_apart(&places);
                if changed == 0 {
                    break;
                }
                summary.passes += 1;
                summary.kept_apart += changed;
                let graphs = mined.into_iter().map(|m| m.graph).collect();
                mined = self.window_models((graphs, grammar.as_ref()), out, how, t, progress)?;
            }
            for m in mined {
                let mut warnings = m.graph.warnings;
                warnings.extend(m.warnings);
                each(&m.summary, &warnings);
                summary.windows.push(m.summary);
            }
        } else {
            for g in graphs {
                each(&g.summary, &g.warnings);
                summary.windows.push(g.summary);
            }
        }
        let written = OutDir::create(out).map_err(ViewError::from).and_then(|d| {
            write_file(&d, "windows.json", |w| {
                serde_json::to_writer_pretty(&mut *w, &summary)?;
                w.write_all(b"\n")
            })
        });
        written.map_err(|source| InferError::ModelFiles {
            dir: out.to_path_buf(),
            source,
        })?;
        remove_stale_windows(out, summary.windows.len());
        Ok(summary)
    }

    /// Every window's graph, built one after the other with one carry, and its files. Side by
    /// side (`at_once` above 1), in a pipeline of three: window k + 1 is read (decoded and cut
    /// into leaves) while window k's graph is built from what was read and window k - 1's
    /// files are written. Reading takes only what reading the windows before left, building
    /// only what building them left: the two parts of one [`WindowCarry`]. Three windows are
    /// then in memory, each short of a model's size, which the plan allows two of. Otherwise
    /// each window is read, built and written before the next is read.
    fn window_graphs(
        &self,
        windows: &mut Windows,
        out: &Path,
        how: &WindowedInfer<'_>,
        t: &mut Timings,
        progress: &dyn Progress,
    ) -> Result<Vec<WindowGraph>, InferError> {
        let mut carry = WindowCarry::default();
        let (reading, passes) = carry.split();
        let dir = windows.survey_dir().path.clone();
        let n = windows.count();
        let mut graphs = Vec::with_capacity(n);
        if how.at_once <= 1 {
            for k in 0..n {
                let read = self.read_window((windows, k), reading, t, progress)?;
                let built = self.build_window(read, (&dir, passes), t, progress)?;
                graphs.push(self.write_window(built, out, how, t, progress)?);
            }
            return Ok(graphs);
        }
        let (mut read, mut built) = (None, None);
        for k in 0..n + 2 {
            // One line per phase for all windows (`Timings::absorb`).
            let (mut tr, mut tb, mut tw) = (Timings::new(), Timings::new(), Timings::new());
            let (to_write, to_build) = (built.take(), read.take());
            let (written, (newly_built, newly_read)) = self.both(
                || to_write.map(|w| self.write_window(w, out, how, &mut tw, progress)),
                || {
                    self.both(
                        || {
                            to_build
                                .map(|r| self.build_window(r, (&dir, passes), &mut tb, progress))
                        },
                        || {
                            (k < n)
                                .then(|| self.read_window((windows, k), reading, &mut tr, progress))
                        },
                    )
                },
            );
            for phases in [tr, tb, tw] {
                t.absorb(phases);
            }
            graphs.extend(written.transpose()?);
            built = newly_built.transpose()?;
            read = newly_read.transpose()?;
        }
        Ok(graphs)
    }

    /// Every window's model with `grammar` replayed, `at_once` windows side by side on the
    /// worker pool, in order. Each of `at_once` jobs takes the next window once its last is
    /// done, so no more than `at_once` are in memory, even where a worker waiting inside one
    /// window's stage runs another job, and no core waits for a slower window beside it (as it
    /// did with windows mined in batches of `at_once`: the last batch of an odd count took one
    /// core).
    fn window_models(
        &self,
        (graphs, grammar): (Vec<WindowGraph>, Option<&Grammar>),
        out: &Path,
        how: &WindowedInfer<'_>,
        t: &mut Timings,
        progress: &dyn Progress,
    ) -> Result<Vec<WindowMined>, InferError> {
        let n = graphs.len();
        let queue = Mutex::new(graphs.into_iter().enumerate());
        let failed = AtomicBool::new(false);
        let (tx, rx) = mpsc::channel();
        let take = || {
            let next = queue.lock().ok()?.next();
            next.filter(|_| !failed.load(Ordering::Relaxed))
        };
        let work = |tx: mpsc::Sender<_>| {
            while let Some((k, g)) = take() {
                let mut tw = Timings::new();
                let m = self.window_model(g, grammar, out, how, &mut tw, progress);
                failed.fetch_or(m.is_err(), Ordering::Relaxed);
                if tx.send((k, m.map(|m| (m, tw)))).is_err() {
                    return;
                }
            }
        };
        std::thread::scope(|s| {
            s.spawn(|| {
                self.install(|| {
                    rayon::scope(|sc| {
                        for _ in 0..how.at_once.max(1) {
                            let tx = tx.clone();
                            sc.spawn(|_| work(tx));
                        }
                    })
                });
                drop(tx);
            });
            // Here, on the calling thread: each window's timings in order, as they come.
            let mut done = BTreeMap::new();
            let mut mined = Vec::with_capacity(n);
            for (k, m) in rx {
                done.insert(k, m);
                while let Some(m) = done.remove(&mined.len()) {
                    let (m, tw) = m?;
                    t.absorb(tw);
                    mined.push(m);
                }
            }
            Ok(mined)
        })
    }

    /// `a` and `b`, side by side on the worker pool.
    fn both<A: Send, B: Send>(
        &self,
        a: impl FnOnce() -> A + Send,
        b: impl FnOnce() -> B + Send,
    ) -> (A, B) {
        self.install(|| rayon::join(a, b))
    }

    /// Window `k` read, with `carry` from the windows read before it.
    fn read_window(
        &self,
        (windows, k): (&mut Windows, usize),
        carry: &mut ReadCarry,
        t: &mut Timings,
        progress: &dyn Progress,
    ) -> Result<ReadWindow, InferError> {
        let read = t
            .phase("causal graph", progress, || {
                self.install(|| read_graph_window(windows, k, &self.opts.graph, carry))
            })
            .map_err(|source| PipelineError::Graph {
                dir: windows.survey_dir().path.clone(),
                source,
            })?;
        Ok(ReadWindow {
            index: k,
            range: windows.range(k),
            read,
        })
    }

    /// The graph of window `r` of the trace in `dir`, with `carry` from the windows built
    /// before it.
    fn build_window(
        &self,
        r: ReadWindow,
        (dir, carry): (&Path, &mut PassCarry),
        t: &mut Timings,
        progress: &dyn Progress,
    ) -> Result<BuiltWindow, InferError> {
        let crossed_before = carry.crossed();
        let built = t
            .phase("causal graph", progress, || {
                self.install(|| build_read_window(r.read, &self.opts.graph, carry))
            })
            .map_err(|source| PipelineError::Graph {
                dir: dir.to_path_buf(),
                source,
            })?;
        Ok(BuiltWindow {
            index: r.index,
            range: r.range,
            crossed: carry.crossed() - crossed_before,
            built,
        })
    }

    /// Window `w`'s graph files; its summary so far and what the user should hear of it.
    fn write_window(
        &self,
        w: BuiltWindow,
        out: &Path,
        how: &WindowedInfer<'_>,
        t: &mut Timings,
        progress: &dyn Progress,
    ) -> Result<WindowGraph, InferError> {
        let BuiltWindow {
            index: k,
            range: (start_ns, end_ns),
            crossed,
            mut built,
        } = w;
        let dir = out.join(window_dir_name(k));
        let files = write_graph_files(&built, &dir, how.draw, t, progress).map_err(|source| {
            InferError::GraphFiles {
                dir: dir.clone(),
                source,
            }
        })?;
        let summary = WindowSummary {
            index: k,
            dir: window_dir_name(k),
            start_ns,
            end_ns,
            events: built.events,
            leaves: built.graph.leaves.len() as u64,
            edges: built.graph.edges.len() as u64,
            crossed,
            replayed: 0,
            top_level: Vec::new(),
        };
        let warnings = std::mem::take(&mut built.warnings)
            .into_iter()
            .map(Warning::Graph)
            .collect();
        Ok(WindowGraph {
            summary,
            warnings,
            files,
        })
    }

    /// The model of window `g`, read back from its graph files, with `grammar` replayed first;
    /// its summary completed.
    fn window_model(
        &self,
        g: WindowGraph,
        grammar: Option<&Grammar>,
        out: &Path,
        how: &WindowedInfer<'_>,
        t: &mut Timings,
        progress: &dyn Progress,
    ) -> Result<WindowMined, InferError> {
        let WindowGraph {
            summary,
            warnings: graph_warnings,
            files,
        } = g;
        let mut summary = summary;
        let graph = read_back(&files, t, progress)?;
        let built = Built {
            graph,
            warnings: Vec::new(),
            events: summary.events,
        };
        let mut step = GraphStep { built, files };
        let dir = out.join(&summary.dir);
        let done = self.infer_model_with(&mut step, &dir, how.model_draw, grammar, t, progress)?;
        let graph = WindowGraph {
            summary: summary.clone(),
            warnings: graph_warnings,
            files: step.files,
        };
        summary.replayed = done.mined.replayed;
        summary.top_level = top_level(&done.mined.model);
        Ok(WindowMined {
            graph,
            summary,
            warnings: done.mined.warnings.into_iter().map(Warning::Mine).collect(),
            places: done.mined.places,
        })
    }

    /// The rules mined on the first and the last window together (see
    /// [`MineInput::joined`]), which the first window replays; `None` for a single window.
    fn sample_grammar(
        &self,
        graphs: &[WindowGraph],
        progress: &dyn Progress,
    ) -> Result<Option<Grammar>, InferError> {
        let (Some(first), Some(last)) = (graphs.first(), graphs.last()) else {
            return Ok(None);
        };
        if graphs.len() < 2 {
            return Ok(None);
        }
        // Both read at once: the sample holds both anyway.
        let (first, last) = self.both(
            || read_back(&first.files, &mut Timings::new(), progress).map(sample_part),
            || read_back(&last.files, &mut Timings::new(), progress).map(sample_part),
        );
        let parts = vec![first?, last?];
        let sample = MineInput::joined(parts);
        scalpel_model::memory::release_freed_memory();
        let grammar = self.install(|| scalpel_mine::learn(&sample, &self.opts.mine, progress));
        Ok(Some(grammar))
    }
}

/// The graph written in `files`, read back.
fn read_back(
    files: &GraphFiles,
    t: &mut Timings,
    progress: &dyn Progress,
) -> Result<Graph, InferError> {
    t.phase("reading graph.json and graph.bin", progress, || {
        read_graph(&files.json)
    })
    .map_err(|source| InferError::GraphBack {
        file: files.json.clone(),
        source,
    })
}

/// A window's graph as part of a sample: its threads named by process and thread id.
fn sample_part(graph: Graph) -> SamplePart<'static, (u32, u32, u32)> {
    let threads = graph
        .threads
        .iter()
        .map(|t| {
            let incarnation = graph
                .processes
                .get(t.process.index())
                .map_or(0, |p| p.incarnation);
            (t.pid, incarnation, t.tid)
        })
        .collect();
    SamplePart {
        input: MineInput::from_graph(graph),
        threads,
    }
}

/// A window read and not yet built.
struct ReadWindow {
    index: usize,
    /// Where it begins and where the next one does (see [`WindowSummary`]).
    range: (Option<u64>, Option<u64>),
    read: WindowRead,
}

/// A window whose graph is built and not yet written.
struct BuiltWindow {
    index: usize,
    /// Where it begins and where the next one does (see [`WindowSummary`]).
    range: (Option<u64>, Option<u64>),
    /// Calls left out of matching because their partner was in an earlier window.
    crossed: u64,
    built: Built,
}

/// A window whose graph is written and whose model is not yet mined.
struct WindowGraph {
    summary: WindowSummary,
    warnings: Vec<Warning>,
    files: GraphFiles,
}

/// A window's model mined: its graph (for another pass), its summary completed, what mining
/// warned of, and where the classes the grammar inlined stand in it.
struct WindowMined {
    graph: WindowGraph,
    summary: WindowSummary,
    warnings: Vec<Warning>,
    places: Places,
}

/// The most times the windows are mined (see `kept_apart`): the first pass and two more.
const MAX_PASSES: u32 = 3;

/// The model's top-level task types with their instances, most first (then by name).
fn top_level(model: &Model) -> Vec<(String, u64)> {
    let mut v: Vec<(String, u64)> = model
        .types
        .iter()
        .filter(|t| t.top_level > 0)
        .map(|t| (t.name.clone(), t.top_level))
        .collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    v
}

/// What `infer` writes in a window's directory (see `scalpel_views::outputs`).
const WINDOW_FILES: [&str; 10] = [
    "graph.json",
    "graph.bin",
    "graph-summary.txt",
    "types.dot",
    "types.svg",
    "model.json",
    "model.bin",
    "model.dot",
    "model.svg",
    "model-tree.txt",
];

/// Takes away the windows an earlier run wrote into `out` past this run's `count`: their files,
/// and each directory once nothing else is in it (a file the user put there keeps it). Left,
/// `window-0007` of a run with more windows would be read as this run's.
fn remove_stale_windows(out: &Path, count: usize) {
    let Ok(entries) = std::fs::read_dir(out) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let index = name
            .to_str()
            .and_then(|n| n.strip_prefix("window-"))
            .filter(|d| d.len() >= 4 && d.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|d| d.parse::<usize>().ok());
        if index.is_none_or(|k| k < count) || !entry.path().is_dir() {
            continue;
        }
        for file in WINDOW_FILES {
            // Best effort: what cannot be removed stays, as a user's own file would.
            let _ = std::fs::remove_file(entry.path().join(file));
        }
        let _ = std::fs::remove_dir(entry.path());
    }
}
