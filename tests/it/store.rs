//! The store on real repositories: layout, isolation from the work tree, every repository shape,
//! configuration, fetched memory, and the bounded wait on a stale lock.

use crate::support::{json, stderr, Sandbox};
use git_neo::api::{AddRequest, Clock, Session, SessionOptions};
use git_neo::record::Timestamp;
use git_neo::store::Identity;
use std::path::Path;
use std::time::{Duration, Instant};

/// A session writing as Ada at a fixed time, with no model.
fn session(repo: &Path) -> Session {
    Session::new(SessionOptions {
        dir: repo.to_path_buf(),
        git_dir: None,
        ref_name: None,
        identity: Some(Identity { name: "Ada Tester".into(), email: "ada@example.com".into() }),
        clock: Clock::Fixed(Timestamp(1_772_366_400)),
        embedder: git_neo::embed::EmbedderChoice::Off,
        scope: None,
        data_dir: None,
        config: Vec::new(),
    })
}

fn fact(subject: &str) -> AddRequest {
    AddRequest {
        fact_type: "decision".into(),
        subject: subject.into(),
        body: "because".into(),
        ..AddRequest::default()
    }
}

#[test]
fn writes_a_fan_out_tree_with_format_a_commit_and_a_reflog_and_nothing_else() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    std::fs::write(repo.join("src/lib.rs"), "pub fn answer() -> u32 { 43 }\n").expect("dirty the work tree");
    let status_before = sb.git(&repo, &["status", "--porcelain=v1"]);
    let head_before = sb.git(&repo, &["rev-parse", "HEAD"]);
    let index_before = std::fs::read(repo.join(".git/index")).expect("read index");

    let mut mem = session(&repo);
    let added = mem.add(&fact("Use the builder")).expect("add");
    let hex = added.id.to_hex();

    let files = sb.git(&repo, &["ls-tree", "-r", "--name-only", "refs/heads/neo-memory"]);
    assert_eq!(files, format!("FORMAT\nfacts/{}/{hex}.md", &hex[..2]));
    assert_eq!(sb.git(&repo, &["cat-file", "-p", "refs/heads/neo-memory:FORMAT"]), "1");
    let bytes = sb
        .git_output(&repo, &["cat-file", "blob", &format!("refs/heads/neo-memory:facts/{}/{hex}.md", &hex[..2])])
        .stdout;
    assert_eq!(git_neo::record::RecordId::of_bytes(&bytes), added.id, "the file name is the BLAKE3 of its bytes");
    let msg = sb.git(&repo, &["log", "-1", "--format=%s|%an|%ae|%ct", "refs/heads/neo-memory"]);
    assert_eq!(
        msg,
        format!("neo: add decision {} \"Use the builder\"|Ada Tester|ada@example.com|1772366400", added.id.short())
    );
    let reflog = sb.git(&repo, &["reflog", "show", "--format=%gs", "refs/heads/neo-memory"]);
    assert!(reflog.contains("neo: add decision"), "reflog: {reflog}");

    assert_eq!(sb.git(&repo, &["status", "--porcelain=v1"]), status_before, "work tree untouched");
    assert_eq!(sb.git(&repo, &["rev-parse", "HEAD"]), head_before, "HEAD untouched");
    assert_eq!(std::fs::read(repo.join(".git/index")).expect("read index"), index_before, "index untouched");
    let fsck = sb.git_output(&repo, &["fsck", "--full", "--no-dangling"]);
    assert!(fsck.status.success(), "fsck: {}", stderr(&fsck));

    // A second write adds to the same tree; the history has two commits with FORMAT kept.
    mem.add(&fact("Keep modules small")).expect("second add");
    assert_eq!(sb.git(&repo, &["rev-list", "--count", "refs/heads/neo-memory"]), "2");
    assert_eq!(crate::support::fold_of(&repo).1.entries.len(), 2);
}

#[test]
fn works_in_bare_unborn_and_linked_worktree_repositories() {
    let sb = Sandbox::new();
    // Bare.
    let bare = sb.path("bare.git");
    sb.git(sb.dir.path(), &["init", "-q", "--bare", "bare.git"]);
    let id = sb.neo_ok(&bare, &["add", "-t", "pattern", "-s", "Bare repos hold memory too"]);
    assert_eq!(sb.neo_ok(&bare, &["list", "--json"]).matches(&id).count(), 1);
    assert!(bare.join("logs/refs/heads/neo-memory").exists(), "reflog is forced even in a bare repository");

    // Unborn HEAD: memory lands, HEAD stays unborn, an anchor to a work-tree file is hashed from disk.
    let unborn = sb.unborn_repo("unborn");
    std::fs::write(unborn.join("notes.txt"), "hello\n").expect("write a file");
    let id = sb
        .neo_ok(&unborn, &["add", "-t", "architecture", "-s", "Notes live in notes.txt", "--anchor", "notes.txt:1-1"]);
    assert!(!sb.git_output(&unborn, &["rev-parse", "--verify", "-q", "HEAD"]).status.success(), "HEAD is still unborn");
    let shown = json(&sb.neo_ok(&unborn, &["show", &id[..8], "--json"]));
    assert_eq!(shown["record"]["anchors"][0]["blob"], sb.git(&unborn, &["hash-object", "notes.txt"]));
    assert!(shown["record"]["anchors"][0].get("commit").is_none(), "no HEAD commit to record");

    // Linked worktree: writes land in the shared ref store, visible from the main work tree.
    let main = sb.repo("main");
    sb.git(&main, &["worktree", "add", "-q", "../linked"]);
    let linked = sb.path("linked");
    let id = sb.neo_ok(&linked, &["add", "-t", "review", "-s", "Written from a linked worktree"]);
    assert!(sb.neo_ok(&main, &["list"]).contains(&id[..12]));
    assert_eq!(sb.git(&linked, &["status", "--porcelain"]), "", "the linked work tree is untouched");
}

