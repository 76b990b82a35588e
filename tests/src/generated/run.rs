//! Building, recording and scoring one generated program.
//!
//! The server runs under `scalpel record` and writes its truth; the load is the same program in
//! client mode, run outside the recording (a server's clients are not the server). Every step
//! is bounded in time, and a step that fails says which, for which seed.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use scalpel_model::task::TaskKind;

use super::emit;
use super::spec::Spec;
use crate::score;

/// How long the server may take to publish its address, and the load and the recording to end.
const START_LIMIT: Duration = Duration::from_secs(30);
const LOAD_LIMIT: Duration = Duration::from_secs(120);

/// What went wrong with one program.
#[derive(Debug, thiserror::Error)]
pub enum GenError {
    #[error("seed {seed}: {step}: {source}")]
    Io {
        seed: u64,
        step: &'static str,
        source: std::io::Error,
    },
    #[error("seed {seed}: {step} failed: {detail}")]
    Step {
        seed: u64,
        step: &'static str,
        detail: String,
    },
}

/// One program's figures.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub spec: Spec,
    /// Requests the load sent (and the truth holds).
    pub requests: u32,
    /// Requests that are exactly one occurrence of the best task type.
    pub whole: u32,
    /// That type's name.
    pub task: Option<String>,
    /// Task types that cover 95% of the leaves (each leaf under its top-level type).
    pub types: usize,
}

impl Outcome {
    /// `whole / requests`.
    pub fn share(&self) -> f64 {
        f64::from(self.whole) / f64::from(self.requests.max(1))
    }

    /// The corpus's line for it.
    pub fn line(&self) -> String {
        format!(
            "seed={} {} requests={} whole={} share={:.3} types={}",
            self.spec.seed,
            self.spec,
            self.requests,
            self.whole,
            self.share(),
            self.types
        )
    }
}

/// Where the runtime header and the truth writer are.
fn c_sources() -> (PathBuf, PathBuf) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    (root.join("gen"), root.join("../samples/c"))
}

/// Writes and compiles the program of `spec` into `dir`; returns the executable.
pub fn build(spec: &Spec, dir: &Path) -> Result<PathBuf, GenError> {
    let seed = spec.seed;
    let io = |step| move |source| GenError::Io { seed, step, source };
    let src = dir.join("prog.c");
    std::fs::write(&src, emit::program(spec)).map_err(io("writing prog.c"))?;
    let (gen, samples) = c_sources();
    let exe = dir.join("prog");
    let out = Command::new("cc")
        .args(["-O1", "-g", "-pthread", "-Wall", "-Werror", "-o"])
        .arg(&exe)
        .arg("-I")
        .arg(&gen)
        .arg("-I")
        .arg(&samples)
        .arg(&src)
        .arg(samples.join("truth.c"))
        .output()
        .map_err(io("running cc"))?;
    if !out.status.success() {
        return Err(GenError::Step {
            seed,
            step: "compiling",
            detail: String::from_utf8_lossy(&out.stderr).into_owned(),
        });
    }
    Ok(exe)
}

/// Waits for `child` up to `limit`; kills it (and its process group) past that.
fn wait_within(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let start = Instant::now();
    loop {
        if let Ok(Some(s)) = child.try_wait() {
            return Some(s);
        }
        if start.elapsed() > limit {
            if let Ok(group) = i32::try_from(child.id()) {
                // SAFETY: kill(2) on the process group this module made for the child.
                unsafe { libc::kill(-group, libc::SIGKILL) };
            }
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Starts `cmd` in a process group of its own (so that [`wait_within`] can stop all of it),
/// its output discarded and its errors kept.
fn spawn(cmd: &mut Command, seed: u64, step: &'static str) -> Result<Child, GenError> {
    use std::os::unix::process::CommandExt;
    cmd.stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|source| GenError::Io { seed, step, source })
}

/// A process stopped (its group, by its id) when this is dropped: the backend, whatever way
/// the recording ends.
struct StopOnDrop(Child);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        if let Ok(group) = i32::try_from(self.0.id()) {
            // SAFETY: kill(2) on the process group `spawn` made for this child.
            unsafe { libc::kill(-group, libc::SIGKILL) };
        }
        let _ = self.0.wait();
    }
}

