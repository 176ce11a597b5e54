//! Every true fact reaches the reader: facts that differ in a value are each an answer (never
//! folded as copies), with the `conflict` mark when they hold one slot; and a worktree's session
//! notes belong to that worktree. Each through every way in: the CLI with and without the
//! background server, MCP and the prompt hook.

use crate::daemon;
use crate::mcp::Client;
use crate::support::*;
use serde_json::json as j;
use std::path::Path;
use std::process::Stdio;

fn add(sb: &Sandbox, repo: &Path, args: &[&str]) -> String {
    let mut all = vec!["add", "--json"];
    all.extend_from_slice(args);
    let out = daemon::neo(sb, repo, false, &all);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    json(&stdout(&out))["id"].as_str().expect("id").to_string()
}

/// What the prompt hook prints for `prompt` in `repo`.
fn hook(sb: &Sandbox, repo: &Path, prompt: &str) -> String {
    let mut child = sb
        .neo_cmd(repo)
        .env("GIT_NEO_EMBEDDER", "hash")
        .env("GIT_NEO_DAEMON", "off")
        .args(["hook", "prompt"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("hook");
    let event = j!({ "prompt": prompt }).to_string();
    std::io::Write::write_all(&mut child.stdin.take().expect("stdin"), event.as_bytes()).expect("event");
    let out = child.wait_with_output().expect("hook output");
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out)
}

/// The facts layer of a JSON recall: (id, subject, conflicts_with).
fn facts(v: &serde_json::Value) -> Vec<(String, String, Vec<String>)> {
    v["facts"]
        .as_array()
        .expect("facts")
        .iter()
        .map(|f| {
            let with = f["conflicts_with"]
                .as_array()
                .map_or(Vec::new(), |a| a.iter().filter_map(|x| x.as_str().map(str::to_string)).collect());
            (f["id"].as_str().unwrap_or("").to_string(), f["subject"].as_str().unwrap_or("").to_string(), with)
        })
        .collect()
}

#[test]
fn three_limits_said_alike_are_three_answers_flagged_as_conflicting_everywhere() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let ids = [
        add(&sb, &repo, &["-t", "decision", "--area", "billing", "-s", "Billing jobs must finish within 30 minutes"]),
        add(&sb, &repo, &["-t", "decision", "--area", "billing-eu", "-s", "Billing jobs must finish within 5 minutes"]),
        add(&sb, &repo, &["-t", "decision", "-s", "Billing jobs must finish within 45 minutes"]),
    ];
    // Facts that differ in a value only: every one is shown, each names the other two.
    let check = |v: &serde_json::Value, way: &str| {
        let got = facts(v);
        for id in &ids {
            let f = got.iter().find(|f| &f.0 == id).unwrap_or_else(|| panic!("{way}: {id} is not shown: {got:?}"));
            assert_eq!(f.2.len(), 2, "{way}: {} names both others as conflicts: {got:?}", f.1);
        }
    };
    let query = "how long may billing jobs run";
    let alone = daemon::neo(&sb, &repo, false, &["recall", query, "--json"]);
    check(&json(&stdout(&alone)), "CLI");
    let md = stdout(&daemon::neo(&sb, &repo, false, &["recall", query]));
    for minutes in ["30 minutes", "5 minutes", "45 minutes"] {
        assert!(md.contains(minutes), "markdown shows {minutes}: {md}");
    }
    assert!(md.contains("conflict:") && md.contains("in area billing-eu"), "{md}");
    assert!(!md.contains("also said in the same words"), "{md}");

    let hooked = hook(&sb, &repo, "how long may billing jobs run before they are killed");
    for minutes in ["30 minutes", "5 minutes", "45 minutes"] {
        assert!(hooked.contains(minutes), "the prompt hook shows {minutes}: {hooked}");
    }
    assert!(hooked.contains("conflict:"), "{hooked}");

    {
        let _server = daemon::start(&sb, &repo);
        let served = daemon::neo(&sb, &repo, true, &["recall", query, "--json"]);
        check(&json(&stdout(&served)), "server");
    }

    let mut mcp = Client::spawn(sb.dir.path(), &repo, &[("GIT_NEO_EMBEDDER", "hash")]);
    let r = mcp.call_result("recall", j!({ "query": query }));
    check(&r["structuredContent"], "MCP");
}

