//! Compiles the C samples into static libraries; each has a thin Rust `main` in `src/bin`.
fn main() {
    for (lib, files) in [
        ("workqueue", &["c/workqueue.c", "c/truth.c"][..]),
        ("threadpool", &["c/threadpool.c", "c/truth.c"][..]),
        ("lowlock", &["c/lowlock.c", "c/truth.c"][..]),
        ("handoff", &["c/handoff.c", "c/truth.c"][..]),
        ("tasks", &["c/tasks.c", "c/truth.c"][..]),
        ("wakeups", &["c/wakeups.c", "c/truth.c"][..]),
    ] {
        for f in files {
            println!("cargo:rerun-if-changed={f}");
        }
        cc::Build::new()
            .files(files.iter())
            .flag("-pthread")
            .flag_if_supported("-fno-omit-frame-pointer")
            // Keep every call a real call in release builds too: a tail call would drop the
            // caller's frame (`serve_put` → `send_msg`), and with it the stack that tells two
            // request types apart, which the ground truth documents.
            .flag_if_supported("-fno-optimize-sibling-calls")
            // Unoptimized in every profile: the tests' bounds on these programs were set on this
            // build, and an optimized one changes their timing (the tests run on the release
            // profile: scripts/checked-build.sh). What -O3 did to one of their models is in
            // docs/LIMITS.md.
            .opt_level(0)
            .warnings(true)
            .compile(lib);
    }
    println!("cargo:rerun-if-changed=c/truth.h");
    println!("cargo:rustc-link-lib=pthread");
}
