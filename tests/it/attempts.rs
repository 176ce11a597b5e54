//! Attempts end to end: reported and observed checks, dirty trees, freshness after later commits,
//! unknown commits, recheck, bounded history, the secret filter on output, and recall's layer.

use crate::support::{json, stderr, stdout, Sandbox};
use std::path::Path;

fn show(sb: &Sandbox, repo: &Path, id: &str) -> serde_json::Value {
    json(&sb.neo_ok(repo, &["show", id, "--json"]))
}

fn commit_file(sb: &Sandbox, repo: &Path, path: &str, content: &str, msg: &str) {
    std::fs::write(repo.join(path), content).expect("write");
    sb.git(repo, &["add", path]);
    sb.git(repo, &["commit", "-q", "-m", msg]);
}

#[test]
fn reported_and_observed_checks_record_git_state_read_by_git_neo() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let head = sb.git(&repo, &["rev-parse", "HEAD"]);
    let reported = sb.neo_ok(
        &repo,
        &[
            "attempt",
            "--task",
            "T-1",
            "--action",
            "Add a cache",
            "--observation",
            "tests pass",
            "--inference",
            "the cache is safe",
            "--files",
            "src/lib.rs",
            "--check",
            "cargo test",
            "--result",
            "passed",
        ],
    );
    let r = show(&sb, &repo, &reported);
    let check = &r["record"]["check"];
    assert_eq!(
        (check["source"].as_str(), check["result"].as_str(), check["commit"].as_str()),
        (Some("reported"), Some("passed"), Some(head.as_str()))
    );
    assert_eq!(check["dirty"], false);
    assert_eq!(r["record"]["inference"], "the cache is safe");
    assert_eq!(r["record"]["files"][0]["blob"], sb.git(&repo, &["rev-parse", "HEAD:src/lib.rs"]));

    // Observed: git-neo runs it, in the repository root, and records code, time and output.
    std::fs::create_dir_all(repo.join("sub")).expect("mkdir");
    let mut cmd = sb.neo_cmd(&repo.join("sub"));
    cmd.args([
        "attempt",
        "--task",
        "T-1",
        "--action",
        "Run the probe",
        "--observation",
        "it failed",
        "--run",
        "pwd; echo hello; echo oops >&2; exit 3",
    ]);
    let out = cmd.output().expect("run");
    assert!(out.status.success(), "{}", stderr(&out));
    let observed = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let check = show(&sb, &repo, &observed)["record"]["check"].clone();
    assert_eq!(
        (check["source"].as_str(), check["result"].as_str(), check["exit_code"].as_i64()),
        (Some("observed"), Some("failed"), Some(3))
    );
    let output = check["output"].as_str().expect("output");
    assert!(output.contains("hello") && output.contains("oops"), "{output}");
    assert!(output.lines().next().is_some_and(|l| l.ends_with("/r")), "runs in the repository root: {output}");
    assert!(check["duration_ms"].is_number());

    // A dirty work tree, and which affected file was dirty.
    std::fs::write(repo.join("src/lib.rs"), "pub fn answer() -> u32 { 41 }\n").expect("edit");
    let dirty = sb.neo_ok(
        &repo,
        &["attempt", "--task", "T-1", "--action", "Try 41", "--observation", "wrong answer", "--files", "src/lib.rs"],
    );
    let r = show(&sb, &repo, &dirty);
    assert_eq!(r["record"]["check"]["dirty"], true);
    assert_eq!(r["record"]["check"]["result"], "unverified");
    assert_eq!(r["record"]["files"][0]["dirty"], true);
    assert_eq!(r["record"]["files"][0]["blob"], sb.git(&repo, &["hash-object", "src/lib.rs"]));

    // Bad input: empty observation, missing file, a result without a check, bad result word.
    for (args, needle) in [
        (vec!["attempt", "--task", "T", "--action", "a", "--observation", " "], "observation"),
        (vec!["attempt", "--task", "T", "--action", "a", "--observation", "o", "--files", "nope.rs"], "files[0]"),
        (
            vec!["attempt", "--task", "T", "--action", "a", "--observation", "o", "--check", "x", "--result", "maybe"],
            "result",
        ),
    ] {
        let before = sb.tip(&repo);
        let out = sb.neo(&repo, &args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(stderr(&out).contains(needle), "{args:?}: {}", stderr(&out));
        assert_eq!(sb.tip(&repo), before);
    }
}

