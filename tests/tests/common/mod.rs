//! Helpers shared by several test files (each includes this module with `mod common;`).

use std::path::Path;

use scalpel_e2e::schema::violations;

/// `model.json` in `out` and the complete model `scalpel export` writes of it, parsed, and the
/// first violations of their schemas (`scalpel-model-2` for `model.json`, `-1` for the complete
/// model) found in them (none is good).
pub fn model_json_errors(out: &Path) -> (serde_json::Value, serde_json::Value, Vec<String>) {
    let model: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("model.json")).unwrap()).unwrap();
    let o = std::process::Command::new(scalpel_e2e::scalpel())
        .args(["export", "--table", "model"])
        .arg(out)
        .output()
        .expect("scalpel runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let complete: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let mut found = violations("scalpel-model-2", &model);
    found.extend(violations("scalpel-model-1", &complete));
    (model, complete, found)
}
