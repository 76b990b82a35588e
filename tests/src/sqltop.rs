//! `top`'s figures against the same figures computed in SQL by `scalpel-sql`, with the query
//! `docs/guide/tables.md` gives for it, on the tables in memory and on the Parquet dataset
//! written from them: the check that the tables and the rollups tell one story.

use std::collections::BTreeMap;
use std::path::Path;

use scalpel_analysis::rollup::{rollup, top_view, TopOptions};
use scalpel_model::graph::Graph;
use scalpel_model::task::Model;
use scalpel_sql::{write_rows, Engine, RowFormat};
use scalpel_tables::{build_tables, write_dataset, TableSource, DEFAULT_WINDOW_NS};
use serde_json::Value;

/// The tables guide.
pub fn guide() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/guide/tables.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every ```sql block of the guide, with the heading it is under.
pub fn guide_queries() -> Vec<(String, String)> {
    let mut out = Vec::new();
    let (mut heading, mut block): (String, Option<String>) = (String::new(), None);
    for line in guide().lines() {
        match (&mut block, line.trim_end()) {
            (None, l) if l.starts_with('#') => {
                heading = l.trim_start_matches('#').trim().to_owned()
            }
            (None, "```sql") => block = Some(String::new()),
            (Some(b), "```") => {
                out.push((heading.clone(), std::mem::take(b)));
                block = None;
            }
            (Some(b), l) => {
                b.push_str(l);
                b.push('\n');
            }
            _ => {}
        }
    }
    out
}

/// The guide's query for `top`'s table.
pub fn top_query() -> String {
    guide_queries()
        .into_iter()
        .find(|(h, _)| h.contains("`top` in SQL"))
        .map(|(_, q)| q)
        .expect("docs/guide/tables.md has a query under a heading with \"`top` in SQL\"")
}

/// Runs `sql` on `engine`; the rows as JSON objects.
pub fn rows(engine: &Engine, sql: &str) -> Result<Vec<Value>, String> {
    let batches = engine.query(sql).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    write_rows(&mut out, &batches, RowFormat::Jsonl).map_err(|e| e.to_string())?;
    Ok(String::from_utf8_lossy(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or(Value::Null))
        .collect())
}

/// `top`'s rows by name: (count, mean, p50, p90, p99, max, total, bytes in, bytes out) and
/// (per second, running share).
type Figures = ([u64; 9], [f64; 2]);

fn top_figures(g: &Graph, m: &Model) -> BTreeMap<String, Figures> {
    let r = rollup(g, m);
    let opts = TopOptions {
        limit: usize::MAX,
        ..TopOptions::default()
    };
    let view = top_view(g, m, &r, &opts).expect("top's view");
    view.tasks
        .iter()
        .map(|t| {
            let l = &t.latency;
            let ints = [
                t.count,
                l.mean_ns,
                l.p50_ns,
                l.p90_ns,
                l.p99_ns,
                l.max_ns,
                t.total_ns,
                t.bytes_in,
                t.bytes_out,
            ];
            (t.name.clone(), (ints, [t.per_second, t.running_share]))
        })
        .collect()
}

fn sql_figures(rows: &[Value]) -> BTreeMap<String, Figures> {
    let int = |r: &Value, k: &str| r[k].as_u64().unwrap_or(u64::MAX);
    let float = |r: &Value, k: &str| r[k].as_f64().unwrap_or(f64::NAN);
    rows.iter()
        .map(|r| {
            let ints = [
                "count",
                "mean_ns",
                "p50_ns",
                "p90_ns",
                "p99_ns",
                "max_ns",
                "total_ns",
                "bytes_in",
                "bytes_out",
            ]
            .map(|k| int(r, k));
            let name = r["name"].as_str().unwrap_or("").to_owned();
            (
                name,
                (ints, [float(r, "per_second"), float(r, "running_share")]),
            )
        })
        .collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// Where `top` and the SQL differ, and how many types `top` had.
pub fn differences(
    want: &BTreeMap<String, Figures>,
    got: &BTreeMap<String, Figures>,
) -> Vec<String> {
    let mut out = Vec::new();
    for (name, w) in want {
        match got.get(name) {
            None => out.push(format!("{name}: in top, not in the SQL's rows")),
            Some(g) if g.0 != w.0 || !close(g.1[0], w.1[0]) || !close(g.1[1], w.1[1]) => {
                out.push(format!("{name}: top {w:?}, SQL {g:?}"))
            }
            Some(_) => {}
        }
    }
    for name in got.keys().filter(|n| !want.contains_key(*n)) {
        out.push(format!("{name}: in the SQL's rows, not in top"));
    }
    out
}

/// Compares `top` with the guide's query on the tables in memory and on a Parquet dataset
/// written in `scratch`; returns (types compared, the differences).
pub fn compare(g: &Graph, m: &Model, scratch: &Path) -> Result<(usize, Vec<String>), String> {
    let want = top_figures(g, m);
    let tables = build_tables(g, Some(m), DEFAULT_WINDOW_NS).map_err(|e| e.to_string())?;
    let query = top_query();
    let mut diffs = Vec::new();
    let memory = Engine::from_tables(&tables).map_err(|e| e.to_string())?;
    let in_memory = rows(&memory, &query)?;
    diffs.extend(
        differences(&want, &sql_figures(&in_memory))
            .into_iter()
            .map(|d| format!("in memory: {d}")),
    );
    let src = TableSource::new(g, Some(m), DEFAULT_WINDOW_NS);
    write_dataset(scratch, src).map_err(|e| e.to_string())?;
    let parquet =
        Engine::from_dataset(scratch, &scalpel_sql::Place::Embedded).map_err(|e| e.to_string())?;
    let from_files = rows(&parquet, &query)?;
    if from_files != in_memory {
        diffs.push("the Parquet dataset's rows differ from the tables' in memory".to_owned());
    }
    Ok((want.len(), diffs))
}

/// `top`'s rows from `scalpel top --format json`'s document, by name.
pub fn top_json_figures(top: &Value) -> BTreeMap<String, Figures> {
    let int = |v: &Value, k: &str| v[k].as_u64().unwrap_or(u64::MAX);
    let rows = top["tasks"].as_array().map_or(&[][..], Vec::as_slice);
    rows.iter()
        .map(|t| {
            let l = &t["latency"];
            let ints = [
                int(t, "count"),
                int(l, "mean_ns"),
                int(l, "p50_ns"),
                int(l, "p90_ns"),
                int(l, "p99_ns"),
                int(l, "max_ns"),
                int(t, "total_ns"),
                int(t, "bytes_in"),
                int(t, "bytes_out"),
            ];
            let float = |k: &str| t[k].as_f64().unwrap_or(f64::NAN);
            let name = t["name"].as_str().unwrap_or("").to_owned();
            (name, (ints, [float("per_second"), float("running_share")]))
        })
        .collect()
}

/// Where `top`'s JSON document and the guide's query's rows (JSON objects) differ.
pub fn json_differences(top: &Value, sql_rows: &[Value]) -> Vec<String> {
    differences(&top_json_figures(top), &sql_figures(sql_rows))
}
