//! `scalpel report`: one self-contained HTML page with the model drawing, the rollup table and
//! a drill-down for the top tasks. No external files, and only small inline scripts (the
//! drawing's pan and zoom), so it opens anywhere and reads without them.

use std::io::{self, Write};

mod source;

use scalpel_model::graph::Graph;
use scalpel_model::task::Model;

use super::diff::write_diff_html;
use super::flame::{write_flame_svg, write_flame_svg_as, Weights};
use super::glance::write_glance;
use super::graphviz::DrawError;
use super::html::esc;
use super::table::{blocked_shares, recorded_note};
use super::units::{bytes, count, duration, pct};
use super::waitfor::{edge_name, knot_name, site_line};
use scalpel_analysis::diff::Diff;
use scalpel_analysis::rollup::{Expanded, Rollup, TaskRow, TopView};
use scalpel_analysis::waitfor::{WaitEdgeId, WaitFor};

pub use source::{
    draw_model, drilled_tasks, expanding, task_flame, type_counts, ReportSource, TaskFlame,
};

/// What the report holds. `Default`: 5 drill-downs, no title.
#[derive(Clone, Debug)]
pub struct ReportOptions {
    /// How many top-level tasks get a drill-down.
    pub tasks: usize,
    /// What the report is about (shown in the heading).
    pub title: String,
    /// A diff against an earlier run and what that run was, shown first (the finding).
    pub baseline: Option<(String, Diff)>,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions {
            tasks: 5,
            title: String::new(),
            baseline: None,
        }
    }
}

const STYLE: &str = "body{font-family:Helvetica,Arial,sans-serif;margin:2em;color:#222;\
overflow-wrap:anywhere}table{border-collapse:collapse;margin:1em 0;display:block;\
overflow-x:auto;max-width:100%}pre{overflow-x:auto}.glance{border-left:4px solid #c44;\
padding:2px 12px;background:#fafafa}td,th{border:1px solid #ccc;padding:3px 8px;\
text-align:right;white-space:nowrap}td:first-child,th:first-child{text-align:left;\
white-space:normal}th{background:#eee}\
.svg{overflow:auto;max-height:85vh;border:1px solid #ccc;cursor:grab}.svg.drag{cursor:grabbing}\
.svg svg{max-width:none}.zoom{margin:4px 0}.zoom button{font-size:14px;min-width:3em;margin-right:4px}\
.zoom span{color:#555;margin-left:6px}\
pre{background:#f6f6f6;padding:6px;\
margin:2px 0 8px 2em;font-size:85%}img.flame{max-width:100%;border:1px solid #ccc}dl{font-size:90%}.hint{color:#555;font-size:90%}dt{font-weight:bold}dd{margin:0 0 4px 1.5em}.bar{display:inline-block;height:10px;background:#c44}";

/// The drawing's pan and zoom: the SVG is resized (so labels stay sharp) about a point that
/// stays where it is, and the box scrolls; at load it shows the topmost node at full size.
/// Zooming out stops at 5%, or lower when that is what fits the whole drawing in its box: a
/// server's model can be 16,000 px wide, and "fit" must fit it however small its labels get.
const ZOOM_SCRIPT: &str = "(function(){var d=document.getElementById('model'),\
s=d.querySelector('svg'),l=document.querySelector('#zoom span');if(!s)return;\
var r0=s.getBoundingClientRect(),w0=r0.width,h0=r0.height,z=1;\
function fit(){return Math.min(d.clientWidth/w0,d.clientHeight/h0,1);}\
function set(n,cx,cy){n=Math.max(Math.min(0.05,fit()),Math.min(4,n));var x=(d.scrollLeft+cx)/z,\
y=(d.scrollTop+cy)/z;z=n;s.style.width=w0*z+'px';s.style.height=h0*z+'px';\
d.scrollLeft=x*z-cx;d.scrollTop=y*z-cy;l.textContent=Math.round(z*100)+'%';}\
function mid(n){set(n,d.clientWidth/2,d.clientHeight/2);}\
document.querySelectorAll('#zoom button').forEach(function(b){b.onclick=function(){\
var k=b.getAttribute('data-z');if(k=='in')mid(z*1.25);else if(k=='out')mid(z/1.25);\
else if(k=='one')mid(1);else{set(fit(),0,0);\
d.scrollLeft=0;d.scrollTop=0;}};});\
d.addEventListener('wheel',function(e){if(!e.ctrlKey&&!e.metaKey)return;e.preventDefault();\
var b=d.getBoundingClientRect();set(z*Math.pow(1.002,-e.deltaY),e.clientX-b.left,e.clientY-b.top);},\
{passive:false});var p=null;d.addEventListener('mousedown',function(e){\
p={x:e.clientX,y:e.clientY,l:d.scrollLeft,t:d.scrollTop};d.classList.add('drag');e.preventDefault();});\
window.addEventListener('mousemove',function(e){if(p){d.scrollLeft=p.l-(e.clientX-p.x);\
d.scrollTop=p.t-(e.clientY-p.y);}});window.addEventListener('mouseup',function(){p=null;\
d.classList.remove('drag');});var b=d.getBoundingClientRect(),t=null;\
d.querySelectorAll('g.node').forEach(function(n){var r=n.getBoundingClientRect();\
if(!t||r.top<t.top)t=r;});if(t){d.scrollLeft=t.left-b.left+t.width/2-d.clientWidth/2;\
d.scrollTop=t.top-b.top-20;}})();";

