//! How a long stage tells the user where it is, without knowing how that is shown: the stages
//! take a [`Progress`], the command line passes a terminal spinner
//! ([`crate::views::progress::Spinner`]) and tests pass [`Quiet`].

/// Receives a stage's status as it runs.
pub trait Progress {
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

/// How long each phase of a run took, in the order they ran (`--timings`).
#[derive(Debug)]
pub struct Timings {
    started: std::time::Instant,
    /// Each phase's name and wall-clock time.
    pub phases: Vec<(&'static str, std::time::Duration)>,
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

    /// Runs `f` as the phase `name`, telling `progress` which phase runs, and records its time.
    pub fn phase<T>(
        &mut self,
        name: &'static str,
        progress: &dyn Progress,
        f: impl FnOnce() -> T,
    ) -> T {
        progress.status(name);
        let t = std::time::Instant::now();
        let out = f();
        self.phases.push((name, t.elapsed()));
        progress.done();
        out
    }

    /// The time since [`Timings::new`].
    pub fn total(&self) -> std::time::Duration {
        self.started.elapsed()
    }
}