#[test]
fn freshness_follows_commits_to_affected_files_only() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    commit_file(&sb, &repo, "README.md", "hello\n", "docs");
    let id = sb.neo_ok(
        &repo,
        &[
            "attempt",
            "--task",
            "T-2",
            "--action",
            "Tune answer",
            "--observation",
            "ok",
            "--files",
            "src/lib.rs",
            "--check",
            "cargo test",
            "--result",
            "passed",
        ],
    );
    let at = sb.git(&repo, &["rev-parse", "HEAD"]);
    let fresh = |sb: &Sandbox| json(&sb.neo_ok(&repo, &["task", "T-2", "--json"]))["attempts"][0]["freshness"].clone();
    assert_eq!(fresh(&sb)["state"], "fresh");
    commit_file(&sb, &repo, "README.md", "hello again\n", "docs again");
    assert_eq!(fresh(&sb)["state"], "fresh", "a commit that does not touch the affected file keeps it fresh");
    commit_file(&sb, &repo, "src/lib.rs", "pub fn answer() -> u32 { 43 }\n", "change answer");
    commit_file(&sb, &repo, "src/lib.rs", "pub fn answer() -> u32 { 44 }\n", "change answer again");
    let f = fresh(&sb);
    assert_eq!(f["state"], "stale");
    let text = sb.neo_ok(&repo, &["task", "T-2"]);
    assert!(text.contains(&format!("stale: src/lib.rs changed in 2 commits since {}", &at[..12])), "{text}");
    assert!(text.contains(&id[..12]));
    // A deleted file is said to be deleted.
    sb.git(&repo, &["rm", "-q", "src/lib.rs"]);
    sb.git(&repo, &["commit", "-q", "-m", "drop lib"]);
    let text = sb.neo_ok(&repo, &["task", "T-2"]);
    assert!(text.contains("stale: src/lib.rs was deleted since"), "{text}");
    assert_eq!(fresh(&sb)["deleted"], serde_json::json!(["src/lib.rs"]));
}

#[test]
fn an_attempt_from_foreign_history_is_unknown() {
    let sb = Sandbox::new();
    let origin = sb.repo("origin");
    sb.neo_ok(
        &origin,
        &[
            "attempt",
            "--task",
            "T-3",
            "--action",
            "a",
            "--observation",
            "o",
            "--files",
            "src/lib.rs",
            "--check",
            "make",
            "--result",
            "passed",
        ],
    );
    // A different repository fetches the memory but has none of origin's code history.
    let other = sb.unborn_repo("other");
    commit_file(&sb, &other, "main.go", "package main\n", "unrelated history");
    sb.git(&other, &["fetch", "-q", origin.to_str().expect("utf-8"), "refs/heads/neo-memory:refs/heads/neo-memory"]);
    let text = sb.neo_ok(&other, &["task", "T-3"]);
    assert!(text.contains("unknown: the commit") && text.contains("is not in this clone"), "{text}");
}

#[test]
fn recheck_records_a_linked_attempt_and_an_outcome_for_the_original() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let first = sb.neo_ok(
        &repo,
        &[
            "attempt",
            "--task",
            "T-4",
            "--action",
            "Make the flag file",
            "--observation",
            "not there yet",
            "--run",
            "test -f flag.txt",
        ],
    );
    assert_eq!(show(&sb, &repo, &first)["record"]["check"]["result"], "failed");
    std::fs::write(repo.join("flag.txt"), "fixed\n").expect("fix");
    let commits =
        |sb: &Sandbox| sb.git(&repo, &["rev-list", "--count", "refs/heads/neo-memory"]).parse::<u32>().expect("n");
    let before = commits(&sb);
    let again = json(&sb.neo_ok(&repo, &["recheck", "T-4", "--json"]));
    assert_eq!(commits(&sb), before + 1, "the new attempt and its outcome land in one commit");
    assert_eq!((again["result"].as_str(), again["signal"].as_str()), (Some("passed"), Some("recheck-passed")));
    let new_id = again["attempt"]["id"].as_str().expect("id").to_string();
    let new = show(&sb, &repo, &new_id);
    assert_eq!(new["record"]["check"]["result"], "passed");
    assert_eq!(new["record"]["retry_of"], first);
    let outcome = show(&sb, &repo, again["outcome"].as_str().expect("id"));
    assert_eq!(outcome["record"]["target"], first);
    assert_eq!(outcome["record"]["signal"], "recheck-passed");
    // Now it breaks again: re-checking the passing attempt by id is a regression for it.
    std::fs::remove_file(repo.join("flag.txt")).expect("break");
    let out = sb.neo(&repo, &["recheck", &new_id[..10]]);
    let said = stderr(&out);
    assert!(said.contains("re-checked: failed at HEAD") && said.contains("regression -0.20"), "{said}");
    let broke = stdout(&out);
    let outcome = json(&sb.neo_ok(&repo, &["explain", &new_id[..10], "--json"]));
    let o = show(&sb, &repo, outcome["steps"][0]["outcome"].as_str().expect("id"));
    assert_eq!((o["record"]["signal"].as_str(), o["record"]["delta"].as_f64()), (Some("regression"), Some(-0.2)));
    // An attempt starts in the middle, so the regression lowers it.
    assert_eq!(outcome["confidence"].as_f64(), Some(0.3), "{outcome}");
    assert!(!broke.is_empty());
    let history = json(&sb.neo_ok(&repo, &["task", "T-4", "--json"]));
    assert_eq!(history["total"], 3);
}