fn task_cells(r: &TaskRow) -> String {
    format!(
        "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1}</td>\
         <td>{}/s</td><td>{}</td><td>{}</td>",
        r.count,
        duration(r.total_ns),
        duration(r.latency.mean_ns),
        duration(r.latency.p50_ns),
        duration(r.latency.p99_ns),
        duration(r.latency.max_ns),
        r.per_second,
        bytes(r.bandwidth),
        pct(r.running_share),
        esc(&blocked_shares(r))
    )
}

const TASK_HEAD: &str = "<th>count</th><th>total</th><th>mean</th><th>p50</th><th>p99</th>\
<th>max</th><th>per s</th><th>bytes/s</th><th>running</th><th>blocked (critical path)</th>";

/// What every column and word of the report means.
const LEGEND: &str = "<details open class=legend><summary>How to read these tables</summary><dl>\
<dt>count</dt><dd>instances that stand alone; an instance inside another task counts in its \
parent's row</dd>\
<dt>total</dt><dd>the instances' latencies added up; they overlap, so the sum can pass the \
trace's span</dd>\
<dt>mean, p50, p99, max</dt><dd>latency of one instance, from its first leaf's start to its last \
leaf's end</dd>\
<dt>per s, bytes/s</dt><dd>instances and channel bytes per second of the trace</dd>\
<dt>running, blocked (critical path)</dt><dd>where the longest chain of causes through an \
instance spent its time: on a CPU, or waiting in a kind of call (lock, cond, read, sleep, io, \
…)</dd>\
<dt>queued</dt><dd>ready to go on, but its thread was busy with other work or not yet \
scheduled; \"while X waited for this thread\" names the work that had to wait</dd>\
<dt>per parent, latency share, critical share</dt><dd>a child's instances per instance of its \
parent, and its share of the parent's latency and of its critical path</dd>\
<dt>where (the heaviest call)</dt><dd>the call, and the function that made it, that cost this \
step the most; the full stacks are under each step's heading below</dd>\
</dl></details>";

