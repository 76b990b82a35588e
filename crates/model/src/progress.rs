//! How a long stage tells the user where it is, without knowing how that is shown: the stages
//! take a [`Progress`], the command line passes a terminal spinner of its own and tests pass
//! [`Quiet`].

/// Receives a stage's status as it runs, from whichever worker thread runs the stage.
pub trait Progress: Sync {
    /// The stage's current status (`mining: round 3, …`).
    fn status(&self, message: &str);
    /// The stage is over; whatever shows the status can go.
    fn done(&self);
}

/// Shows nothing.
#[derive(Clone, Copy, Debug, Default)]
pub struct Quiet;

impl Progress for Quiet {
    fn status(&self, _: &str) {}
    fn done(&self) {}
}

/// How long each phase of a run took, in the order they ran, and the memory held after each
/// (`--timings`).
#[derive(Debug)]
pub struct Timings {
    started: std::time::Instant,
    /// Each phase, in the order they ran.
    pub phases: Vec<PhaseTime>,
}

/// One phase of a run.
#[derive(Clone, Debug)]
pub struct PhaseTime {
    /// Its name (`causal graph`, `mining`, …).
    pub name: &'static str,
    /// Its wall-clock time.
    pub time: std::time::Duration,
    /// The process's resident set when it ended and its peak resident set so far, in bytes
    /// (`None` where Linux's procfs cannot tell). The peak is never reset: resetting it would
    /// also reset what `getrusage` and `time -f %M` report for the whole run.
    pub memory: Option<Memory>,
}

/// A process's resident set (`VmRSS`), its peak so far (`VmHWM`) and the peak of its address
/// space (`VmPeak`), in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Memory {
    /// Resident now.
    pub rss: u64,
    /// The most ever resident.
    pub peak: u64,
    /// The most address space ever mapped: what an address-space limit (`ulimit -v`) holds.
    pub space: u64,
}

impl Default for Timings {
    fn default() -> Self {
        Timings::new()
    }
}

impl Timings {
    /// Starts the clock of the whole run.
    pub fn new() -> Timings {
        Timings {
            started: std::time::Instant::now(),
            phases: Vec::new(),
        }
    }

    /// Runs `f` as the phase `name`, telling `progress` which phase runs, and records its time
    /// and the memory after it.
    pub fn phase<T>(
        &mut self,
        name: &'static str,
        progress: &dyn Progress,
        f: impl FnOnce() -> T,
    ) -> T {
        progress.status(name);
        let t = std::time::Instant::now();
        let out = f();
        let time = t.elapsed();
        self.phases.push(PhaseTime {
            name,
            time,
            memory: memory(),
        });
        progress.done();
        out
    }

    /// Adds `other`'s phases to these: a phase of a name already here gets its time added (and
    /// the memory after its latest run), a new one goes at the end. For a run that repeats its
    /// phases (a trace inferred window by window), one line per phase.
    pub fn absorb(&mut self, other: Timings) {
        for p in other.phases {
            match self.phases.iter_mut().find(|q| q.name == p.name) {
                Some(q) => {
                    q.time += p.time;
                    q.memory = p.memory.or(q.memory);
                }
                None => self.phases.push(p),
            }
        }
    }

    /// The time since [`Timings::new`].
    pub fn total(&self) -> std::time::Duration {
        self.started.elapsed()
    }

    /// The peak resident set of the run so far, when the last phase could tell it.
    pub fn peak_rss(&self) -> Option<u64> {
        self.peak_memory().map(|m| m.peak)
    }

    /// The memory after the last phase, with the run's peaks so far.
    pub fn peak_memory(&self) -> Option<Memory> {
        self.phases.last().and_then(|p| p.memory)
    }
}

/// The process's memory now, from `/proc/self/status`.
fn memory() -> Option<Memory> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kib = |key: &str| -> Option<u64> {
        let line = status.lines().find(|l| l.starts_with(key))?;
        line[key.len()..]
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse::<u64>()
            .ok()
            .map(|k| k * 1024)
    };
    Some(Memory {
        rss: kib("VmRSS:")?,
        peak: kib("VmHWM:")?,
        space: kib("VmPeak:")?,
    })
}
