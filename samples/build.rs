//! Compiles the C samples into static libraries; each has a thin Rust `main` in `src/bin`.
fn main() {
    for (lib, files) in [
        ("workqueue", &["c/workqueue.c", "c/truth.c"][..]),
        ("threadpool", &["c/threadpool.c", "c/truth.c"][..]),
        ("lowlock", &["c/lowlock.c", "c/truth.c"][..]),
        ("handoff", &["c/handoff.c", "c/truth.c"][..]),
        ("tasks", &["c/tasks.c", "c/truth.c"][..]),
    ] {
        for f in files {
            println!("cargo:rerun-if-changed={f}");
        }
        cc::Build::new()
            .files(files.iter())
            .flag("-pthread")
            .flag_if_supported("-fno-omit-frame-pointer")
            .warnings(true)
            .compile(lib);
    }
    println!("cargo:rerun-if-changed=c/truth.h");
    println!("cargo:rustc-link-lib=pthread");
}