fn drill(o: &mut impl Write, e: &Expanded) -> io::Result<()> {
    writeln!(
        o,
        "<h3>{}</h3><p>{} instances, latency mean {}, critical path {} per instance{}.</p>",
        esc(&e.task.name),
        e.task.count,
        duration(e.task.latency.mean_ns),
        duration(e.critical_ns),
        e.task
            .cpu_mean_ns
            .map(|c| format!(", CPU {} per instance", duration(c)))
            .unwrap_or_default()
    )?;
    if !e.children.is_empty() {
        writeln!(
            o,
            "<table><tr><th>child</th><th>per parent</th><th>latency share</th>\
             <th>critical share</th>{TASK_HEAD}</tr>"
        )?;
        for c in &e.children {
            writeln!(
                o,
                "<tr><td>{}</td><td>{:.2}</td><td>{}</td><td>{}</td>{}</tr>",
                esc(&c.task.name),
                c.per_parent,
                pct(c.latency_share),
                pct(c.critical_share),
                task_cells(&c.task)
            )?;
        }
        writeln!(o, "</table>")?;
    }
    writeln!(
        o,
        "<table><tr><th>critical path: leaf</th><th>what</th><th>where (the heaviest call)</th>\
         <th>per instance</th><th>share</th><th></th></tr>"
    )?;
    for c in &e.contributors {
        let queued = c
            .while_queued
            .as_ref()
            .map(|q| format!(" <small>(while {} waited for this thread)</small>", esc(q)))
            .unwrap_or_default();
        // The call that cost most, named where people can read it without opening anything.
        let site = c
            .calls
            .first()
            .map(|k| match &k.function {
                Some(f) => format!("{} in <b>{}</b>", esc(&k.call), esc(f)),
                None => esc(&k.call),
            })
            .unwrap_or_default();
        writeln!(
            o,
            "<tr><td>{}{queued}</td><td>{}</td><td class=site>{site}</td><td>{}</td><td>{}</td>\
             <td><span class=bar style=\"width:{}px\"></span></td></tr>",
            esc(&c.leaf),
            esc(&c.what),
            duration(c.per_instance_ns),
            pct(c.share),
            (c.share * 200.0).round() as u32
        )?;
    }
    writeln!(o, "</table>")?;
    for c in e.contributors.iter().filter(|c| !c.calls.is_empty()) {
        writeln!(
            o,
            "<details><summary>{} blocked in {}</summary>",
            esc(&c.leaf),
            esc(&c.what)
        )?;
        let mut shown: Option<&Vec<String>> = None;
        for k in &c.calls {
            let stack = if shown == Some(&k.stack) {
                "(the same stack as above)".to_owned()
            } else {
                k.stack.join("\n")
            };
            shown = Some(&k.stack);
            let peer = k
                .peer
                .as_ref()
                .map(|p| format!(", woken or held by {}", esc(p)))
                .unwrap_or_default();
            writeln!(
                o,
                "<div>{} ×{} on {} (total {}, max {}){peer}</div><pre>{}</pre>",
                esc(&k.call),
                k.count,
                esc(&k.object),
                duration(k.total_ns),
                duration(k.max_ns),
                esc(&stack)
            )?;
        }
        writeln!(o, "</details>")?;
    }
    Ok(())
}

/// The flame graph of the task type named `name` (`scalpel flame --task`), as an image: the
/// wall-clock graph when the trace has on-CPU samples, else the off-CPU graph with wakers.
/// inferno's SVG carries a script and element ids of its own, which several copies inline in
/// one page would share, hence an image.
fn flame_picture(o: &mut impl Write, name: &str, flame: &TaskFlame) -> io::Result<()> {
    use base64::Engine as _;
    let mut svg = Vec::new();
    let (what, says) = match flame.period_ns {
        Some(period_ns) => {
            write_flame_svg_as(
                &mut svg,
                &flame.folded,
                &format!("Wall-clock time in {name}"),
                Weights::Samples { period_ns },
            )?;
            (
                "wall-clock",
                "Where its threads spent their time: on the CPU (frames ending <code>_[c]</code>) \
                 and waiting (<code>_[o]</code>, coloured by kind of wait), in samples",
            )
        }
        None => {
            write_flame_svg(
                &mut svg,
                &flame.folded,
                &format!("Off-CPU time in {name}, with wakers"),
            )?;
            (
                "off-CPU",
                "Where its threads waited: off-CPU time by stack, the waker's stack above each \
                 <code>--</code>. Record with <code>--sample 99</code> to see on-CPU time too",
            )
        }
    };
    writeln!(
        o,
        "<p>{says}. <code>scalpel flame --task</code> draws it alone.</p>\
         <img class=flame alt=\"{what} flame graph of {}\" src=\"data:image/svg+xml;base64,{}\">",
        esc(name),
        base64::engine::general_purpose::STANDARD.encode(&svg)
    )
}

/// Knots listed in the report.
const KNOTS: usize = 3;

