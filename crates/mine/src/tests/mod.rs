//! The miner on small hand-built graphs, for rules that recorded programs show only by chance.

use scalpel_model::graph::{EdgeKind, Graph, LeafTypeId, ThreadId};
use scalpel_model::task::{Model, TaskKind, TaskType};

use super::{mine, MineOptions};
use scalpel_model::testgraph::GraphBuilder;

mod edges;
mod folds;

/// A leaf as (thread, index on the thread).
type At = (u32, u32);

/// A graph from per-thread leaf types (named `L0`, `L1`, …) and edges between leaves.
fn graph(threads: &[Vec<u32>], edges: &[(At, At, EdgeKind)]) -> Graph {
    let mut b = GraphBuilder::new();
    let n_types = threads.iter().flatten().max().map_or(0, |&m| m + 1);
    for t in 0..n_types {
        b.leaf_type(&format!("L{t}"), None);
    }
    for (th, list) in threads.iter().enumerate() {
        let th = b.thread(&format!("t{th}"));
        for (i, &ty) in list.iter().enumerate() {
            let t = 1_000 * i as u64;
            b.leaf(th, LeafTypeId::new(ty), t, t + 5);
        }
    }
    let at = |(t, i): At| (ThreadId::new(t), i);
    for &(a, z, kind) in edges {
        b.edge(at(a), at(z), kind);
    }
    b.build()
}

/// The model mined from `g` with the default options.
fn mined(g: &Graph) -> Model {
    mine(
        g,
        "graph.json",
        &MineOptions::default(),
        &scalpel_model::progress::Quiet,
    )
    .model
}

/// The leaf types of a task type's first occurrence, sorted.
fn first_leaf_types(g: &Graph, t: &TaskType) -> Vec<LeafTypeId> {
    let mut v: Vec<LeafTypeId> = t
        .occurrences
        .first()
        .map_or(&[][..], |o| &o.leaves)
        .iter()
        .map(|&l| g.leaves[l].ty)
        .collect();
    v.sort_unstable();
    v
}

/// Each task type of `m` as a failing test prints it: name, count, top-level count, and the
/// leaf types of its first occurrence.
type Summary<'m> = Vec<(&'m str, u64, u64, Vec<LeafTypeId>)>;

/// The [`Summary`] of `m`, mined from `g`.
fn summary<'m>(g: &Graph, m: &'m Model) -> Summary<'m> {
    m.types
        .iter()
        .map(|t| {
            (
                t.name.as_str(),
                t.count,
                t.top_level,
                first_leaf_types(g, t),
            )
        })
        .collect()
}

/// A listener (accept 0, push 1) hands each request to a worker (read 2, write 3). After the
/// push the listener sometimes has a step of its own (4, back to its event wait), and after the
/// write the worker sometimes does (5, back to its queue): steps with no edge but program
/// order, present by timing. The request is the top-level task every time, not four types of
/// "request plus whatever came next": the context steps are its optional steps (variants), so
/// that no leaf is left outside the task its thread was doing.
/// The listener and worker of [`a_task_in_varying_context_is_the_top_level_task`]: `requests`
/// requests, the context steps drawn from `seed`.
fn listener_worker(requests: u32, mut seed: u32) -> Graph {
    let (mut listener, mut worker) = (Vec::new(), Vec::new());
    let mut edges = Vec::new();
    for r in 0..requests {
        seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        let (after_push, after_write) = (seed >> 28 < 11, (seed >> 24) & 1 == 0);
        let (l, w) = (listener.len() as u32, worker.len() as u32);
        listener.extend([0, 1]);
        worker.extend([2, 3]);
        edges.push(((0, l), (0, l + 1), EdgeKind::Program));
        edges.push(((0, l + 1), (1, w), EdgeKind::Handoff));
        edges.push(((1, w), (1, w + 1), EdgeKind::Program));
        let mut last = (l + 1, w + 1);
        if after_push {
            listener.push(4);
            edges.push(((0, l + 1), (0, l + 2), EdgeKind::Program));
            last.0 = l + 2;
        }
        if after_write {
            worker.push(5);
            edges.push(((1, w + 1), (1, w + 2), EdgeKind::Program));
            last.1 = w + 2;
        }
        if r + 1 < requests {
            let (nl, nw) = (listener.len() as u32, worker.len() as u32);
            edges.push(((0, last.0), (0, nl), EdgeKind::ProgramWeak));
            edges.push(((1, last.1), (1, nw), EdgeKind::ProgramWeak));
        }
    }
    graph(&[listener, worker], &edges)
}

