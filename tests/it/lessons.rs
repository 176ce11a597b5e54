//! Procedural lessons as reviewable patches to the agents' instruction files (docs/lessons.md):
//! proposed from what keeps failing, applied and restored only by explicit commands, refused for
//! any file outside the project's own instruction files.

use crate::mcp::Client;
use crate::support::{json, stderr, stdout, Sandbox};
use serde_json::json as j;
use std::path::Path;
use std::process::Output;

const AGENTS: &str = "# Agents\n\nBuild with `cargo build`.\n";

fn neo(sb: &Sandbox, repo: &Path, args: &[&str]) -> Output {
    sb.neo_cmd(repo).env("GIT_NEO_EMBEDDER", "hash").args(args).output().expect("run git-neo")
}

fn ok(sb: &Sandbox, repo: &Path, args: &[&str]) -> String {
    let out = neo(sb, repo, args);
    assert!(out.status.success(), "git neo {args:?}: {}\n{}", stdout(&out), stderr(&out));
    stdout(&out).trim().to_string()
}

fn read(repo: &Path, rel: &str) -> String {
    std::fs::read_to_string(repo.join(rel)).unwrap_or_default()
}

/// A repository with AGENTS.md committed and three failures of one procedure.
fn failing_repo(sb: &Sandbox) -> std::path::PathBuf {
    let repo = sb.repo("r");
    std::fs::write(repo.join("AGENTS.md"), AGENTS).expect("write AGENTS.md");
    sb.git(&repo, &["add", "AGENTS.md"]);
    sb.git(&repo, &["commit", "-q", "-m", "agents"]);
    for s in [
        "CI failed: cargo test without --locked pulled a new serde",
        "Release broke because cargo test without --locked resolved other versions",
        "Nightly job red again after cargo test without --locked",
    ] {
        ok(sb, &repo, &["add", "--type", "failure", "--subject", s]);
    }
    // An unrelated failure, which no lesson should rest on.
    ok(sb, &repo, &["add", "--type", "failure", "--subject", "The docs build timed out on the mirror"]);
    repo
}

