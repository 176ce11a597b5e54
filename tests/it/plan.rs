//! The one write path (src/api/write/plan.rs): every write is a plan that `apply` filters,
//! de-duplicates and commits; `--dry-run` renders the same plan and writes nothing.

use crate::support::{json, stderr, Sandbox};
use git_neo::api::{AddRequest, Clock, ListFilter, Session, SessionOptions};
use git_neo::embed::EmbedderChoice;
use git_neo::record::{Fact, FactType, Kind, Payload, Record, Timestamp};
use git_neo::store::{Identity, Store, StoreOptions};
use std::path::Path;

fn ada() -> Identity {
    Identity { name: "Ada Tester".into(), email: "ada@example.com".into() }
}

fn session(repo: &Path) -> Session {
    Session::new(SessionOptions {
        dir: repo.to_path_buf(),
        git_dir: None,
        ref_name: None,
        identity: Some(ada()),
        clock: Clock::Fixed(Timestamp(1_772_366_400)),
        embedder: EmbedderChoice::Off,
        scope: None,
        data_dir: None,
        config: Vec::new(),
    })
}

fn request(subject: &str) -> AddRequest {
    AddRequest { fact_type: "decision".into(), subject: subject.into(), ..AddRequest::default() }
}

#[test]
fn a_dry_run_renders_the_plan_the_real_run_then_commits() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let id = sb.neo_ok(&repo, &["add", "-t", "decision", "-s", "Payments run on Postgres 15"]);
    let tip = sb.tip(&repo).expect("a memory ref");

    let dry = json(&sb.neo_ok(&repo, &["forget", &id[..8], "--reason", "moved to Aurora", "--dry-run", "--json"]));
    assert_eq!(dry["dry_run"], true, "{dry:#}");
    assert!(dry.get("commit").is_none(), "a dry run commits nothing: {dry:#}");
    let plan = &dry["plan"];
    assert_eq!(plan["ref"], "refs/heads/neo-memory", "{dry:#}");
    assert_eq!(plan["expected_tip"], tip.as_str(), "the plan names the tip it was decided against: {dry:#}");
    let records = plan["commits"][0]["records"].as_array().expect("records");
    assert_eq!(records.len(), 1, "{dry:#}");
    assert_eq!(records[0]["kind"], "retraction");
    assert_eq!(records[0]["present"], false);
    assert_eq!(sb.tip(&repo).as_deref(), Some(tip.as_str()), "the dry run moved the memory ref");

    // The text form lists the same commit and record.
    let text = sb.neo(&repo, &["forget", &id[..8], "--reason", "moved to Aurora", "--dry-run"]);
    let out = String::from_utf8_lossy(&text.stdout).to_string();
    assert!(out.contains("would commit to refs/heads/neo-memory"), "{out}");
    assert!(out.contains("+ retraction"), "{out}");
    assert!(stderr(&text).contains("dry run: nothing written"), "{}", stderr(&text));
    assert_eq!(sb.tip(&repo).as_deref(), Some(tip.as_str()));

    // The real run writes exactly the planned record (same clock, same bytes, same id).
    let real = json(&sb.neo_ok(&repo, &["forget", &id[..8], "--reason", "moved to Aurora", "--json"]));
    assert_eq!(real["id"], records[0]["id"], "the plan and the write differ: {real:#} vs {dry:#}");
    assert!(real["commit"].is_string(), "{real:#}");
    assert_ne!(sb.tip(&repo).as_deref(), Some(tip.as_str()));
}

