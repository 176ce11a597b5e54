//! Scopes (docs/scopes.md): user, org and session memories beside the project's, each a real git
//! repository or ref, recalled together; and every failure mode the issue names, on real
//! repositories (a bare repository stands for the team's forge).

use crate::support::*;
use std::path::{Path, PathBuf};
use std::process::Output;

/// A project with an org memory at `forge` (a bare repository), in `mode`.
fn project(sb: &Sandbox, name: &str, forge: &Path, mode: &str) -> PathBuf {
    let repo = sb.repo(name);
    sb.git(&repo, &["config", "neo.org.url", &forge.to_string_lossy()]);
    sb.git(&repo, &["config", "neo.org.mode", mode]);
    repo
}

/// An org memory (a bare repository standing for the forge) and a project using it in `mode`.
fn with_org(sb: &Sandbox, mode: &str) -> (PathBuf, PathBuf) {
    let org = forge(sb, "org.git");
    let repo = project(sb, "r", &org, mode);
    (org, repo)
}

fn forge(sb: &Sandbox, name: &str) -> PathBuf {
    let path = sb.path(name);
    sb.git(sb.dir.path(), &["init", "-q", "--bare", &path.to_string_lossy()]);
    path
}

/// `git neo` with the deterministic embedder (vector search runs, no model needed).
fn neo(sb: &Sandbox, repo: &Path, args: &[&str]) -> Output {
    sb.neo_cmd(repo).env("GIT_NEO_EMBEDDER", "hash").args(args).output().expect("run git-neo")
}

fn ok(sb: &Sandbox, repo: &Path, args: &[&str]) -> String {
    let out = neo(sb, repo, args);
    assert!(out.status.success(), "git neo {args:?}: {}\n{}", stdout(&out), stderr(&out));
    stdout(&out).trim().to_string()
}

/// `git neo` in `repo` as run on another machine: its own data directory `machine`.
fn on_machine(sb: &Sandbox, repo: &Path, machine: &str, args: &[&str]) -> String {
    let out = sb
        .neo_cmd(repo)
        .env("GIT_NEO_DATA_DIR", sb.path(machine))
        .env("GIT_NEO_EMBEDDER", "hash")
        .args(args)
        .output()
        .expect("run git-neo");
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    stdout(&out)
}

fn add(sb: &Sandbox, repo: &Path, scope: &str, args: &[&str]) -> String {
    let mut all = vec!["--scope", scope, "add"];
    all.extend_from_slice(args);
    ok(sb, repo, &all)
}

/// Subjects of a JSON recall's items (every layer) with the scope each says it came from.
fn recalled(sb: &Sandbox, repo: &Path, query: &str) -> Vec<(String, String)> {
    let r = json(&ok(sb, repo, &["recall", query, "--json"]));
    let mut out = Vec::new();
    for layer in ["constraints", "facts", "attempts", "invalidated", "known_unknowns"] {
        for i in r[layer].as_array().expect("a layer") {
            out.push((i["subject"].as_str().unwrap_or("").to_string(), i["scope"].as_str().unwrap_or("").to_string()));
        }
    }
    out
}

/// Subjects of the memory branch on a bare repository.
fn subjects_on(sb: &Sandbox, bare: &Path, branch: &str) -> Vec<String> {
    let out = sb.git_output(bare, &["log", "--format=%s", branch]);
    String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect()
}

