//! What a person reads, pinned: the markdown of `recall`, `task` and `history`, the text of `list`
//! and `log`, and the `--json` of the commands an agent calls, on the fixed history of
//! tests/it/review.rs (plus attempts), compared with tests/snapshots/*.md. `diff` and
//! `log --markdown` are pinned beside their other tests in review.rs. A change in what a user sees shows up as a change
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

/// `--json` of `git neo <args>`, pretty-printed, pinned like the markdown: the shapes agents parse.
fn json_snapshot(sb: &Sandbox, repo: &Path, name: &str, args: &[&str]) {
    let mut with_json = vec!["--json"];
    with_json.extend_from_slice(args);
    let text = run(sb, repo, &with_json);
    let value: serde_json::Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("git neo {args:?} --json is not one JSON value: {e}\n{text}"));
    assert_snapshot(name, &serde_json::to_string_pretty(&rounded(value)).expect("print JSON"));
}

/// Scores to six decimals: the shape and the ranking are pinned, not the last bit of a platform's
/// `exp` and `log2`.
fn rounded(v: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::Number(n) if n.is_f64() => {
            let x = (n.as_f64().unwrap_or_default() * 1e6).round() / 1e6;
            serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number)
        }
        Value::Array(a) => Value::Array(a.into_iter().map(rounded).collect()),
        Value::Object(o) => Value::Object(o.into_iter().map(|(k, v)| (k, rounded(v))).collect()),
        other => other,
    }
}

#[test]
fn json_output_of_the_commands_agents_call_is_pinned() {
    let sb = Sandbox::new();
    let repo = memory(&sb);
    json_snapshot(&sb, &repo, "recall-json", &["recall", "where do we deploy, and the checkout outage"]);
    json_snapshot(&sb, &repo, "list-json", &["list", "--all"]);
    json_snapshot(&sb, &repo, "task-json", &["task", "T-7 checkout outage"]);
    json_snapshot(&sb, &repo, "history-json", &["history", "deploy target"]);
    json_snapshot(&sb, &repo, "export-json", &["export"]);
    json_snapshot(&sb, &repo, "verify-json", &["verify"]);
}

#[test]
fn list_and_log_text_is_pinned() {
    let sb = Sandbox::new();
    let repo = memory(&sb);
    assert_snapshot("list", &run(&sb, &repo, &["list", "--all"]));
    assert_snapshot("log-text", &run(&sb, &repo, &["log"]));
}
