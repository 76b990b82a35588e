//! `clock_fit`: what the messages between two machines say of their clocks, offset and drift,
//! as an aggregate a query groups by pair of machines. It is the fit `scalpel infer` of the
//! traces together makes (`scalpel_model::clockfit`), so the clocks of a fleet whose datasets
//! were written apart, each where its trace is, are one query: here or on a Ballista cluster,
//! whose scheduler and executors register the same function ([`clock_fit`]).
//!
//! `clock_fit(sent, received, outbound, start)` over the messages of one pair (`host`,
//! `other`): `sent` is when a write began on the sender's clock and `received` when the read
//! that took its bytes ended on the receiver's, both in ns; `outbound` says the message went
//! from `host` to `other` (else back); `start` is the time on `other`'s clock at which the
//! offset is given (the least of the group's). The result is a struct: `offset_ns` added to
//! `other`'s times at `start_ns` to put them on `host`'s clock, `drift_ppb` (how much faster
//! `host`'s clock runs), `bound_ns` and `drift_bound_ppb` (half the widths the messages allow),
//! `drift_known` (the messages span enough time to bound the drift below the cap of what clocks
//! can do), `crossed` (the messages contradict each other: the fit is then the midpoint of
//! their closest approach), `messages` and `start_ns`. Null when a direction has no message.
//!
//! Memory: a pair keeps only the messages that can bind its fit (each direction's hull, found
//! exactly, so every engine and every partitioning fits the same points), and counts the rest.
//!
//! Scope: the fit of one pair. Chaining pairs from a reference machine to the others, as
//! `infer` does along the best bounded pairs, is not an aggregate and stays with `infer`.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BooleanArray, Int64Array};
use datafusion::arrow::datatypes::{DataType, Field, Fields, Int64Type};
use datafusion::common::scalar::ScalarStructBuilder;
use datafusion::common::{exec_err, Result, ScalarValue};
use datafusion::logical_expr::{create_udaf, Accumulator, AggregateUDF, Volatility};
use scalpel_model::clockfit::{binding, fit, Message, PairFit};

/// The function's name in SQL.
pub const CLOCK_FIT: &str = "clock_fit";

/// The fields of the result, in order (see the module docs).
fn result_fields() -> Fields {
    let int = |n: &str| Field::new(n, DataType::Int64, false);
    let flag = |n: &str| Field::new(n, DataType::Boolean, false);
    Fields::from(vec![
        int("offset_ns"),
        int("drift_ppb"),
        int("bound_ns"),
        int("drift_bound_ppb"),
        flag("drift_known"),
        flag("crossed"),
        int("messages"),
        int("start_ns"),
    ])
}

/// The aggregate, to register on a session (see the module docs).
pub fn clock_fit() -> AggregateUDF {
    let list = |t: DataType| DataType::List(Arc::new(Field::new_list_field(t, true)));
    create_udaf(
        CLOCK_FIT,
        vec![
            DataType::Int64,
            DataType::Int64,
            DataType::Boolean,
            DataType::Int64,
        ],
        Arc::new(DataType::Struct(result_fields())),
        Volatility::Immutable,
        Arc::new(|_| Ok(Box::<ClockFit>::default())),
        // The messages that can bind (`binding`), how many there were in all, and the start.
        Arc::new(vec![
            list(DataType::Int64),
            list(DataType::Int64),
            list(DataType::Boolean),
            DataType::Int64,
            DataType::Int64,
        ]),
    )
}

/// Messages held before they are cut down to those that can bind: a part's state is cut down
/// anyway, so this only bounds the memory of one part with many messages.
const CUT_AT: usize = 1 << 16;

/// One pair's messages so far: those that can bind, and the others counted.
#[derive(Debug, Default)]
struct ClockFit {
    /// From `host` to `other`, and back.
    forward: Vec<Message>,
    back: Vec<Message>,
    /// Messages seen, the ones dropped as unable to bind included.
    count: u64,
    /// Held messages past which they are cut down next: twice what the last cut left, at
    /// least [`CUT_AT`], so that a hull that stays large is not cut again at every batch.
    cut_at: usize,
    /// The least `start` seen.
    start: Option<i64>,
}