#[test]
fn user_and_org_facts_reach_a_fresh_project_and_each_item_says_its_scope() {
    let sb = Sandbox::new();
    let org = forge(&sb, "forge/org-memory.git");
    let a = project(&sb, "a", &org, "auto");
    add(&sb, &a, "project", &["-t", "decision", "-s", "Project A stores orders in Postgres"]);
    add(&sb, &a, "user", &["-t", "pattern", "-s", "I prefer small focused commits on orders work"]);
    let out = add(&sb, &a, "org", &["-t", "constraint", "-s", "Never push orders code directly to main"]);
    assert_eq!(out.len(), 64, "an id: {out}");
    // The org write was pushed to the forge at once (auto mode).
    assert!(subjects_on(&sb, &org, "neo-memory").iter().any(|s| s.contains("Never push orders code")));
    let user_repo = sb.path(".local/share/git-neo/user.git");
    assert!(user_repo.join("HEAD").is_file(), "the user memory is a repository of its own");

    // Another project on this machine, never written to: it sees the user's facts and the org's
    // (the org cache is per machine), not project A's own.
    let b = project(&sb, "b", &org, "auto");
    let got = recalled(&sb, &b, "orders commits main");
    assert!(got.iter().any(|(s, sc)| s.contains("small focused commits") && sc == "user"), "{got:?}");
    assert!(got.iter().any(|(s, sc)| s.contains("Never push orders") && sc == "org"), "{got:?}");
    assert!(!got.iter().any(|(s, _)| s.contains("Project A")), "project A's own memory stays in A: {got:?}");
    // On another machine (another data directory) the org memory arrives with a fetch.
    let elsewhere = |args: &[&str]| on_machine(&sb, &b, "laptop", args);
    assert!(!elsewhere(&["recall", "orders commits main"]).contains("Never push orders"));
    elsewhere(&["--scope", "org", "sync"]);
    assert!(elsewhere(&["recall", "orders commits main"]).contains("Never push orders"));

    // Markdown says it too, and --scope reads one scope only.
    let md = ok(&sb, &b, &["recall", "orders commits main"]);
    assert!(md.contains("[org]") && md.contains("[user]"), "{md}");
    let only = json(&ok(&sb, &b, &["--scope", "user", "recall", "orders commits main", "--json"]));
    assert_eq!(only["scopes"], serde_json::json!(["user"]));
    assert!(only["constraints"].as_array().expect("constraints").is_empty(), "{only}");

    // Per-scope commands read the scope named.
    let listed = ok(&sb, &b, &["--scope", "org", "list"]);
    assert!(listed.contains("Never push orders code"), "{listed}");
    assert!(!ok(&sb, &b, &["list"]).contains("Never push"), "the project list is the project's");
    ok(&sb, &b, &["--scope", "user", "verify"]);
    ok(&sb, &b, &["--scope", "org", "verify"]);
    let scopes = json(&ok(&sb, &b, &["scopes", "--json"]));
    let by_name = |n: &str| scopes.as_array().expect("list").iter().find(|s| s["scope"] == n).cloned().expect(n);
    assert_eq!(by_name("user")["records"], 1);
    assert_eq!(by_name("org")["records"], 1);
    assert_eq!(by_name("org")["reachable"], true);
    assert!(by_name("org")["last_sync"].is_string());
}

#[test]
fn the_same_key_is_answered_by_project_over_org_over_user_but_constraints_all_show() {
    let sb = Sandbox::new();
    let (_org, repo) = with_org(&sb, "auto");
    let key = ["--key", "style.indent"];
    add(&sb, &repo, "user", &["-t", "pattern", "-s", "Indent with tabs everywhere", key[0], key[1]]);
    add(&sb, &repo, "org", &["-t", "pattern", "-s", "Indent with two spaces everywhere", key[0], key[1]]);
    let project_id =
        add(&sb, &repo, "project", &["-t", "pattern", "-s", "Indent with four spaces everywhere", key[0], key[1]]);
    add(&sb, &repo, "user", &["-t", "constraint", "-s", "Never indent with a mix", key[0], "style.mix"]);
    add(&sb, &repo, "org", &["-t", "constraint", "-s", "Never indent with a mix of widths", key[0], "style.mix"]);

    let got = recalled(&sb, &repo, "indent spaces tabs everywhere");
    let md = ok(&sb, &repo, &["recall", "indent spaces tabs everywhere"]);
    assert!(md.contains("Scopes read: project, org, user"), "{md}");
    assert!(
        md.contains("everywhere** `") && md.contains("` [project]") && md.contains("` [org]"),
        "every item says: {md}"
    );
    let indent: Vec<_> = got.iter().filter(|(s, _)| s.starts_with("Indent")).collect();
    assert_eq!(indent, vec![&("Indent with four spaces everywhere".to_string(), "project".to_string())]);
    // Both constraints, whatever their keys: constraints from every scope always show.
    assert_eq!(got.iter().filter(|(s, _)| s.starts_with("Never indent")).count(), 2, "{got:?}");

    // The project's fact forgotten, the org's answers; then the user's.
    ok(&sb, &repo, &["forget", &project_id[..12], "--reason", "moved to the org rule"]);
    let got = recalled(&sb, &repo, "indent spaces tabs everywhere");
    assert!(got.contains(&("Indent with two spaces everywhere".into(), "org".into())), "{got:?}");
    assert!(!got.iter().any(|(s, _)| s == "Indent with tabs everywhere"), "{got:?}");
    // Key supersession never crossed scopes: each scope still holds its own valid fact.
    assert!(ok(&sb, &repo, &["--scope", "user", "list"]).contains("Indent with tabs"));
    assert!(ok(&sb, &repo, &["--scope", "org", "list"]).contains("two spaces"));
}

