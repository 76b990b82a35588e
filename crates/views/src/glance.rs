//! The report's first screen: the answer a reader came for before anything to scroll through.
//! The recurring task that took the most time, its latency, where its critical path went (the
//! leading leaf and kind of time with its share and call), and the first knot of the wait-for
//! graph, with links down to the tables, the drawing and the drill-down.

use std::io::{self, Write};

use scalpel_analysis::rollup::{Expanded, TaskRow};
use scalpel_analysis::waitfor::WaitFor;

use super::html::esc;
use super::units::{duration, pct};
use super::waitfor::knot_name;

/// Writes the "at a glance" section for `heaviest` (the recurring task type with the most
/// summed latency, and its view expanded), when there is one, and the first knot of `waits`.
pub(crate) fn write_glance(
    o: &mut impl Write,
    heaviest: Option<(&TaskRow, &Expanded)>,
    waits: &WaitFor,
) -> io::Result<()> {
    writeln!(o, "<div class=glance id=finding><h2>At a glance</h2>")?;
    match heaviest {
        Some((t, e)) => {
            writeln!(
                o,
                "<p><b>{}</b> took the most time: {} instances, p50 {}, p99 {}, {} summed.",
                esc(&t.name),
                t.count,
                duration(t.latency.p50_ns),
                duration(t.latency.p99_ns),
                duration(t.total_ns)
            )?;
            if let Some(c) = e.contributors.first() {
                // `sleep in flow_control_sleep`, `lock: sem_wait in XLogFlush`, `running`.
                let mut what = esc(&c.what);
                if let Some(k) = c.calls.first() {
                    if k.call != c.what {
                        what += &format!(": {}", esc(&k.call));
                    }
                    if let Some(f) = &k.function {
                        what += &format!(" in {}", esc(f));
                    }
                }
                let queued = c.while_queued.as_ref().map_or_else(String::new, |q| {
                    format!(", while a path leaf ({}) was queued for its thread", esc(q))
                });
                writeln!(
                    o,
                    " Its critical path went <b>{}</b> to <b>{what}</b> (in leaf {}{queued}), {} \
                     per instance.",
                    pct(c.share),
                    esc(&c.leaf),
                    duration(c.per_instance_ns)
                )?;
            }
            writeln!(o, "</p>")?;
        }
        None => writeln!(o, "<p>No task recurs in this trace.</p>")?,
    }
    if let Some(k) = waits.knots.first() {
        writeln!(
            o,
            "<p>Where the waiting ends: <b>{}</b>, {} of all waiting.</p>",
            esc(&knot_name(waits, k)),
            pct(k.share)
        )?;
    }
    writeln!(
        o,
        "<p class=hint>Below: <a href=\"#tasks\">the tasks</a> · <a href=\"#knots\">where the \
         waiting ends</a> · <a href=\"#drawing\">the task model</a> · <a href=\"#drill\">each \
         task drilled down</a></p></div>"
    )
}
