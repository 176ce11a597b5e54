//! Importing what a team already wrote for its agents (`fixtures/instructions/`, each file in its
//! tool's real format) and exporting memory back out: typed facts anchored to their lines, a dry
//! run that writes nothing, a second run that writes nothing new, and an export that imports as
//! nothing new.

use crate::support::*;
use std::path::{Path, PathBuf};

const FILES: &[&str] =
    &["AGENTS.md", "CLAUDE.md", ".cursor/rules/api.mdc", ".github/copilot-instructions.md", "MEMORY.md"];

/// A repository holding the sample instruction files at their usual paths, committed.
fn repo_with_instructions(sb: &Sandbox) -> PathBuf {
    let repo = sb.repo("r");
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/instructions");
    for f in FILES {
        let to = repo.join(f);
        std::fs::create_dir_all(to.parent().expect("a parent")).expect("mkdir");
        std::fs::copy(fixtures.join(f), &to).expect("copy a fixture");
    }
    sb.git(&repo, &["add", "."]);
    sb.git(&repo, &["commit", "-q", "-m", "agent instructions"]);
    repo
}

/// The facts listed as (type, subject, tags, anchors).
fn facts(sb: &Sandbox, repo: &Path) -> Vec<(String, String, Vec<String>, Vec<String>)> {
    let list = json(&sb.neo_ok(repo, &["list", "--json"]));
    let strings = |v: &serde_json::Value| -> Vec<String> {
        v.as_array().into_iter().flatten().filter_map(|x| x.as_str().map(str::to_string)).collect()
    };
    list.as_array()
        .expect("a list")
        .iter()
        .map(|e| {
            let r = &e["record"];
            let anchors = r["anchors"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|a| format!("{}:{}-{}", a["path"].as_str().unwrap_or(""), a["lines"]["start"], a["lines"]["end"]))
                .collect();
            (
                r["type"].as_str().unwrap_or("").into(),
                r["subject"].as_str().unwrap_or("").into(),
                strings(&r["tags"]),
                anchors,
            )
        })
        .collect()
}

#[test]
fn each_instruction_format_imports_typed_anchored_facts_once() {
    let sb = Sandbox::new();
    let repo = repo_with_instructions(&sb);

    // A dry run prints JSON Lines that import takes, and writes nothing.
    let dry = sb.neo(&repo, &["import", "--from", "agents-md", "AGENTS.md", "--dry-run"]);
    assert!(dry.status.success(), "{}", stderr(&dry));
    assert!(sb.tip(&repo).is_none(), "a dry run writes nothing");
    let lines: Vec<serde_json::Value> = stdout(&dry).lines().map(json).collect();
    assert_eq!(lines.len(), 13, "{}", stdout(&dry));
    assert!(stderr(&dry).contains("wording: opens with \"never\""), "why each type: {}", stderr(&dry));
    // Edited (a type fixed) and imported as plain JSON Lines, it is what gets written.
    let mut edited = lines.clone();
    edited[0]["type"] = "architecture".into();
    let file = sb.path("edited.jsonl");
    std::fs::write(&file, edited.iter().map(|l| format!("{l}\n")).collect::<String>()).expect("write");
    sb.neo_ok(&repo, &["import", &file.to_string_lossy()]);
    let got = facts(&sb, &repo);
    assert_eq!(got.len(), 13);
    let find = |s: &str| got.iter().find(|f| f.1.contains(s)).unwrap_or_else(|| panic!("{s}: {got:?}")).clone();
    assert_eq!(find("Orders service").0, "architecture");
    assert_eq!(find("Never commit").0, "constraint");
    assert_eq!(find("Never commit").3, vec!["AGENTS.md:19-19".to_string()]);
    assert_eq!(find("Never commit").2, vec!["agents-md".to_string(), "agents.md".to_string()]);
    assert_eq!(find("src/domain").0, "architecture");
    assert_eq!(find("payment webhook").0, "known-unknown");
    assert_eq!(find("Single quotes").0, "pattern");

    // The other formats, each from its usual path.
    for (format, file, n) in [
        ("claude-md", "CLAUDE.md", 6),
        ("cursor-rules", ".cursor/rules/api.mdc", 3),
        ("copilot", ".github/copilot-instructions.md", 4),
        ("memory-md", "MEMORY.md", 3),
    ] {
        let out = json(&sb.neo_ok(&repo, &["import", "--from", format, file, "--json"]));
        assert_eq!(out["added"], n, "{format}: {out}");
        // Twice: nothing new.
        let again = json(&sb.neo_ok(&repo, &["import", "--from", format, file, "--json"]));
        assert_eq!((again["added"].as_u64(), again["duplicates"].as_u64()), (Some(0), Some(n)), "{format}: {again}");
    }
    let got = facts(&sb, &repo);
    let find = |s: &str| got.iter().find(|f| f.1.contains(s)).unwrap_or_else(|| panic!("{s}: {got:?}")).clone();
    assert!(!got.iter().any(|f| f.1.contains("Before starting a task")), "git-neo's own section is skipped");
    assert_eq!(find("search index is rebuilt").0, "failure");
    assert_eq!(find("Migrations must be reversible").0, "constraint");
    assert_eq!(find("We chose SQLite").0, "decision");
    assert_eq!(find("make build").3, vec!["CLAUDE.md:7-9".to_string()], "a code block first in its section");
    assert_eq!(find("make build").1, "Common commands: `make build`");
    assert_eq!(find("Always validate request bodies").0, "constraint");
    assert_eq!(find("Always validate request bodies").3, vec![".cursor/rules/api.mdc:7-7".to_string()]);
    assert!(find("Handlers stay under 50 lines").2.contains(&".cursor/rules/api.mdc".to_string()));
    assert_eq!(find("Do not add new dependencies").0, "constraint");
    assert_eq!(find("who owns the legacy CSV export").0, "known-unknown");
    ok_verify(&sb, &repo);
}

