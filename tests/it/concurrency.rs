//! Concurrent writers and crashes: every record lands, and the ref is always at a valid commit.

use crate::support::{json, stderr, Sandbox};
use std::path::Path;
use std::process::Child;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Commits on the memory ref (0 when it does not exist yet).
fn commit_count(sb: &Sandbox, repo: &Path) -> u32 {
    let out = sb.git_output(repo, &["rev-list", "--count", "refs/heads/neo-memory"]);
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap_or(0)
}

/// Start `git neo import` of 5000 facts (subjects `<prefix> <n>`), one commit per record.
fn start_batch(sb: &Sandbox, repo: &Path, prefix: &str) -> Child {
    let lines: String = (0..5000).map(|i| format!("{{\"type\":\"pattern\",\"subject\":\"{prefix} {i}\"}}\n")).collect();
    std::fs::write(sb.path("batch.jsonl"), lines).expect("write batch");
    sb.neo_cmd(repo)
        .args(["import", sb.path("batch.jsonl").to_str().expect("utf-8"), "--batch-size", "1"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the batch writer")
}

/// Wait until the memory ref has at least `n` commits.
fn wait_for_commits(sb: &Sandbox, repo: &Path, n: u32) {
    let started = Instant::now();
    while commit_count(sb, repo) < n {
        assert!(started.elapsed() < Duration::from_secs(120), "the batch never got going");
        std::thread::sleep(Duration::from_millis(3));
    }
}

#[test]
fn eight_processes_adding_twenty_five_each_all_land() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    std::thread::scope(|scope| {
        for w in 0..8 {
            let (sb, repo) = (&sb, &repo);
            scope.spawn(move || {
                for i in 0..25 {
                    let subject = format!("writer {w} fact {i}");
                    let out = sb.neo(repo, &["add", "-t", "pattern", "-s", &subject]);
                    assert!(out.status.success(), "{subject}: {}", stderr(&out));
                }
            });
        }
    });
    let files = sb.git(&repo, &["ls-tree", "-r", "--name-only", "refs/heads/neo-memory", "facts"]);
    assert_eq!(files.lines().count(), 200, "every writer's record is on the ref");
    let listed = json(&sb.neo_ok(&repo, &["list", "--json"]));
    assert_eq!(listed.as_array().map(|a| a.len()), Some(200));
    assert_eq!(
        sb.git(&repo, &["rev-list", "--count", "refs/heads/neo-memory"]),
        "200",
        "one commit per write, a linear history"
    );
    let fsck = sb.git_output(&repo, &["fsck", "--full"]);
    assert!(fsck.status.success(), "fsck: {}", stderr(&fsck));
    assert!(!String::from_utf8_lossy(&fsck.stdout).contains("error"), "fsck reported errors");
}

#[test]
fn four_processes_importing_packed_batches_at_once_all_land() {
    // Batches of 150 records are written as packs (one per batch): racing writers each add
    // their pack and retry the ref update on the tip another one moved.
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    for w in 0..4 {
        let lines: String =
            (0..300).map(|i| format!("{{\"type\":\"pattern\",\"subject\":\"importer {w} fact {i}\"}}\n")).collect();
        std::fs::write(sb.path(&format!("import-{w}.jsonl")), lines).expect("write batch");
    }
    std::thread::scope(|scope| {
        for w in 0..4 {
            let (sb, repo) = (&sb, &repo);
            scope.spawn(move || {
                let file = sb.path(&format!("import-{w}.jsonl"));
                let out = sb.neo(repo, &["import", file.to_str().expect("utf-8"), "--batch-size", "150"]);
                assert!(out.status.success(), "importer {w}: {}", stderr(&out));
            });
        }
    });
    let files = sb.git(&repo, &["ls-tree", "-r", "--name-only", "refs/heads/neo-memory", "facts"]);
    assert_eq!(files.lines().count(), 1200, "every importer's records are on the ref");
    assert_eq!(sb.git(&repo, &["rev-list", "--count", "refs/heads/neo-memory"]), "8");
    let packs = crate::support::pack_count(&repo);
    assert!(packs >= 8, "one pack per batch at least: {packs}");
    let fsck = sb.git_output(&repo, &["fsck", "--full", "--no-dangling"]);
    assert!(fsck.status.success(), "fsck: {}", stderr(&fsck));
    assert_eq!(json(&sb.neo_ok(&repo, &["list", "--json"])).as_array().map(|a| a.len()), Some(1200));
}

#[test]
fn a_writer_killed_mid_batch_leaves_a_valid_ref_and_the_next_write_succeeds() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let mut child = start_batch(&sb, &repo, "batch fact");
    // Wait until the batch is well under way, then kill it without warning.
    wait_for_commits(&sb, &repo, 50);
    child.kill().expect("SIGKILL the writer");
    child.wait().expect("reap");

    let landed = sb.git(&repo, &["ls-tree", "-r", "--name-only", "refs/heads/neo-memory", "facts"]).lines().count();
    assert!((50..5000).contains(&landed), "killed mid-batch: {landed} landed");
    assert_eq!(sb.git(&repo, &["cat-file", "-t", "refs/heads/neo-memory"]), "commit");
    let fsck = sb.git_output(&repo, &["fsck", "--full", "--no-dangling"]);
    assert!(fsck.status.success(), "fsck: {}", stderr(&fsck));
    let list = sb.neo(&repo, &["list", "--json"]);
    assert!(
        list.status.success() && !stderr(&list).contains("not valid records"),
        "every record on the ref reads back: {}",
        stderr(&list)
    );
    assert_eq!(json(&String::from_utf8_lossy(&list.stdout)).as_array().map(|a| a.len()), Some(landed));

    // The kill may have landed while the writer held the ref lock: no git-neo process holds the
    // writers' lock any more, so the next write clears it (once it has stood 2 s) and lands.
    let lock = repo.join(".git/refs/heads/neo-memory.lock");
    let left_a_lock = lock.exists();
    sb.neo_ok(&repo, &["add", "-t", "decision", "-s", "after the crash"]);
    let after = sb.git(&repo, &["ls-tree", "-r", "--name-only", "refs/heads/neo-memory", "facts"]).lines().count();
    assert_eq!(after, landed + 1);
    assert!(!lock.exists(), "the abandoned lock is gone (there was one: {left_a_lock})");
}

#[test]
fn an_interrupted_writer_never_leaves_its_lock_behind() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let lock = repo.join(".git/refs/heads/neo-memory.lock");
    for round in 0..3 {
        let base = commit_count(&sb, &repo);
        let mut child = start_batch(&sb, &repo, "term fact");
        wait_for_commits(&sb, &repo, base + 20);
        let term =
            std::process::Command::new("kill").args(["-TERM", &child.id().to_string()]).status().expect("send SIGTERM");
        assert!(term.success());
        child.wait().expect("reap");
        assert!(!lock.exists(), "round {round}: SIGTERM left {}", lock.display());
        assert_eq!(sb.git(&repo, &["cat-file", "-t", "refs/heads/neo-memory"]), "commit");
    }
}
