//! Outcome detection end to end on the fixture history (fixtures/outcomes/build-history.sh):
//! the exact confidence trajectory of each record, idempotent rescans, caps, explain, and hooks.

use crate::support::{hermetic, json, stderr, Sandbox, BIN};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Build the fixture history with `filler` unrelated commits; returns the repo and record ids by name.
pub fn fixture(sb: &Sandbox, filler: usize) -> (PathBuf, BTreeMap<String, String>) {
    let repo = sb.path("history");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/outcomes/build-history.sh");
    let mut cmd = Command::new("bash");
    hermetic(&mut cmd, sb.dir.path()).args([script, repo.to_str().expect("utf-8"), BIN, &filler.to_string()]);
    let out = cmd.output().expect("run the fixture script");
    assert!(out.status.success(), "fixture: {}", stderr(&out));
    let ids = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once(' ').map(|(n, id)| (n.to_string(), id.trim().to_string())))
        .collect();
    (repo, ids)
}

fn neo(sb: &Sandbox, repo: &Path, args: &[&str]) -> String {
    let mut cmd = sb.neo_cmd(repo);
    cmd.env("GIT_NEO_EMBEDDER", "none").args(args);
    let out = cmd.output().expect("run");
    assert!(out.status.success(), "git neo {args:?}: {}", stderr(&out));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn explain(sb: &Sandbox, repo: &Path, id: &str) -> Value {
    json(&neo(sb, repo, &["explain", &id[..12], "--json"]))
}

#[test]
fn the_fixture_history_gives_each_record_its_exact_trajectory() {
    let sb = Sandbox::new();
    let (repo, ids) = fixture(&sb, 300);
    let commits: usize = sb.git(&repo, &["rev-list", "--count", "HEAD"]).trim().parse().expect("count");
    assert!(commits > 300, "hundreds of commits: {commits}");

    let report = json(&neo(&sb, &repo, &["outcomes", "--json"]));
    assert_eq!(report["capped"], false);
    assert_eq!(report["commits"].as_u64(), Some(commits as u64 - 1), "every commit after the first record");
    // (record, signals in order, confidence after, successes)
    let expected: [(&str, &[&str], f64, u64); 10] = [
        ("anchored_total", &["anchor-changed"], 0.6, 0),
        ("anchored_clamp", &[], 0.7, 0),
        ("suggest_accepted", &["accepted"], 0.9, 1),
        ("suggest_partial", &["modified"], 0.65, 0),
        ("suggest_removed", &["accepted", "regression"], 0.6, 1),
        ("trailer_survives", &["accepted"], 0.8, 1),
        ("trailer_reverted", &["regression"], 0.4, 0),
        ("trailer_undone", &["regression"], 0.4, 0),
        ("trailer_worse", &["health-regressed", "accepted"], 0.75, 1),
        ("trailer_cycle", &["health-regressed", "accepted"], 0.75, 1),
    ];
    for (name, signals, confidence, successes) in expected {
        let x = explain(&sb, &repo, &ids[name]);
        let got: Vec<&str> =
            x["steps"].as_array().expect("steps").iter().filter_map(|s| s["signal"].as_str()).collect();
        assert_eq!(got, signals, "{name}: {x}");
        assert_eq!(x["confidence"].as_f64(), Some(confidence), "{name}: {x}");
        assert_eq!(x["successes"].as_u64(), Some(successes), "{name}: {x}");
        assert_eq!(x["initial"].as_f64(), Some(0.7), "{name}");
    }
    let cycle = explain(&sb, &repo, &ids["trailer_cycle"]);
    assert_eq!(cycle["steps"][0]["paths"], serde_json::json!(["src/numbers.py", "src/text.py"]), "{cycle}");
    // The anchor followed edits above it and a rename; the rewrite of its lines flags the fact.
    let total = explain(&sb, &repo, &ids["anchored_total"]);
    assert!(total["needs_review"][0].as_str().is_some_and(|r| r.contains("anchored to changed")), "{total}");
    assert!(explain(&sb, &repo, &ids["anchored_clamp"])["needs_review"].is_null());
    let reverted = explain(&sb, &repo, &ids["trailer_reverted"]);
    let commit = reverted["steps"][0]["commits"][0].as_str().expect("commit").to_string();
    assert!(sb.git(&repo, &["log", "-1", "--format=%B", &commit]).contains("This reverts commit"));

    // Scanning again, or again from the start, never counts the same evidence twice.
    let tip = sb.tip(&repo);
    let again = json(&neo(&sb, &repo, &["outcomes", "--json"]));
    assert_eq!((again["commits"].as_u64(), again["outcomes"].as_array().map(Vec::len)), (Some(0), Some(0)));
    let root = sb.git(&repo, &["rev-list", "--max-parents=0", "HEAD"]);
    let rescan = json(&neo(&sb, &repo, &["outcomes", "--since", root.trim(), "--json"]));
    let found = rescan["outcomes"].as_array().expect("outcomes");
    assert_eq!(found.len(), 12, "{rescan}");
    assert!(found.iter().all(|o| o["new"] == false), "{rescan}");
    assert_eq!(sb.tip(&repo), tip, "nothing written on a rescan");
    assert_eq!(explain(&sb, &repo, &ids["suggest_removed"])["confidence"].as_f64(), Some(0.6));
    assert!(sb.neo(&repo, &["verify"]).status.success());

    // The human explanation names each step and the recall weight.
    let text = neo(&sb, &repo, &["explain", &ids["suggest_removed"][..10]]);
    assert!(
        text.contains("initial confidence 0.70") && text.contains("regression") && text.contains("weight in recall")
    );
}

#[test]
fn caps_defer_evidence_per_scan_and_drop_bursts_per_record() {
    let sb = Sandbox::new();
    let (repo, _) = fixture(&sb, 40);
    sb.git(&repo, &["config", "neo.outcomes.maxPerScan", "3"]);
    let mut runs = 0;
    let mut pairs = Vec::new();
    loop {
        runs += 1;
        let r = json(&neo(&sb, &repo, &["outcomes", "--json"]));
        let found = r["outcomes"].as_array().expect("outcomes");
        assert!(found.iter().filter(|o| o["new"] == true).count() <= 3, "{r}");
        pairs.extend(found.iter().map(|o| (o["target"].to_string(), o["signal"].to_string())));
        if r["capped"] == false {
            break;
        }
        assert!(runs < 10, "the cap must let the scan finish over several runs");
    }
    assert!(runs >= 4, "12 outcomes at 3 per scan: {runs} runs");
    assert_eq!(pairs.len(), 12, "deferred, not lost: {pairs:?}");

    let sb = Sandbox::new();
    let (repo, ids) = fixture(&sb, 40);
    sb.git(&repo, &["config", "neo.outcomes.maxPerRecordPerDay", "1"]);
    let r = json(&neo(&sb, &repo, &["outcomes", "--json"]));
    assert_eq!(r["dropped"].as_u64(), Some(3), "the second outcome of three records on the same day: {r}");
    let x = explain(&sb, &repo, &ids["suggest_removed"]);
    assert_eq!(x["steps"].as_array().map(Vec::len), Some(1), "{x}");
    let bad = sb.git_output(&repo, &["config", "neo.outcomes.maxPerScan", "many"]);
    assert!(bad.status.success());
    let out = sb.neo(&repo, &["outcomes"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("neo.outcomes.maxPerScan"), "{}", stderr(&out));
}

#[test]
fn hooks_scan_after_commits_and_uninstall_keeps_the_users_hooks() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let hooks = repo.join(".git/hooks");
    std::fs::create_dir_all(&hooks).expect("mkdir");
    let mine = "#!/bin/sh\necho my hook >> .git/my-hook-ran\n";
    std::fs::write(hooks.join("post-commit"), mine).expect("write");
    let out = neo(&sb, &repo, &["hooks", "install"]);
    assert!(out.contains("post-commit: added to your hook") && out.contains("post-merge: created"), "{out}");
    assert!(neo(&sb, &repo, &["hooks", "install"]).contains("already installed"));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(hooks.join("post-merge")).expect("meta").permissions().mode();
        assert_eq!(mode & 0o111, 0o111, "executable");
    }

    // A commit runs the user's hook and the scan (in the background, with git-neo on PATH).
    let fact = neo(&sb, &repo, &["add", "-t", "pattern", "-s", "answer() returns 42", "--anchor", "src/lib.rs:1-3"]);
    std::fs::write(repo.join("src/lib.rs"), "pub fn answer() -> u32 {\n    41\n}\n").expect("write");
    let bin_dir = Path::new(BIN).parent().expect("dir").display().to_string();
    let path = format!("{bin_dir}:{}", std::env::var("PATH").unwrap_or_default());
    let mut commit = Command::new("git");
    hermetic(&mut commit, sb.dir.path())
        .current_dir(&repo)
        .env("PATH", &path)
        .env("GIT_NEO_EMBEDDER", "none")
        .env("GIT_COMMITTER_DATE", "2026-03-02T12:00:00Z")
        .args(["commit", "-qam", "change the answer"]);
    assert!(commit.output().expect("commit").status.success());
    assert!(repo.join(".git/my-hook-ran").exists(), "the user's hook still runs");
    let mut flagged = false;
    for _ in 0..100 {
        let x = explain(&sb, &repo, &fact);
        if x["steps"].as_array().is_some_and(|s| !s.is_empty()) {
            assert_eq!(x["steps"][0]["signal"], "anchor-changed");
            flagged = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(flagged, "the post-commit hook scanned the commit");

    let out = neo(&sb, &repo, &["hooks", "uninstall"]);
    assert!(out.contains("your hook stays") && out.contains("post-merge: removed"), "{out}");
    assert_eq!(
        std::fs::read_to_string(hooks.join("post-commit")).expect("read"),
        mine,
        "exactly what was added is gone"
    );
    assert!(!hooks.join("post-merge").exists());
}

/// Commit everything in `repo` with `message`.
fn commit_all(sb: &Sandbox, repo: &Path, message: &str) {
    sb.git(repo, &["add", "-A"]);
    sb.git(repo, &["commit", "-q", "-m", message]);
}

fn write(repo: &Path, path: &str, text: &str) {
    let p = repo.join(path);
    std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
    std::fs::write(p, text).expect("write");
}

#[test]
fn suggestions_count_only_distinctive_lines_in_related_files_and_never_a_move() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    // A code base whose files share the common tokens every snippet holds.
    for i in 0..12 {
        write(
            &repo,
            &format!("src/part{i}.rs"),
            &format!("pub fn part{i}(path: &str) -> Option<usize> {{\n    // the file path\n    Some(path.len() + 64 * (1 << 10)).filter(|_| true)\n}}\n"),
        );
    }
    write(&repo, "src/buffer.rs", "pub struct LineBuffer {\n    capacity: usize,\n}\n");
    write(&repo, "src/search.rs", "pub fn search(haystack: &str) -> bool {\n    !haystack.is_empty()\n}\n");
    write(&repo, "src/json.rs", "pub fn begin() -> bool {\n    true\n}\n");
    write(
        &repo,
        "src/hiargs.rs",
        "pub fn parse() {}\n\nstatic HYPERLINK_ALIASES: &[(&str, &str)] = &[\n    (\"vscode\", \"vscode://file{path}\"),\n    (\"textmate\", \"txmt://open?url=file://{path}\"),\n];\n",
    );
    write(&repo, "src/hyperlink.rs", "pub fn format_link() -> String {\n    String::new()\n}\n");
    commit_all(&sb, &repo, "the code");

    // Three facts, each anchored here, each with a snippet.
    let buffer = sb.neo_ok(
        &repo,
        &[
            "add",
            "-t",
            "pattern",
            "-s",
            "Line buffers start at 64 KiB",
            "--anchor",
            "src/buffer.rs:1-3",
            "--suggestion",
            "pub const LINE_BUFFER_CAPACITY: usize = 64 * (1 << 10);",
        ],
    );
    let aliases = sb.neo_ok(
        &repo,
        &[
            "add",
            "-t",
            "architecture",
            "-s",
            "Hyperlink aliases live with the hyperlink formatter",
            "--anchor",
            "src/hyperlink.rs:1-3",
            "--suggestion",
            "static HYPERLINK_ALIASES: &[(&str, &str)] = &[\n    (\"vscode\", \"vscode://file{path}\"),\n];",
        ],
    );
    let searcher = sb.neo_ok(
        &repo,
        &[
            "add",
            "-t",
            "pattern",
            "-s",
            "Searches reuse one searcher built with the buffer capacity",
            "--anchor",
            "src/search.rs:1-3",
            "--suggestion",
            "let searcher = SearcherBuilder::new().line_buffer_capacity(LINE_BUFFER_CAPACITY).build();",
        ],
    );

    // 1. Unrelated files gain lines full of the snippets' common tokens.
    write(
        &repo,
        "src/json.rs",
        "pub fn begin() -> bool {\n    true\n}\n\npub const DEPTH: usize = 64 * (1 << 10);\npub fn width(path: &str) -> Option<usize> {\n    Some(path.len()).filter(|_| true)\n}\n",
    );
    write(&repo, "src/part3.rs", "pub fn part3(path: &str) -> Option<usize> {\n    // the file path, new comment about the path\n    Some(path.len() + 64 * (1 << 10)).filter(|_| true)\n}\n");
    commit_all(&sb, &repo, "json: a depth limit");
    // 2. The alias table moves into the hyperlink module: already in the code, not adopted.
    write(&repo, "src/hiargs.rs", "pub fn parse() {}\n");
    write(
        &repo,
        "src/hyperlink.rs",
        "pub fn format_link() -> String {\n    String::new()\n}\n\nstatic HYPERLINK_ALIASES: &[(&str, &str)] = &[\n    (\"vscode\", \"vscode://file{path}\"),\n    (\"textmate\", \"txmt://open?url=file://{path}\"),\n];\n",
    );
    commit_all(&sb, &repo, "move the alias table");
    // 3. The searcher snippet is really adopted, where the fact is anchored.
    write(
        &repo,
        "src/search.rs",
        "pub fn search(haystack: &str) -> bool {\n    let searcher = SearcherBuilder::new().line_buffer_capacity(LINE_BUFFER_CAPACITY).build();\n    searcher.run(haystack)\n}\n",
    );
    commit_all(&sb, &repo, "search: one searcher");

    let report = json(&neo(&sb, &repo, &["outcomes", "--json"]));
    assert_eq!(report["commits"], 3, "scanned from the commit the facts were anchored at: {report}");
    let outcomes = report["outcomes"].as_array().expect("outcomes");
    let got: Vec<(String, &str)> = outcomes
        .iter()
        .map(|o| (o["target"].as_str().expect("target")[..12].to_string(), o["signal"].as_str().expect("signal")))
        .collect();
    // The adoption rewrote the anchored lines too: that flag is right, and the only other signal.
    assert_eq!(
        got,
        vec![(searcher[..12].to_string(), "anchor-changed"), (searcher[..12].to_string(), "accepted")],
        "{report}"
    );
    let why = outcomes[1]["why"].as_str().expect("why");
    assert!(why.contains("lines 2-3 of src/search.rs") && why.contains("SearcherBuilder (in 0 of"), "{why}");
    assert_eq!(outcomes[0]["why"], "lines 1-3 of src/search.rs were rewritten");
    for quiet in [&buffer, &aliases] {
        assert!(explain(&sb, &repo, quiet)["steps"].as_array().is_none_or(Vec::is_empty), "{quiet}");
    }
    // The outcome record keeps the explanation.
    let x = explain(&sb, &repo, &searcher);
    assert_eq!(x["confidence"].as_f64(), Some(0.8), "{x}");
    let step = x["steps"].as_array().and_then(|s| s.iter().find(|s| s["signal"] == "accepted")).expect("accepted");
    assert!(step["why"].as_str().is_some_and(|w| w.contains("SearcherBuilder (in 0 of")), "{x}");
    let shown = neo(&sb, &repo, &["show", step["outcome"].as_str().expect("outcome id")]);
    assert!(shown.contains("SearcherBuilder (in 0 of"), "{shown}");
}

#[test]
fn facts_are_scanned_from_the_commit_their_anchors_were_taken_at() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    write(&repo, "src/limits.rs", "pub fn limit() -> usize {\n    64\n}\n\npub fn other() {}\n");
    commit_all(&sb, &repo, "limits");
    let old = sb.git(&repo, &["rev-parse", "HEAD"]);
    write(&repo, "src/limits.rs", "pub fn limit() -> usize {\n    128\n}\n\npub fn other() {}\n");
    commit_all(&sb, &repo, "raise the limit");
    write(&repo, "src/other.rs", "pub fn more() {}\n");
    commit_all(&sb, &repo, "more");

    // Every command from here runs months later (as a team adopting the tool at an old release).
    let later_run = |args: &[&str]| {
        sb.neo_cmd(&repo)
            .env("GIT_NEO_NOW", "2026-09-01T00:00:00Z")
            .env("GIT_NEO_EMBEDDER", "none")
            .args(args)
            .output()
            .expect("run")
    };
    let later = |args: &[&str]| {
        let out = later_run(args);
        assert!(out.status.success(), "git neo {args:?}: {}", stderr(&out));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    // Recorded at the old checkout.
    sb.git(&repo, &["checkout", "-q", &old]);
    let id = later(&["add", "-t", "constraint", "-s", "The limit is 64", "--anchor", "src/limits.rs:1-3"]);
    sb.git(&repo, &["checkout", "-q", "main"]);

    let report = json(&later(&["outcomes", "--json"]));
    assert_eq!(report["commits"], 2, "the two commits after the anchor's: {report}");
    assert_eq!(report["outcomes"][0]["signal"], "anchor-changed", "{report}");
    assert_eq!(report["outcomes"][0]["target"].as_str(), Some(id.as_str()));
    assert!(report.get("off_branch").is_none(), "{report}");

    // A fact anchored on a branch the scanned one does not contain says so.
    sb.git(&repo, &["checkout", "-q", "-b", "side", &old]);
    write(&repo, "src/side.rs", "pub fn side() {}\n");
    commit_all(&sb, &repo, "side work");
    let side = later(&["add", "-t", "pattern", "-s", "Side functions stay tiny", "--anchor", "src/side.rs:1"]);
    sb.git(&repo, &["checkout", "-q", "main"]);
    write(&repo, "src/other.rs", "pub fn more() {}\npub fn again() {}\n");
    commit_all(&sb, &repo, "again");
    let report = json(&later(&["outcomes", "--json"]));
    assert_eq!(report["off_branch"][0]["id"].as_str(), Some(side.as_str()), "{report}");
    let out = later_run(&["outcomes", "--since", &old]);
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &stderr(&out);
    assert!(text.contains("which main does not contain"), "{text}");
    let verify = later(&["verify"]);
    assert!(verify.contains(&format!("re-anchor it with `git neo confirm {}`", &side[..12])), "{verify}");
    assert!(!verify.contains(&id[..12]), "the fact anchored on main is not named: {verify}");
}

#[test]
fn confirm_clears_review_re_anchors_and_is_a_reviewable_record() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    write(&repo, "src/limits.rs", "pub fn limit() -> usize {\n    64\n}\n\npub fn other() {}\n");
    commit_all(&sb, &repo, "limits");
    let id =
        neo(&sb, &repo, &["add", "-t", "constraint", "-s", "The limit stays small", "--anchor", "src/limits.rs:1-3"]);
    // A field rename inside the anchored lines: the fact is still true, but flagged.
    write(&repo, "src/limits.rs", "pub fn limit() -> usize {\n    64 // bytes\n}\n\npub fn other() {}\n");
    commit_all(&sb, &repo, "comment the limit");
    neo(&sb, &repo, &["outcomes"]);
    assert!(explain(&sb, &repo, &id)["needs_review"][0].as_str().is_some_and(|r| r.contains("anchored to changed")));
    let before = sb.tip(&repo).expect("tip");

    // A reviewer checks it: the flag goes, the anchor widens to the rewritten lines.
    let c = json(&neo(&sb, &repo, &["confirm", &id[..10], "--reason", "still 64, only a comment", "--json"]));
    assert_eq!(c["anchors"][0]["how"], "widened", "{c}");
    assert_eq!(c["anchors"][0]["to"], "src/limits.rs:1-3", "{c}");
    let x = explain(&sb, &repo, &id);
    assert!(x["needs_review"].is_null(), "{x}");
    assert!(!neo(&sb, &repo, &["list", "--needs-review"]).contains(&id[..12]));
    let log = neo(&sb, &repo, &["log"]);
    assert!(log.contains("confirmed") && log.contains("The limit stays small"), "{log}");
    let diff = neo(&sb, &repo, &["diff", &before]);
    assert!(diff.contains("confirmed") && diff.contains(&id[..12]), "{diff}");

    // From now on the anchor is tracked from the commit confirmed: edits above move it, and a
    // rewrite of its lines flags the fact again.
    write(&repo, "src/limits.rs", "// limits\n\npub fn limit() -> usize {\n    64 // bytes\n}\n\npub fn other() {}\n");
    commit_all(&sb, &repo, "a header");
    let report = json(&neo(&sb, &repo, &["outcomes", "--json"]));
    assert_eq!(report["outcomes"].as_array().map(Vec::len), Some(0), "{report}");
    write(&repo, "src/limits.rs", "// limits\n\npub fn limit() -> usize {\n    128 // bytes\n}\n\npub fn other() {}\n");
    commit_all(&sb, &repo, "raise the limit");
    let report = json(&neo(&sb, &repo, &["outcomes", "--json"]));
    assert_eq!(report["outcomes"][0]["signal"], "anchor-changed", "{report}");
    assert_eq!(report["outcomes"][0]["why"], "lines 3-5 of src/limits.rs were rewritten", "{report}");
    let x = explain(&sb, &repo, &id);
    assert_eq!(x["needs_review"].as_array().map(Vec::len), Some(1), "{x}");
    let diff = neo(&sb, &repo, &["diff", &before]);
    assert!(diff.contains("\"raise the limit\""), "each commit with its subject: {diff}");
    assert!(diff.contains("-0.10 anchor-changed (0.60 → 0.50)") || diff.contains("(0.6 → 0.5)"), "{diff}");

    // The same through MCP, naming the new range.
    // (An hour later: the latest confirmation is the one that counts.)
    let mut mcp = crate::mcp::Client::spawn(
        sb.dir.path(),
        &repo,
        &[("GIT_NEO_EMBEDDER", "none"), ("GIT_NEO_NOW", "2026-03-01T13:00:00Z")],
    );
    let r = mcp.call_result(
        "confirm",
        serde_json::json!({"id": &id[..10], "anchors": ["src/limits.rs:3-5"], "reason": "128 is fine"}),
    );
    assert!(r["isError"] != true, "{r}");
    assert_eq!(r["structuredContent"]["anchors"][0]["how"], "named", "{r}");
    let (err, text) = mcp.call("confirm", serde_json::json!({"id": &id[..10], "anchors": ["src/nowhere.rs:1-2"]}));
    assert!(err && text.contains("anchor"), "{text}");
    drop(mcp);
    let x = explain(&sb, &repo, &id);
    assert!(x["needs_review"].is_null(), "{x}");
}

