//! What a person reads, pinned: the markdown of `recall`, `task` and `history` on the fixed history
//! of tests/it/review.rs (plus attempts), compared with tests/snapshots/*.md. `diff` and `log` are
//! pinned beside their other tests in review.rs. A change in what a user sees shows up as a change
//! to a snapshot file in review.

use crate::support::{assert_snapshot, Sandbox};
use std::path::Path;

/// The review history plus two attempts at one task, written at fixed times.
fn memory(sb: &Sandbox) -> std::path::PathBuf {
    let (repo, _) = crate::review::history(sb);
    for (now, action, result) in [
        ("2026-03-02T11:00:00Z", "Raised the pool size to 50", "failed"),
        ("2026-03-02T12:00:00Z", "Released connections in the retry path", "passed"),
    ] {
        let mut c = sb.neo_cmd(&repo);
        c.env("GIT_NEO_NOW", now).args([
            "attempt",
            "--task",
            "T-7 checkout outage",
            "--action",
            action,
            "--observation",
            "load test at 200 rps",
            "--inference",
            "connections leak when a charge is retried",
            "--check",
            "cargo test pool",
            "--result",
            result,
            "--files",
            "src/lib.rs",
        ]);
        let out = c.output().expect("run attempt");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    repo
}

/// stdout of `git neo <args>` at a fixed time, lexical recall (no model in the sandbox).
fn run(sb: &Sandbox, repo: &Path, args: &[&str]) -> String {
    let out = sb
        .neo_cmd(repo)
        .env("GIT_NEO_NOW", "2026-03-05T12:00:00Z")
        .env("GIT_NEO_EMBEDDER", "none")
        .args(args)
        .output()
        .expect("run git-neo");
    assert!(out.status.success(), "git neo {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn recall_markdown_is_pinned() {
    let sb = Sandbox::new();
    let repo = memory(&sb);
    assert_snapshot("recall", &run(&sb, &repo, &["recall", "where do we deploy, and the checkout outage"]));
}

/// A question a shipped pattern answers: the Construct layer comes last.
#[test]
fn recall_markdown_with_a_pattern_is_pinned() {
    let sb = Sandbox::new();
    let repo = memory(&sb);
    let out = run(&sb, &repo, &["recall", "how to write a database migration that can be undone"]);
    assert_snapshot("recall-construct", &out);
}

#[test]
fn task_markdown_is_pinned() {
    let sb = Sandbox::new();
    let repo = memory(&sb);
    assert_snapshot("task", &run(&sb, &repo, &["task", "T-7 checkout outage"]));
}

#[test]
fn history_markdown_is_pinned() {
    let sb = Sandbox::new();
    let repo = memory(&sb);
    assert_snapshot("history", &run(&sb, &repo, &["history", "deploy target"]));
}
