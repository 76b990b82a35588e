//! The crates' layering, as `docs/ARCHITECTURE.md` states it: which of our crates each crate
//! may depend on, and that only the command-line crates use the command-line libraries. Cargo
//! keeps a crate from importing one it does not depend on; this keeps a crate from adding a
//! dependency that breaks the layering.

use std::collections::BTreeSet;
use std::path::Path;

/// Each crate under `crates/`, with the crates of ours it may depend on (not counting tests).
const LAYERS: &[(&str, &[&str])] = &[
    ("scalpel-format", &[]),
    ("scalpel-agent", &["scalpel-format"]),
    ("scalpel-model", &["scalpel-format"]),
    ("scalpel-symbols", &["scalpel-model"]),
    ("scalpel-record", &["scalpel-model"]),
    ("scalpel-graph", &["scalpel-model", "scalpel-symbols"]),
    ("scalpel-mine", &["scalpel-model"]),
    ("scalpel-analysis", &["scalpel-model"]),
    ("scalpel-tables", &["scalpel-model", "scalpel-analysis"]),
    ("scalpel-sql", &["scalpel-model", "scalpel-tables"]),
    ("scalpel-ballista", &["scalpel-sql"]),
    (
        "scalpel-views",
        &[
            "scalpel-model",
            "scalpel-graph",
            "scalpel-analysis",
            "scalpel-tables",
        ],
    ),
    (
        "scalpel",
        &[
            "scalpel-model",
            "scalpel-symbols",
            "scalpel-record",
            "scalpel-graph",
            "scalpel-mine",
            "scalpel-analysis",
            "scalpel-views",
            "scalpel-tables",
            "scalpel-sql",
        ],
    ),
];

/// Libraries for a command line, which only the command-line crates may use.
const CLI_ONLY: &[&str] = &["clap", "anyhow", "indicatif"];

/// The crates that are a command and nothing else: `scalpel`, and `scalpel-ballista` (a node
/// of a Ballista cluster).
const COMMANDS: &[&str] = &["scalpel", "scalpel-ballista"];

fn manifests() -> Vec<(String, toml::Table)> {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&crates).unwrap() {
        let path = entry.unwrap().path().join("Cargo.toml");
        let text = std::fs::read_to_string(&path).unwrap();
        let table: toml::Table = text
            .parse()
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let name = table["package"]["name"].as_str().unwrap().to_owned();
        out.push((name, table));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn dependencies(table: &toml::Table) -> BTreeSet<String> {
    table
        .get("dependencies")
        .and_then(|d| d.as_table())
        .map(|d| d.keys().cloned().collect())
        .unwrap_or_default()
}

#[test]
fn every_crate_depends_only_on_the_crates_below_it() {
    let found = manifests();
    assert_eq!(found.len(), LAYERS.len(), "a crate is missing from LAYERS");
    for (name, table) in &found {
        let (_, allowed) = LAYERS
            .iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("{name}: not in LAYERS; say where it sits"));
        let ours: BTreeSet<String> = dependencies(table)
            .into_iter()
            .filter(|d| d.starts_with("scalpel"))
            .collect();
        let wrong: Vec<&String> = ours
            .iter()
            .filter(|d| !allowed.contains(&d.as_str()))
            .collect();
        assert!(
            wrong.is_empty(),
            "{name} depends on {wrong:?}, above it or beside it"
        );
    }
}

#[test]
fn only_the_command_line_crate_uses_command_line_libraries() {
    for (name, table) in manifests() {
        if COMMANDS.contains(&name.as_str()) {
            continue;
        }
        let deps = dependencies(&table);
        let cli: Vec<&&str> = CLI_ONLY.iter().filter(|d| deps.contains(**d)).collect();
        assert!(cli.is_empty(), "{name} depends on {cli:?}");
    }
}
