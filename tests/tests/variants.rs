//! Variants on a recorded program: one kind of request, sometimes followed by an optional step,
//! is one task type with the step recorded as a variant (`tests/c/variants.c`).

mod common;

use scalpel_e2e::score::infer_model;
use scalpel_e2e::{build_c, record};
use scalpel_model::format::Op;
use scalpel_model::graph::Graph;
use scalpel_model::task::{Model, TaskKind, TaskType};

/// The leaf ids whose type is named `name` and that end at `op`.
fn leaves_named(g: &Graph, name: &str, op: Op) -> Vec<u32> {
    (0..g.leaves.len() as u32)
        .filter(|&l| {
            let leaf = &g.leaves[l as usize];
            g.types[leaf.ty.index()].name == name && leaf.end_op.and_then(|o| o.op()) == Some(op)
        })
        .collect()
}

/// How many of `leaves` the occurrences of `t` hold.
fn held(t: &TaskType, leaves: &[u32]) -> usize {
    t.occurrences
        .iter()
        .flat_map(|o| &o.leaves)
        .filter(|l| leaves.contains(&l.get()))
        .count()
}

/// The group type holding the most of `leaves`, with how many it holds.
fn holder(model: &Model, leaves: &[u32]) -> (usize, usize) {
    model
        .types
        .iter()
        .enumerate()
        .filter(|(_, t)| t.kind == TaskKind::Group)
        .map(|(i, t)| (i, held(t, leaves)))
        .max_by_key(|&(i, n)| (n, std::cmp::Reverse(i)))
        .expect("group types")
}

#[test]
fn an_optional_step_is_a_variant_of_the_request_not_a_task_of_its_own() {
    let exe = build_c("variants", "variants", &[]);
    let r = record(&exe, &[]).success();
    let logged: usize = r
        .stdout()
        .trim()
        .strip_prefix("logged ")
        .and_then(|s| s.split_whitespace().next())
        .and_then(|s| s.parse().ok())
        .expect("the program says how many requests logged");
    let out = r.tmp.path().join("model");
    let (model, g) = infer_model(&r.dir, &out, &[]);
    let replies = leaves_named(&g, "send_reply", Op::Write);
    let logs = leaves_named(&g, "write_log", Op::Write);
    assert_eq!(replies.len(), 60, "one reply leaf per request");
    assert_eq!(logs.len(), logged, "one log leaf per logged request");
    let (t, n_held) = holder(&model, &replies);
    let ty = &model.types[t];
    // The first or last request may sit outside the pattern (no previous reply to chain from).
    assert!(
        n_held >= 58,
        "the request type '{}' holds {n_held} of 60 requests",
        ty.name
    );
    assert_eq!(ty.top_level, ty.count, "every request is a top-level task");
    // The requests that logged are the same type, as a variant that adds the log write.
    let logs_in = |v: &scalpel_model::task::Variant| {
        v.extra.iter().any(|c| {
            model.types[c.ty.index()]
                .leaf_type
                .is_some_and(|lt| g.types[lt.index()].name == "write_log")
        })
    };
    let with_log = ty.variants.iter().position(logs_in).unwrap_or_else(|| {
        panic!(
            "no variant of '{}' adds the log write: {:?}",
            ty.name, ty.variants
        )
    });
    // The others: the core, with the worker's return to its read of the next request (a step
    // with no edge of its own) as their only extra step where it follows the reply.
    let bare = ty
        .variants
        .iter()
        .position(|v| !logs_in(v))
        .expect("a variant without the log write");
    let n_log = ty.variants[with_log].count as usize;
    assert!(
        n_log + 2 >= logged && n_log <= logged,
        "{n_log} occurrences of the log variant for {logged} logged requests"
    );
    assert_eq!(
        ty.variants.iter().map(|v| v.count).sum::<u64>(),
        ty.count,
        "every occurrence has one variant"
    );
    // Each occurrence's variant says what it holds.
    for o in &ty.occurrences {
        let logs_here = o.leaves.iter().filter(|l| logs.contains(&l.get())).count();
        let v = o
            .variant
            .expect("an occurrence of a type with variants names its variant");
        if v as usize == with_log {
            assert_eq!(logs_here, 1);
        } else if v as usize == bare {
            assert_eq!(logs_here, 0);
        }
    }
    // model.json with variants follows the checked-in schema, and so does its complete export.
    let (_, _, errors) = common::model_json_errors(&out);
    assert!(errors.is_empty(), "{errors:#?}");
    // No other task type holds a request.
    for (i, other) in model.types.iter().enumerate() {
        if i != t && other.kind != TaskKind::Leaf {
            let n = held(other, &replies);
            assert_eq!(n, 0, "'{}' holds {n} requests too", other.name);
        }
    }
}

/// An event loop that reads its next request without waiting when it is already there types
/// that read like the one after the wait: both are where the loop takes new work
/// (`tests/c/fetch.c`).
#[test]
fn a_request_read_without_a_wait_is_typed_like_one_after_the_wait() {
    let exe = build_c("fetch", "fetch", &[]);
    let r = record(&exe, &[]).success();
    assert!(r.stdout().contains("served 40"), "{}", r.stdout());
    let out = r.tmp.path().join("model");
    let (_, g) = infer_model(&r.dir, &out, &[]);
    let reads = leaves_named(&g, "read_request", Op::Read);
    assert!(reads.len() >= 40, "{} request reads", reads.len());
    let after_wait =
        |l: u32| g.leaves[l as usize].start_op.and_then(|o| o.op()) == Some(Op::EpollWait);
    let without_wait = reads.iter().filter(|&&l| !after_wait(l)).count();
    assert!(
        without_wait > 0,
        "every request was read after a wait; the test shows nothing"
    );
    let mut types: Vec<u32> = reads
        .iter()
        .map(|&l| g.leaves[l as usize].ty.get())
        .collect();
    types.sort_unstable();
    types.dedup();
    assert_eq!(
        types.len(),
        1,
        "request reads after a wait and without one ({without_wait}) have different types"
    );
}