#[test]
fn the_ref_comes_from_git_config_neo_ref() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    sb.git(&repo, &["config", "neo.ref", "refs/heads/team-memory"]);
    sb.neo_ok(&repo, &["add", "-t", "decision", "-s", "Team memory lives elsewhere"]);
    assert!(sb.git_output(&repo, &["rev-parse", "--verify", "-q", "refs/heads/team-memory"]).status.success());
    assert_eq!(sb.tip(&repo), None, "the default ref was not created");
    sb.git(&repo, &["config", "neo.ref", "HEAD"]);
    let out = sb.neo(&repo, &["list"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("neo.ref"), "{}", stderr(&out));
}

#[test]
fn a_fresh_clone_reads_fetched_memory_and_continues_its_history() {
    let sb = Sandbox::new();
    let origin = sb.repo("origin");
    let first = sb.neo_ok(&origin, &["add", "-t", "constraint", "-s", "Never force-push main"]);
    sb.git(sb.dir.path(), &["clone", "-q", "origin", "clone"]);
    let clone = sb.path("clone");
    assert_eq!(sb.tip(&clone), None, "the clone has only the remote-tracking ref");
    assert!(sb.neo_ok(&clone, &["list"]).contains(&first[..12]), "reads see refs/remotes/origin/neo-memory");
    sb.neo_ok(&clone, &["add", "-t", "constraint", "-s", "Sign release tags"]);
    let parent = sb.git(&clone, &["rev-parse", "refs/heads/neo-memory^"]);
    assert_eq!(
        parent,
        sb.git(&clone, &["rev-parse", "refs/remotes/origin/neo-memory"]),
        "the first local write continues the fetched history"
    );
    assert_eq!(json(&sb.neo_ok(&clone, &["list", "--json"])).as_array().map(|a| a.len()), Some(2));
}

#[test]
fn a_held_lock_is_a_clear_error_after_a_bounded_wait_and_an_abandoned_one_is_cleared() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    sb.neo_ok(&repo, &["add", "-t", "decision", "-s", "Before the crash"]);
    let tip = sb.tip(&repo);
    let lock = repo.join(".git/refs/heads/neo-memory.lock");
    // A lock file just made (as a `git update-ref` in progress holds it) is waited for, then
    // reported, and nothing is written.
    std::fs::write(&lock, "held by another git\n").expect("plant a lock");
    sb.git(&repo, &["config", "neo.lockTimeout", "300"]);
    let started = Instant::now();
    let out = sb.neo(&repo, &["add", "-t", "decision", "-s", "During the lock"]);
    assert!(started.elapsed() < Duration::from_secs(20), "bounded wait");
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("neo-memory.lock") && err.contains("remove that file"), "{err}");
    assert_eq!(sb.tip(&repo), tip, "nothing written");
    assert!(lock.exists(), "a young lock is never taken away");
    // The same file, once it has stood for longer than any git ref update takes while no git-neo
    // process is updating a ref, was left by a killed writer: the next write clears it.
    let old = std::time::SystemTime::now() - Duration::from_secs(10);
    std::fs::File::options().write(true).open(&lock).and_then(|f| f.set_modified(old)).expect("age the lock");
    sb.neo_ok(&repo, &["add", "-t", "decision", "-s", "During the lock"]);
    assert_ne!(sb.tip(&repo), tip);
    assert!(!lock.exists());
    sb.neo_ok(&repo, &["verify"]);
}

