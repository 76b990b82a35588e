//! The golden trace corpus: for every case in `tests/corpus/`, what the graph stage and the
//! miner make of its recorded trace must equal its golden files byte for byte, on one worker
//! thread and on two. After a change that alters them on purpose,
//! `SCALPEL_BLESS=1 cargo test -p scalpel-e2e --test corpus` rewrites them; review the diff
//! before committing it. `tests/corpus/README.md` says how to add a case.

use scalpel_e2e::corpus::scrub::scrub_file;
use scalpel_e2e::corpus::{
    blessing, cases, check_golden, rows, stored_cases, stored_rows, CaseError, GOLDEN,
    STORED_GOLDEN,
};
use scalpel_e2e::{own_bin, record};

/// Cases `scripts/record-corpus.sh` records: a checkout that lost some fails here rather than
/// passing on fewer.
const LEAST_CASES: usize = 69;

#[test]
fn every_case_matches_its_golden_files_on_one_and_two_threads() {
    let cases = cases();
    assert!(
        cases.len() >= LEAST_CASES,
        "{} cases in tests/corpus, at least {LEAST_CASES} expected",
        cases.len()
    );
    let mut failures = Vec::new();
    for case in &cases {
        let trace = case.join("trace");
        let one = rows(&trace, 1).unwrap_or_else(|e| panic!("{}: {e}", case.display()));
        let two = rows(&trace, 2).unwrap_or_else(|e| panic!("{}: {e}", case.display()));
        for ((name, a), b) in GOLDEN.iter().zip(&one).zip(&two) {
            assert!(
                a == b,
                "{}: {name} differs between one and two worker threads",
                case.display()
            );
            if let Err(e) = check_golden(&case.join(name), a) {
                failures.push(e);
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} golden file(s) differ:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
    if blessing() {
        eprintln!("blessed {} cases", cases.len());
    }
}

/// A case's stored graph (see `tests/corpus/README.md`) mines to its golden model, on one and
/// two worker threads.
#[test]
fn every_stored_graph_mines_to_its_golden_model() {
    let cases = stored_cases();
    assert!(!cases.is_empty(), "no case keeps a stored graph");
    let mut failures = Vec::new();
    for case in &cases {
        let one = stored_rows(case, 1).unwrap_or_else(|e| panic!("{}: {e}", case.display()));
        let two = stored_rows(case, 2).unwrap_or_else(|e| panic!("{}: {e}", case.display()));
        assert!(
            one == two,
            "{}: the model differs between one and two worker threads",
            case.display()
        );
        if let Err(e) = check_golden(&case.join(STORED_GOLDEN), &one) {
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn a_case_run_twice_gives_the_same_rows() {
    let case = cases().into_iter().next().expect("a corpus case");
    let trace = case.join("trace");
    let a = rows(&trace, 2).unwrap();
    let b = rows(&trace, 2).unwrap();
    assert_eq!(a, b, "{}", case.display());
    assert!(a.iter().all(|r| !r.is_empty()));
}

/// The rows must not depend on the files of the machine that runs the test: a trace as
/// recorded (its module paths absolute, its frames symbolized from this machine's files) is
/// refused, and the same trace scrubbed is taken.
#[test]
fn a_trace_is_taken_only_scrubbed() {
    let run = record(&own_bin("pipeline"), &["5"]).success();
    match rows(&run.dir, 1) {
        Err(CaseError::Symbolized { .. }) => {}
        other => panic!("an unscrubbed trace gave {:?}", other.map(|_| "rows")),
    }
    let mut scrubbed = 0;
    for (_, f) in run.load().files() {
        scrubbed += scrub_file(&f.path).unwrap();
    }
    assert!(scrubbed > 0, "no module path to scrub");
    rows(&run.dir, 1).unwrap();
}
