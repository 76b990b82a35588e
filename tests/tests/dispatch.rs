//! Names under a library's loop: a stripped program whose requests are handled by callbacks
//! from an event loop in a shared library (`tests/c/loopmain.c`, `tests/c/dispatch.c`), as
//! memcached's are from libevent's. The callback's work must be named by the program's module
//! (`pipe read in loopmain`), never by the loop that called it (`in dispatch_run`), while the
//! loop's own wait keeps the loop's name.

use scalpel_e2e::score::infer_model;
use scalpel_e2e::{build_c, build_lib, record, target_dir};

#[test]
fn a_library_loop_never_names_the_program_work_it_called() {
    build_lib("dispatch", &["-O1", "-g"]);
    let dir = target_dir().join("e2e-c");
    let rpath = format!("-Wl,-rpath,{}", dir.display());
    let lib_dir = dir.display().to_string();
    let exe = build_c(
        "loopmain",
        "loopmain",
        &["-O1", "-s", "-L", &lib_dir, "-ldispatch", &rpath],
    );
    let run = record(&exe, &[]).success();
    assert!(
        run.stdout().contains("loopmain requests 200"),
        "{}",
        run.stdout()
    );
    let (_, graph) = infer_model(&run.dir, &run.tmp.path().join("model"), &[]);
    let leaves: Vec<&str> = graph.types.iter().map(|t| t.name.as_str()).collect();
    // The callback's read of a request, on the loop's thread.
    assert!(
        leaves
            .iter()
            .any(|n| n.starts_with("pipe read in loopmain")),
        "{leaves:?}"
    );
    // Nothing the callback did is said to have happened in the loop; the loop's own wait is.
    for n in &leaves {
        let name = n.split(" < ").next().unwrap_or(n);
        assert!(
            !(name.contains("pipe") && name.contains("in dispatch_run")),
            "the program's work named by the library loop that called it: {n:?} in {leaves:?}"
        );
    }
    assert!(
        leaves.iter().any(|n| n.starts_with("dispatch_run")),
        "{leaves:?}"
    );
}