#[test]
fn an_import_of_facts_that_differ_in_numbers_keeps_every_one_an_answer() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let lines: String = (0..40)
        .map(|i| format!("{}\n", j!({"type": "architecture", "subject": format!("Service {} uses queue q{} for its jobs", 400 + i, 900 + i * 7)})))
        .collect();
    let file = sb.path("facts.jsonl");
    std::fs::write(&file, lines).expect("write");
    let out = daemon::neo(&sb, &repo, false, &["import", &file.to_string_lossy()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let r = json(&stdout(&daemon::neo(
        &sb,
        &repo,
        false,
        &["recall", "which queue does a service use", "-k", "20", "--json"],
    )));
    let got = facts(&r);
    assert_eq!(got.len(), 20, "twenty distinct facts asked for, twenty shown: {got:?}");
    assert!(r["facts"].as_array().expect("facts").iter().all(|f| f["same_words"].is_null()), "nothing folded");
}

#[test]
fn a_worktrees_session_notes_stay_in_that_worktree() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    sb.git(&repo, &["commit", "--allow-empty", "-q", "-m", "init"]);
    let other = sb.dir.path().join("r-other");
    sb.git(&repo, &["worktree", "add", "-q", "-b", "other", &other.to_string_lossy()]);
    let project = add(&sb, &repo, &["-t", "pattern", "--key", "retry.policy", "-s", "Retries use exponential backoff"]);
    sb.neo_ok(&repo, &["session", "start", "main-work"]);
    sb.neo_ok(&other, &["session", "start", "other-work"]);

    // Two agents, one per worktree, writing their scratch notes at the same time; the other
    // worktree's agent also keys a note on the project's slot.
    std::thread::scope(|s| {
        for (dir, who) in [(&repo, "main"), (&other, "other")] {
            let sb = &sb;
            s.spawn(move || {
                for i in 0..4 {
                    let subject = format!("{who} worktree scratch about retries {i}");
                    add(sb, dir, &["--scope", "session", "-t", "decision", "-s", &subject]);
                }
                if who == "other" {
                    let note = "Retries use a fixed 1s delay (experiment)";
                    add(sb, dir, &["--scope", "session", "-t", "pattern", "--key", "retry.policy", "-s", note]);
                }
            });
        }
    });

    let subjects = |v: &serde_json::Value| -> Vec<String> { facts(v).into_iter().map(|f| f.1).collect() };
    let recall = |dir: &Path, extra: &[&str]| {
        let mut args = vec!["recall", "how do retries work", "-k", "20", "--json"];
        args.extend_from_slice(extra);
        json(&stdout(&daemon::neo(&sb, dir, false, &args)))
    };
    // The main worktree: its own notes and the project's fact, nothing of the other's.
    let here = subjects(&recall(&repo, &[]));
    assert!(here.iter().any(|s| s == "Retries use exponential backoff"), "the project fact is not hidden: {here:?}");
    assert!(here.iter().any(|s| s.starts_with("main worktree scratch")), "{here:?}");
    assert!(!here.iter().any(|s| s.starts_with("other worktree") || s.contains("fixed 1s")), "{here:?}");
    let md = hook(&sb, &repo, "how do retries work in this code");
    assert!(md.contains("exponential backoff") && !md.contains("fixed 1s"), "the prompt hook too: {md}");
    let mut mcp = Client::spawn(sb.dir.path(), &repo, &[("GIT_NEO_EMBEDDER", "hash")]);
    let r = mcp.call_result("recall", j!({ "query": "how do retries work", "k": 20 }));
    let via_mcp = subjects(&r["structuredContent"]);
    assert!(via_mcp.contains(&"Retries use exponential backoff".to_string()), "MCP: {via_mcp:?}");
    assert!(!via_mcp.iter().any(|s| s.starts_with("other worktree") || s.contains("fixed 1s")), "{via_mcp:?}");
    // Asked for, every session is read (then the keyed note answers for the slot, and says so).
    let r = mcp.call_result("recall", j!({ "query": "how do retries work", "k": 20, "all_sessions": true }));
    assert!(subjects(&r["structuredContent"]).iter().any(|s| s.starts_with("other worktree")));
    drop(mcp);
    let all = subjects(&recall(&repo, &["--all-sessions"]));
    assert!(all.iter().any(|s| s.starts_with("other worktree")), "{all:?}");

    // The other worktree: its keyed note overrides the project's fact there, and says so.
    let there = recall(&other, &[]);
    let subjects_there = subjects(&there);
    assert!(!subjects_there.iter().any(|s| s.starts_with("main worktree")), "{subjects_there:?}");
    let note = there["facts"]
        .as_array()
        .expect("facts")
        .iter()
        .find(|f| f["subject"] == "Retries use a fixed 1s delay (experiment)");
    let note = note.unwrap_or_else(|| panic!("the session note answers there: {subjects_there:?}"));
    assert_eq!(note["overrides"][0]["id"], project.as_str(), "{note}");
    assert_eq!(note["overrides"][0]["scope"], "project", "{note}");
    let md = stdout(&daemon::neo(&sb, &other, false, &["recall", "how do retries work"]));
    assert!(md.contains("session:other-work note overrides project fact"), "{md}");
}