impl ClockFit {
    /// Keeps only the messages that can bind (`binding`: the same set whatever the order and
    /// the parts they came in, so every engine fits the same points).
    fn cut(&mut self) {
        (self.forward, self.back) = binding(&self.forward, &self.back);
        self.cut_at = (2 * (self.forward.len() + self.back.len())).max(CUT_AT);
    }

    /// Adds rows of (sent, received, outbound); rows with a null are left out. Returns how
    /// many were added.
    fn add(&mut self, sent: &Int64Array, received: &Int64Array, out: &BooleanArray) -> Result<u64> {
        let mut added = 0;
        for i in 0..sent.len() {
            if sent.is_null(i) || received.is_null(i) || out.is_null(i) {
                continue;
            }
            let (Ok(s), Ok(r)) = (
                u64::try_from(sent.value(i)),
                u64::try_from(received.value(i)),
            ) else {
                return exec_err!("{CLOCK_FIT}: a negative time (sent or received)");
            };
            let m = Message {
                sent: s,
                received: r,
            };
            if out.value(i) {
                self.forward.push(m);
            } else {
                self.back.push(m);
            }
            added += 1;
        }
        if self.forward.len() + self.back.len() > self.cut_at.max(CUT_AT) {
            self.cut();
        }
        Ok(added)
    }

    fn add_start(&mut self, starts: &Int64Array) {
        let least = starts.iter().flatten().min();
        self.start = match (self.start, least) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }

    /// The result for `f`, the fit at `start` of `count` messages.
    fn result(f: &PairFit, start: i64, count: u64) -> Result<ScalarValue> {
        // Why rounding, as `infer` does for the hosts table: whole ns and ppb are what the
        // messages' times can tell.
        let int = |x: f64| ScalarValue::Int64(Some(x.round() as i64));
        let up = |x: f64| ScalarValue::Int64(Some(x.ceil() as i64));
        let flag = |b: bool| ScalarValue::Boolean(Some(b));
        let values = [
            int(f.offset),
            int(f.drift * 1e9),
            up(f.bound),
            up(f.drift_bound * 1e9),
            flag(f.drift_known),
            flag(f.crossed),
            ScalarValue::Int64(Some(i64::try_from(count).unwrap_or(i64::MAX))),
            ScalarValue::Int64(Some(start)),
        ];
        let mut b = ScalarStructBuilder::new();
        for (field, v) in result_fields().iter().zip(values) {
            b = b.with_scalar(field.as_ref().clone(), v);
        }
        b.build()
    }
}