#[test]
fn org_writes_in_review_mode_become_a_proposal_branch_and_land_when_merged() {
    let sb = Sandbox::new();
    let (org, repo) = with_org(&sb, "review");
    add(&sb, &repo, "org", &["-t", "constraint", "-s", "Never log card numbers"]);
    let out = neo(&sb, &repo, &["--scope", "org", "add", "-t", "decision", "-s", "Payments go through the ledger"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("proposed as branch neo-memory-proposals/"), "{}", stderr(&out));
    let branches = sb.git(&org, &["branch", "--format=%(refname:short)"]);
    let proposals: Vec<&str> = branches.lines().filter(|b| b.starts_with("neo-memory-proposals/")).collect();
    assert_eq!(proposals.len(), 2, "one proposal branch per write: {branches}");
    // Nothing reached the org's memory branch itself, and nothing waits locally any more.
    assert!(sb.git_output(&org, &["rev-parse", "--verify", "-q", "neo-memory"]).stdout.is_empty());
    assert_eq!(ok(&sb, &repo, &["--scope", "org", "list", "--proposed"]), "", "nothing waits locally");
    assert!(!recalled(&sb, &repo, "card numbers ledger").iter().any(|(_, s)| s == "org"));

    // The pull request is merged on the forge (here: the branch moved by git), then a sync.
    sb.git(&org, &["branch", "neo-memory", proposals[0]]);
    ok(&sb, &repo, &["--scope", "org", "sync"]);
    let got = recalled(&sb, &repo, "card numbers ledger");
    assert_eq!(got.iter().filter(|(_, s)| s == "org").count(), 1, "{got:?}");
}

#[test]
fn an_unreachable_org_answers_from_its_cache_and_a_failed_write_is_kept_and_shared_later() {
    let sb = Sandbox::new();
    let (org, repo) = with_org(&sb, "auto");
    add(&sb, &repo, "org", &["-t", "constraint", "-s", "Never deploy on Fridays"]);
    let away = sb.path("org-away.git");
    std::fs::rename(&org, &away).expect("take the forge away");

    // Reads: from the cache, saying how old it is (an hour later by the clock).
    let out = sb
        .neo_cmd(&repo)
        .env("GIT_NEO_EMBEDDER", "hash")
        .env("GIT_NEO_NOW", "2099-01-01T00:00:00Z")
        .args(["recall", "deploy fridays"])
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("Never deploy on Fridays"), "{}", stdout(&out));
    assert!(stderr(&out).contains("from the local cache"), "{}", stderr(&out));

    // Writes: a clear error, exit 5, the record kept in the cache.
    let out = neo(&sb, &repo, &["--scope", "org", "add", "-t", "decision", "-s", "Deploys need two approvals"]);
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    assert!(stderr(&out).contains("kept in the local copy") && stderr(&out).contains("git neo sync --scope org"));
    assert!(ok(&sb, &repo, &["--scope", "org", "list"]).contains("Deploys need two approvals"));
    let out = neo(&sb, &repo, &["--scope", "org", "sync"]);
    assert_eq!(out.status.code(), Some(5), "still unreachable: {}", stderr(&out));
    let scopes = json(&ok(&sb, &repo, &["scopes", "--json"]));
    let org_info = scopes.as_array().expect("list").iter().find(|s| s["scope"] == "org").cloned().expect("org");
    assert_eq!(org_info["reachable"], false, "{org_info}");

    // Back online: one sync shares what waited.
    std::fs::rename(&away, &org).expect("bring the forge back");
    ok(&sb, &repo, &["--scope", "org", "sync"]);
    assert!(subjects_on(&sb, &org, "neo-memory").iter().any(|s| s.contains("Deploys need two approvals")));
}

