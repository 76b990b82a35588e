//! Golden files: every view of one hand-built server graph, byte for byte. The `top` table,
//! CSV and JSON, `model.dot`, the model tree, the timeline, the OTLP traces and the report HTML (its Graphviz drawing left
//! out, since its bytes are Graphviz's) must equal the files in `tests/golden/`. After a
//! change that alters a view on purpose, `SCALPEL_BLESS=1 cargo test -p scalpel
//! --test golden` rewrites them; review the diff before committing it. And the rollups of the
//! same graph as the windows of a trace, added up, against its own.

use std::path::PathBuf;

use scalpel::{Pipeline, PipelineOptions};
use scalpel_analysis::rollup::{
    leaves_held, task_spans, top_view, top_view_of, Rollup, TopOptions, TypeStats, WindowsRollup,
};
use scalpel_analysis::waitfor::{wait_for, WaitForOptions};
use scalpel_model::format::Op;
use scalpel_model::graph::{EdgeKind, Graph, Leaf, OpName};
use scalpel_model::progress::Quiet;
use scalpel_model::task::TaskType;
use scalpel_model::testgraph::GraphBuilder;
use scalpel_views::model::{fitted_dot, ModelDraw};
use scalpel_views::report::{write_report, ReportOptions};
use scalpel_views::timeline::{write_timeline, TimelineOptions};
use scalpel_views::{csv, json, table, tree};

/// A listener that accepts and pushes each of 24 requests to one of two workers, which pop it,
/// read the request (100 bytes, sometimes after a lock wait), and write the reply (4 KiB).
/// Times vary by a fixed pseudo-random sequence so that percentiles differ.
fn server() -> Graph {
    let mut b = GraphBuilder::new();
    let accept = b.leaf_type("accept_loop", Some(Op::Accept));
    let push = b.leaf_type("queue_push", Some(Op::CondSignal));
    let pop = b.leaf_type("queue_pop", Some(Op::CondWait));
    let read = b.leaf_type("read_request", Some(Op::Read));
    let write = b.leaf_type("send_reply", Some(Op::Write));
    let listener = b.thread("listener");
    let workers = [b.thread("worker-1"), b.thread("worker-2")];
    let mut seed = 0x9e37_79b9_u32;
    let mut next = |m: u64| {
        seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        u64::from(seed >> 8) % m
    };
    let op = |o: Op| Some(OpName::from(o));
    let mut last = [None, None, None];
    for r in 0..24u64 {
        let t = 1_000_000 + r * 500_000;
        let w = workers[(r % 2) as usize];
        let a = b.push(
            listener,
            Leaf {
                end_op: op(Op::Accept),
                block_ns: 20_000 + next(50_000),
                ..Leaf::new(listener, accept, t, t + 5_000)
            },
        );
        let p = b.push(
            listener,
            Leaf {
                start_op: op(Op::Accept),
                end_op: op(Op::CondSignal),
                ..Leaf::new(listener, push, t + 5_000, t + 6_000)
            },
        );
        let q = b.push(
            w,
            Leaf {
                end_op: op(Op::CondWait),
                block_ns: 3_000 + next(4_000),
                ..Leaf::new(w, pop, t + 2_000, t + 3_000)
            },
        );
        let work = 40_000 + next(120_000);
        let lock = if r % 3 == 0 { 10_000 + next(5_000) } else { 0 };
        let rd = b.push(
            w,
            Leaf {
                start_op: op(Op::CondWait),
                end_op: op(Op::Read),
                bytes_in: 100,
                lock_ns: lock,
                block_ns: 2_000,
                ..Leaf::new(w, read, t + 10_000, t + 10_000 + work)
            },
        );
        let wr = b.push(
            w,
            Leaf {
                start_op: op(Op::Read),
                end_op: op(Op::Write),
                bytes_out: 4096,
                block_ns: 1_000 + next(1_000),
                ..Leaf::new(w, write, t + 12_000 + work, t + 20_000 + work)
            },
        );
        b.edge(a, p, EdgeKind::Program);
        b.edge(p, q, EdgeKind::Cond);
        b.edge(q, rd, EdgeKind::Program);
        b.edge(rd, wr, EdgeKind::Program);
        for (slot, (first, end)) in [(0, (a, p)), (1 + (r % 2) as usize, (q, wr))] {
            if let Some(prev) = last[slot] {
                b.edge(prev, first, EdgeKind::ProgramWeak);
            }
            last[slot] = Some(end);
        }
    }
    b.build()
}

