//! `git neo diff` and `git neo log --markdown` on a fixed history: snapshots (tests/snapshots/) of
//! the markdown a reviewer sees in a pull request. The history is shared with tests/it/snapshots.rs.

use crate::support::{assert_snapshot, json, Sandbox};
use git_neo::record::{Kind, Milli, Outcome, Payload, Record, RecordId, Supersession, SupersessionMethod, Timestamp};
use git_neo::store::{Identity, Store, StoreOptions};
use std::path::Path;

fn write(repo: &Path, payload: Payload, kind: Kind, secs: i64) -> RecordId {
    let store = Store::discover(repo, StoreOptions::default()).expect("store");
    let r = Record {
        kind,
        payload,
        author: "Ada Tester <ada@example.com>".into(),
        created_at: Timestamp(1_772_366_400 + secs),
        body: String::new(),
    };
    let (id, bytes) = r.encode();
    let who = Identity { name: "Ada Tester".into(), email: "ada@example.com".into() };
    store
        .write_records(&[(kind, id, bytes)], &format!("neo: add {kind} {}", id.short()), &who, r.created_at, false)
        .expect("write");
    id
}

/// Builds the fixture history; returns (base commit, ids of the facts added after it).
pub fn history(sb: &Sandbox) -> (std::path::PathBuf, String) {
    let repo = sb.repo("r");
    let old = sb.neo_ok(&repo, &["add", "-t", "decision", "-s", "Deploy target is Heroku", "--key", "deploy target"]);
    let flaky = sb.neo_ok(&repo, &["add", "-t", "failure", "-s", "Integration tests flake on CI"]);
    let base = sb.tip(&repo).expect("tip");
    let mut later = sb.neo_cmd(&repo);
    later.env("GIT_NEO_NOW", "2026-03-02T09:00:00Z");
    let new = String::from_utf8(
        later
            // The supersession is written by hand below, with its own reason.
            .args([
                "add",
                "-t",
                "decision",
                "-s",
                "Deploy target is Fly.io",
                "--key",
                "deploy target",
                "--no-supersede",
            ])
            .output()
            .expect("run")
            .stdout,
    )
    .expect("utf-8")
    .trim()
    .to_string();
    let mut c = sb.neo_cmd(&repo);
    c.env("GIT_NEO_NOW", "2026-03-02T09:05:00Z").args([
        "add",
        "-t",
        "constraint",
        "-s",
        "Never log card numbers (PCI) *ever*",
        "--area",
        "payments",
    ]);
    assert!(c.output().expect("run").status.success());
    let id = |s: &str| RecordId::from_hex(s).expect("id");
    write(
        &repo,
        Payload::Supersession(Supersession {
            old: id(&old),
            old_scope: None,
            new: Some(id(&new)),
            reason: "moved to Fly.io in March".into(),
            method: SupersessionMethod::Key,
            score: None,
        }),
        Kind::Supersession,
        86_400,
    );
    write(
        &repo,
        Payload::Outcome(Outcome {
            target: id(&new),
            signal: "accepted".into(),
            delta: Milli(200),
            commits: vec!["1234567890abcdef1234567890abcdef12345678".into()],
            paths: vec!["fly.toml".into()],
            key: format!("{new}:1234567:accepted"),
        }),
        Kind::Outcome,
        86_500,
    );
    let mut f = sb.neo_cmd(&repo);
    f.env("GIT_NEO_NOW", "2026-03-02T10:00:00Z").args([
        "forget",
        &flaky[..8],
        "--reason",
        "fixed by retrying the DB container start",
    ]);
    assert!(f.output().expect("run").status.success());
    (repo, base)
}

#[test]
fn diff_renders_a_pull_request_comment() {
    let sb = Sandbox::new();
    let (repo, base) = history(&sb);
    let out = sb.neo_ok(&repo, &["diff", &base]);
    assert_snapshot("diff", &out);
    let data = json(&sb.neo_ok(&repo, &["diff", &base, "neo-memory", "--json"]));
    assert_eq!(data["facts"].as_array().map(|a| a.len()), Some(2));
    assert_eq!(data["superseded"][0]["reason"], "moved to Fly.io in March");
    assert_eq!(data["confidence"][0]["after"], 0.9);
    assert_eq!(data["forgotten"][0]["reason"], "fixed by retrying the DB container start");
}

#[test]
fn log_markdown_renders_each_commit_and_takes_a_range() {
    let sb = Sandbox::new();
    let (repo, base) = history(&sb);
    let md = sb.neo_ok(&repo, &["log", "--markdown", &format!("{base}..")]);
    assert_snapshot("log", &md);
    assert_eq!(md.matches("### `").count(), 5, "one section per commit in the range:\n{md}");
    assert!(md.contains("#### Superseded") && md.contains("moved to Fly.io in March"), "{md}");
    assert!(md.contains("Never log card numbers (PCI) \\*ever\\*"), "markdown in subjects is escaped:\n{md}");
    let plain = sb.neo_ok(&repo, &["log", &format!("{base}..neo-memory")]);
    assert_eq!(plain.lines().filter(|l| !l.starts_with(' ')).count(), 5);
}

