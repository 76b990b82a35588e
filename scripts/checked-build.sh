# Sourced, not run: how the test command builds, and how CI keeps that one build for its later
# steps. `scripts/test.sh` and `.ci/run` source it.
#
# The tests run on the release profile with the dev profile's checks turned on: debug assertions
# and overflow checks (Cargo's CARGO_PROFILE_RELEASE_* settings, for this build only; a user's
# `cargo build --release` keeps neither). Why the release profile: every later step of CI (the
# demo, the servers, the mutants, the fuzz inputs) runs the release build, and tests on the dev
# profile built the whole workspace a second time.
#
# Clippy lints the workspace's crates while they are built: clippy-driver stands in for rustc on
# them, as `cargo clippy` has it, and still generates their code. Why not a `cargo clippy` after
# the tests: it checked every dependency again (DataFusion, Ballista …), which a build's
# artifacts cannot serve. Dependencies are built by rustc as before. Every cargo command that is
# to reuse this build must see the same variables: Cargo rebuilds a crate whose compiler or
# profile changed.
if ! command -v clippy-driver >/dev/null; then
    echo "clippy-driver is missing: rustup component add clippy" >&2
    exit 1
fi
# No debug info for the stages' crates in this build: the test command links a hundred programs,
# each with its own copy (45 of a test program's 73 MB), and a CI machine short of disk killed
# the linker. The programs the tests record and the agent keep theirs (their packages' settings
# in Cargo.toml); dependencies have none in any release build.
export CARGO_PROFILE_RELEASE_DEBUG=false
export CARGO_PROFILE_RELEASE_DEBUG_ASSERTIONS=true
export CARGO_PROFILE_RELEASE_OVERFLOW_CHECKS=true
export RUSTC_WORKSPACE_WRAPPER=clippy-driver
export CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