/// The wait-for graph's knots: where the waiting ends, with the edges inside and into each.
fn knots(o: &mut impl Write, w: &WaitFor) -> io::Result<()> {
    writeln!(o, "<h2 id=knots>Where the waiting ends</h2>")?;
    writeln!(
        o,
        "<p class=hint>The knots of the wait-for graph: thread groups (and the disk, network, \
         scheduler or timers) that wait only on each other, so that nothing else can speed them \
         up. A share is the part of all {} of waiting whose chain of waits (A waited on B while B \
         waited on C…) ends there. <code>scalpel waitfor</code> prints the whole graph and \
         draws it.</p>",
        duration(w.total_wait_ns)
    )?;
    if w.knots.is_empty() {
        return writeln!(
            o,
            "<p>No knot: every chain of waits ends outside the trace.</p>"
        );
    }
    let rows = |o: &mut dyn Write, ids: &[WaitEdgeId]| -> io::Result<()> {
        for id in ids {
            let e = &w.edges[id.index()];
            let site = e.sites.first().map_or_else(String::new, |s| {
                format!("{} {}: {}", s.kind.name(), duration(s.ns), site_line(s))
            });
            writeln!(
                o,
                "<tr><td>{}</td><td class=num>{}</td><td class=num>{}</td><td class=num>{}</td>\
                 <td class=num>{}</td><td>{}</td></tr>",
                esc(&edge_name(w, e)),
                duration(e.weight()),
                duration(e.direct_ns),
                duration(e.cascaded_ns),
                duration(e.idle_ns),
                esc(&site)
            )?;
        }
        Ok(())
    };
    for (i, k) in w.knots.iter().take(KNOTS).enumerate() {
        writeln!(
            o,
            "<h3>Knot {}: {} &mdash; {} of all waiting</h3>",
            i + 1,
            esc(&knot_name(w, k)),
            pct(k.share)
        )?;
        writeln!(
            o,
            "<table><tr><th>waits on</th><th>weight</th><th>direct</th><th>passed on</th>\
             <th>idle</th><th>the heaviest call</th></tr>"
        )?;
        rows(o, &k.inside)?;
        if !k.into.is_empty() {
            writeln!(o, "<tr><th colspan=6>waited on by</th></tr>")?;
            rows(o, &k.into[..k.into.len().min(3)])?;
        }
        writeln!(o, "</table>")?;
    }
    Ok(())
}

/// Writes the report page of one model; returns why it has no drawing if it has none.
pub fn write_report(
    o: &mut impl Write,
    graph: &Graph,
    model: &Model,
    r: &Rollup,
    waits: &WaitFor,
    opts: &ReportOptions,
) -> io::Result<Option<DrawError>> {
    let source = ReportSource::of_model(graph, model, r, opts.tasks);
    write_report_from(o, source, waits, opts)
}

/// Writes the report page of `s` (one model's, or a trace's windows added up); returns why it
/// has no drawing if it has none.
pub fn write_report_from(
    o: &mut impl Write,
    s: ReportSource,
    waits: &WaitFor,
    opts: &ReportOptions,
) -> io::Result<Option<DrawError>> {
    writeln!(
        o,
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>Scalpel report</title>\
         <style>{STYLE}</style></head><body>"
    )?;
    writeln!(o, "<h1>Scalpel report: {}</h1>", esc(&opts.title))?;
    if let Some(v) = &s.view {
        summary(o, v, s.types)?;
    }
    if let Some((old, d)) = &opts.baseline {
        write_diff_html(o, d, old)?;
    }
    let tasks = s.view.as_ref().map_or(&[][..], |v| &v.tasks[..]);
    // Tasks seen once (start-up, shutdown, one-off closures) are folded away below the ones
    // that recur, which are what a reader came for.
    let (recurring, once): (Vec<&TaskRow>, Vec<&TaskRow>) = tasks.iter().partition(|t| t.count > 1);
    let drills: Vec<(&TaskRow, &Expanded)> = s
        .drills
        .iter()
        .filter_map(|(name, e)| Some((tasks.iter().find(|t| &t.name == name)?, e)))
        .collect();
    // The heaviest recurring task gives the answer the page opens with.
    let heaviest = drills.first().copied().filter(|_| !recurring.is_empty());
    // The answer first, then the tables it comes from; the drawing, which fills screens, after.
    write_glance(o, heaviest, waits)?;
    task_tables(o, &recurring, &once)?;
    knots(o, waits)?;
    let err = drawing(o, s.drawing, s.drawing_note.as_deref())?;
    writeln!(o, "<h2 id=drill>Drill-down</h2>")?;
    for (t, e) in &drills {
        drill(o, e)?;
        if let Some(f) = s.flames.get(&t.name) {
            flame_picture(o, &t.name, f)?;
        }
    }
    writeln!(o, "</body></html>")?;
    Ok(err)
}

