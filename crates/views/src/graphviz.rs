//! DOT text and Graphviz: quoting labels, and laying DOT out as SVG with `dot`.

use std::fmt;
use std::io::{self, Read, Write};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// Why a drawing could not be made. The DOT file is written in every case.
#[derive(Debug, thiserror::Error)]
pub enum DrawError {
    /// Graphviz is not installed.
    #[error("Graphviz `dot` is not installed (apt-get install graphviz); the DOT file is written")]
    NoGraphviz,
    /// `dot` ran and failed.
    #[error("Graphviz `dot` failed: {0}")]
    Graphviz(std::io::Error),
    /// The drawing is larger than Graphviz lays out in reasonable time.
    #[error(
        "{nodes} nodes in {boxes} task boxes are too many to lay out (at most {max_nodes} nodes \
         and {max_boxes} boxes; the DOT file is written)"
    )]
    TooBig {
        /// Nodes drawn.
        nodes: usize,
        /// Task boxes (clusters).
        boxes: usize,
        /// The node limit.
        max_nodes: usize,
        /// The box limit.
        max_boxes: usize,
    },
    /// Nothing was left to draw.
    #[error(
        "nothing is left to draw (every node has fewer occurrences than the minimum count, or \
         the model is empty); the DOT file is written"
    )]
    Empty,
    /// `dot` ran past its deadline and was stopped.
    #[error("Graphviz `dot` took more than {0} s and was stopped (the DOT file is written)")]
    TimedOut(u64),
    /// `--task` named no task.
    #[error(transparent)]
    NoSuchTask(#[from] scalpel_model::lookup::NoSuchTask),
}

/// How long `dot` may run before it is stopped. The drawings' budgets ([`super::budget`]) keep
/// layouts to about a second; this is the guarantee when a graph's shape defeats them.
pub const DOT_DEADLINE: Duration = Duration::from_secs(10);

/// Runs Graphviz `dot` on `text`, giving SVG bytes, and stops it after [`DOT_DEADLINE`].
/// (graphviz-rust's `exec_dot` waits for `dot` however long it runs, so `dot` is run here.)
pub fn render_svg(text: String) -> Result<Vec<u8>, DrawError> {
    let mut child = Command::new("dot")
        .arg("-Tsvg")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            if e.kind() == io::ErrorKind::NotFound {
                DrawError::NoGraphviz
            } else {
                DrawError::Graphviz(e)
            }
        })?;
    // `dot` reads all its input before it writes, and may fill a pipe with warnings meanwhile:
    // each stream gets its own thread.
    let stdin = child.stdin.take();
    let writer = thread::spawn(move || stdin.map(|mut i| i.write_all(text.as_bytes())));
    let drain = |r: Option<Box<dyn Read + Send>>| {
        thread::spawn(move || {
            let mut v = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut v);
            }
            v
        })
    };
    let out = drain(
        child
            .stdout
            .take()
            .map(|o| Box::new(o) as Box<dyn Read + Send>),
    );
    let err = drain(
        child
            .stderr
            .take()
            .map(|o| Box::new(o) as Box<dyn Read + Send>),
    );
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Ok(status),
            Ok(None) if started.elapsed() > DOT_DEADLINE => {
                let _ = child.kill();
                let _ = child.wait();
                break Err(DrawError::TimedOut(DOT_DEADLINE.as_secs()));
            }
            Ok(None) => thread::sleep(Duration::from_millis(5)),
            Err(e) => break Err(DrawError::Graphviz(e)),
        }
    };
    let written = writer.join().ok().flatten();
    let (out, err) = (
        out.join().unwrap_or_default(),
        err.join().unwrap_or_default(),
    );
    let status = status?;
    if !status.success() {
        let msg = String::from_utf8_lossy(&err);
        return Err(DrawError::Graphviz(io::Error::other(format!(
            "{status}: {}",
            msg.trim()
        ))));
    }
    if let Some(Err(e)) = written {
        return Err(DrawError::Graphviz(e));
    }
    Ok(out)
}

/// A DOT string literal, written with its quotes.
pub struct Quoted<'a>(pub &'a str);

impl fmt::Display for Quoted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("\"")?;
        for c in self.0.chars() {
            match c {
                '"' => f.write_str("\\\"")?,
                '\\' => f.write_str("\\\\")?,
                '\n' => f.write_str("\\n")?,
                c => fmt::Write::write_char(f, c)?,
            }
        }
        f.write_str("\"")
    }
}

/// A DOT string literal.
pub fn quote(s: &str) -> String {
    Quoted(s).to_string()
}
