//! A table built column by column: each column from an iterator over the source rows, its
//! Arrow type chosen by the method, its meaning kept in the field's metadata (`doc`) so that a
//! reader of the Parquet file sees it too.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::builder::{ListBuilder, StringBuilder, StringDictionaryBuilder};
use arrow_array::types::Int32Type;
use arrow_array::{
    ArrayRef, BooleanArray, Int64Array, RecordBatch, StringArray, UInt32Array, UInt64Array,
};
use arrow_schema::{Field, Schema};

use crate::error::TablesError;

/// Columns added so far.
pub(crate) struct Batch {
    table: &'static str,
    fields: Vec<Field>,
    arrays: Vec<ArrayRef>,
}

/// Nanoseconds as SQL engines add and subtract them: signed 64 bits.
pub(crate) fn ns(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

impl Batch {
    pub(crate) fn new(table: &'static str) -> Self {
        Batch {
            table,
            fields: Vec::new(),
            arrays: Vec::new(),
        }
    }

    fn push(mut self, name: &str, doc: &str, array: ArrayRef, nullable: bool) -> Self {
        let meta = HashMap::from([("doc".to_owned(), doc.to_owned())]);
        self.fields
            .push(Field::new(name, array.data_type().clone(), nullable).with_metadata(meta));
        self.arrays.push(array);
        self
    }

    /// An id or count.
    pub(crate) fn u32(self, name: &str, doc: &str, v: impl Iterator<Item = u32>) -> Self {
        self.push(name, doc, Arc::new(v.collect::<UInt32Array>()), false)
    }

    /// An id that may be absent (a foreign key with no row).
    pub(crate) fn u32_opt(
        self,
        name: &str,
        doc: &str,
        v: impl Iterator<Item = Option<u32>>,
    ) -> Self {
        self.push(name, doc, Arc::new(v.collect::<UInt32Array>()), true)
    }

    /// A key the agent gave (an address, a channel key): all 64 bits.
    pub(crate) fn u64(self, name: &str, doc: &str, v: impl Iterator<Item = u64>) -> Self {
        self.push(name, doc, Arc::new(v.collect::<UInt64Array>()), false)
    }

    /// A key that may be absent.
    pub(crate) fn u64_opt(
        self,
        name: &str,
        doc: &str,
        v: impl Iterator<Item = Option<u64>>,
    ) -> Self {
        self.push(name, doc, Arc::new(v.collect::<UInt64Array>()), true)
    }

    /// A time, a duration or a byte count.
    pub(crate) fn i64(self, name: &str, doc: &str, v: impl Iterator<Item = i64>) -> Self {
        self.push(name, doc, Arc::new(v.collect::<Int64Array>()), false)
    }

    /// A time, a duration or a count that may be absent.
    pub(crate) fn i64_opt(
        self,
        name: &str,
        doc: &str,
        v: impl Iterator<Item = Option<i64>>,
    ) -> Self {
        self.push(name, doc, Arc::new(v.collect::<Int64Array>()), true)
    }

    pub(crate) fn bool(self, name: &str, doc: &str, v: impl Iterator<Item = bool>) -> Self {
        let a: BooleanArray = v.map(Some).collect();
        self.push(name, doc, Arc::new(a), false)
    }

    /// Text that differs row to row (a description, a command line).
    pub(crate) fn text<S: AsRef<str>>(
        self,
        name: &str,
        doc: &str,
        v: impl Iterator<Item = Option<S>>,
    ) -> Self {
        let a: StringArray = v.collect();
        self.push(name, doc, Arc::new(a), true)
    }

    /// A name that repeats (a type's, a thread's, a call's): dictionary-encoded.
    pub(crate) fn name<S: AsRef<str>>(
        self,
        name: &str,
        doc: &str,
        v: impl Iterator<Item = Option<S>>,
    ) -> Self {
        let mut b = StringDictionaryBuilder::<Int32Type>::new();
        for s in v {
            b.append_option(s);
        }
        self.push(name, doc, Arc::new(b.finish()), true)
    }

    /// A list of texts (a stack, innermost first; addresses).
    pub(crate) fn list<S: AsRef<str>, L: IntoIterator<Item = S>>(
        self,
        name: &str,
        doc: &str,
        v: impl Iterator<Item = L>,
    ) -> Self {
        let mut b = ListBuilder::new(StringBuilder::new());
        for l in v {
            for s in l {
                b.values().append_value(s);
            }
            b.append(true);
        }
        self.push(name, doc, Arc::new(b.finish()), false)
    }

    pub(crate) fn finish(self) -> Result<RecordBatch, TablesError> {
        let table = self.table;
        let schema = Arc::new(Schema::new(self.fields));
        RecordBatch::try_new(schema, self.arrays)
            .map_err(|source| TablesError::Arrow { table, source })
    }
}