/// Starts the backend a program with calls needs (outside the recording, as the load is) and
/// waits for the port it writes to `dir/backend`.
fn start_backend(exe: &Path, dir: &Path, seed: u64) -> Result<StopOnDrop, GenError> {
    let mut cmd = Command::new(exe);
    cmd.arg("backend").arg(dir);
    let mut backend = StopOnDrop(spawn(&mut cmd, seed, "starting the backend")?);
    let start = Instant::now();
    while !dir.join("backend").exists() {
        if start.elapsed() > START_LIMIT || matches!(backend.0.try_wait(), Ok(Some(_))) {
            return Err(GenError::Step {
                seed,
                step: "starting the backend",
                detail: format!("no port within {START_LIMIT:?}"),
            });
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(backend)
}

/// Records the server of `exe` under the load; the trace goes to `dir/trace`, the truth to
/// `dir/truth.jsonl`.
pub fn record(spec: &Spec, exe: &Path, dir: &Path, scalpel: &Path) -> Result<(), GenError> {
    let seed = spec.seed;
    let step = |step: &'static str, detail: String| GenError::Step { seed, step, detail };
    let _backend = match spec.call {
        true => Some(start_backend(exe, dir, seed)?),
        false => None,
    };
    let mut server = Command::new(scalpel);
    server
        .arg("record")
        .arg("-o")
        .arg(dir.join("trace"))
        .arg("--")
        .arg(exe)
        .arg("server")
        .arg(dir)
        .env("SCALPEL_TRUTH", dir.join("truth.jsonl"));
    let mut server = spawn(&mut server, seed, "starting scalpel record")?;
    let start = Instant::now();
    while !dir.join("addr").exists() {
        if start.elapsed() > START_LIMIT || matches!(server.try_wait(), Ok(Some(_))) {
            let _ = wait_within(&mut server, Duration::ZERO);
            return Err(step(
                "starting the server",
                format!("no address within {START_LIMIT:?}"),
            ));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut load = Command::new(exe);
    load.arg("client").arg(dir);
    let mut load = spawn(&mut load, seed, "starting the load")?;
    let load_status = wait_within(&mut load, LOAD_LIMIT);
    let server_status = wait_within(&mut server, LOAD_LIMIT);
    let stderr = |c: &mut Child| {
        let mut s = String::new();
        if let Some(mut e) = c.stderr.take() {
            let _ = std::io::Read::read_to_string(&mut e, &mut s);
        }
        s
    };
    match load_status {
        Some(s) if s.success() => {}
        other => {
            return Err(step(
                "the load",
                format!("{other:?}: {}", stderr(&mut load)),
            ))
        }
    }
    match server_status {
        Some(s) if s.success() => Ok(()),
        other => Err(step(
            "the recorded server",
            format!("{other:?}: {}", stderr(&mut server)),
        )),
    }
}

/// Infers the model of `dir/trace` into `dir/model` and scores it against the truth.
pub fn score(spec: &Spec, dir: &Path, scalpel: &Path) -> Result<Outcome, GenError> {
    let seed = spec.seed;
    let out = Command::new(scalpel)
        .arg("infer")
        .arg(dir.join("trace"))
        .arg("-o")
        .arg(dir.join("model"))
        .output()
        .map_err(|source| GenError::Io {
            seed,
            step: "running scalpel infer",
            source,
        })?;
    if !out.status.success() {
        return Err(GenError::Step {
            seed,
            step: "scalpel infer",
            detail: String::from_utf8_lossy(&out.stderr).into_owned(),
        });
    }
    let (model, graph) = score::load_model(&dir.join("model"));
    let tasks = score::load_tasks(&dir.join("truth.jsonl"));
    let composed: [(&str, &[&str]); 1] = [("request", &["s0", "s1", "s2"])];
    let scores = score::score(&model, &graph, &tasks, &composed);
    let request = scores.iter().find(|s| s.truth == "request");
    let requests = request.map_or(0, |r| r.instances as u32);
    if requests != spec.total_requests() {
        return Err(GenError::Step {
            seed,
            step: "reading the truth",
            detail: format!(
                "{requests} requests in the truth, the load sent {}",
                spec.total_requests()
            ),
        });
    }
    let whole = request.map_or(0, |r| (r.recall * r.instances as f64).round() as u32);
    let task = request
        .and_then(|r| r.model_type.clone())
        .filter(|(t, _)| model.types[*t as usize].kind != TaskKind::Leaf || whole > 0)
        .map(|(_, n)| n);
    let types = crate::servers::top_level_cover(&graph, &model).len();
    Ok(Outcome {
        spec: spec.clone(),
        requests,
        whole,
        task,
        types,
    })
}

/// Builds, records and scores the program of `seed` in `dir` (which must exist and be empty),
/// with the `scalpel` binary at `scalpel`.
pub fn run(seed: u64, dir: &Path, scalpel: &Path) -> Result<Outcome, GenError> {
    let spec = Spec::from_seed(seed);
    let exe = build(&spec, dir)?;
    record(&spec, &exe, dir, scalpel)?;
    score(&spec, dir, scalpel)
}