#[test]
fn a_task_in_varying_context_is_the_top_level_task() {
    let requests = 48u32;
    // Context by a fixed pseudo-random sequence: timing has no period (a periodic one would
    // make "this variant, then that one" a pattern of its own).
    let g = listener_worker(requests, 0x2545_f491);
    let model = mined(&g);
    let summary = summary(&g, &model);
    // Every occurrence holds the four core steps, and some hold a context step too.
    let holds_core = |t: &TaskType| {
        t.kind == TaskKind::Group
            && t.occurrences.iter().all(|o| {
                let tys: Vec<u32> = o.leaves.iter().map(|&l| g.leaves[l].ty.get()).collect();
                (0..4).all(|c| tys.contains(&c))
            })
    };
    let request = model
        .types
        .iter()
        .find(|t| holds_core(t))
        .unwrap_or_else(|| panic!("no request task: {summary:?}"));
    assert_eq!(request.count, u64::from(requests), "{summary:?}");
    assert_eq!(request.top_level, u64::from(requests), "{summary:?}");
    // Each context step is a step of the request its thread had just served.
    let in_request: std::collections::HashSet<usize> = request
        .occurrences
        .iter()
        .flat_map(|o| o.leaves.iter().map(|l| l.index()))
        .collect();
    for (l, leaf) in g.leaves.iter().enumerate() {
        assert!(
            in_request.contains(&l),
            "leaf {l} ({:?}) is in no request: {summary:?}",
            leaf.ty
        );
    }
}

/// A worker reads a request (0, no edge but program order: its bytes came from outside) and
/// posts it (1) to a pool thread (2, woken by a `cond` edge). Once, a post follows another step
/// (3) instead of a read. The read and its offload are one task every other time: a task that
/// stands alone once is not "found elsewhere", and its wrapper is no context to dissolve
/// (nginx's request, a receive joined to its offload 19,967 times, was dissolved for one
/// offload that stood alone).
#[test]
fn one_stray_occurrence_does_not_dissolve_a_task() {
    let (mut worker, mut pool) = (Vec::new(), Vec::new());
    let mut edges = Vec::new();
    let requests = 40u32;
    for r in 0..requests {
        let (w, p) = (worker.len() as u32, pool.len() as u32);
        let first = if r == 7 { 3 } else { 0 };
        worker.extend([first, 1]);
        pool.push(2);
        let into_post = if first == 3 {
            EdgeKind::ProgramWeak
        } else {
            EdgeKind::Program
        };
        edges.push(((0, w), (0, w + 1), into_post));
        edges.push(((0, w + 1), (1, p), EdgeKind::Cond));
        if r + 1 < requests {
            edges.push(((0, w + 1), (0, w + 2), EdgeKind::ProgramWeak));
            edges.push(((1, p), (1, p + 1), EdgeKind::ProgramWeak));
        }
    }
    let g = graph(&[worker, pool], &edges);
    let model = mined(&g);
    let leaf_types = |t: &TaskType| first_leaf_types(&g, t);
    let summary = summary(&g, &model);
    let request = model
        .types
        .iter()
        .find(|t| t.kind == TaskKind::Group && leaf_types(t) == [0, 1, 2].map(LeafTypeId::new))
        .unwrap_or_else(|| panic!("no task of read, post and offload: {summary:?}"));
    assert_eq!(request.top_level, u64::from(requests - 1), "{summary:?}");
}

/// The model `g` gives when `grammar` is replayed first.
fn replayed(g: &Graph, grammar: &crate::Grammar) -> Model {
    replayed_places(g, grammar).0
}

#[test]
fn a_grammar_replayed_on_its_own_graph_gives_the_same_model() {
    let g = listener_worker(48, 0x2545_f491);
    let run = mine(
        &g,
        "graph.json",
        &MineOptions::default(),
        &scalpel_model::progress::Quiet,
    );
    assert!(run.grammar.rules() > 0);
    assert_eq!(replayed(&g, &run.grammar), run.model);
}

/// Learned on the first requests of a run, replayed on a longer run of the same program: the
/// same model as mining the longer run alone.
#[test]
fn a_grammar_learned_on_a_sample_labels_a_longer_run() {
    let sample = listener_worker(16, 0x2545_f491);
    let long = listener_worker(200, 0x2545_f491);
    let learned = mine(
        &sample,
        "graph.json",
        &MineOptions::default(),
        &scalpel_model::progress::Quiet,
    );
    assert_eq!(replayed(&long, &learned.grammar), mined(&long));
}

/// `learn` makes the rules `mine` makes, without the model: replayed, they label a longer run
/// as those of `mine` do, with the same number of rules.
#[test]
fn learn_makes_the_rules_mine_makes() {
    let sample = listener_worker(16, 0x2545_f491);
    let long = listener_worker(200, 0x2545_f491);
    let (opts, quiet) = (MineOptions::default(), scalpel_model::progress::Quiet);
    let mined_sample = mine(&sample, "graph.json", &opts, &quiet);
    let learned = crate::learn(&crate::MineInput::of(&sample), &opts, &quiet);
    assert!(learned.rules() > 0);
    assert_eq!(learned.rules(), mined_sample.grammar.rules());
    assert_eq!(
        replayed(&long, &learned),
        replayed(&long, &mined_sample.grammar)
    );
}

