//! What every command shares for writing to the terminal: lines on stderr, text on stdout with
//! control characters escaped, warnings with the flag that changes them, one way to treat a
//! closed pipe, and the phase timings.

use std::io::{self, BufWriter};

use anyhow::{Context, Result};
use scalpel_model::progress::Timings;
use scalpel_model::text::Escaping;
use scalpel_views::timings::write_timings;

use crate::hints;

/// Writes a line to stderr, its control characters escaped (it may quote a traced program's
/// names); a closed or full stderr is no reason to fail (or panic).
#[macro_export]
macro_rules! say {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let line = format!($($t)*);
        let _ = writeln!(std::io::stderr(), "{}", scalpel_model::text::escape_lines(&line));
    }};
}

/// Standard output for text a person reads: control characters escaped (see
/// `scalpel_model::text`), so that a traced program's names cannot drive the terminal.
pub(crate) fn text_stdout() -> BufWriter<Escaping<io::StdoutLock<'static>>> {
    BufWriter::new(Escaping::new(io::stdout().lock()))
}

/// The width of the terminal standard output is, when it is one; `None` for a pipe or a file.
pub(crate) fn terminal_width() -> Option<usize> {
    let out = io::stdout();
    rustix::termios::tcgetwinsize(&out)
        .ok()
        .map(|w| usize::from(w.ws_col))
        .filter(|&w| w > 0)
}

/// Prints up to `most` warnings on stderr, then how many more there were (and `hint`), then
/// what flag to change for each kind printed (`hints`), once.
pub(crate) fn warn(warnings: &[impl std::error::Error + 'static], most: usize, hint: &str) {
    let mut hints = std::collections::BTreeSet::new();
    for w in warnings.iter().take(most) {
        say!("scalpel: warning: {w}");
        hints.extend(hints::for_cause(w));
    }
    for h in hints {
        say!("scalpel: hint: {h}");
    }
    if warnings.len() > most {
        say!(
            "scalpel: ... and {} more warnings{hint}",
            warnings.len() - most
        );
    }
}

/// A write to stdout that failed because the reader went away (`scalpel top | head`) is not
/// an error: every command exits 0 then. Any other failure is an error.
pub(crate) fn broken_pipe_is_fine(r: io::Result<()>) -> Result<()> {
    match r {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => Err(e).context("cannot write"),
        _ => Ok(()),
    }
}

/// Prints the phase timings on stderr when `--timings` asked for them.
pub(crate) fn print_timings(asked: bool, t: &Timings) {
    if asked {
        let mut e = io::stderr().lock();
        let _ = write_timings(&mut e, t);
    }
}