#[test]
fn bulk_imports_end_healthy_and_readable() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let lines: String = (0..2000)
        .map(|i| format!("{{\"type\":\"pattern\",\"subject\":\"bulk fact {i}\",\"tags\":[\"bulk\"]}}\n"))
        .collect();
    std::fs::write(sb.path("bulk.jsonl"), &lines).expect("write import file");
    let out = json(&sb.neo_ok(
        &repo,
        &["import", sb.path("bulk.jsonl").to_str().expect("utf-8 path"), "--batch-size", "1", "--json"],
    ));
    assert_eq!(out["added"], 2000);
    assert_eq!(out["commits"], 2000);
    // 2000 one-record commits leave ~10000 loose objects: git's gc --auto threshold is crossed,
    // so the write path must have packed them.
    let count = sb.git(&repo, &["count-objects", "-v"]);
    let loose: u64 = count
        .lines()
        .find_map(|l| l.strip_prefix("count: "))
        .and_then(|v| v.parse().ok())
        .expect("count-objects output");
    assert!(loose < 6700, "loose objects left: {loose}\n{count}");
    assert!(sb.git_output(&repo, &["fsck", "--full", "--no-dangling"]).status.success());
    // Importing the same file again writes nothing.
    let tip = sb.tip(&repo);
    let again = json(&sb.neo_ok(&repo, &["import", sb.path("bulk.jsonl").to_str().expect("utf-8 path"), "--json"]));
    assert_eq!(again["duplicates"], 2000);
    assert_eq!(sb.tip(&repo), tip);
}

#[test]
fn a_large_write_lands_as_one_pack_that_git_and_a_fresh_reader_accept() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let packs = crate::support::pack_count;
    let loose = |repo: &Path| -> u64 {
        sb.git(repo, &["count-objects", "-v"])
            .lines()
            .find_map(|l| l.strip_prefix("count: "))
            .and_then(|v| v.parse().ok())
            .expect("count-objects output")
    };
    let before = (packs(&repo), loose(&repo));
    let lines: String = (0..500)
        .map(|i| format!("{{\"type\":\"pattern\",\"subject\":\"packed fact {i}\",\"body\":\"{}\"}}\n", "x".repeat(i)))
        .collect();
    std::fs::write(sb.path("many.jsonl"), &lines).expect("write import file");
    let out = json(&sb.neo_ok(&repo, &["import", sb.path("many.jsonl").to_str().expect("utf-8 path"), "--json"]));
    assert_eq!(out["added"], 500);
    assert_eq!(packs(&repo), before.0 + 1, "one new pack");
    // The 500 blobs are in the pack: only the commit and its trees were written loose.
    assert!(loose(&repo) - before.1 < 300, "{} loose objects", loose(&repo));
    let fsck = sb.git_output(&repo, &["fsck", "--full", "--no-dangling"]);
    assert!(fsck.status.success(), "fsck: {}", stderr(&fsck));
    assert_eq!(sb.git(&repo, &["ls-tree", "-r", "--name-only", "refs/heads/neo-memory", "facts"]).lines().count(), 500);
    let (_, state, _) = crate::support::fold_of(&repo);
    assert_eq!(state.entries.len(), 500);
    assert!(state.iter().any(|e| e.record.body.trim() == "x".repeat(499)));
    // The same records again: nothing new, so no second pack.
    let lines2: String = lines.lines().take(100).map(|l| format!("{l}\n")).collect();
    std::fs::write(sb.path("again.jsonl"), lines2).expect("write import file");
    sb.neo_ok(&repo, &["import", sb.path("again.jsonl").to_str().expect("utf-8 path"), "--json"]);
    assert_eq!(packs(&repo), before.0 + 1);
}

#[test]
fn import_refuses_a_file_with_a_bad_line_unless_told_to_skip_it() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let file = sb.path("mixed.jsonl");
    std::fs::write(
        &file,
        "{\"type\":\"pattern\",\"subject\":\"good one\"}\n\
         {\"type\":\"gossip\",\"subject\":\"bad type\"}\n\
         \n\
         {\"type\":\"decision\"}\n\
         {\"type\":\"decision\",\"subject\":\"good two\"}\n",
    )
    .expect("write import file");
    let path = file.to_str().expect("utf-8 path");
    // Default: validate everything first, write nothing, name every problem.
    let out = sb.neo(&repo, &["import", path]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("line 4: missing field `subject`"), "{}", stderr(&out));
    assert_eq!(sb.tip(&repo), None);
    // --skip-invalid: the two good lines land, each bad one is reported with its line and reason.
    let out = json(&sb.neo_ok(&repo, &["import", path, "--skip-invalid", "--json"]));
    assert_eq!(out["added"], 2, "{out}");
    let skipped: Vec<(u64, String)> = out["skipped"]
        .as_array()
        .expect("skipped lines")
        .iter()
        .map(|s| (s["line"].as_u64().unwrap_or(0), s["reasons"].to_string()))
        .collect();
    assert_eq!(skipped.iter().map(|s| s.0).collect::<Vec<_>>(), vec![2, 4], "{out}");
    assert!(skipped[0].1.contains("gossip") && skipped[1].1.contains("subject"), "{skipped:?}");
    let listed = sb.neo_ok(&repo, &["list", "--json"]);
    assert!(listed.contains("good one") && listed.contains("good two") && !listed.contains("bad type"));
}