fn golden(name: &str, actual: &[u8]) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    if std::env::var_os("SCALPEL_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read(&path).unwrap_or_else(|e| {
        panic!("{}: {e} (SCALPEL_BLESS=1 writes it)", path.display());
    });
    if expected != actual {
        let (e, a) = (
            String::from_utf8_lossy(&expected),
            String::from_utf8_lossy(actual),
        );
        let line = e.lines().zip(a.lines()).position(|(x, y)| x != y);
        panic!(
            "{} differs (first at line {}; SCALPEL_BLESS=1 rewrites it):\n--- expected\n{}\n--- actual\n{}",
            path.display(),
            line.map_or(e.lines().count().min(a.lines().count()) + 1, |l| l + 1),
            line.and_then(|l| e.lines().nth(l)).unwrap_or("(end)"),
            line.and_then(|l| a.lines().nth(l)).unwrap_or("(end)"),
        );
    }
}

#[test]
fn every_view_of_the_server_graph_matches_its_golden_file() {
    let graph = server();
    let pipeline = Pipeline::new(PipelineOptions::default()).unwrap();
    let model = pipeline.model(&graph, &Quiet).model;
    let r = pipeline.rollup(&graph, &model);

    let view = top_view(&graph, &model, &r, &TopOptions::default()).unwrap();
    let request = view.tasks.first().expect("a top-level task").name.clone();
    let expanded = TopOptions {
        expand: Some(request),
        limit: 4,
        ..TopOptions::default()
    };
    let expanded = top_view(&graph, &model, &r, &expanded).unwrap();
    for (name, v) in [("top", &view), ("top-expand", &expanded)] {
        let mut out = Vec::new();
        table::write_table(&mut out, v).unwrap();
        // The default table fits 120 columns (a name longer than its column is printed whole
        // on a line of its own, and none here is that long).
        let text = String::from_utf8(out.clone()).unwrap();
        let widest = text.lines().map(|l| l.chars().count()).max().unwrap_or(0);
        assert!(widest <= 120, "{name}: a line of {widest} columns\n{text}");
        golden(&format!("{name}.txt"), &out);
        let mut out = Vec::new();
        let wide = table::TableOptions {
            wide: true,
            ..table::TableOptions::default()
        };
        table::write_table_with(&mut out, v, wide).unwrap();
        golden(&format!("{name}-wide.txt"), &out);
        let mut out = Vec::new();
        csv::write_csv(&mut out, v).unwrap();
        golden(&format!("{name}.csv"), &out);
        let mut out = Vec::new();
        json::write_top_json(&mut out, v).unwrap();
        golden(&format!("{name}.json"), &out);
    }

    let draw = ModelDraw {
        mean_latency: r.types.iter().map(|s| s.latency.mean_ns).collect(),
        ..ModelDraw::default()
    };
    let (dot, _) = fitted_dot(&model, &graph, &draw).unwrap();
    golden("model.dot", dot.as_bytes());
    let mut out = Vec::new();
    tree::write_tree(&mut out, &model).unwrap();
    golden("model-tree.txt", &out);

    let mut html = Vec::new();
    let opts = ReportOptions {
        tasks: 5,
        title: "golden server".into(),
        baseline: None,
    };
    let mut timeline = Vec::new();
    let spans = task_spans(&graph, &model);
    write_timeline(
        &mut timeline,
        &graph,
        &model,
        &spans,
        &TimelineOptions::default(),
    )
    .unwrap();
    golden("timeline.json", &timeline);
    let mut otlp = Vec::new();
    scalpel_views::otlp::write_otlp(&mut otlp, &graph, &model, &spans).unwrap();
    golden("traces.otlp.jsonl", &otlp);

    let waits = wait_for(&graph, &model, &WaitForOptions::default());
    write_report(&mut html, &graph, &model, &r, &waits, &opts).unwrap();
    golden(
        "report.html",
        without_drawing(&String::from_utf8(html).unwrap()).as_bytes(),
    );
}

/// The report with its drawing (Graphviz's SVG, or the line saying why there is none) replaced
/// by a marker, so that the file does not depend on the Graphviz installed.
fn without_drawing(html: &str) -> String {
    let heading = "<h2 id=drawing>Task model</h2>\n";
    let start = html.find(heading).expect("a model section") + heading.len();
    let end = html.find("<h2 id=drill>Drill-down").expect("a drill-down");
    format!("{}(drawing)\n{}", &html[..start], &html[end..])
}

