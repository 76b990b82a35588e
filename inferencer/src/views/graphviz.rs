//! DOT text and Graphviz: quoting labels, and laying DOT out as SVG with `dot`.

use std::fmt;

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
        "{nodes} nodes and {edges} edges in {boxes} task boxes are too many to lay out (at most \
         {max_nodes} nodes, {max_edges} edges, and {max_cost} edges times boxes plus one); \
         draw less with --depth, --task or --min-count (the DOT file is written)"
    )]
    TooBig {
        /// Nodes drawn.
        nodes: usize,
        /// Edges drawn.
        edges: usize,
        /// Task boxes (clusters).
        boxes: usize,
        /// The node limit.
        max_nodes: usize,
        /// The edge limit.
        max_edges: usize,
        /// The edges × boxes limit.
        max_cost: usize,
    },
    /// `--task` named no task.
    #[error("no task is named {name:?}; tasks: {}", .known.join(", "))]
    NoSuchTask {
        /// The name given.
        name: String,
        /// Up to 20 task names.
        known: Vec<String>,
    },
}

/// Runs Graphviz `dot` on `text`, giving SVG bytes.
pub fn render_svg(text: String) -> Result<Vec<u8>, DrawError> {
    use graphviz_rust::cmd::Format;
    graphviz_rust::exec_dot(text, vec![Format::Svg.into()]).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            DrawError::NoGraphviz
        } else {
            DrawError::Graphviz(e)
        }
    })
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