#[test]
fn an_org_memory_that_fails_verify_is_refused_and_the_project_still_answers() {
    let sb = Sandbox::new();
    let (org, repo) = with_org(&sb, "auto");
    add(&sb, &repo, "project", &["-t", "decision", "-s", "Invoices are rendered with Typst"]);
    add(&sb, &repo, "org", &["-t", "constraint", "-s", "Never email invoices unencrypted"]);
    // Someone pushes a damaged record to the forge with plain git.
    let clone = sb.path("tamper");
    sb.git(sb.dir.path(), &["clone", "-q", "-b", "neo-memory", &org.to_string_lossy(), &clone.to_string_lossy()]);
    let dir = clone.join("facts/00");
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::write(dir.join(format!("{}.md", "0".repeat(64))), "---\nnot: a record\n---\n").expect("write");
    sb.git(&clone, &["add", "."]);
    sb.git(&clone, &["commit", "-q", "-m", "sneak in a file"]);
    sb.git(&clone, &["push", "-q", "origin", "neo-memory"]);

    let out = neo(&sb, &repo, &["--scope", "org", "sync"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains("fails verify"), "{}", stderr(&out));
    // Recall keeps the verified copy, says why the rest was refused, and the project answers.
    let out = neo(&sb, &repo, &["recall", "invoices email"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("fails verify"), "{}", stderr(&out));
    assert!(stdout(&out).contains("Invoices are rendered with Typst"));
    assert!(stdout(&out).contains("Never email invoices unencrypted"), "the last verified copy: {}", stdout(&out));
    assert!(ok(&sb, &repo, &["--scope", "org", "verify"]).contains("ok"), "the cache holds only what passed");
}

#[test]
fn a_corrupted_user_memory_is_left_out_of_recall_with_a_warning() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    ok(&sb, &repo, &["add", "-t", "decision", "-s", "Search runs on Tantivy"]);
    add(&sb, &repo, "user", &["-t", "pattern", "-s", "I like search results sorted by date"]);
    let user = sb.path(".local/share/git-neo/user.git");
    std::fs::write(user.join("refs/heads/neo-memory"), "not a commit id\n").expect("damage the ref");
    std::fs::remove_file(user.join("packed-refs")).ok();
    let out = neo(&sb, &repo, &["recall", "search results"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("Search runs on Tantivy"));
    assert!(stderr(&out).contains("the user memory is left out"), "{}", stderr(&out));
    let out = neo(&sb, &repo, &["--scope", "user", "list"]);
    assert_ne!(out.status.code(), Some(0), "naming the damaged scope is an error");
}

#[test]
fn a_session_holds_working_notes_until_promoted_or_dropped() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let started = json(&ok(&sb, &repo, &["session", "start", "fix-42", "--json"]));
    assert_eq!(started["scope"], "session:fix-42");
    add(&sb, &repo, "session", &["-t", "decision", "-s", "The flaky test needs the clock frozen"]);
    add(&sb, &repo, "session", &["-t", "pattern", "-s", "Retry the upload twice on timeouts"]);
    let notes = ok(&sb, &repo, &["--scope", "session", "add", "-t", "pattern", "-s", "Scratch: try a smaller batch"]);
    ok(&sb, &repo, &["--scope", "session:fix-42", "forget", &notes[..12], "--reason", "did not help"]);
    assert!(sb.git(&repo, &["for-each-ref", "--format=%(refname)"]).contains("refs/neo/sessions/fix-42"));
    assert!(sb.tip(&repo).is_none(), "nothing reached the project memory yet");
    let got = recalled(&sb, &repo, "flaky test clock upload");
    assert!(got.iter().any(|(s, sc)| s.contains("clock frozen") && sc == "session:fix-42"), "{got:?}");
    assert!(ok(&sb, &repo, &["session", "list"]).contains("* fix-42"));

    let p = json(&ok(&sb, &repo, &["session", "promote", "--json"]));
    assert_eq!(p["facts"].as_array().expect("facts").len(), 2, "only the valid facts: {p}");
    assert_eq!(p["dropped"], true);
    let list = json(&ok(&sb, &repo, &["list", "--json"]));
    let promoted = list.as_array().expect("list");
    assert_eq!(promoted.len(), 2);
    for f in promoted {
        let tags: Vec<&str> = f["record"]["tags"].as_array().expect("tags").iter().filter_map(|t| t.as_str()).collect();
        assert!(tags.contains(&"session:fix-42"), "{tags:?}");
        assert!(tags.iter().any(|t| t.starts_with("from:")), "names the record it came from: {tags:?}");
    }
    assert!(!sb.git(&repo, &["for-each-ref", "--format=%(refname)"]).contains("refs/neo/sessions/"));
    let out = neo(&sb, &repo, &["session", "drop", "fix-42"]);
    assert_eq!(out.status.code(), Some(1), "already gone");

    // Dropping deletes only the session ref.
    ok(&sb, &repo, &["session", "start", "s2"]);
    add(&sb, &repo, "session:s2", &["-t", "decision", "-s", "Temporary note"]);
    let before = sb.tip(&repo);
    ok(&sb, &repo, &["session", "drop"]);
    assert_eq!(sb.tip(&repo), before);
    assert!(!ok(&sb, &repo, &["list"]).contains("Temporary note"));
    let out = neo(&sb, &repo, &["--scope", "session", "add", "-t", "decision", "-s", "x"]);
    assert_eq!(out.status.code(), Some(1), "no current session now: {}", stderr(&out));
}

#[test]
fn two_worktrees_keep_separate_current_sessions_and_write_at_once() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    sb.git(&repo, &["commit", "--allow-empty", "-q", "-m", "init"]);
    let other = sb.dir.path().join("r-other");
    sb.git(&repo, &["worktree", "add", "-q", "-b", "other", &other.to_string_lossy()]);
    ok(&sb, &repo, &["session", "start", "main-work"]);
    ok(&sb, &other, &["session", "start", "other-work"]);

    // Two agents, one per worktree, each writing to "the current session" at the same time.
    std::thread::scope(|s| {
        for (dir, who) in [(&repo, "main"), (&other, "other")] {
            let sb = &sb;
            s.spawn(move || {
                for i in 0..6 {
                    add(sb, dir, "session", &["-t", "decision", "-s", &format!("{who} worktree note {i}")]);
                }
            });
        }
    });
    let subjects = |dir: &Path, scope: &str| -> Vec<String> {
        json(&ok(&sb, dir, &["--scope", scope, "list", "--json"]))
            .as_array()
            .expect("list")
            .iter()
            .filter_map(|f| f["record"]["subject"].as_str().map(str::to_string))
            .collect()
    };
    let main_notes = subjects(&repo, "session:main-work");
    let other_notes = subjects(&repo, "session:other-work");
    assert_eq!(main_notes.len(), 6, "{main_notes:?}");
    assert_eq!(other_notes.len(), 6, "{other_notes:?}");
    assert!(main_notes.iter().all(|n| n.starts_with("main worktree")), "{main_notes:?}");
    assert!(other_notes.iter().all(|n| n.starts_with("other worktree")), "{other_notes:?}");
    assert_eq!(subjects(&other, "session"), other_notes, "`session` in the other worktree is its own");

    // Each worktree lists both sessions, marks its own, and says where each is current.
    let list = json(&ok(&sb, &other, &["session", "list", "--json"]));
    let by_name = |n: &str| list.as_array().expect("list").iter().find(|s| s["name"] == n).cloned().expect(n);
    assert_eq!(by_name("other-work")["current"], true);
    assert_eq!(by_name("main-work")["current"], false);
    let place = |n: &str| by_name(n)["current_in"][0].as_str().map(|p| std::fs::canonicalize(p).expect("exists"));
    assert_eq!(place("main-work"), Some(std::fs::canonicalize(&repo).expect("repo")));
    assert_eq!(place("other-work"), Some(std::fs::canonicalize(&other).expect("worktree")));
    assert!(ok(&sb, &repo, &["session", "list"]).contains("* main-work"));

    // Dropping a session ends it as current wherever it was, and leaves the other alone.
    ok(&sb, &repo, &["session", "drop", "other-work"]);
    let out = neo(&sb, &other, &["--scope", "session", "add", "-t", "decision", "-s", "x"]);
    assert_eq!(out.status.code(), Some(1), "no current session in the other worktree now");
    add(&sb, &repo, "session", &["-t", "decision", "-s", "main worktree note 6"]);
}

