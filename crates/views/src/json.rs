//! The top-down view (`scalpel top --format json`) as one pretty-printed JSON document: the
//! serde form of [`TopView`].

use std::io::{self, Write};

use scalpel_analysis::rollup::TopView;

/// Writes `v` as indented JSON and a final newline.
pub fn write_top_json(w: &mut impl Write, v: &TopView) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *w, v).map_err(io::Error::from)?;
    w.write_all(b"\n")
}
