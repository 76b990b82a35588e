//! C++ names: a program whose class template's methods take namespaced parameters by value,
//! reference and pointer (`tests/c/cppnames.cpp`). Its leaf and task types must be named by the
//! methods (`Queue<store::Item>::pop`), never by a piece of their parameter lists, which is what
//! cutting a demangled name at its last `::` gave (`Who const*)`).

use std::process::Command;

use scalpel_e2e::{build_c, record, scalpel};
use serde_json::Value;

#[test]
fn cpp_methods_name_their_tasks_without_their_parameters() {
    let run = record(&build_c("cppnames", "cppnames", &[]), &[]).success();
    assert!(
        run.stdout().contains("cppnames items 200"),
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
    let names = |file: &str| -> Vec<String> {
        let v: Value =
            serde_json::from_str(&std::fs::read_to_string(out.join(file)).unwrap()).unwrap();
        v["types"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let (leaves, tasks) = (names("graph.json"), names("model.json"));
    for method in ["Queue<store::Item>::pop", "Queue<store::Item>::push"] {
        assert!(
            leaves.iter().any(|n| n.starts_with(method)),
            "no leaf type named {method}: {leaves:?}"
        );
    }
    // The consumer's 200 items go through `pop`; the producer's through `push`.
    assert!(
        tasks.iter().any(|n| n.contains("Queue<store::Item>::push")),
        "{tasks:?}"
    );
    for n in leaves.iter().chain(&tasks) {
        assert!(
            !n.contains('(') && !n.contains(')') && !n.contains(", "),
            "a parameter list in the name {n:?}"
        );
    }
}
