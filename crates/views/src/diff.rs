//! Two runs compared (`scalpel diff`): a table that fits 120 columns, one JSON document, or
//! CSV with a row per type. The numbers are [`Diff`]'s; this module only lays them out.

use std::io::{self, Write};

use scalpel_analysis::diff::{Cause, Diff, Figures, RunShare, Status, TypeDiff};
use serde::Serialize;

use super::csv::csv_field;
use super::html::esc;
use super::units::{cut, duration, pct, wrap};

/// The JSON document's schema name, bumped when a field changes meaning.
pub const DIFF_SCHEMA: &str = "scalpel-diff/1";

/// Width of the name column; a longer name gets a line of its own.
const NAME: usize = 40;

/// A signed duration: `+3.41 ms`, `-812 ns`, `0 ns`.
fn signed(ns: i64) -> String {
    let sign = if ns > 0 {
        "+"
    } else if ns < 0 {
        "-"
    } else {
        ""
    };
    format!("{sign}{}", duration(ns.unsigned_abs()))
}

/// How the median moved, over the old median: `+38.2%`, or `-` without a base.
fn moved(old: &Figures, new: &Figures) -> String {
    if old.p50_ns == 0 {
        return "-".into();
    }
    let r = new.p50_ns as f64 / old.p50_ns as f64 - 1.0;
    format!("{}{}", if r > 0.0 { "+" } else { "" }, pct(r))
}

/// One word for the row: `slower` or `faster` when the change is beyond noise, `same`
/// otherwise; `new` and `gone` for types one run lacks.
fn verdict(t: &TypeDiff) -> &'static str {
    match (t.status, &t.old, &t.new) {
        (Status::New, ..) => "new",
        (Status::Gone, ..) => "gone",
        (Status::Matched, Some(o), Some(n)) if t.significant => {
            if n.p50_ns > o.p50_ns {
                "slower"
            } else {
                "faster"
            }
        }
        _ => "same",
    }
}

/// Where a change went: the share and the call with its stack (`90.9% of it (165.20 ms → 12.0
/// us per instance): sleep in flow_control_sleep ← sender ← …`), then the leaf that spent it
/// (`in leaf Primary::send_packet #e613`), then, for a wait another thread ended, what that
/// thread was blocked on (`behind it, … was blocked most in io: fdatasync in …`).
pub fn cause_lines(c: &Cause) -> Vec<String> {
    let mut first = format!(
        "{} of it ({} → {} per instance): ",
        pct(c.share_change),
        duration(c.old_ns),
        duration(c.new_ns),
    );
    match &c.call {
        Some(call) => first += &call_at(c.what, call, c.function.as_deref(), &c.stack),
        None => first += c.what,
    }
    let mut second = format!("in leaf {}", c.leaf);
    if let Some(q) = &c.while_queued {
        second += &format!(", spent while a path leaf ({q}) waited for this thread");
    }
    let mut lines = vec![first, second];
    if let Some(b) = &c.behind {
        lines.push(format!(
            "behind it, {} was blocked most in {} ({} a call)",
            b.leaf,
            call_at(b.what, &b.call, b.function.as_deref(), &b.stack),
            duration(b.mean_ns)
        ));
    }
    lines
}

/// `what: call in f ← g ← …`, from the function that made the call outwards (the frames inside
/// it are the library's); `call in f` when the call names its kind (`sleep in f`).
fn call_at(what: &str, call: &str, function: Option<&str>, stack: &[String]) -> String {
    let from = function.and_then(|f| stack.iter().position(|s| s == f));
    let at: Vec<&str> = match (from, function) {
        (Some(k), _) => stack[k..].iter().map(String::as_str).collect(),
        (None, Some(f)) => std::iter::once(f)
            .chain(stack.iter().map(String::as_str))
            .collect(),
        (None, None) => stack.iter().map(String::as_str).collect(),
    };
    let mut s = if call == what {
        call.to_owned()
    } else {
        format!("{what}: {call}")
    };
    if !at.is_empty() {
        s += &format!(" in {}", at.join(" ← "));
    }
    s
}

