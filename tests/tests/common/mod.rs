//! Helpers shared by several test files (each includes this module with `mod common;`).

use std::path::Path;

/// The checked-in schema of `model.json`, as a validator.
pub fn model_schema() -> jsonschema::Validator {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../model/schema/scalpel-model-1.schema.json");
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    jsonschema::validator_for(&schema).expect("the schema is valid")
}

/// `model.json` in `out`, parsed, and the first schema violations found in it (none is good).
pub fn model_json_errors(
    schema: &jsonschema::Validator,
    out: &Path,
) -> (serde_json::Value, Vec<String>) {
    let model: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("model.json")).unwrap()).unwrap();
    let errors = schema
        .iter_errors(&model)
        .take(5)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    (model, errors)
}