/// The column at `i` as `T`'s array, or an error naming what was expected.
fn column<'a, T: 'static>(values: &'a [ArrayRef], i: usize, what: &str) -> Result<&'a T> {
    match values.get(i).and_then(|a| a.as_any().downcast_ref::<T>()) {
        Some(a) => Ok(a),
        None => exec_err!("{CLOCK_FIT}: argument {} is not {what}", i + 1),
    }
}

impl Accumulator for ClockFit {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let sent = column::<Int64Array>(values, 0, "a BIGINT")?;
        let received = column::<Int64Array>(values, 1, "a BIGINT")?;
        let out = column::<BooleanArray>(values, 2, "a BOOLEAN")?;
        self.count += self.add(sent, received, out)?;
        self.add_start(column::<Int64Array>(values, 3, "a BIGINT")?);
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        self.cut();
        let all = self.forward.iter().map(|m| (m, true));
        let all: Vec<(&Message, bool)> = all.chain(self.back.iter().map(|m| (m, false))).collect();
        let time = |t: u64| ScalarValue::Int64(Some(i64::try_from(t).unwrap_or(i64::MAX)));
        let sent: Vec<ScalarValue> = all.iter().map(|(m, _)| time(m.sent)).collect();
        let received: Vec<ScalarValue> = all.iter().map(|(m, _)| time(m.received)).collect();
        let out: Vec<ScalarValue> = all
            .iter()
            .map(|&(_, o)| ScalarValue::Boolean(Some(o)))
            .collect();
        Ok(vec![
            ScalarValue::List(ScalarValue::new_list_nullable(&sent, &DataType::Int64)),
            ScalarValue::List(ScalarValue::new_list_nullable(&received, &DataType::Int64)),
            ScalarValue::List(ScalarValue::new_list_nullable(&out, &DataType::Boolean)),
            ScalarValue::Int64(self.start),
            ScalarValue::Int64(Some(i64::try_from(self.count).unwrap_or(i64::MAX))),
        ])
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let lists = |i: usize| match states.get(i) {
            Some(a) if matches!(a.data_type(), DataType::List(_)) => Ok(a.as_list::<i32>()),
            _ => exec_err!("{CLOCK_FIT}: state {} is not a list", i + 1),
        };
        let (sent, received, out) = (lists(0)?, lists(1)?, lists(2)?);
        for row in 0..sent.len() {
            if sent.is_null(row) || received.is_null(row) || out.is_null(row) {
                continue;
            }
            let (s, r, o) = (sent.value(row), received.value(row), out.value(row));
            let (Some(s), Some(r), Some(o)) = (
                s.as_primitive_opt::<Int64Type>(),
                r.as_primitive_opt::<Int64Type>(),
                o.as_boolean_opt(),
            ) else {
                return exec_err!("{CLOCK_FIT}: a state's lists are not of its types");
            };
            self.add(s, r, o)?;
        }
        self.add_start(column::<Int64Array>(states, 3, "a BIGINT state")?);
        let counts = column::<Int64Array>(states, 4, "a BIGINT state")?;
        let counted: i64 = counts.iter().flatten().sum();
        self.count += u64::try_from(counted).unwrap_or(0);
        Ok(())
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        // The same messages in the same order however the parts were merged (`binding` sorts
        // them), so that the fit is the same to the last bit on every engine.
        self.cut();
        let start = self.start.unwrap_or(0);
        let at = u64::try_from(start).unwrap_or(0);
        match fit(&self.forward, &self.back, at) {
            Some(f) => ClockFit::result(&f, start, self.count),
            None => Ok(ScalarStructBuilder::new_null(result_fields())),
        }
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self)
            + (self.forward.capacity() + self.back.capacity()) * std::mem::size_of::<Message>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{RecordBatch, StructArray};
    use datafusion::arrow::datatypes::Schema;
    use datafusion::datasource::MemTable;
    use datafusion::prelude::{SessionConfig, SessionContext};

    /// Messages between `a` and `b`, whose clock reads 2 s behind `a`'s and runs 40 ppm slow:
    /// one each way every 10 ms for 2 s, 30 µs on the wire.
    fn talk() -> (Vec<Message>, Vec<Message>) {
        let b_of = |t_a: u64| (t_a - 2_000_000_000) - (t_a - 5_000_000_000) * 40 / 1_000_000;
        let a_of = |t_b: u64| {
            let guess = t_b + 2_000_000_000;
            guess + (guess - 5_000_000_000) * 40 / 1_000_000
        };
        let (mut forward, mut back) = (Vec::new(), Vec::new());
        for i in 0..200u64 {
            let t = 5_000_000_000 + i * 10_000_000;
            forward.push(Message {
                sent: t,
                received: b_of(t + 30_000),
            });
            let s = b_of(t + 5_000_000);
            back.push(Message {
                sent: s,
                received: a_of(s) + 30_000,
            });
        }
        (forward, back)
    }

    /// `clock_fit` of `forward` and `back` in SQL, the rows in `parts` partitions (so that
    /// partial states are merged when there are several); `None` for a null.
    fn in_sql(forward: &[Message], back: &[Message], parts: usize) -> Result<Option<StructArray>> {
        let schema = Arc::new(Schema::new(vec![
            Field::new("sent", DataType::Int64, false),
            Field::new("received", DataType::Int64, false),
            Field::new("outbound", DataType::Boolean, false),
            Field::new("start", DataType::Int64, false),
        ]));
        let rows: Vec<(&Message, bool)> = forward
            .iter()
            .map(|m| (m, true))
            .chain(back.iter().map(|m| (m, false)))
            .collect();
        let chunk = rows.len().div_ceil(parts).max(1);
        let batches: Vec<Vec<RecordBatch>> = rows
            .chunks(chunk)
            .map(|c| {
                let int = |f: &dyn Fn(&Message) -> u64| -> ArrayRef {
                    Arc::new(Int64Array::from_iter_values(
                        c.iter().map(|(m, _)| f(m) as i64),
                    ))
                };
                let out: ArrayRef =
                    Arc::new(BooleanArray::from_iter(c.iter().map(|&(_, o)| Some(o))));
                let start: ArrayRef = Arc::new(Int64Array::from_iter_values(
                    c.iter().map(|_| 3_000_000_000),
                ));
                let cols = vec![int(&|m| m.sent), int(&|m| m.received), out, start];
                vec![RecordBatch::try_new(schema.clone(), cols).unwrap()]
            })
            .collect();
        let config = SessionConfig::new().with_target_partitions(parts);
        let ctx = SessionContext::new_with_config(config);
        ctx.register_udaf(clock_fit());
        ctx.register_table("m", Arc::new(MemTable::try_new(schema, batches)?))?;
        let rt = tokio::runtime::Builder::new_current_thread().build()?;
        let q = "SELECT clock_fit(sent, received, outbound, start) AS fit FROM m";
        let out = rt.block_on(async { ctx.sql(q).await?.collect().await })?;
        let col = out[0].column(0).as_struct().clone();
        Ok((!col.is_null(0)).then_some(col))
    }

    fn int(s: &StructArray, name: &str) -> i64 {
        let c = s.column_by_name(name).unwrap();
        c.as_primitive::<Int64Type>().value(0)
    }

    #[test]
    fn the_aggregate_is_the_fit_of_its_messages_in_one_partition_or_several() {
        let (forward, back) = talk();
        // The fit of the messages that can bind is the fit of all; the aggregate fits those.
        let (bf, bb) = binding(&forward, &back);
        let want = fit(&bf, &bb, 3_000_000_000).unwrap();
        let all = fit(&forward, &back, 3_000_000_000).unwrap();
        assert!((want.offset - all.offset).abs() < 1e-3, "{want:?} {all:?}");
        for parts in [1, 3] {
            let got = in_sql(&forward, &back, parts).unwrap().unwrap();
            assert_eq!(
                int(&got, "offset_ns"),
                want.offset.round() as i64,
                "{parts}"
            );
            assert_eq!(int(&got, "drift_ppb"), (want.drift * 1e9).round() as i64);
            assert_eq!(int(&got, "bound_ns"), want.bound.ceil() as i64);
            assert_eq!(int(&got, "messages"), 400);
            assert_eq!(int(&got, "start_ns"), 3_000_000_000);
        }
        // And the fit holds the clocks it was made from: 40 ppm, 2 s at b's start.
        assert!((want.drift - 40e-6).abs() <= want.drift_bound, "{want:?}");
        assert!((want.offset - 2e9).abs() <= want.bound, "{want:?}");
    }

    #[test]
    fn one_direction_is_null_and_a_negative_time_is_an_error() {
        let (forward, _) = talk();
        assert!(in_sql(&forward, &[], 1).unwrap().is_none());
        let bad = [Message {
            sent: u64::MAX,
            received: 1,
        }];
        let err = in_sql(&bad, &forward, 1).unwrap_err().to_string();
        assert!(err.contains("a negative time"), "{err}");
    }
}
