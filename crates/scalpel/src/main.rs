//! `scalpel`: records programs under the tracer agent, infers their task models and shows them.

use std::process::ExitCode;

mod args;
mod choices;
mod commands;
mod hints;
mod memory;
mod output;
mod source;
mod spinner;

use clap::Parser;

/// Records the synchronization events of programs and inspects the traces.
#[derive(Parser, Debug)]
#[command(name = "scalpel", version)]
struct Cli {
    #[command(subcommand)]
    command: commands::Command,
}

// Large blocks on huge pages of their own; the rest is glibc's (`scalpel_model::memory`).
#[global_allocator]
static ALLOCATOR: scalpel_model::memory::LargeBlocks = scalpel_model::memory::LargeBlocks;

fn main() -> ExitCode {
    // The allocator's policy is the program's: set once, before anything large is allocated.
    scalpel_model::memory::set_policy();
    match Cli::parse().command.job().and_then(commands::Job::run) {
        Ok(code) => code,
        Err(e) => {
            say!("scalpel: error: {}", chain(&e));
            if let Some(h) = hints::for_error(&e) {
                say!("scalpel: hint: {h}");
            }
            ExitCode::FAILURE
        }
    }
}

/// The error and its causes joined by ": ", as `{:#}` would, except that a cause is left out
/// when the text before it already ends with it: the libraries' errors name their cause in
/// their own message (so that they read whole on their own), and the chain would repeat it.
fn chain(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if out.ends_with(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}