/// The run in one line: processes, threads, leaves, time, types.
fn summary(
    o: &mut impl Write,
    v: &TopView,
    (leaf_types, task_types): (u64, u64),
) -> io::Result<()> {
    writeln!(
        o,
        "<p>{}, {}, {} over {}; {}, {}.</p>",
        count(v.processes as u64, "process", "processes"),
        count(v.threads as u64, "thread", "threads"),
        count(v.leaves as u64, "leaf task", "leaf tasks"),
        duration(v.span_ns),
        count(leaf_types, "leaf type", "leaf types"),
        count(task_types, "task type", "task types")
    )?;
    if let Some(note) = recorded_note(v) {
        writeln!(o, "<p class=hint>{}</p>", esc(note.trim()))?;
    }
    if let Some(line) = super::table::hosts_line(&v.hosts) {
        writeln!(o, "<p>{}</p>", esc(&line))?;
    }
    Ok(())
}

/// The top-level tasks that recur, then those seen once (folded), and the legend.
fn task_tables(o: &mut impl Write, recurring: &[&TaskRow], once: &[&TaskRow]) -> io::Result<()> {
    writeln!(o, "<h2 id=tasks>Top-level tasks by summed latency</h2>")?;
    let table = |o: &mut dyn Write, rows: &[&TaskRow]| -> io::Result<()> {
        writeln!(o, "<table><tr><th>task</th>{TASK_HEAD}</tr>")?;
        for t in rows {
            writeln!(o, "<tr><td>{}</td>{}</tr>", esc(&t.name), task_cells(t))?;
        }
        writeln!(o, "</table>")
    };
    table(o, recurring)?;
    if !once.is_empty() {
        writeln!(
            o,
            "<details><summary>{} task{} seen once (start-up, shutdown, one-off work)</summary>",
            once.len(),
            if once.len() == 1 { "" } else { "s" }
        )?;
        table(o, once)?;
        writeln!(o, "</details>")?;
    }
    writeln!(o, "{LEGEND}")
}

/// The task model's drawing with its zoom (and `note`: what it is of, when not the whole run);
/// why there is none, when there is none.
fn drawing(
    o: &mut impl Write,
    svg: Result<Vec<u8>, DrawError>,
    note: Option<&str>,
) -> io::Result<Option<DrawError>> {
    writeln!(o, "<h2 id=drawing>Task model</h2>")?;
    if let Some(note) = note {
        writeln!(o, "<p class=hint>{}</p>", esc(note))?;
    }
    Ok(match svg {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            let body = text.find("<svg").map_or(&text[..], |i| &text[i..]);
            // At its own size, so that every label can be read, scrolled to its topmost node
            // (Graphviz centres narrow rows in a wide drawing, so its top left is often empty);
            // dragged to pan, zoomed with the buttons or Ctrl and the wheel about the pointer.
            writeln!(
                o,
                "<p class=hint>Drag the drawing to move around; zoom with the buttons, or with \
                 Ctrl and the mouse wheel; <b>fit</b> shows all of it.</p>\
                 <div class=zoom id=zoom><button data-z=out title=\"zoom out\">&minus;</button>\
                 <button data-z=in title=\"zoom in\">+</button><button data-z=fit>fit</button>\
                 <button data-z=one>100%</button><span>100%</span></div>\
                 <div class=svg id=model>{body}</div><script>{ZOOM_SCRIPT}</script>"
            )?;
            None
        }
        Err(e) => {
            writeln!(o, "<p>No drawing: {}</p>", esc(&e.to_string()))?;
            Some(e)
        }
    })
}