#[test]
fn history_is_bounded_and_output_passes_the_secret_filter_and_the_timeout() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let lines: String =
        (0..30).map(|i| format!("attempt --task T-5 --action step{i} --observation seen{i}\n")).collect();
    for l in lines.lines() {
        let args: Vec<&str> = l.split(' ').collect();
        let mut cmd = sb.neo_cmd(&repo);
        cmd.env("GIT_NEO_NOW", format!("{}", 1_772_366_400 + args.len() as i64 + l.len() as i64)).args(&args);
        assert!(cmd.output().expect("run").status.success());
    }
    let text = sb.neo_ok(&repo, &["task", "T-5", "--limit", "10"]);
    assert!(text.starts_with("… 20 older attempts not shown"), "{text}");
    let small = sb.neo_ok(&repo, &["task", "T-5", "--max-bytes", "400"]);
    assert!(small.contains("output cut at 400 bytes"), "{small}");
    assert!(small.len() < 1200);

    let token = format!("{}{}", "ghp_", "abcdefghijklmnopqrstuvwxyz0123456789AB");
    // A secret in the command itself is refused; one in the command's output is masked.
    let refused = sb.neo(
        &repo,
        &["attempt", "--task", "T-6", "--action", "a", "--observation", "o", "--run", &format!("echo {token}")],
    );
    assert_eq!(refused.status.code(), Some(1));
    assert!(stderr(&refused).contains("github-token") && !stderr(&refused).contains("abcdefghij"));
    std::fs::write(repo.join("env.txt"), format!("token={token}\n")).expect("write");
    let leak = sb.neo_ok(
        &repo,
        &["attempt", "--task", "T-6", "--action", "print env", "--observation", "printed", "--run", "cat env.txt"],
    );
    let out = show(&sb, &repo, &leak)["record"]["check"]["output"].as_str().expect("output").to_string();
    assert!(out.contains("[redacted: github-token]") && !out.contains("abcdefghij"), "{out}");
    assert!(sb.neo(&repo, &["verify"]).status.success(), "nothing secret landed");

    let started = std::time::Instant::now();
    let slow = sb.neo_ok(
        &repo,
        &[
            "attempt",
            "--task",
            "T-7",
            "--action",
            "wait",
            "--observation",
            "too slow",
            "--run",
            // Two commands, so no shell can exec `sleep` in its own place: the timeout must
            // kill the grandchild too, or its open pipe would hold git-neo for the full 20 s.
            "sleep 20; echo done",
            "--timeout",
            "1",
        ],
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    let check = show(&sb, &repo, &slow)["record"]["check"].clone();
    assert_eq!(check["result"], "failed");
    assert!(check["output"].as_str().is_some_and(|o| o.contains("timeout")), "{check}");
}

#[test]
fn recall_shows_the_best_attempt_per_task_with_freshness_and_task_status() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    sb.neo_ok(
        &repo,
        &[
            "attempt",
            "--task",
            "T-8",
            "--action",
            "Retry the flaky webhook test",
            "--observation",
            "still flaky",
            "--files",
            "src/lib.rs",
            "--check",
            "cargo test webhook",
            "--result",
            "failed",
        ],
    );
    let mut later = sb.neo_cmd(&repo);
    later.env("GIT_NEO_NOW", "2026-03-02T00:00:00Z").args([
        "attempt",
        "--task",
        "T-8",
        "--action",
        "Wait for the webhook server before the test",
        "--observation",
        "stable 50/50",
        "--files",
        "src/lib.rs",
        "--check",
        "cargo test webhook",
        "--result",
        "passed",
    ]);
    assert!(later.output().expect("run").status.success());
    let mut cmd = sb.neo_cmd(&repo);
    cmd.env("GIT_NEO_EMBEDDER", "none").args(["recall", "webhook server test", "--json"]);
    let r = json(&String::from_utf8_lossy(&cmd.output().expect("run").stdout));
    let attempts = r["attempts"].as_array().expect("attempts");
    assert_eq!(attempts.len(), 1, "grouped by task: {r}");
    assert_eq!(attempts[0]["task"], "T-8");
    assert_eq!(attempts[0]["freshness"], "fresh");
    assert_eq!(attempts[0]["task_status"], "passed");
}