/// The `run:` script of the step called `name` in a workflow file (its block, unindented).
pub(crate) fn step_script(workflow: &str, name: &str) -> String {
    let lines: Vec<&str> = workflow.lines().collect();
    let at = lines.iter().position(|l| l.trim() == format!("- name: {name}")).unwrap_or_else(|| panic!("step {name}"));
    let run = (at + 1..lines.len()).find(|&i| lines[i].trim_start().starts_with("run:")).expect("a run: key");
    let first = lines[run].trim_start().trim_start_matches("run:").trim();
    if first != "|" {
        return format!("{first}\n");
    }
    let indent = lines[run + 1].len() - lines[run + 1].trim_start().len();
    lines[run + 1..]
        .iter()
        .take_while(|l| l.trim().is_empty() || l.len() - l.trim_start().len() >= indent)
        .map(|l| format!("{}\n", l.get(indent..).unwrap_or("")))
        .collect()
}

#[test]
fn the_example_workflow_verifies_a_fork_pull_request_and_always_writes_its_summary() {
    let workflow = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/examples/neo-memory-pr.yml"))
        .expect("the example workflow");
    // Nothing a pull request controls reaches a script: every `run:` reads refs from `env:`.
    for name in [
        "Install git-neo",
        "Fetch the base and the proposal",
        "Verify the proposed memory",
        "Summarise the memory changes",
    ] {
        assert!(!step_script(&workflow, name).contains("${{"), "step {name} interpolates an expression");
    }
    assert!(workflow.contains("permissions:\n  contents: read"), "read-only token");
    let summary_at = workflow.find("- name: Summarise the memory changes").expect("summary step");
    assert!(workflow[summary_at..].lines().nth(1).is_some_and(|l| l.trim() == "if: always()"), "summary always runs");

    // The forge holds the memory branch; a fork's proposal is not a branch there, only the commit
    // GitHub keeps for the pull request (`refs/pull/1/head`).
    let sb = Sandbox::new();
    let project = sb.repo("project");
    sb.neo_ok(&project, &["add", "-t", "decision", "-s", "Payments retry webhooks with backoff"]);
    let forge = sb.path("forge.git");
    sb.git(sb.dir.path(), &["init", "-q", "--bare", &forge.to_string_lossy()]);
    sb.git(&forge, &["config", "uploadpack.allowReachableSHA1InWant", "true"]);
    sb.git(&project, &["push", "-q", &forge.to_string_lossy(), "refs/heads/neo-memory:refs/heads/neo-memory"]);
    let fork = sb.path("fork");
    sb.git(
        sb.dir.path(),
        &["clone", "-q", "--branch", "neo-memory", &forge.to_string_lossy(), &fork.to_string_lossy()],
    );
    sb.git(&fork, &["update-ref", "refs/heads/neo-memory", "origin/neo-memory"]);
    sb.neo_ok(&fork, &["add", "-t", "pattern", "-s", "Invoices are rounded half to even"]);
    let head_sha = sb.git(&fork, &["rev-parse", "refs/heads/neo-memory"]);
    sb.git(&fork, &["push", "-q", "origin", "refs/heads/neo-memory:refs/pull/1/head"]);

    // What actions/checkout leaves: a clone of the base repository, the proposal's branch absent.
    let ci = sb.path("ci");
    sb.git(sb.dir.path(), &["clone", "-q", "--no-local", &forge.to_string_lossy(), &ci.to_string_lossy()]);
    assert!(!sb.git_output(&ci, &["cat-file", "-e", &head_sha]).status.success(), "the fork's commit is not here yet");
    let summary = sb.path("summary.md");
    let bin_dir = Path::new(crate::support::BIN).parent().expect("binary directory");
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    let run = |name: &str| {
        let mut cmd = std::process::Command::new("bash");
        crate::support::hermetic(&mut cmd, sb.dir.path())
            .current_dir(&ci)
            .env("PATH", &path)
            .env("GIT_NEO_EMBEDDER", "hash")
            .env("BASE_REF", "neo-memory")
            .env("HEAD_SHA", &head_sha)
            .env("GITHUB_STEP_SUMMARY", &summary)
            .args(["-eo", "pipefail", "-c", &step_script(&workflow, name)]);
        cmd.output().expect("run the step")
    };
    for name in ["Fetch the base and the proposal", "Verify the proposed memory", "Summarise the memory changes"] {
        let out = run(name);
        assert!(out.status.success(), "step {name}: {}", crate::support::stderr(&out));
    }
    let written = std::fs::read_to_string(&summary).expect("the summary");
    assert!(
        written.contains("## Memory changes") && written.contains("Invoices are rounded half to even"),
        "{written}"
    );
    assert!(!written.contains("Payments retry webhooks"), "only what the proposal adds: {written}");
}
