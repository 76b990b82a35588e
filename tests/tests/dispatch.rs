//! Names under a library's loop: a stripped program whose requests are handled by callbacks
//! from an event loop in a shared library (`tests/c/loopmain.c`, `tests/c/dispatch.c`), as
//! memcached's are from libevent's. The callback's work must be named by the program's module
//! (`pipe read in loopmain`), never by the loop that called it (`in dispatch_run`), while the
//! loop's own wait keeps the loop's name.

use std::process::Command;

use scalpel_e2e::{build_c, build_lib, record, scalpel, target_dir};
use serde_json::Value;

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
    let out = run.tmp.path().join("model");
    let o = Command::new(scalpel())
        .arg("infer")
        .arg(&run.dir)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("graph.json")).unwrap()).unwrap();
    let leaves: Vec<&str> = v["types"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
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
