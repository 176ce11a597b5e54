//! The `git-neo` binary: parse arguments, run the command, map the outcome to an exit code.
//!
//! Exit codes (docs/cli.md): 0 ok, 1 user error (bad input, unknown id), 2 usage, 3 integrity,
//! 4 conflict (lock or lost races after retries), 5 environment (git or filesystem failure).

mod cli;

fn main() {
    // On SIGINT/SIGTERM, delete the lock and temporary files gix holds before terminating, so an
    // interrupted write never leaves a stale `neo-memory.lock` behind (SIGKILL still can: see
    // docs/ARCHITECTURE.md).
    gix::tempfile::signal::setup(
        gix::tempfile::signal::handler::Mode::DeleteTempfilesOnTerminationAndRestoreDefaultBehaviour,
    );
    std::process::exit(cli::run(std::env::args_os()));
}
