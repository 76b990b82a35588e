//! A query's rows, written for a person (an aligned table) or a tool (CSV, JSON Lines).

use std::io::Write;

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
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

/// `batch` with each nested column (a list, a struct, a map) as text (`[a, b]`), which CSV
/// has no other form for; nulls stay null.
fn flat(batch: &RecordBatch) -> Result<RecordBatch, SqlError> {
    let nested = |t: &DataType| {
        matches!(
            t,
            DataType::List(_)
                | DataType::LargeList(_)
                | DataType::FixedSizeList(..)
                | DataType::Struct(_)
                | DataType::Map(..)
        )
    };
    if !batch
        .schema()
        .fields()
        .iter()
        .any(|f| nested(f.data_type()))
    {
        return Ok(batch.clone());
    }
    let opts = FormatOptions::default();
    let mut fields = Vec::new();
    let mut columns: Vec<ArrayRef> = Vec::new();
    for (f, col) in batch.schema().fields().iter().zip(batch.columns()) {
        if !nested(f.data_type()) {
            fields.push(f.as_ref().clone());
            columns.push(Arc::clone(col));
            continue;
        }
        let fmt = ArrayFormatter::try_new(col.as_ref(), &opts)?;
        let text: StringArray = (0..col.len())
            .map(|i| col.is_valid(i).then(|| fmt.value(i).to_string()))
            .collect();
        fields.push(Field::new(f.name(), DataType::Utf8, true));
        columns.push(Arc::new(text));
    }
    Ok(RecordBatch::try_new(
        Arc::new(Schema::new(fields)),
        columns,
    )?)
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
                c.write(&flat(b)?)?;
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