#[test]
fn a_free_form_scope_label_is_an_area_and_old_labels_keep_working() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let out = neo(&sb, &repo, &["add", "--scope", "backend", "-t", "decision", "-s", "x"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("--area backend"), "{}", stderr(&out));
    assert!(sb.tip(&repo).is_none(), "nothing written");
    ok(&sb, &repo, &["add", "--area", "backend", "-t", "decision", "-s", "Queues are drained by one worker"]);
    let r = json(&ok(&sb, &repo, &["recall", "queues worker", "--json"]));
    assert_eq!(r["facts"][0]["area"], "backend");
    assert_eq!(r["facts"][0]["scope"], "project");
    assert!(ok(&sb, &repo, &["list", "--area", "backend"]).contains("Queues"));
}

#[test]
fn two_machines_share_one_user_memory_through_its_remote() {
    let sb = Sandbox::new();
    let remote = forge(&sb, "user-memory.git");
    sb.git(
        sb.dir.path(),
        &["config", "--file", &sb.path("gitconfig").to_string_lossy(), "neo.user.url", &remote.to_string_lossy()],
    );
    let repo = sb.repo("r");
    let run = |m: &str, args: &[&str]| on_machine(&sb, &repo, &format!("machine-{m}"), args);
    run("a", &["--scope", "user", "add", "-t", "pattern", "-s", "Prefer rebase over merge"]);
    run("b", &["--scope", "user", "add", "-t", "pattern", "-s", "Write the test first"]);
    run("a", &["--scope", "user", "sync"]);
    run("b", &["--scope", "user", "sync"]);
    run("a", &["--scope", "user", "sync"]);
    for m in ["a", "b"] {
        let listed = run(m, &["--scope", "user", "list"]);
        assert!(listed.contains("Prefer rebase") && listed.contains("Write the test first"), "{m}: {listed}");
    }
}