fn ok_verify(sb: &Sandbox, repo: &Path) {
    assert!(sb.neo_ok(repo, &["verify"]).contains("ok"));
}

#[test]
fn a_bad_format_or_file_writes_nothing_and_says_why() {
    let sb = Sandbox::new();
    let repo = repo_with_instructions(&sb);
    let out = sb.neo(&repo, &["import", "--from", "windsurf", "AGENTS.md"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("from:") && stderr(&out).contains("agents-md"), "{}", stderr(&out));
    let out = sb.neo(&repo, &["import", "--from", "agents-md", "NOPE.md"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("file:"), "{}", stderr(&out));
    assert!(sb.tip(&repo).is_none());
}

#[test]
fn an_export_imports_back_as_nothing_new_and_reads_as_a_handbook() {
    let sb = Sandbox::new();
    let repo = repo_with_instructions(&sb);
    sb.neo_ok(&repo, &["import", "--from", "agents-md", "AGENTS.md"]);
    sb.neo_ok(&repo, &["add", "-t", "decision", "-s", "Orders are kept for seven years", "--key", "orders.retention"]);
    let tip = sb.tip(&repo);
    let exported = sb.neo_ok(&repo, &["export"]);
    let lines: Vec<serde_json::Value> = exported.lines().map(json).collect();
    assert_eq!(lines.len(), 14);
    let kept = lines.iter().find(|l| l["key"] == "orders.retention").expect("the keyed fact");
    assert_eq!(kept["status"], "valid");
    assert!(kept["id"].as_str().is_some_and(|id| id.len() == 64));
    let file = sb.path("export.jsonl");
    std::fs::write(&file, format!("{exported}\n")).expect("write");
    let again = json(&sb.neo_ok(&repo, &["import", &file.to_string_lossy(), "--json"]));
    assert_eq!((again["added"].as_u64(), again["duplicates"].as_u64()), (Some(0), Some(14)), "{again}");
    assert_eq!(sb.tip(&repo), tip, "a round trip writes nothing");

    // Into another repository it is the same memory, fact for fact.
    let other = sb.repo("other");
    std::fs::copy(repo.join("AGENTS.md"), other.join("AGENTS.md")).expect("copy");
    sb.git(&other, &["add", "."]);
    sb.git(&other, &["commit", "-q", "-m", "same files"]);
    sb.neo_ok(&other, &["import", &file.to_string_lossy()]);
    let mut a: Vec<_> = facts(&sb, &repo).into_iter().map(|f| (f.0, f.1)).collect();
    let mut b: Vec<_> = facts(&sb, &other).into_iter().map(|f| (f.0, f.1)).collect();
    a.sort();
    b.sort();
    assert_eq!(a, b);

    let md = sb.neo_ok(&repo, &["export", "--format", "markdown"]);
    assert!(md.starts_with("# Memory of r"), "{md}");
    let constraints = md.find("## Constraints (always apply)").expect("constraints first");
    let decisions = md.find("## Decisions").expect("decisions");
    assert!(constraints < decisions, "{md}");
    assert!(md.contains("**Never commit `.env` files.**") || md.contains("Never commit"), "{md}");
    assert!(md.contains("key `orders.retention`"), "{md}");
}

/// A fixture of `fixtures/foreign/`.
fn foreign(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/foreign").join(name).to_string_lossy().into_owned()
}

/// Entries of `list --all --json` keyed by subject: (kind or type, status, created_at, tags).
fn entries(sb: &Sandbox, repo: &Path) -> Vec<serde_json::Value> {
    json(&sb.neo_ok(repo, &["list", "--all", "--json"])).as_array().expect("a list").clone()
}

fn by_subject<'a>(all: &'a [serde_json::Value], s: &str) -> &'a serde_json::Value {
    all.iter().find(|e| e["record"]["subject"].as_str().is_some_and(|x| x.contains(s))).unwrap_or_else(|| panic!("{s}"))
}