#[test]
fn ingest_and_outdated_dry_runs_write_nothing() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    std::fs::create_dir_all(repo.join("docs")).expect("mkdir");
    std::fs::write(repo.join("docs/deploy.md"), "# Deploy\n\nWe deploy on Thursdays.\n").expect("write");
    sb.git(&repo, &["add", "."]);
    sb.git(&repo, &["commit", "-q", "-m", "docs"]);

    let dry = json(&sb.neo_ok(&repo, &["ingest", "docs/deploy.md", "--dry-run", "--json"]));
    assert_eq!(sb.tip(&repo), None, "a dry-run ingest created the memory ref");
    let planned = &dry["plan"]["commits"][0]["records"][0];
    assert_eq!(planned["kind"], "source", "{dry:#}");
    assert!(dry["plan"]["expected_tip"].is_null(), "no ref yet: {dry:#}");
    let real = json(&sb.neo_ok(&repo, &["ingest", "docs/deploy.md", "--json"]));
    assert_eq!(real["documents"][0]["id"], planned["id"], "{real:#} vs {dry:#}");

    let fact = sb.neo_ok(&repo, &["add", "-t", "decision", "-s", "Deploys go out on Thursdays"]);
    let tip = sb.tip(&repo);
    let out = sb.neo_ok(&repo, &["outdated", &fact[..8], "--reason", "we deploy daily now", "--dry-run"]);
    assert!(out.contains("+ supersession"), "{out}");
    assert_eq!(sb.tip(&repo), tip);
    let listed = sb.neo_ok(&repo, &["list"]);
    assert!(listed.contains("Deploys go out on Thursdays"), "the dry run hid the fact: {listed}");
}

#[test]
fn approve_runs_the_filter_so_a_planted_proposal_is_refused() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    sb.neo_ok(&repo, &["add", "-t", "decision", "-s", "Written before review mode"]);
    sb.git(&repo, &["config", "neo.mode", "review"]);
    sb.neo_ok(&repo, &["add", "-t", "review", "-s", "Prefer smaller pull requests"]);
    let tip = sb.tip(&repo);

    // A record planted on the local proposals ref by hand, past `add`'s filter: it holds a token.
    let proposals = Store::discover(&repo, StoreOptions::default()).expect("store").proposals().expect("proposals");
    let planted = Record {
        kind: Kind::Fact,
        payload: Payload::Fact(Fact::new(FactType::Pattern, "Deploy with the bot token")),
        author: "Mallory <m@example.com>".into(),
        created_at: Timestamp(1_772_366_500),
        body: format!("token {}{}\n", "ghp_", "abcdefghijklmnopqrstuvwxyz0123456789AB"),
    };
    let (pid, bytes) = planted.encode();
    proposals
        .write_records(&[(Kind::Fact, pid, bytes)], "planted", &ada(), Timestamp(1_772_366_500), false)
        .expect("plant");

    for args in [&["approve", "--all", "--dry-run"][..], &["approve", "--all"][..]] {
        let out = sb.neo(&repo, args);
        assert!(!out.status.success(), "approve took a record holding a token ({args:?})");
        let err = stderr(&out);
        assert!(err.contains(&pid.short()) || err.contains("record 2"), "the refusal names the record: {err}");
        assert!(err.to_lowercase().contains("token") || err.contains("secret"), "{err}");
        assert_eq!(sb.tip(&repo), tip, "a refused approval moved the memory ref");
    }
    let waiting = sb.neo_ok(&repo, &["list", "--proposed"]);
    assert!(waiting.contains("Prefer smaller pull requests"), "nothing left the proposals: {waiting}");
}

#[test]
fn the_session_writes_for_real_again_after_a_dry_run() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let mut s = session(&repo);
    let added = s.add(&request("Search uses tantivy")).expect("add");
    let id = added.id.to_hex();

    let dry = s.dry_run(true, |s| s.forget(&id, "replaced")).expect("dry forget");
    assert!(dry.plan.is_some() && dry.commit.is_none(), "{dry:?}");
    assert!(!s.is_dry_run(), "the dry run outlived its command");
    // The warm session's state was not touched: the fact is still valid.
    let listed = s.list(&ListFilter::default()).expect("list");
    assert!(listed.iter().any(|e| e.id == added.id), "the dry run hid the fact from the warm session");

    // An error inside the dry run also ends it.
    assert!(s.dry_run(true, |s| s.forget("ffff", "no such record")).is_err());
    assert!(!s.is_dry_run());

    let real = s.forget(&id, "replaced").expect("forget");
    assert!(real.commit.is_some() && real.plan.is_none(), "{real:?}");
    assert_eq!(real.id, dry.id, "the plan and the write differ");
}