#[test]
fn three_clones_sharing_one_org_and_one_user_memory_converge_with_nothing_lost() {
    let sb = Sandbox::new();
    let org = forge(&sb, "org.git");
    let origin = forge(&sb, "project.git");
    let seed = project(&sb, "seed", &org, "auto");
    sb.git(&seed, &["push", "-q", &origin.to_string_lossy(), "HEAD:main"]);
    let clones: Vec<PathBuf> = (0..3)
        .map(|i| {
            let c = sb.path(&format!("clone{i}"));
            sb.git(sb.dir.path(), &["clone", "-q", &origin.to_string_lossy(), &c.to_string_lossy()]);
            sb.git(&c, &["config", "neo.org.url", &org.to_string_lossy()]);
            sb.git(&c, &["config", "neo.org.mode", "auto"]);
            c
        })
        .collect();
    // Every clone writes to all three scopes and syncs, all at once. (Six unrelated topics, so
    // no write supersedes another.)
    let topics = [
        "billing exports",
        "flaky login tests",
        "docker image size",
        "the search index",
        "release notes",
        "database backups",
    ];
    std::thread::scope(|s| {
        for (i, c) in clones.iter().enumerate() {
            let sb = &sb;
            s.spawn(move || {
                for j in 0..2 {
                    let t = topics[i * 2 + j];
                    add(
                        sb,
                        c,
                        "project",
                        &["-t", "decision", "-s", &format!("Project decision {i}.{j}: {t} belong to team {i}")],
                    );
                    add(sb, c, "org", &["-t", "pattern", "-s", &format!("Org pattern {i}.{j}: review {t} weekly")]);
                    add(sb, c, "user", &["-t", "pattern", "-s", &format!("User habit {i}.{j}: I check {t} first")]);
                    ok(sb, c, &["sync"]);
                    ok(sb, c, &["--scope", "org", "sync"]);
                }
            });
        }
    });
    // A plain sync shares the project's memory and then every shared scope set up (the org's).
    for c in &clones {
        let synced = json(&ok(&sb, c, &["sync", "--json"]));
        assert_eq!(synced["scopes"][0]["scope"], "org", "{synced}");
    }
    for c in &clones {
        ok(&sb, c, &["sync"]);
        let project = ok(&sb, c, &["list"]);
        let org_list = ok(&sb, c, &["--scope", "org", "list"]);
        let user = ok(&sb, c, &["--scope", "user", "list"]);
        for i in 0..3 {
            for j in 0..2 {
                assert!(project.contains(&format!("Project decision {i}.{j}")), "{}: {project}", c.display());
                assert!(org_list.contains(&format!("Org pattern {i}.{j}")), "{}: {org_list}", c.display());
                assert!(user.contains(&format!("User habit {i}.{j}")), "{user}");
            }
        }
        ok(&sb, c, &["verify"]);
        ok(&sb, c, &["--scope", "org", "verify"]);
    }
    assert_eq!(subjects_on(&sb, &org, "neo-memory").iter().filter(|s| s.contains("Org pattern")).count(), 6);

    // A fresh clone of another project sees the same org and user facts.
    let other = project(&sb, "other", &org, "auto");
    ok(&sb, &other, &["--scope", "org", "sync"]);
    let got = recalled(&sb, &other, "review billing exports weekly, check first");
    assert!(got.iter().any(|(s, sc)| s.starts_with("Org pattern") && sc == "org"), "{got:?}");
    assert!(got.iter().any(|(s, sc)| s.starts_with("User habit") && sc == "user"), "{got:?}");
    assert!(!got.iter().any(|(s, _)| s.starts_with("Project decision")), "{got:?}");
}

