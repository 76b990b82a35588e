//! A spinner on stderr that shows a stage's [`Progress`] status, hidden when stderr is not a
//! terminal.

use scalpel_model::progress::Progress;

const TICK: std::time::Duration = std::time::Duration::from_millis(200);

/// A spinner on stderr (indicatif's, which draws nothing when stderr is not a terminal).
pub(crate) struct Spinner(indicatif::ProgressBar);

impl Spinner {
    /// A spinner that ticks on its own every 200 ms and shows the time the status has run.
    pub(crate) fn new() -> Spinner {
        let bar = indicatif::ProgressBar::new_spinner();
        bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
        if let Ok(style) = indicatif::ProgressStyle::with_template("{spinner} {msg} ({elapsed})") {
            bar.set_style(style);
        }
        bar.enable_steady_tick(TICK);
        Spinner(bar)
    }
}

impl Default for Spinner {
    fn default() -> Self {
        Spinner::new()
    }
}

impl Progress for Spinner {
    fn status(&self, message: &str) {
        // One spinner serves phase after phase: each `done` finishes it, the next status
        // starts it again with its clock at zero.
        if self.0.is_finished() {
            self.0.reset();
            self.0.enable_steady_tick(TICK);
        }
        self.0.set_message(message.to_owned());
        self.0.tick();
    }

    fn done(&self) {
        self.0.finish_and_clear();
    }
}
