//! The hierarchy miner against recorded programs whose task structure is known by construction
//! (`samples/c/tasks.c`): every true task type must come out as one model type whose
//! occurrences are the true instances.

mod common;

use std::path::PathBuf;
use std::sync::OnceLock;

use scalpel_e2e::score::{
    infer_model, infer_output, load_model as load, load_tasks, report, score, TypeScore,
};
use scalpel_e2e::{own_bin, record_with, Run};
use scalpel_model::graph::Graph;
use scalpel_model::task::{Model, TaskKind};

struct Sample {
    run: Run,
    truth: PathBuf,
    out: PathBuf,
    model: Model,
    graph: Graph,
}

fn sample(mode: &'static str) -> Sample {
    let truth =
        std::env::temp_dir().join(format!("scalpel-tasks-{mode}-{}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&truth);
    let run = record_with(&own_bin("tasks"), &[mode], |c| {
        c.env("SCALPEL_TRUTH", &truth);
    })
    .success();
    let out = run.tmp.path().join("model");
    let (model, graph) = infer_model(&run.dir, &out, &[]);
    Sample {
        run,
        truth,
        out,
        model,
        graph,
    }
}

fn stages() -> &'static Sample {
    static S: OnceLock<Sample> = OnceLock::new();
    S.get_or_init(|| sample("stages"))
}

fn scores(s: &Sample, composed: &[(&str, &[&str])]) -> Vec<TypeScore> {
    let tasks = load_tasks(&s.truth);
    assert!(!tasks.is_empty(), "the sample wrote its truth");
    let sc = score(&s.model, &s.graph, &tasks, composed);
    eprintln!("{}", report(&sc));
    sc
}

fn get<'a>(sc: &'a [TypeScore], ty: &str) -> &'a TypeScore {
    sc.iter().find(|t| t.truth == ty).expect("true type scored")
}

#[test]
fn three_stages_are_recovered_exactly_despite_noise() {
    let s = stages();
    let sc = scores(s, &[("request", &["stage1", "stage2", "stage3"])]);
    for ty in ["request", "stage1", "stage2", "stage3"] {
        let t = get(&sc, ty);
        assert_eq!(t.instances, 1000, "{ty}");
        assert!(
            t.precision == 1.0 && t.recall == 1.0,
            "{ty}: precision {} recall {}",
            t.precision,
            t.recall
        );
    }
    // The request is a task spanning the three stage threads, and nothing else joined it.
    let req = get(&sc, "request").model_type.clone().unwrap().0;
    let ty = &s.model.types[req as usize];
    assert_eq!(ty.kind, TaskKind::Group);
    assert_eq!(ty.top_level, 1000, "every request is a top-level task");
    let tasks = load_tasks(&s.truth);
    let stage_threads: std::collections::BTreeSet<(u32, u32)> =
        tasks.iter().map(|t| (t.pid, t.tid)).collect();
    for occ in &ty.occurrences {
        for &l in &occ.leaves {
            let th = &s.graph.threads[s.graph.leaves[l].thread.index()];
            assert!(
                stage_threads.contains(&(th.pid, th.tid)) || th.pid == th.tid,
                "a request holds a leaf of thread {} (noise)",
                th.tid
            );
        }
    }
    // The noise ping-pong is a task of its own.
    let tree = std::fs::read_to_string(s.out.join("model-tree.txt")).unwrap();
    let pingpong = s
        .model
        .types
        .iter()
        .find(|t| t.name.starts_with("pong → ping"))
        .unwrap_or_else(|| panic!("no ping-pong task:\n{tree}"));
    assert_eq!((pingpong.count, pingpong.top_level), (199, 199), "{tree}");
}

#[test]
fn two_request_types_on_one_pool_are_never_merged() {
    let s = sample("mixed");
    let sc = scores(
        &s,
        &[
            ("get", &["get_ask", "get_serve"]),
            ("put", &["put_ask", "put_serve"]),
        ],
    );
    let (g, p) = (get(&sc, "get"), get(&sc, "put"));
    for t in [g, p] {
        assert!(t.instances > 250, "{}: {}", t.truth, t.instances);
        assert!(
            t.precision >= 0.95 && t.recall >= 0.95,
            "{}: precision {} recall {}",
            t.truth,
            t.precision,
            t.recall
        );
        let ty = &s.model.types[t.model_type.as_ref().unwrap().0 as usize];
        assert_eq!(
            ty.kind,
            TaskKind::Group,
            "{} is a task of the client and a worker",
            t.truth
        );
    }
    let (gt, pt) = (
        g.model_type.clone().unwrap().0,
        p.model_type.clone().unwrap().0,
    );
    assert_ne!(gt, pt, "get and put came out as one task type");
    // No occurrence of either type holds a leaf of the other request type.
    let tasks = load_tasks(&s.truth);
    let inst = scalpel_e2e::score::instance_leaves(
        &s.graph,
        &tasks,
        &[
            ("get", &["get_ask", "get_serve"]),
            ("put", &["put_ask", "put_serve"]),
        ],
    );
    for (mine, other) in [(gt, "put"), (pt, "get")] {
        let foreign: std::collections::BTreeSet<u32> =
            inst[other].iter().flatten().copied().collect();
        let mixed = s.model.types[mine as usize]
            .occurrences
            .iter()
            .filter(|o| o.leaves.iter().any(|l| foreign.contains(&l.get())))
            .count();
        assert_eq!(
            mixed, 0,
            "{mixed} occurrences of type {mine} hold {other} leaves"
        );
    }
}