/// The diff as a table: a summary, then a row per changed type (at most `limit`), each
/// significant one with the line that says where its time went.
pub fn write_diff_table(o: &mut impl Write, d: &Diff, limit: usize) -> io::Result<()> {
    if let Some((name, what)) = finding(d) {
        // Two lines whatever the name's length: the table below shows the whole name.
        writeln!(o, "{}", cut(&format!("finding: task {name}"), 120))?;
        writeln!(o, "{}", cut(&format!("  {what}"), 120))?;
    }
    let changed = d.types.iter().filter(|t| t.significant).count();
    let count = |s: Status| d.types.iter().filter(|t| t.status == s).count();
    writeln!(
        o,
        "diff: {changed} of {} matched task types changed beyond noise ({} with enough instances \
         to test); {} new, {} gone, {} unchanged",
        d.old.matched_types,
        d.tested,
        count(Status::New),
        count(Status::Gone),
        d.unchanged
    )?;
    let share = |m: u64, all: u64| pct(if all == 0 { 1.0 } else { m as f64 / all as f64 });
    writeln!(
        o,
        "matched: old {} of {} types ({} of leaves), new {} of {} ({} of leaves)",
        d.old.matched_types,
        d.old.types,
        share(d.old.matched_leaves, d.old.leaves),
        d.new.matched_types,
        d.new.types,
        share(d.new.matched_leaves, d.new.leaves)
    )?;
    if d.types.is_empty() {
        return writeln!(o, "\nno task type changed");
    }
    let mostly_apart = |r: &RunShare| r.leaves > 0 && r.matched_leaves * 2 < r.leaves;
    if mostly_apart(&d.old) && mostly_apart(&d.new) {
        writeln!(
            o,
            "\nmost leaves of both runs are in task types the other run lacks: are they recordings \
             of the same program?"
        )?;
    }
    writeln!(
        o,
        "\n{:<NAME$} {:<6} {:>15} {:>21} {:>8} {:>11} {:>8}",
        "task", "", "count old → new", "p50 old → new", "p50", "total", "p-value"
    )?;
    for t in d.types.iter().take(limit) {
        row(o, t)?;
    }
    if d.types.len() > limit {
        writeln!(o, "… {} more (--limit)", d.types.len() - limit)?;
    }
    Ok(())
}

/// A type's name as the table and the report show it: a type that runs inside others says so.
fn shown_name(t: &TypeDiff) -> String {
    if t.nested {
        format!("{} (nested)", t.name)
    } else {
        t.name.clone()
    }
}

fn row(o: &mut impl Write, t: &TypeDiff) -> io::Result<()> {
    let full = shown_name(t);
    let name = if full.chars().count() > NAME {
        for line in wrap(&full, 120, 4) {
            writeln!(o, "{line}")?;
        }
        "  ↳"
    } else {
        &full
    };
    let n = |f: &Option<Figures>| f.as_ref().map_or("-".into(), |f| f.count.to_string());
    let p50 = |f: &Option<Figures>| f.as_ref().map_or("-".into(), |f| duration(f.p50_ns));
    let change = match (&t.old, &t.new) {
        (Some(a), Some(b)) => moved(a, b),
        _ => "-".into(),
    };
    let p = t.test.map_or("-".into(), |x| format!("{:.1e}", x.p_value));
    writeln!(
        o,
        "{name:<NAME$} {:<6} {:>15} {:>21} {:>8} {:>11} {:>8}",
        verdict(t),
        format!("{} → {}", n(&t.old), n(&t.new)),
        format!("{} → {}", p50(&t.old), p50(&t.new)),
        change,
        signed(t.total_change_ns),
        p
    )?;
    if t.significant {
        if let Some(c) = &t.cause {
            for (i, line) in cause_lines(c).iter().enumerate() {
                let lead = if i == 0 { "  └ " } else { "    " };
                writeln!(o, "{}", cut(&format!("{lead}{line}"), 120))?;
            }
        }
    }
    if let (Some(a), Some(b)) = (&t.old, &t.new) {
        if a.name != b.name {
            for line in wrap(&format!("    (was {})", a.name), 120, 8) {
                writeln!(o, "{line}")?;
            }
        }
    }
    Ok(())
}

/// The JSON document: the schema's name, what was compared, and the diff.
#[derive(Serialize)]
struct Document<'a> {
    schema: &'static str,
    old_source: &'a str,
    new_source: &'a str,
    #[serde(flatten)]
    diff: &'a Diff,
}

/// The diff as one indented JSON document (schema `model/schema/scalpel-diff-1.schema.json`),
/// `old` and `new` naming what was compared.
pub fn write_diff_json(w: &mut impl Write, d: &Diff, old: &str, new: &str) -> io::Result<()> {
    let doc = Document {
        schema: DIFF_SCHEMA,
        old_source: old,
        new_source: new,
        diff: d,
    };
    serde_json::to_writer_pretty(&mut *w, &doc).map_err(io::Error::from)?;
    w.write_all(b"\n")
}