#[test]
fn three_failures_of_one_procedure_become_one_lesson_that_waits_for_review() {
    let sb = Sandbox::new();
    let repo = failing_repo(&sb);
    let report = json(&ok(&sb, &repo, &["--json", "curate"]));
    let lessons = report["lessons"].as_array().expect("lessons");
    assert_eq!(lessons.len(), 1, "{report}");
    assert_eq!(lessons[0]["because"].as_array().map(Vec::len), Some(3), "{report}");
    assert!(lessons[0]["reason"].as_str().unwrap_or("").contains("share 'cargo test without --locked'"), "{report}");
    assert_eq!(lessons[0]["applied"], false);
    let id = lessons[0]["id"].as_str().expect("id").to_string();
    // Review mode: the memory holds the proposal, the work tree is untouched.
    assert_eq!(read(&repo, "AGENTS.md"), AGENTS);
    let list = json(&ok(&sb, &repo, &["--json", "lesson", "list"]));
    assert_eq!(list[0]["status"], "proposed", "{list}");
    assert!(
        list[0]["diff"].as_str().unwrap_or("").contains("+- 'cargo test without --locked' has failed 3 times"),
        "{list}"
    );
    // A second curation proposes nothing new.
    let again = json(&ok(&sb, &repo, &["--json", "curate"]));
    assert!(again.get("lessons").is_none(), "{again}");
    // The pull request shows the patch.
    let diff = ok(&sb, &repo, &["diff", "neo-memory~1"]);
    assert!(diff.contains("Lessons proposed to the instruction files") && diff.contains("```diff"), "{diff}");

    // Apply writes the file, says so, and records it.
    let applied = json(&ok(&sb, &repo, &["--json", "lesson", "apply", &id[..12]]));
    assert_eq!(applied["action"], "applied");
    let after = read(&repo, "AGENTS.md");
    assert!(after.starts_with(AGENTS) && after.contains("<!-- git-neo:lessons -->"), "{after}");
    assert_eq!(json(&ok(&sb, &repo, &["--json", "lesson", "list"]))[0]["status"], "applied");
    ok(&sb, &repo, &["verify"]);

    // Restore refuses while the file differs from what was applied (and writes nothing)...
    let edited = format!("{after}\nA person's own line.\n");
    std::fs::write(repo.join("AGENTS.md"), &edited).expect("edit");
    let out = neo(&sb, &repo, &["lesson", "restore", &id[..12], "--yes"]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(stderr(&out).contains("+A person's own line."), "the refusal shows the diff: {}", stderr(&out));
    assert_eq!(read(&repo, "AGENTS.md"), edited);
    // ...and without --yes even when it has not changed.
    std::fs::write(repo.join("AGENTS.md"), &after).expect("put back");
    let out = neo(&sb, &repo, &["lesson", "restore", &id[..12]]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("--yes"), "{}", stderr(&out));
    assert_eq!(read(&repo, "AGENTS.md"), after);
    let restored = json(&ok(&sb, &repo, &["--json", "lesson", "restore", &id[..12], "--yes"]));
    assert_eq!(restored["action"], "restored");
    assert_eq!(read(&repo, "AGENTS.md"), AGENTS, "byte for byte as before");
    assert_eq!(json(&ok(&sb, &repo, &["--json", "lesson", "list"]))[0]["status"], "restored");
    // The report counts them.
    let page = sb.path("report");
    ok(&sb, &repo, &["report", "--out", page.to_str().unwrap_or("")]);
    let html = std::fs::read_to_string(page.join("index.html")).expect("report");
    assert!(html.contains("0 proposed (waiting), 0 applied, 1 restored"), "the report's lesson counts");
}

#[test]
fn auto_mode_applies_appends_and_queues_rewrites() {
    let sb = Sandbox::new();
    let repo = failing_repo(&sb);
    sb.git(&repo, &["config", "neo.lessons.mode", "auto"]);
    let report = json(&ok(&sb, &repo, &["--json", "curate"]));
    assert_eq!(report["lessons"][0]["applied"], true, "{report}");
    assert!(read(&repo, "AGENTS.md").contains("has failed 3 times"));
    // A person's append goes in the same section; a rewrite waits.
    let p = json(&ok(&sb, &repo, &["--json", "lesson", "propose", "--append", "Run clippy before pushing"]));
    assert!(p["applied"].is_object(), "{p}");
    let now = read(&repo, "AGENTS.md");
    assert_eq!(now.matches("<!-- git-neo:lessons -->").count(), 1, "{now}");
    let p = json(&ok(
        &sb,
        &repo,
        &[
            "--json",
            "lesson",
            "propose",
            "--replace",
            "Build with `cargo build`.",
            "--with",
            "Build with `cargo build --locked`.",
        ],
    ));
    assert_eq!(p["lesson"]["change"], "rewrite", "{p}");
    assert!(p.get("applied").is_none(), "{p}");
    assert_eq!(read(&repo, "AGENTS.md"), now, "the rewrite is queued, not written");
    let id = p["id"].as_str().expect("id").to_string();
    ok(&sb, &repo, &["lesson", "apply", &id[..12]]);
    assert!(read(&repo, "AGENTS.md").contains("cargo build --locked"));
    // Off: nothing is proposed.
    sb.git(&repo, &["config", "neo.lessons.mode", "off"]);
    let out = neo(&sb, &repo, &["lesson", "propose", "--append", "x y z"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(stderr(&out).contains("neo.lessons.mode"), "{}", stderr(&out));
}

#[test]
fn only_the_projects_own_instruction_files_are_patched() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let tip = sb.tip(&repo);
    let refused = |args: &[&str], says: &str| {
        let out = neo(&sb, &repo, args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
    };
    refused(&["lesson", "propose", "--file", "README.md", "--append", "x"], "not an instruction file");
    refused(&["lesson", "propose", "--file", "../AGENTS.md", "--append", "x"], "not a plain path");
    refused(&["lesson", "propose", "--file", ".claude/skills/vendor/x/SKILL.md", "--append", "x"], "vendored");
    // A symlinked instruction file, and a skill that is a repository of its own.
    std::fs::write(sb.path("elsewhere.md"), "# not ours\n").expect("write");
    std::os::unix::fs::symlink(sb.path("elsewhere.md"), repo.join("CLAUDE.md")).expect("symlink");
    refused(&["lesson", "propose", "--file", "CLAUDE.md", "--append", "x"], "symlink");
    let cloned = repo.join(".claude/skills/deploy");
    std::fs::create_dir_all(cloned.join(".git")).expect("nested repository");
    std::fs::write(cloned.join("SKILL.md"), "---\nname: deploy\n---\nSteps.\n").expect("write");
    refused(&["lesson", "propose", "--file", ".claude/skills/deploy/SKILL.md", "--append", "x"], "another repository");
    assert_eq!(sb.tip(&repo), tip, "nothing was written");
    assert_eq!(std::fs::read_to_string(sb.path("elsewhere.md")).expect("read"), "# not ours\n");

    // The project's own skill: its front matter is kept byte for byte.
    let skill = "---\nname: release\ndescription: \"How we cut a release\"\n---\n# Release\n\nTag, then push.";
    std::fs::create_dir_all(repo.join(".claude/skills/release")).expect("mkdir");
    std::fs::write(repo.join(".claude/skills/release/SKILL.md"), skill).expect("write");
    let p = json(&ok(
        &sb,
        &repo,
        &[
            "--json",
            "lesson",
            "propose",
            "--file",
            ".claude/skills/release/SKILL.md",
            "--append",
            "Run the full suite first",
        ],
    ));
    ok(&sb, &repo, &["lesson", "apply", p["id"].as_str().expect("id")]);
    let now = read(&repo, ".claude/skills/release/SKILL.md");
    assert!(
        now.starts_with(
            "---\nname: release\ndescription: \"How we cut a release\"\n---\n# Release\n\nTag, then push.\n"
        ),
        "{now}"
    );
    assert!(now.contains("- Run the full suite first\n"), "{now}");
    // A rewrite of the front matter is refused.
    refused(
        &[
            "lesson",
            "propose",
            "--file",
            ".claude/skills/release/SKILL.md",
            "--replace",
            "name: release",
            "--with",
            "name: x",
        ],
        "front matter",
    );
}

#[test]
fn a_lesson_from_a_record_rests_on_it_and_apply_refuses_a_file_that_moved_on() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let fact =
        ok(&sb, &repo, &["add", "--type", "pattern", "--subject", "Run migrations before the integration tests"]);
    let p = json(&ok(&sb, &repo, &["--json", "lesson", "propose", "--from", &fact[..12]]));
    assert_eq!(p["lesson"]["because"][0], fact.as_str(), "{p}");
    assert_eq!(read(&repo, "AGENTS.md"), "", "a new file is created only by apply");
    std::fs::write(repo.join("AGENTS.md"), "# Someone wrote this meanwhile\n").expect("write");
    let out = neo(&sb, &repo, &["lesson", "apply", p["id"].as_str().expect("id")]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(stderr(&out).contains("changed since lesson"), "{}", stderr(&out));
    assert_eq!(read(&repo, "AGENTS.md"), "# Someone wrote this meanwhile\n");
}

#[test]
fn lessons_through_mcp_propose_list_and_apply_with_a_dry_run() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let mut c = Client::spawn(sb.dir.path(), &repo, &[("GIT_NEO_EMBEDDER", "hash")]);
    let dry = c.call_result("lessons", j!({"action": "propose", "text": "Run the linters first", "dry_run": true}));
    assert_eq!(dry["isError"], false, "{dry}");
    assert!(sb.tip(&repo).is_none(), "a dry run writes nothing");
    let p = c.call_result("lessons", j!({"action": "propose", "text": "Run the linters first"}));
    let id = p["structuredContent"]["id"].as_str().expect("id").to_string();
    let list = c.call_result("lessons", j!({"action": "list"}));
    assert_eq!(list["structuredContent"]["lessons"][0]["status"], "proposed", "{list}");
    let dry = c.call_result("lessons", j!({"action": "apply", "id": &id[..12], "dry_run": true}));
    assert_eq!(dry["structuredContent"]["dry_run"], true, "{dry}");
    assert_eq!(read(&repo, "AGENTS.md"), "");
    c.call_result("lessons", j!({"action": "apply", "id": &id[..12]}));
    assert!(read(&repo, "AGENTS.md").contains("- Run the linters first\n"));
}

#[test]
fn a_check_that_failed_then_passed_after_a_named_step_becomes_a_lesson() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let attempt = |at: &str, action: &str, result: &str| {
        let out = sb
            .neo_cmd(&repo)
            .env("GIT_NEO_EMBEDDER", "hash")
            .env("GIT_NEO_NOW", at)
            .args(["attempt", "--task", "DB-7", "--action", action, "--observation", "see the check"])
            .args(["--check", "cargo test -p db", "--result", result])
            .output()
            .expect("run");
        assert!(out.status.success(), "{}", stderr(&out));
    };
    attempt("2026-03-01T09:00:00Z", "Bumped the driver", "failed");
    attempt("2026-03-01T10:00:00Z", "Ran the migrations before the tests", "passed");
    let report = json(&ok(&sb, &repo, &["--json", "curate"]));
    let lessons = report["lessons"].as_array().expect("lessons");
    assert_eq!(lessons.len(), 1, "{report}");
    assert!(
        lessons[0]["text"].as_str().unwrap_or("").contains("For DB-7: Ran the migrations before the tests"),
        "{report}"
    );
    assert!(lessons[0]["reason"].as_str().unwrap_or("").contains("`cargo test -p db` failed in attempt"), "{report}");
    assert!(json(&ok(&sb, &repo, &["--json", "curate"])).get("lessons").is_none(), "proposed once");
}
