//! The `git-neo` binary: parse arguments, run the command, map the outcome to an exit code.
//!
//! Exit codes (docs/cli.md): 0 ok, 1 user error (bad input, unknown id), 2 usage, 3 integrity,
//! 4 conflict (lock or lost races after retries), 5 environment (git or filesystem failure).

// The front end owns the edges: it prints, reads the environment and starts the background
// server (clippy.toml).
#[allow(clippy::disallowed_methods, clippy::disallowed_macros)]
mod cli;
mod mcp;

fn main() {
    // SIGINT/SIGTERM remove our temporary and lock files before terminating, and wait for a ref
    // update in progress to finish first (see cli/signals.rs).
    cli::signals::install();
    std::process::exit(cli::run(std::env::args_os()));
}
