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
