//! A real recording with one file replaced by the input (see the `scalpel_fuzzinput` library), through
//! what `scalpel dump`, `summary` and `infer` compute. The recording is the directory named by
//! `SCALPEL_FUZZ_TRACE` (`scripts/fuzz.sh` records one); it is copied, and the copy changed.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use scalpel_fuzzinput::{dump_summary_infer, Template};

struct Work {
    template: Template,
    out: PathBuf,
    _dir: tempfile::TempDir,
}

fn work() -> &'static Work {
    static W: OnceLock<Work> = OnceLock::new();
    W.get_or_init(|| {
        let from = std::env::var_os("SCALPEL_FUZZ_TRACE")
            .expect("SCALPEL_FUZZ_TRACE names the recording to damage (see scripts/fuzz.sh)");
        // No Graphviz: the time spent is ours alone.
        std::env::set_var("PATH", "/nonexistent");
        let dir = tempfile::tempdir().expect("a temporary directory");
        let template = Template::copy(from.as_ref(), &dir.path().join("trace"))
            .expect("the recording can be copied");
        Work {
            template,
            out: dir.path().join("model"),
            _dir: dir,
        }
    })
}

fuzz_target!(|input: &[u8]| {
    let w = work();
    w.template.apply(input).expect("the copy can be written");
    dump_summary_infer(w.template.dir(), &w.out);
});