#[test]
fn supersession_crosses_scopes_only_when_asked_and_is_recorded_where_it_was_written() {
    let sb = Sandbox::new();
    let (_org, repo) = with_org(&sb, "auto");
    let org_id = add(&sb, &repo, "org", &["-t", "decision", "-s", "Services log in JSON to stdout"]);
    // The same words in the project do not replace the org's fact by similarity or frame.
    add(&sb, &repo, "project", &["-t", "decision", "-s", "Services log in JSON to stdout"]);
    assert!(ok(&sb, &repo, &["--scope", "org", "list"]).contains("Services log in JSON"));
    let got = recalled(&sb, &repo, "services log json stdout");
    assert_eq!(got.iter().filter(|(s, _)| s.contains("log in JSON")).count(), 2, "{got:?}");

    // Asked for: the project's fact replaces the org's, recorded in the project memory only.
    let new = add(
        &sb,
        &repo,
        "project",
        &["-t", "decision", "-s", "This service logs logfmt to stderr", "--supersedes", &org_id[..12]],
    );
    let r = json(&ok(&sb, &repo, &["recall", "services log json stdout logfmt", "--json"]));
    let invalid: Vec<_> = r["invalidated"].as_array().expect("invalidated").iter().collect();
    let replaced = invalid.iter().find(|i| i["id"] == org_id.as_str()).expect("the org fact shows as replaced");
    assert_eq!(replaced["scope"], "org");
    assert_eq!(replaced["replaced_by"][0]["id"], new.as_str());
    let org_list = json(&ok(&sb, &repo, &["--scope", "org", "list", "--json"]));
    assert_eq!(org_list[0]["status"], "valid", "the org memory itself is untouched");
    let sups = ok(&sb, &repo, &["list", "--kind", "supersession"]);
    assert!(sups.contains(&org_id[..12]), "{sups}");
    ok(&sb, &repo, &["verify"]);
}

/// The real model ranks the scopes together: a paraphrase finds the org's fact and the user's,
/// each by meaning alone, above the project's unrelated ones. Needs scripts/install-model.sh.
#[test]
#[ignore = "needs the model: scripts/install-model.sh"]
fn the_real_model_ranks_every_scope_together() {
    let root = installed_model_root();
    let sb = Sandbox::new();
    let (_org, repo) = with_org(&sb, "auto");
    let real = |args: &[&str]| {
        let out = sb.neo_cmd(&repo).env("GIT_NEO_CACHE_DIR", &root).args(args).output().expect("run");
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        stdout(&out)
    };
    real(&["add", "-t", "pattern", "-s", "Invoices are emailed to customers monthly"]);
    real(&["add", "-t", "pattern", "-s", "The build uses a pinned Rust toolchain"]);
    let org_id =
        real(&["--scope", "org", "add", "-t", "pattern", "-s", "Automobiles are parked in the garage overnight"]);
    let user_id =
        real(&["--scope", "user", "add", "-t", "pattern", "-s", "Bicycles are stored in the shed during winter"]);
    // Each found by meaning alone (no word in common), ahead of the project's own facts.
    for (query, id, scope) in [
        ("where do cars stay at night", org_id.trim(), "org"),
        ("where do bikes go in the cold months", user_id.trim(), "user"),
    ] {
        let r = json(&real(&["recall", query, "--json"]));
        assert_eq!(r["semantic"], true);
        assert_eq!(r["scopes"], serde_json::json!(["project", "org", "user"]));
        assert_eq!(r["facts"][0]["id"], id, "{r}");
        assert_eq!(r["facts"][0]["scope"], scope, "{r}");
        assert!(r["facts"][0]["lexical_rank"].is_null(), "{r}");
    }
}