#[test]
fn recall_and_stats_say_how_long_a_fact_has_gone_unconfirmed() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let out = sb
        .neo_cmd(&repo)
        .env("GIT_NEO_NOW", "2025-01-01T00:00:00Z")
        .args(["add", "-t", "decision", "-s", "Releases are cut from the main branch"])
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", stderr(&out));
    let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
    // 424 days later (the sandbox's clock).
    let r = json(&neo(&sb, &repo, &["recall", "where are releases cut from", "--json"]));
    assert_eq!(r["facts"][0]["unconfirmed_days"], 424, "{r}");
    let md = neo(&sb, &repo, &["recall", "where are releases cut from"]);
    assert!(md.contains(&format!("unconfirmed for 424 days (`git neo confirm {}`", &id[..12])), "{md}");
    let stats = json(&neo(&sb, &repo, &["stats", "--json"]));
    assert_eq!(stats["unconfirmed_long"], 1, "{stats}");
    assert_eq!(stats["longest_unconfirmed"][0]["unconfirmed_days"], 424, "{stats}");

    neo(&sb, &repo, &["confirm", &id[..10], "--reason", "still how we release"]);
    let r = json(&neo(&sb, &repo, &["recall", "where are releases cut from", "--json"]));
    assert_eq!(r["facts"][0]["unconfirmed_days"], 0, "{r}");
    assert!(!neo(&sb, &repo, &["recall", "where are releases cut from"]).contains("unconfirmed for"));
    assert_eq!(json(&neo(&sb, &repo, &["stats", "--json"]))["unconfirmed_long"], 0);
}

