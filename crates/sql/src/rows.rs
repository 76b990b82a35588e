//! A query's rows, written for a person (an aligned table) or a tool (CSV, JSON Lines).

use std::io::Write;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::util::pretty::pretty_format_batches;

use crate::error::SqlError;

/// How rows are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum RowFormat {
    /// An aligned text table (the default).
    #[default]
    Table,
    /// Comma-separated values with a header line.
    Csv,
    /// One JSON object per row.
    Jsonl,
}

/// Writes `batches` to `w` as `format`; returns the rows written.
pub fn write_rows(
    w: &mut impl Write,
    batches: &[RecordBatch],
    format: RowFormat,
) -> Result<u64, SqlError> {
    let rows = batches.iter().map(|b| b.num_rows() as u64).sum();
    match format {
        RowFormat::Table => writeln!(w, "{}", pretty_format_batches(batches)?)?,
        RowFormat::Csv => {
            let mut c = datafusion::arrow::csv::WriterBuilder::new()
                .with_header(true)
                .build(&mut *w);
            for b in batches {
                c.write(b)?;
            }
        }
        RowFormat::Jsonl => {
            let mut j = datafusion::arrow::json::LineDelimitedWriter::new(&mut *w);
            for b in batches {
                j.write(b)?;
            }
            j.finish()?;
        }
    }
    Ok(rows)
}