#[test]
fn neo_facts_keep_their_kinds_scopes_confidence_times_and_supersessions() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let out = json(&sb.neo_ok(&repo, &["import", "--from", "neo", &foreign("neo_facts_project.json"), "--json"]));
    assert_eq!((out["added"].as_u64(), out["supersessions"].as_u64()), (Some(8), Some(2)), "{out}");
    let all = entries(&sb, &repo);
    let never = by_subject(&all, "Never run migrations");
    assert_eq!(never["record"]["type"], "constraint");
    assert_eq!(never["record"]["scope"], "project", "Neo's scope is the area label");
    assert_eq!(never["record"]["confidence"], 0.9);
    assert_eq!(never["record"]["provenance"], "structural");
    assert_eq!(never["record"]["created_at"], "2025-10-09T08:53:20Z", "Neo's creation time");
    let tags: Vec<&str> = never["record"]["tags"].as_array().expect("tags").iter().filter_map(|t| t.as_str()).collect();
    assert_eq!(tags, vec!["neo:a1b2c3d4e5f60718", "seed", "workflow"]);
    // Supersession as Neo had it, and an invalidation without a replacement as outdated.
    assert_eq!(by_subject(&all, "Deploys go to Heroku")["status"], "superseded");
    assert_eq!(by_subject(&all, "Deploys go to Fly.io")["status"], "valid");
    assert_eq!(by_subject(&all, "Mocking the clock")["status"], "outdated");
    let history = sb.neo_ok(&repo, &["history", &by_subject(&all, "Heroku")["id"].as_str().expect("id")[..12]]);
    assert!(history.contains("moved to Fly.io in March"), "{history}");
    // depends_on kept, to the imported fact.
    let fly = by_subject(&all, "Deploys go to Fly.io");
    assert_eq!(fly["record"]["depends_on"][0], by_subject(&all, "API handlers live")["id"]);
    assert_eq!(by_subject(&all, "flaky login test")["record"]["type"], "pattern", "an episode is a pattern, tagged");
    assert_eq!(by_subject(&all, "Why does the webhook")["record"]["type"], "known-unknown");
    // Twice: nothing new.
    let tip = sb.tip(&repo);
    let again = json(&sb.neo_ok(&repo, &["import", "--from", "neo", &foreign("neo_facts_project.json"), "--json"]));
    assert_eq!((again["added"].as_u64(), again["supersessions"].as_u64()), (Some(0), Some(0)), "{again}");
    assert_eq!(sb.tip(&repo), tip);
    ok_verify(&sb, &repo);
}

