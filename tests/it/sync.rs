//! Sharing through a bare remote: clones converge, leases protect concurrent pushes, fresh clones
//! see fetched memory, and proposals carry exactly the new records.

use crate::support::{json, stderr, stdout, Sandbox};
use std::path::{Path, PathBuf};

fn remote_and_clones(sb: &Sandbox, n: usize) -> Vec<PathBuf> {
    let seed = sb.repo("seed");
    sb.git(sb.dir.path(), &["init", "-q", "--bare", "remote.git"]);
    sb.git(&seed, &["remote", "add", "origin", sb.path("remote.git").to_str().expect("utf-8")]);
    sb.git(&seed, &["push", "-q", "origin", "HEAD:refs/heads/main"]);
    (0..n)
        .map(|i| {
            let name = format!("clone{i}");
            sb.git(sb.dir.path(), &["clone", "-q", "remote.git", &name]);
            sb.path(&name)
        })
        .collect()
}

fn state_of(sb: &Sandbox, repo: &Path) -> Vec<(String, String)> {
    let list = json(&sb.neo_ok(repo, &["list", "--all", "--json"]));
    let mut v: Vec<(String, String)> = list
        .as_array()
        .expect("array")
        .iter()
        .map(|e| {
            (e["id"].as_str().unwrap_or_default().to_string(), e["status"].as_str().unwrap_or_default().to_string())
        })
        .collect();
    v.sort();
    v
}

fn files(sb: &Sandbox, repo: &Path) -> String {
    sb.git(repo, &["ls-tree", "-r", "--name-only", "refs/heads/neo-memory"])
}

fn fsck_clean(sb: &Sandbox, repo: &Path) {
    let out = sb.git_output(repo, &["fsck", "--full", "--no-dangling"]);
    assert!(out.status.success(), "fsck in {}: {}", repo.display(), stderr(&out));
}

#[test]
fn three_clones_adding_in_interleaved_order_converge() {
    let sb = Sandbox::new();
    let clones = remote_and_clones(&sb, 3);
    let (a, b, c) = (&clones[0], &clones[1], &clones[2]);
    let add = |repo: &Path, s: &str| sb.neo_ok(repo, &["add", "-t", "pattern", "-s", s]);
    add(a, "a1");
    add(a, "a2");
    sb.neo_ok(a, &["sync"]);
    add(b, "b1"); // b has not seen a's memory: this sync merges two histories
    let b_sync = json(&sb.neo_ok(b, &["sync", "--json"]));
    assert_eq!(b_sync["merge"], "merged");
    assert_eq!(b_sync["received"], 2);
    assert_eq!(b_sync["sent"], 1);
    let c1 = add(c, "c1");
    add(a, "a3");
    sb.neo_ok(c, &["forget", &c1[..8], "--reason", "wrong"]);
    sb.neo_ok(a, &["sync"]);
    sb.neo_ok(c, &["sync"]);

    // Then all three add and sync at the same time: leases force retries, nothing is overwritten.
    std::thread::scope(|scope| {
        for (i, repo) in clones.iter().enumerate() {
            let sb = &sb;
            scope.spawn(move || {
                for j in 0..4 {
                    sb.neo_ok(repo, &["add", "-t", "decision", "-s", &format!("concurrent {i}.{j}")]);
                    sb.neo_ok(repo, &["sync"]);
                }
            });
        }
    });
    for repo in &clones {
        sb.neo_ok(repo, &["sync"]);
    }
    for repo in &clones {
        sb.neo_ok(repo, &["sync"]);
    }
    let expected_files = files(&sb, a);
    assert_eq!(expected_files.lines().filter(|l| l.starts_with("facts/")).count(), 5 + 12);
    let expected_state = state_of(&sb, a);
    for repo in &clones {
        assert_eq!(files(&sb, repo), expected_files, "{} has the same records", repo.display());
        assert_eq!(state_of(&sb, repo), expected_state, "{} folds to the same state", repo.display());
        assert_eq!(sb.tip(repo), sb.tip(a), "{} is at the same commit", repo.display());
        fsck_clean(&sb, repo);
        let v = sb.neo(repo, &["verify"]);
        assert!(v.status.success(), "{}", crate::support::stdout(&v));
    }
    fsck_clean(&sb, &sb.path("remote.git"));
    assert!(expected_state.iter().any(|(id, st)| id.starts_with(&c1[..12]) && st == "retracted"));
}

#[test]
fn clones_that_never_ran_git_neo_see_memory_after_clone_or_fetch() {
    let sb = Sandbox::new();
    let clones = remote_and_clones(&sb, 2);
    let (writer, reader) = (&clones[0], &clones[1]);
    let id = sb.neo_ok(writer, &["add", "-t", "constraint", "-s", "Never force-push main"]);
    sb.neo_ok(writer, &["sync"]);
    // `reader` was cloned before the memory existed: a plain `git fetch` brings it.
    assert!(!sb.neo_ok(reader, &["list"]).contains(&id[..12]));
    sb.git(reader, &["fetch", "-q"]);
    assert!(sb.neo_ok(reader, &["list"]).contains(&id[..12]));
    // A clone made now sees it at once (the default ref is a branch, so clone fetches it).
    sb.git(sb.dir.path(), &["clone", "-q", "remote.git", "late"]);
    assert!(sb.neo_ok(&sb.path("late"), &["show", &id[..10]]).contains("Never force-push main"));
}

