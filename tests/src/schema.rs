//! The checked-in JSON schemas (`crates/model/schema/`) as checks on documents the tools wrote.

use std::path::Path;

use serde_json::Value;

/// The checked-in schema `name` (`scalpel-diff-1`, `scalpel-model-2`, …) as a validator.
/// Panics when the schema is missing or invalid: that is the tree's fault, not a document's.
pub fn validator(name: &str) -> jsonschema::Validator {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../crates/model/schema")
        .join(format!("{name}.schema.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let schema: Value = serde_json::from_str(&text).expect("the schema is JSON");
    jsonschema::validator_for(&schema).expect("the schema is valid")
}

/// The first violations (at most 5) of schema `name` found in `doc`; none is good.
pub fn violations(name: &str, doc: &Value) -> Vec<String> {
    validator(name)
        .iter_errors(doc)
        .take(5)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect()
}