#[test]
fn beads_issues_become_decisions_failures_and_known_unknowns_with_their_links() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let out = sb.neo(&repo, &["import", "--from", "beads", &foreign("beads_issues.jsonl"), "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("bd-5: deleted in beads"), "{}", stderr(&out));
    assert_eq!(json(&stdout(&out))["added"], 4);
    let all = entries(&sb, &repo);
    let redis = by_subject(&all, "Switch session storage to Redis");
    assert_eq!(redis["record"]["type"], "decision");
    assert!(redis["record"]["body"].as_str().expect("body").contains("**Resolution:** Shipped in v2.3"));
    assert_eq!(redis["record"]["created_at"], "2025-09-03T17:00:00Z", "dated when it was decided: closed_at");
    let bug = by_subject(&all, "Login fails when the clock skews");
    assert_eq!(bug["record"]["type"], "failure");
    assert_eq!(bug["record"]["relations"][0]["type"], "derives");
    assert_eq!(bug["record"]["relations"][0]["id"], redis["id"]);
    let open = by_subject(&all, "Rate-limit the public search");
    assert_eq!(open["record"]["type"], "known-unknown");
    assert_eq!(open["record"]["depends_on"][0], redis["id"], "blocks: depends on");
    assert_eq!(open["record"]["created_at"], "2025-09-10T12:00:00Z");
    let tags: Vec<&str> = open["record"]["tags"].as_array().expect("tags").iter().filter_map(|t| t.as_str()).collect();
    assert_eq!(tags, vec!["api", "beads:bd-3", "p2", "task"]);
    // `related` both ways is a cycle: one direction is kept.
    let decide = by_subject(&all, "token bucket");
    let related = open["record"]["relations"].as_array().map_or(0, Vec::len)
        + decide["record"]["relations"].as_array().map_or(0, Vec::len);
    assert_eq!(related, 1, "{open} {decide}");
    assert_eq!(
        json(&sb.neo_ok(&repo, &["import", "--from", "beads", &foreign("beads_issues.jsonl"), "--json"]))["added"],
        0
    );
}

#[test]
fn csv_columns_map_onto_import_fields() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let file = foreign("facts.csv");
    let out = sb.neo(&repo, &["import", "--from", "csv", &file]);
    assert_eq!(out.status.code(), Some(1), "no type or subject column without a mapping");
    assert!(stderr(&out).contains("line 2") && stderr(&out).contains("missing field"), "{}", stderr(&out));
    let out = json(&sb.neo_ok(
        &repo,
        &[
            "import",
            "--from",
            "csv",
            &file,
            "--map",
            "type=kind",
            "--map",
            "subject=title",
            "--map",
            "body=details",
            "--map",
            "tags=labels",
            "--json",
        ],
    ));
    assert_eq!(out["added"], 3, "{out}");
    let all = entries(&sb, &repo);
    let card = by_subject(&all, "Never store card numbers, not even masked");
    assert_eq!(card["record"]["type"], "constraint");
    assert_eq!(card["record"]["tags"], serde_json::json!(["payments", "pci"]));
    assert!(card["record"]["body"].as_str().expect("body").starts_with("PCI scope"));
    let out = sb.neo(&repo, &["import", "--from", "csv", &file, "--map", "colour=kind"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("map:"), "{}", stderr(&out));
    // JSON Lines with other names, mapped the same way.
    let jl = sb.path("other.jsonl");
    std::fs::write(&jl, "{\"kind\": \"decision\", \"title\": \"We release monthly\", \"owner\": \"ada\"}\n")
        .expect("write");
    let out = json(
        &sb.neo_ok(&repo, &["import", &jl.to_string_lossy(), "--map", "type=kind", "--map", "subject=title", "--json"]),
    );
    assert_eq!(out["added"], 1);
}

#[test]
fn a_foreign_import_with_one_bad_fact_writes_nothing_and_names_it() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let file = sb.path("issues.jsonl");
    let lines = [
        r#"{"id":"bd-1","title":"Use the shared cache","status":"closed","issue_type":"task","created_at":"2025-09-01T09:00:00Z","closed_at":"2025-09-02T09:00:00Z","close_reason":"done"}"#,
        r#"{"id":"bd-2","title":"Rotate the key AKIAIOSFODNN7EXAMPLE","status":"open","issue_type":"task","created_at":"2025-09-03T09:00:00Z","dependencies":[{"issue_id":"bd-2","depends_on_id":"bd-1","type":"blocks","created_at":"2025-09-03T09:00:00Z","created_by":"ada"}]}"#,
    ];
    std::fs::write(&file, lines.join("\n")).expect("write");
    let out = sb.neo(&repo, &["import", "--from", "beads", &file.to_string_lossy()]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("record 2 (bd-2): subject"), "{}", stderr(&out));
    assert!(sb.tip(&repo).is_none(), "not even the first level was written");
    let out =
        json(&sb.neo_ok(&repo, &["import", "--from", "beads", &file.to_string_lossy(), "--skip-invalid", "--json"]));
    assert_eq!(out["added"], 1, "{out}");
}
