//! The top-down view (`scalpel top --format csv`) as CSV: one row per task, child or
//! contributor.

use std::io::{self, Write};

use scalpel_analysis::rollup::{TaskRow, TopView};

pub(crate) fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The view as CSV: one row per task, child or contributor, `section` telling which.
pub fn write_csv(o: &mut impl Write, v: &TopView) -> io::Result<()> {
    o.write_all(
        b"section,name,what,count,total_ns,mean_ns,p50_ns,p90_ns,p99_ns,max_ns,per_second,bytes_in,bytes_out,bandwidth,share,critical_share,while_queued,cpu_mean_ns\n",
    )?;
    fn task(
        o: &mut impl Write,
        section: &str,
        r: &TaskRow,
        share: f64,
        crit: f64,
    ) -> io::Result<()> {
        writeln!(
            o,
            "{section},{},{:?},{},{},{},{},{},{},{},{:.3},{},{},{:.1},{:.4},{:.4},,{}",
            csv_field(&r.name),
            r.kind,
            r.count,
            r.total_ns,
            r.latency.mean_ns,
            r.latency.p50_ns,
            r.latency.p90_ns,
            r.latency.p99_ns,
            r.latency.max_ns,
            r.per_second,
            r.bytes_in,
            r.bytes_out,
            r.bandwidth,
            share,
            crit,
            r.cpu_mean_ns.map(|c| c.to_string()).unwrap_or_default()
        )
    }
    match &v.expanded {
        None => {
            for r in &v.tasks {
                task(o, "task", r, 1.0, 1.0)?;
            }
        }
        Some(e) => {
            task(o, "task", &e.task, 1.0, 1.0)?;
            for c in &e.children {
                task(o, "child", &c.task, c.latency_share, c.critical_share)?;
            }
            for c in &e.contributors {
                writeln!(
                    o,
                    "contributor,{},{},,,{},,,,,,,,,{:.4},{:.4},{},",
                    csv_field(&c.leaf),
                    c.what,
                    c.per_instance_ns,
                    c.share,
                    c.share,
                    csv_field(c.while_queued.as_deref().unwrap_or(""))
                )?;
            }
        }
    }
    Ok(())
}