/// A warm session (the MCP server's, the background server's) keeps the fold of its scopes and
/// grows it with each write instead of folding every scope again; what it shows must stay what
/// a fresh fold shows: a project write joins it, a key the project now holds shadows the user's
/// value, and a purged record leaves it.
#[test]
fn a_warm_session_s_fold_of_every_scope_follows_writes_and_purges() {
    use git_neo::api::{AddRequest, Clock, RecallQuery, Session, SessionOptions};
    use git_neo::recall::LayerKind;
    use git_neo::record::Timestamp;
    use git_neo::scope::Scope;
    use git_neo::store::Identity;

    let sb = Sandbox::new();
    let repo = sb.repo("warm");
    let session = |scope: Option<Scope>| {
        Session::new(SessionOptions {
            dir: repo.clone(),
            git_dir: None,
            ref_name: None,
            identity: Some(Identity { name: "Ada Tester".into(), email: "ada@example.com".into() }),
            clock: Clock::Fixed(Timestamp(1_772_366_400)),
            embedder: git_neo::embed::EmbedderChoice::Off,
            scope,
            data_dir: Some(sb.path("data")),
            config: Vec::new(),
        })
    };
    let fact = |subject: &str, key: Option<&str>| AddRequest {
        fact_type: "decision".into(),
        subject: subject.into(),
        key: key.map(String::from),
        no_supersede: true,
        ..AddRequest::default()
    };
    let mut user = session(Some(Scope::User));
    user.add(&fact("The kettle service listens on port 7001", Some("kettle.port"))).expect("user add");
    user.add(&fact("Kettle descaling runs every Sunday night", None)).expect("user add");

    let mut warm = session(None);
    let shown = |s: &mut Session| -> Vec<(String, String)> {
        let r = s
            .recall(&RecallQuery {
                query: "kettle port descaling".into(),
                k: 10,
                budget: 4_000,
                types: vec![],
                area: None,
                as_of: None,
                front: None,
                all_sessions: false,
            })
            .expect("recall");
        let mut out: Vec<(String, String)> =
            r.items(LayerKind::Facts).iter().map(|i| (i.subject.clone(), i.scope.clone())).collect();
        out.sort();
        out
    };
    let before = shown(&mut warm);
    assert!(before.contains(&("The kettle service listens on port 7001".into(), "user".into())), "{before:?}");

    // The project's value of the key joins the warm fold and shadows the user's.
    let project = warm.add(&fact("The kettle service listens on port 7002", Some("kettle.port"))).expect("add");
    let after_add = shown(&mut warm);
    assert!(after_add.contains(&("The kettle service listens on port 7002".into(), "project".into())), "{after_add:?}");
    assert!(!after_add.iter().any(|(s, _)| s.ends_with("7001")), "the user's value is shadowed: {after_add:?}");
    assert_eq!(after_add, shown(&mut session(None)), "the warm fold is the fresh one");

    // A purge takes the record out of the warm fold, and the user's value answers again.
    warm.purge(&project.id.to_hex(), "wrong port").expect("purge");
    let after_purge = shown(&mut warm);
    assert!(!after_purge.iter().any(|(s, _)| s.ends_with("7002")), "{after_purge:?}");
    assert!(
        after_purge.contains(&("The kettle service listens on port 7001".into(), "user".into())),
        "{after_purge:?}"
    );
    assert_eq!(after_purge, shown(&mut session(None)), "the warm fold is the fresh one");
}
