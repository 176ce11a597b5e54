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
