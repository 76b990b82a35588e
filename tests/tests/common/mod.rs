//! Helpers shared by several test files (each includes this module with `mod common;`).

use std::path::Path;

/// The checked-in schema `scalpel-model-N.schema.json`, as a validator: 2 is `model.json` as
/// `scalpel infer` writes it, 1 the complete model `scalpel export --table model` writes.
pub fn model_schema(version: u32) -> jsonschema::Validator {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!(
        "../crates/model/schema/scalpel-model-{version}.schema.json"
    ));
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    jsonschema::validator_for(&schema).expect("the schema is valid")
}

fn errors(schema: &jsonschema::Validator, doc: &serde_json::Value) -> Vec<String> {
    schema
        .iter_errors(doc)
        .take(5)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

/// `model.json` in `out` and the complete model `scalpel export` writes of it, parsed, and the
/// first violations of their schemas (2 and 1) found in them (none is good).
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
    let mut found = errors(&model_schema(2), &model);
    found.extend(errors(&model_schema(1), &complete));
    (model, complete, found)
}