#[test]
fn the_report_draws_confidence_on_the_code_calendar() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let commit_on = |date: &str, message: &str| {
        sb.git(&repo, &["add", "-A"]);
        let mut cmd = std::process::Command::new("git");
        crate::support::hermetic(&mut cmd, sb.dir.path())
            .current_dir(&repo)
            .env("GIT_AUTHOR_DATE", date)
            .env("GIT_COMMITTER_DATE", date)
            .args(["commit", "-q", "-m", message]);
        let out = cmd.output().expect("git commit");
        assert!(out.status.success(), "{}", stderr(&out));
    };
    write(&repo, "src/limits.rs", "pub fn limit() -> usize {\n    64\n}\n");
    commit_on("2024-01-01T12:00:00Z", "limits");
    // Recorded years later (the sandbox's clock), about that commit.
    let id = neo(&sb, &repo, &["add", "-t", "constraint", "-s", "The limit is 64", "--anchor", "src/limits.rs:1-3"]);
    write(&repo, "src/limits.rs", "pub fn limit() -> usize {\n    128\n}\n");
    commit_on("2024-06-01T12:00:00Z", "raise the limit");
    neo(&sb, &repo, &["outcomes"]);

    let dir = sb.path("report");
    neo(&sb, &repo, &["report", "--out", dir.to_str().expect("utf-8")]);
    let page = std::fs::read_to_string(dir.join("index.html")).expect("page");
    let start = page.find("id=\"neo-data\">").expect("data") + "id=\"neo-data\">".len();
    let data: Value = serde_json::from_str(&page[start..start + page[start..].find("</script>").expect("end")])
        .expect("the embedded data");
    let chart =
        |name: &str| data["charts"].as_array().and_then(|c| c.iter().find(|c| c["id"] == name)).expect("chart").clone();
    let confidence = chart("confidence");
    let points = confidence["series"][0]["points"].as_array().expect("points").clone();
    assert!(confidence["series"][0]["name"].as_str().is_some_and(|n| n.starts_with(&id[..12])));
    // From the anchor's commit to the commit that rewrote it, not the hours since it was written.
    assert_eq!(points[0], serde_json::json!([1_704_110_400, 0.7]), "{points:?}");
    assert_eq!(points[1], serde_json::json!([1_717_243_200, 0.6]), "{points:?}");
    assert_eq!(confidence["y_max"], 1.0);
    assert_eq!(chart("hit-rate")["y_max"], 1.0);
    // Current facts are counted until the report's time.
    let size = chart("size-type");
    let last = size["series"][0]["points"].as_array().and_then(|p| p.last().cloned()).expect("points");
    assert_eq!(last[0], 1_772_366_400, "until now (the sandbox's clock): {last}");
}