/// Pipelines with their own worker counts live side by side in one process (each owns its
/// pool; a second one used to fail, the first having set rayon's global pool) and give the
/// same model.
#[test]
fn pipelines_with_their_own_thread_counts_agree() {
    let graph = server();
    let with = |n| {
        let p = Pipeline::new(PipelineOptions {
            threads: Some(n),
            ..PipelineOptions::default()
        })
        .unwrap();
        serde_json::to_string(&p.model(&graph, &Quiet).model).unwrap()
    };
    let one = with(1);
    assert_eq!(one, with(2));
    assert_eq!(one, with(1));
}

/// `r` with what the windows' sum leaves out or rounds: the instance lists, the children's
/// shares past nine digits, and the order of blocked calls of equal time.
fn comparable(r: &Rollup) -> Rollup {
    let mut r = r.clone();
    for s in r.types.iter_mut().chain(r.top_level.iter_mut()) {
        for c in &mut s.children {
            c.latency_share = (c.latency_share * 1e9).round();
            c.critical_share = (c.critical_share * 1e9).round();
        }
    }
    r.blame
        .sort_by_key(|b| (b.leaf_type, std::cmp::Reverse(b.total_ns), format!("{b:?}")));
    r
}

#[test]
fn the_windows_added_up_are_the_sums_of_their_rollups() {
    let graph = server();
    let pipeline = Pipeline::new(PipelineOptions::default()).unwrap();
    let model = pipeline.model(&graph, &Quiet).model;
    let r = pipeline.rollup(&graph, &model);
    let request = top_view(&graph, &model, &r, &TopOptions::default())
        .unwrap()
        .tasks[0]
        .name
        .clone();
    let views = [
        TopOptions::default(),
        TopOptions {
            expand: Some(request),
            ..TopOptions::default()
        },
    ];

    // One window: its own rollup (its instances' latencies in order of start among it, which
    // `diff` tests), view and leaves held.
    let mut one = WindowsRollup::new();
    one.add(&graph, &model, &r);
    let scalpel_analysis::rollup::WindowsSum {
        types,
        rollup: sum,
        counts,
        held,
    } = one.finish();
    assert_eq!(held, leaves_held(&model));
    let names = |t: &[TaskType]| t.iter().map(|t| t.name.clone()).collect::<Vec<_>>();
    assert_eq!(names(&types), names(&model.types));
    assert_eq!(comparable(&sum), comparable(&r));
    for opts in &views {
        let mut whole = top_view(&graph, &model, &r, opts).unwrap();
        whole.windows = 1;
        assert_eq!(top_view_of(&counts, &types, &sum, opts).unwrap(), whole);
    }

    // The same window twice: counts, sums and rates double (the span is the same); the
    // percentiles and the children's shares stay.
    let mut two = WindowsRollup::new();
    two.add(&graph, &model, &r);
    two.add(&graph, &model, &r);
    let scalpel_analysis::rollup::WindowsSum {
        rollup: sum2,
        counts: counts2,
        held: held2,
        ..
    } = two.finish();
    assert_eq!(counts2.leaves, 2 * graph.leaves.len());
    for (a, b) in held2.iter().zip(&held) {
        assert_eq!((a.top_level, a.all), (2 * b.top_level, 2 * b.all));
    }
    assert_eq!((counts2.threads, counts2.windows), (counts.threads, 2));
    for (a, b) in sum2.types.iter().zip(&r.types) {
        assert_eq!((a.count, a.total_ns), (2 * b.count, 2 * b.total_ns));
        assert_eq!(
            (a.critical_ns, a.bytes_out),
            (2 * b.critical_ns, 2 * b.bytes_out)
        );
        assert_eq!(a.latency, b.latency);
        assert_eq!(
            a.by_start_ns,
            [&b.by_start_ns[..], &b.by_start_ns[..]].concat()
        );
        assert!((a.per_second - 2.0 * b.per_second).abs() <= 1e-9 * a.per_second);
    }
    let s2 = comparable(&sum2);
    let s1 = comparable(&r);
    for (a, b) in s2.types.iter().zip(&s1.types) {
        let shares = |s: &TypeStats| {
            s.children
                .iter()
                .map(|c| (c.latency_share, c.critical_share))
                .collect::<Vec<_>>()
        };
        assert_eq!(shares(a), shares(b));
    }
    for (a, b) in s2.blame.iter().zip(&s1.blame) {
        assert_eq!(
            (a.count, a.total_ns, a.max_ns),
            (2 * b.count, 2 * b.total_ns, b.max_ns)
        );
    }
}