/// A grammar over leaf types the graph does not have changes nothing: the model is the one
/// mining alone gives.
#[test]
fn a_grammar_of_other_leaf_types_changes_nothing() {
    let g = listener_worker(48, 0x2545_f491);
    let mut b = GraphBuilder::new();
    let (m0, m1) = (b.leaf_type("M0", None), b.leaf_type("M1", None));
    let th = b.thread("other");
    for i in 0..12u64 {
        b.leaf(
            th,
            if i % 2 == 0 { m0 } else { m1 },
            1_000 * i,
            1_000 * i + 5,
        );
    }
    for i in 0..11u32 {
        b.edge((th, i), (th, i + 1), EdgeKind::Program);
    }
    let other = b.build();
    let learned = mine(
        &other,
        "graph.json",
        &MineOptions::default(),
        &scalpel_model::progress::Quiet,
    );
    assert!(learned.grammar.rules() > 0);
    assert_eq!(replayed(&g, &learned.grammar), mined(&g));
}

/// Requests of three steps on three threads (0 → 1 → 2), and `other` more whose third step
/// is another's (0 → 1 → 3, on a fourth thread).
fn three_steps(requests: u32, other: u32) -> Graph {
    let all = requests + other;
    let threads = [
        vec![0; all as usize],
        vec![1; all as usize],
        vec![2; requests as usize],
        vec![3; other as usize],
    ];
    let mut edges = Vec::new();
    for i in 0..all {
        edges.push(((0, i), (1, i), EdgeKind::Cond));
        if i < requests {
            edges.push(((1, i), (2, i), EdgeKind::Cond));
        } else {
            edges.push(((1, i), (3, i - requests), EdgeKind::Cond));
        }
    }
    for (t, list) in threads.iter().enumerate() {
        for i in 1..list.len() as u32 {
            edges.push(((t as u32, i - 1), (t as u32, i), EdgeKind::ProgramWeak));
        }
    }
    graph(&threads, &edges)
}

/// Whether the model has a task type of exactly the leaf types `types`.
fn has_task_of(g: &Graph, m: &Model, types: &[u32]) -> bool {
    let want: Vec<LeafTypeId> = types.iter().map(|&t| LeafTypeId::new(t)).collect();
    m.types
        .iter()
        .any(|t| t.kind == TaskKind::Group && first_leaf_types(g, t) == want)
}

/// Where some requests go on to another third step, their first two steps stand in two
/// places, so those two steps are a task of their own. A part of the recording where every
/// request goes on alike keeps that task when it replays the rules learned on the whole, as
/// the whole has it; mined alone, it has no such task. Which way a class goes turns on a few
/// occurrences that a part may not hold (in a written pipeline, the requests the recording's
/// end cut: every window but the last nested each request otherwise than the whole model).
#[test]
fn a_replayed_rule_is_kept_as_where_it_was_learned() {
    let whole = three_steps(40, 10);
    let learned = mine(
        &whole,
        "graph.json",
        &MineOptions::default(),
        &scalpel_model::progress::Quiet,
    );
    assert!(has_task_of(&whole, &learned.model, &[0, 1]));
    assert!(has_task_of(&whole, &learned.model, &[0, 1, 2]));
    let part = three_steps(40, 0);
    assert!(!has_task_of(&part, &mined(&part), &[0, 1]));
    let replayed = replayed(&part, &learned.grammar);
    assert!(has_task_of(&part, &replayed, &[0, 1]));
    assert!(has_task_of(&part, &replayed, &[0, 1, 2]));
}

/// [`replayed`], with where the classes the grammar inlined stand.
fn replayed_places(g: &Graph, grammar: &crate::Grammar) -> (Model, crate::Places) {
    let input = crate::MineInput::of(g);
    let run = crate::mine_with(
        &input,
        "graph.json",
        &MineOptions::default(),
        Some(grammar),
        &scalpel_model::progress::Quiet,
    );
    (run.model, run.places)
}

/// The other way round: learned where every request goes on alike, the first two steps are a
/// piece of the request. A part where some go on to another step finds them under two parents;
/// merged over the parts, the grammar keeps them as a task, and every part that replays it
/// again has that task, as the whole trace has it (Apache: nine requests of one second whose
/// listener's push had a rare stack kept the worker's part a task of its own in the whole
/// model, and the sample held none of them).
#[test]
fn a_class_the_parts_find_apart_is_kept() {
    let sample = three_steps(40, 0);
    let learned = mine(
        &sample,
        "graph.json",
        &MineOptions::default(),
        &scalpel_model::progress::Quiet,
    )
    .grammar;
    assert!(!has_task_of(&sample, &mined(&sample), &[0, 1]));
    let (alike, other) = (three_steps(40, 0), three_steps(40, 10));
    let mut places = crate::Places::default();
    for part in [&alike, &other] {
        let (model, found) = replayed_places(part, &learned);
        assert!(!has_task_of(part, &model, &[0, 1]));
        // One part where every request goes on alike changes nothing.
        if part == &alike {
            assert_eq!(learned.clone().keep_apart(&found), 0);
        }
        places.merge(&found);
    }
    let mut grammar = learned;
    assert_eq!(grammar.keep_apart(&places), 1);
    for part in [&alike, &other] {
        let (model, found) = replayed_places(part, &grammar);
        assert!(has_task_of(part, &model, &[0, 1]));
        assert!(has_task_of(part, &model, &[0, 1, 2]));
        assert_eq!(grammar.clone().keep_apart(&found), 0);
    }
}