/// The diff as CSV: one row per changed type, in the table's order.
pub fn write_diff_csv(o: &mut impl Write, d: &Diff) -> io::Result<()> {
    o.write_all(
        b"name,nested,verdict,significant,p_value,old_count,new_count,old_p50_ns,new_p50_ns,old_p90_ns,new_p90_ns,old_p99_ns,new_p99_ns,old_max_ns,new_max_ns,old_total_ns,new_total_ns,total_change_ns,cause_what,cause_leaf,cause_call,cause_function,cause_share_change\n",
    )?;
    for t in &d.types {
        let f = |s: &Option<Figures>, g: fn(&Figures) -> u64| {
            s.as_ref().map_or(String::new(), |x| g(x).to_string())
        };
        let pair = |g: fn(&Figures) -> u64| format!("{},{}", f(&t.old, g), f(&t.new, g));
        let c = t.cause.as_ref();
        let text = |x: Option<&str>| csv_field(x.unwrap_or(""));
        writeln!(
            o,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            csv_field(&t.name),
            t.nested,
            verdict(t),
            t.significant,
            t.test.map_or(String::new(), |x| format!("{:e}", x.p_value)),
            pair(|x| x.count),
            pair(|x| x.p50_ns),
            pair(|x| x.p90_ns),
            pair(|x| x.p99_ns),
            pair(|x| x.max_ns),
            pair(|x| x.total_ns),
            t.total_change_ns,
            text(c.map(|c| c.what)),
            text(c.map(|c| c.leaf.as_str())),
            text(c.and_then(|c| c.call.as_deref())),
            text(c.and_then(|c| c.function.as_deref())),
            c.map_or(String::new(), |c| format!("{:.4}", c.share_change)),
        )?;
    }
    Ok(())
}

/// The finding: the first type changed beyond noise, and how its median moved and where the
/// change went (`p50 +180.23 ms (-84.9%), 90.9% of it in sleep in flow_control_sleep`);
/// `None` when nothing changed beyond noise.
pub fn finding(d: &Diff) -> Option<(String, String)> {
    let t = d.types.iter().find(|t| t.significant)?;
    let (o, n) = (t.old.as_ref()?, t.new.as_ref()?);
    let mut s = format!(
        "p50 {} ({})",
        signed(n.p50_ns as i64 - o.p50_ns as i64),
        moved(o, n)
    );
    if let Some(c) = &t.cause {
        s += &format!(", {} of it in {}", pct(c.share_change), c.what);
        if let Some(f) = c.function.as_ref().or(c.stack.first()) {
            s += &format!(" in {f}");
        }
        if let Some(b) = &c.behind {
            s += &format!(", behind it {}", b.what);
            if let Some(f) = b.function.as_ref().or(b.stack.first()) {
                s += &format!(" in {f}");
            }
        }
    }
    Some((shown_name(t), s))
}

/// The report's first section with a baseline: the finding, then the changed types.
pub fn write_diff_html(o: &mut impl Write, d: &Diff, old: &str) -> io::Result<()> {
    writeln!(o, "<h2>Compared with {}</h2>", esc(old))?;
    match finding(d) {
        Some((name, what)) => writeln!(o, "<p><b>task {}: {}</b></p>", esc(&name), esc(&what))?,
        None => writeln!(o, "<p>No task type changed beyond noise.</p>")?,
    }
    if d.types.is_empty() {
        return Ok(());
    }
    writeln!(
        o,
        "<table><tr><th>task</th><th></th><th>count</th><th>p50</th><th>change</th>\
         <th>total</th><th>p-value</th><th>where the change went</th></tr>"
    )?;
    for t in d.types.iter().take(10) {
        let n = |f: &Option<Figures>| f.as_ref().map_or("-".into(), |f| f.count.to_string());
        let p50 = |f: &Option<Figures>| f.as_ref().map_or("-".into(), |f| duration(f.p50_ns));
        let change = match (&t.old, &t.new) {
            (Some(a), Some(b)) => moved(a, b),
            _ => "-".into(),
        };
        let cause = match (&t.cause, t.significant) {
            (Some(c), true) => cause_lines(c).join(" "),
            _ => String::new(),
        };
        writeln!(
            o,
            "<tr><td>{}</td><td>{}</td><td>{} → {}</td><td>{} → {}</td><td>{}</td><td>{}</td>\
             <td>{}</td><td style=\"text-align:left;white-space:normal\">{}</td></tr>",
            esc(&shown_name(t)),
            verdict(t),
            n(&t.old),
            n(&t.new),
            p50(&t.old),
            p50(&t.new),
            change,
            signed(t.total_change_ns),
            t.test.map_or("-".into(), |x| format!("{:.1e}", x.p_value)),
            esc(&cause)
        )?;
    }
    writeln!(o, "</table>")
}
