//! `rescore`: scores a model kept from a test run again, for work on the scoring rule or the
//! miner without recording the sample again.
//!
//! Usage: `rescore MODEL_DIR [--nested child:parent,…] [--composed type=part+part;…]`, where
//! MODEL_DIR is the `model` directory of a run kept with `SCALPEL_KEEP=1` (it holds
//! `model.json`, `graph.json` and the sample's `truth.jsonl`). Prints each true task type's
//! best-matching model type with its precision and recall; with `--misses TYPE`, then every
//! instance of true type TYPE its best model type does not match, with its leaves and the
//! occurrences holding them. Exits 2 on bad arguments.

use std::path::PathBuf;
use std::process::ExitCode;

use scalpel_e2e::score::{load_model, load_tasks, misses, report, score_nested};

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let (mut dir, mut nested_arg, mut composed_arg) = (None, String::new(), String::new());
    let mut missed: Option<String> = None;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--nested" => nested_arg = args.next().unwrap_or_default(),
            "--composed" => composed_arg = args.next().unwrap_or_default(),
            "--misses" => missed = args.next(),
            s if s.starts_with("--") => {
                eprintln!("rescore: unknown option {s}");
                return ExitCode::from(2);
            }
            _ => dir = Some(PathBuf::from(a)),
        }
    }
    let Some(dir) = dir else {
        eprintln!(
            "usage: rescore MODEL_DIR [--nested child:parent,…] [--composed type=part+part;…] \
             [--misses TYPE]"
        );
        return ExitCode::from(2);
    };
    let truth = dir.join("truth.jsonl");
    if !dir.join("model.json").is_file() || !truth.is_file() {
        eprintln!(
            "rescore: {} needs model.json and truth.jsonl (keep a run with SCALPEL_KEEP=1)",
            dir.display()
        );
        return ExitCode::from(2);
    }
    let nested: Vec<(&str, &str)> = nested_arg
        .split(',')
        .filter_map(|p| p.split_once(':'))
        .collect();
    let parts: Vec<(&str, Vec<&str>)> = composed_arg
        .split(';')
        .filter_map(|c| c.split_once('='))
        .map(|(ty, parts)| (ty, parts.split('+').collect()))
        .collect();
    let composed: Vec<(&str, &[&str])> = parts.iter().map(|(t, p)| (*t, p.as_slice())).collect();
    let (model, graph) = load_model(&dir);
    let tasks = load_tasks(&truth);
    let scores = score_nested(&model, &graph, &tasks, &composed, &nested);
    println!("{}", report(&scores));
    if let Some(ty) = missed {
        let best = scores
            .iter()
            .find(|s| s.truth == ty)
            .and_then(|s| s.model_type.as_ref());
        let Some((mt, _)) = best else {
            eprintln!("rescore: no model type matches an instance of {ty}");
            return ExitCode::from(2);
        };
        let (mt, composed) = (*mt as usize, &composed);
        print!(
            "{}",
            misses(&model, &graph, &tasks, composed, &nested, &ty, mt)
        );
    }
    ExitCode::SUCCESS
}