#[test]
fn a_nested_fan_out_is_a_task_inside_a_task() {
    let s = sample("nested");
    let sc = scores(&s, &[("request", &["dispatch", "finish", "subrequest"])]);
    for ty in ["request", "subrequest", "dispatch", "finish"] {
        let t = get(&sc, ty);
        assert!(
            t.precision >= 0.95 && t.recall >= 0.95,
            "{ty}: precision {} recall {}",
            t.precision,
            t.recall
        );
    }
    let req = get(&sc, "request").model_type.clone().unwrap().0;
    let sub = get(&sc, "subrequest").model_type.clone().unwrap().0;
    assert_ne!(req, sub);
    // The sub-request's type sits below the request's.
    let mut stack = vec![req];
    let mut found = false;
    while let Some(t) = stack.pop() {
        for c in &s.model.types[t as usize].children {
            found |= c.ty.get() == sub;
            stack.push(c.ty.get());
        }
    }
    assert!(
        found,
        "the sub-request is not part of the request's hierarchy"
    );
}

#[test]
fn model_is_byte_identical_with_one_and_two_threads() {
    let s = stages();
    let mut outs = Vec::new();
    for (i, threads) in ["1", "2", "2"].iter().enumerate() {
        let out = s.run.tmp.path().join(format!("det-{i}"));
        let o = infer_output(&s.run.dir, &out, &["--threads", threads]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let read = |f: &str| std::fs::read(out.join(f)).unwrap();
        outs.push((
            read("model.json"),
            read("model.bin"),
            read("model.dot"),
            read("model-tree.txt"),
        ));
    }
    assert!(outs[0].0.len() > 1_000 && outs[0].1.len() > 10_000);
    assert!(outs[0] == outs[1], "1 and 2 threads differ");
    assert!(outs[1] == outs[2], "two runs differ");
}

#[test]
fn names_can_be_overridden_and_bad_options_are_named() {
    let s = stages();
    let names = s.run.tmp.path().join("names.toml");
    let generated = &s
        .model
        .types
        .iter()
        .find(|t| t.name.starts_with("pong → ping"))
        .expect("ping-pong task")
        .name;
    std::fs::write(
        &names,
        format!("[names]\n{generated:?} = \"NoisePingPong\"\n"),
    )
    .unwrap();
    let out = s.run.tmp.path().join("named");
    let o = infer_output(&s.run.dir, &out, &["--names", names.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (model, _) = load(&out);
    assert!(model.types.iter().any(|t| t.name == "NoisePingPong"));
    // Drawing one task: only its parts are drawn.
    let o = infer_output(
        &s.run.dir,
        &out,
        &[
            "--task",
            "NoisePingPong",
            "--names",
            names.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let dot = std::fs::read_to_string(out.join("model.dot")).unwrap();
    assert!(dot.contains("ping") && !dot.contains("stage_two"), "{dot}");

    std::fs::write(&names, "[names]\n\"a\" = 3\n").unwrap();
    let o = infer_output(&s.run.dir, &out, &["--names", names.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("names.toml"), "{err}");
    let o = infer_output(&s.run.dir, &out, &["--task", "no such task"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("no task named \"no such task\"; the closest names"),
        "{err}"
    );
    let o = infer_output(&s.run.dir, &out, &["--min-support", "1"]);
    assert!(!o.status.success());
    let o = infer_output(&s.run.dir, &out, &["--depth", "0"]);
    assert!(!o.status.success());
}

#[test]
fn model_json_follows_the_checked_in_schema() {
    let s = stages();
    let (model, complete, errors) = common::model_json_errors(&s.out);
    assert!(errors.is_empty(), "{errors:#?}");
    // model.json holds no occurrence; the export holds them all.
    assert!(model["types"]
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t.get("occurrences").is_none()));
    assert!(complete["types"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| { t["occurrences"].as_array().is_some_and(|o| !o.is_empty()) }));
    // And the schemas are strict: a misspelt field is an error.
    for (version, doc) in [(2, &model), (1, &complete)] {
        let mut bad = doc.clone();
        bad["mining"]["min_suport"] = serde_json::json!(5);
        assert!(
            !scalpel_e2e::schema::validator(&format!("scalpel-model-{version}")).is_valid(&bad),
            "schema {version}"
        );
    }
}
