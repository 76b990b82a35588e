//! The README's own example is a test: the task names its `scalpel top` block shows are the
//! names a new recording of the demo gives (`replicated-store --rpc async`, the primary's
//! model, of the release build the demo runs). The names' `#…` suffixes are keyed by the tasks' content, so they must not change
//! from one recording to the next, nor with the debug symbols the machine has for its
//! libraries (libc6-dbg changed them before the stack keys left libraries' names out).

use std::process::Command;

use scalpel_e2e::{release_sample, replicated_primary_of, scalpel};

/// The task names in the README's `scalpel top` example, in order.
fn readme_names() -> Vec<String> {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md"))
        .expect("README.md");
    let section = readme
        .split("## Reading `scalpel top`")
        .nth(1)
        .expect("the README's section on reading top");
    let block = section
        .split("```text\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("a text block in that section");
    block
        .lines()
        .skip_while(|l| !l.starts_with("task "))
        .skip(1)
        .filter(|l| !l.trim_start().starts_with('↳'))
        // A short name shares its line with its figures, two spaces or more after it.
        .map(|l| l.split("  ").next().unwrap_or(l).trim_end().to_owned())
        .collect()
}

#[test]
fn the_readme_top_example_names_what_a_new_recording_of_the_demo_gives() {
    let want = readme_names();
    assert!(want.len() >= 3, "README names: {want:?}");
    // The demo's build: a debug build's stacks, without inlining, are other call paths.
    let exe = release_sample("replicated-store");
    let (_run, model, _) = replicated_primary_of(&exe, &["--rpc", "async"]);
    let o = Command::new(scalpel())
        .arg("top")
        .arg(&model)
        .args(["--format", "json", "--limit", &want.len().to_string()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let top: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let got: Vec<String> = top["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    // Order follows summed latency, which varies; the names must be the same set.
    let sorted = |mut v: Vec<String>| {
        v.sort();
        v
    };
    assert_eq!(
        sorted(got),
        sorted(want),
        "the README's example (section \"Reading `scalpel top`\") names other tasks than the demo \
         gives now: update the README from `scripts/demo.sh`'s output if the names changed on \
         purpose"
    );
}