#[test]
fn propose_pushes_exactly_the_new_records_to_a_proposal_branch() {
    let sb = Sandbox::new();
    let clones = remote_and_clones(&sb, 2);
    let (a, b) = (&clones[0], &clones[1]);
    sb.neo_ok(a, &["add", "-t", "pattern", "-s", "Shared before"]);
    sb.neo_ok(a, &["sync"]);
    let x = sb.neo_ok(b, &["add", "-t", "review", "-s", "Proposed one"]);
    let y = sb.neo_ok(b, &["add", "-t", "review", "-s", "Proposed two"]);
    let out = json(&sb.neo_ok(b, &["propose", "--name", "review-me", "--json"]));
    assert_eq!(out["branch"], "neo-memory-proposals/review-me");
    assert_eq!(out["records"], 2);
    sb.git(a, &["fetch", "-q"]);
    let changed = sb.git(a, &["diff", "--name-only", "origin/neo-memory...origin/neo-memory-proposals/review-me"]);
    let mut expected = vec![format!("facts/{}/{x}.md", &x[..2]), format!("facts/{}/{y}.md", &y[..2])];
    expected.sort();
    assert_eq!(changed.lines().map(String::from).collect::<Vec<_>>(), expected);
    let v = sb.neo(a, &["verify", "--range", "origin/neo-memory..origin/neo-memory-proposals/review-me"]);
    assert!(v.status.success(), "{}", crate::support::stdout(&v));
    // The example CI workflow's verify and summary steps run as written against this proposal
    // (the refs reach them through `env:`, as GitHub passes them).
    let workflow = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/examples/neo-memory-pr.yml"))
        .expect("workflow");
    let head_sha = sb.git(a, &["rev-parse", "origin/neo-memory-proposals/review-me"]);
    let summary = sb.path("summary.md");
    let bin_dir = std::path::Path::new(crate::support::BIN).parent().expect("bin dir");
    for step in ["Verify the proposed memory", "Summarise the memory changes"] {
        let script = crate::review::step_script(&workflow, step);
        let mut cmd = std::process::Command::new("bash");
        crate::support::hermetic(&mut cmd, sb.dir.path())
            .current_dir(a)
            .env("PATH", format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default()))
            .env("GITHUB_STEP_SUMMARY", &summary)
            .env("BASE_REF", "neo-memory")
            .env("HEAD_SHA", &head_sha)
            .args(["-euo", "pipefail", "-c", &script]);
        let out = cmd.output().expect("bash");
        assert!(out.status.success(), "{script}: {}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    }
    let md = std::fs::read_to_string(&summary).expect("summary written");
    assert!(md.contains("Proposed one") && md.contains("2 facts added"), "{md}");

    // Nothing new: nothing to propose.
    sb.neo_ok(b, &["sync"]);
    let again = json(&sb.neo_ok(b, &["propose", "--json"]));
    assert_eq!(again["pushed"], false);
}

#[test]
fn a_purged_record_brought_back_by_plain_git_is_reported_and_not_synced() {
    let sb = Sandbox::new();
    let clones = remote_and_clones(&sb, 2);
    let (a, b) = (&clones[0], &clones[1]);
    sb.neo_ok(a, &["add", "-t", "pattern", "-s", "Keep this"]);
    let gone = sb.neo_ok(a, &["add", "-t", "pattern", "-s", "Mentions Jane Customer by name"]);
    sb.neo_ok(a, &["sync"]);
    sb.neo_ok(b, &["sync"]);
    // `a` purges it and syncs the rewritten history; `b` still holds the old one.
    sb.neo_ok(a, &["purge", &gone[..8], "--reason", "personal data", "--yes"]);
    sb.neo_ok(a, &["sync"]);
    // `b` merges with plain git and pushes with plain git: the record is back on the remote,
    // with the purge note in its history.
    sb.git(b, &["fetch", "-q", "origin"]);
    sb.git(b, &["checkout", "-q", "neo-memory"]);
    sb.git(b, &["merge", "-q", "--no-edit", "origin/neo-memory"]);
    sb.git(b, &["push", "-q", "origin", "neo-memory"]);
    let files = sb.git(b, &["ls-tree", "-r", "--name-only", "origin/neo-memory"]);
    assert!(files.contains(&gone), "the plain merge kept it: {files}");
    // verify names it.
    let out = sb.neo(b, &["verify", "--json"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stdout(&out).contains("was purged") && stdout(&out).contains(&gone[..12]), "{}", stdout(&out));
    // `a`'s sync refuses to take it back, and leaves its own memory as it was.
    let tip = sb.tip(a);
    let refused = sb.neo(a, &["sync"]);
    assert_eq!(refused.status.code(), Some(3), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("purged record") && stderr(&refused).contains(&gone[..12]),
        "{}",
        stderr(&refused)
    );
    assert_eq!(sb.tip(a), tip);
    assert!(!files_at(&sb, a).contains(&gone));
}

fn files_at(sb: &Sandbox, repo: &Path) -> String {
    sb.git(repo, &["ls-tree", "-r", "--name-only", "refs/heads/neo-memory"])
}
