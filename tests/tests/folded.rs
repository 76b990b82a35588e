//! Folded code: a function with two names at one address (`tests/c/folded.c`, an alias as
//! identical-code folding leaves it) is shown by both names in the stacks and the leaf's
//! name, never by whichever the symbol table listed first.

use scalpel_e2e::score::infer_model;
use scalpel_e2e::{build_c, record};

#[test]
fn a_function_with_two_names_is_shown_by_both() {
    let exe = build_c("folded", "folded", &["-O1", "-g"]);
    let run = record(&exe, &[]).success();
    let (_, graph) = infer_model(&run.dir, &run.tmp.path().join("model"), &[]);
    let both = "put_reply or put_request";
    let frames: Vec<&String> = graph
        .types
        .iter()
        .flat_map(|t| t.start.frames.iter().chain(&t.end.frames))
        .collect();
    assert!(frames.iter().any(|f| *f == both), "{frames:?}");
    assert!(
        !frames
            .iter()
            .any(|f| *f == "put_reply" || *f == "put_request"),
        "{frames:?}"
    );
    let names: Vec<&str> = graph.types.iter().map(|t| t.name.as_str()).collect();
    assert!(names.iter().any(|n| n.contains(both)), "{names:?}");
}
