//! The golden trace corpus: for every case in `tests/corpus/`, what the graph stage and the
//! miner make of its recorded trace must equal its golden files byte for byte, on one worker
//! thread and on two. After a change that alters them on purpose,
//! `SCALPEL_BLESS=1 cargo test -p scalpel-e2e --test corpus` rewrites them; review the diff
//! before committing it. `tests/corpus/README.md` says how to add a case.

use scalpel_e2e::corpus::{blessing, cases, check_golden, rows, GOLDEN};

/// Cases `scripts/record-corpus.sh` records: a checkout that lost some fails here rather than
/// passing on fewer.
const LEAST_CASES: usize = 20;

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

#[test]
fn a_case_run_twice_gives_the_same_rows() {
    let case = cases().into_iter().next().expect("a corpus case");
    let trace = case.join("trace");
    let a = rows(&trace, 2).unwrap();
    let b = rows(&trace, 2).unwrap();
    assert_eq!(a, b, "{}", case.display());
    assert!(a.iter().all(|r| !r.is_empty()));
}
