//! A spinner on stderr that shows a stage's [`Progress`] status, hidden when stderr is not a
//! terminal.

use crate::progress::Progress;

/// A spinner on stderr (indicatif's, which draws nothing when stderr is not a terminal).
pub struct Spinner(indicatif::ProgressBar);

impl Spinner {
    /// A spinner that ticks on its own every 200 ms.
    pub fn new() -> Spinner {
        let bar = indicatif::ProgressBar::new_spinner();
        bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
        bar.enable_steady_tick(std::time::Duration::from_millis(200));
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
        self.0.set_message(message.to_owned());
        self.0.tick();
    }

    fn done(&self) {
        self.0.finish_and_clear();
    }
}
