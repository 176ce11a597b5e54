//! Documents as sources (docs/import.md): a repository with a docs/ folder and ADRs, ingested,
//! then edited (a section changes, a document moves, one is deleted), with facts citing sections.

use crate::support::*;
use std::path::Path;

fn write(repo: &Path, rel: &str, text: &str) {
    let p = repo.join(rel);
    std::fs::create_dir_all(p.parent().expect("a parent")).expect("mkdir");
    std::fs::write(p, text).expect("write");
}

fn commit(sb: &Sandbox, repo: &Path, message: &str) {
    sb.git(repo, &["add", "-A"]);
    sb.git(repo, &["commit", "-q", "-m", message]);
}

const DEPLOY: &str = "# Deploying\n\nHow releases reach production.\n\n## Targets\n\nWe deploy to Fly.io in two regions.\n\n## Rollback\n\nRedeploy the previous image tag.\n";
const ADR1: &str = "# ADR 1: Use Postgres\n\n## Context\n\nWe need a relational database with JSON support.\n\n## Decision\n\nPostgres 16, managed.\n";
const ADR2: &str = "# ADR 2: Queue\n\n## Decision\n\nRedis streams for background jobs.\n";

/// The facts flagged for review, sorted by subject, each with its reasons as `list` prints them.
fn review_flags(sb: &Sandbox, repo: &Path) -> Vec<(String, Vec<String>)> {
    let text = sb.neo_ok(repo, &["list", "--needs-review"]);
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for line in text.lines() {
        match line.trim_start().strip_prefix("needs review: ") {
            Some(why) => {
                if let Some(last) = out.last_mut() {
                    last.1.push(why.to_string());
                }
            }
            None => out.push((line.split_whitespace().skip(3).collect::<Vec<_>>().join(" "), Vec::new())),
        }
    }
    out.sort();
    out
}

#[test]
fn sources_follow_the_documents_and_flag_the_facts_that_cite_a_changed_section() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    write(&repo, "docs/deploy.md", DEPLOY);
    write(&repo, "docs/adr/0001-postgres.md", ADR1);
    write(&repo, "docs/adr/0002-queue.md", ADR2);
    write(&repo, "docs/diagram.png", "not a document");
    commit(&sb, &repo, "docs");

    let out = json(&sb.neo_ok(&repo, &["ingest", "docs", "--json"]));
    let docs = out["documents"].as_array().expect("documents");
    assert_eq!(docs.len(), 3, "markdown only from a directory: {out}");
    assert!(docs.iter().all(|d| d["change"] == "new"));
    let deploy = docs.iter().find(|d| d["path"] == "docs/deploy.md").expect("deploy");
    assert_eq!(deploy["sections"], 3);
    // The source holds a pointer and the structure, not a copy.
    let id = deploy["id"].as_str().expect("id");
    let shown = sb.neo_ok(&repo, &["show", &id[..12]]);
    assert!(
        shown.contains("path: \"docs/deploy.md\"")
            && shown.contains("heading: \"Targets\"")
            && shown.contains("lines: \"5-8\""),
        "{shown}"
    );
    assert!(!shown.contains("two regions"), "no copy of the text: {shown}");
    // Twice: nothing new.
    assert_eq!(json(&sb.neo_ok(&repo, &["ingest", "docs", "--json"]))["unchanged"], 3);

    // Facts cite sections, by path or by source id; a bad section names the ones there are.
    sb.neo_ok(&repo, &["add", "-t", "decision", "-s", "Deploys go to Fly.io", "--source", "docs/deploy.md#targets"]);
    sb.neo_ok(
        &repo,
        &["add", "-t", "pattern", "-s", "Roll back by redeploying", "--source", &format!("{}#Rollback", &id[..12])],
    );
    sb.neo_ok(
        &repo,
        &["add", "-t", "decision", "-s", "We use Postgres 16", "--source", "docs/adr/0001-postgres.md#Decision"],
    );
    sb.neo_ok(
        &repo,
        &["add", "-t", "decision", "-s", "Jobs run on Redis streams", "--source", "docs/adr/0002-queue.md#Decision"],
    );
    let bad = sb.neo(&repo, &["add", "-t", "decision", "-s", "x", "--source", "docs/deploy.md#Costs"]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(
        stderr(&bad).contains("has no section \"Costs\"; its sections: Deploying, Targets, Rollback"),
        "{}",
        stderr(&bad)
    );
    let bad = sb.neo(&repo, &["add", "-t", "decision", "-s", "x", "--source", "docs/nope.md#Intro"]);
    assert!(stderr(&bad).contains("git neo ingest docs/nope.md"), "{}", stderr(&bad));
    assert!(review_flags(&sb, &repo).is_empty());

    // Recall shows the citation, and a layer from the documents with path and lines.
    let r = json(&sb.neo_ok(&repo, &["recall", "where do deploys go, Fly.io regions", "--json"]));
    let fact = r["facts"]
        .as_array()
        .expect("facts")
        .iter()
        .find(|f| f["subject"] == "Deploys go to Fly.io")
        .expect("the fact");
    assert_eq!(fact["cites"][0]["path"], "docs/deploy.md");
    assert_eq!(fact["cites"][0]["lines"], serde_json::json!([5, 8]));
    let d = &r["documents"][0];
    assert_eq!((d["path"].as_str(), d["heading"].as_str()), (Some("docs/deploy.md"), Some("Targets")), "{r}");
    assert!(d["excerpt"].as_str().expect("excerpt").contains("two regions"));
    let md = sb.neo_ok(&repo, &["recall", "where do deploys go, Fly.io regions"]);
    assert!(
        md.contains("## From the project's documents") && md.contains("cites `docs/deploy.md#Targets` (lines 5–8)"),
        "{md}"
    );
    // Telemetry names every layer shown, the documents' too, in the order shown (recall's layers
    // are listed once: `recall::LayerKind`).
    let log = std::fs::read_to_string(repo.join(".git/neo/telemetry/recalls.jsonl")).expect("telemetry");
    let last: serde_json::Value = serde_json::from_str(log.lines().last().expect("a line")).expect("json");
    let layers: Vec<&str> =
        last["results"].as_array().expect("results").iter().filter_map(|r| r["layer"].as_str()).collect();
    assert!(layers.contains(&"facts") && layers.contains(&"documents"), "{last}");
    assert_eq!(layers.last(), Some(&"documents"), "documents come after the memory's layers: {layers:?}");
    let source = last["results"].as_array().expect("results").iter().find(|r| r["layer"] == "documents");
    assert_eq!(source.map(|s| s["id"].as_str().map(str::len)), Some(Some(64)), "a source record's id: {last}");

    // One section changes, a document moves, one is deleted.
    write(&repo, "docs/deploy.md", &DEPLOY.replace("Fly.io in two regions", "Render in one region"));
    sb.git(&repo, &["mv", "docs/adr/0001-postgres.md", "docs/adr/0001-database.md"]);
    sb.git(&repo, &["rm", "-q", "docs/adr/0002-queue.md"]);
    commit(&sb, &repo, "docs change");
    let out = json(&sb.neo_ok(&repo, &["ingest", "docs", "--json"]));
    let change = |p: &str| {
        out["documents"].as_array().expect("docs").iter().find(|d| d["path"] == p).map(|d| d["change"].clone())
    };
    assert_eq!(change("docs/deploy.md"), Some("changed".into()));
    assert_eq!(change("docs/adr/0001-database.md"), Some("moved".into()));
    assert_eq!(change("docs/adr/0002-queue.md"), Some("deleted".into()));
    let flags = review_flags(&sb, &repo);
    let flagged: Vec<&str> = flags.iter().map(|(s, _)| s.as_str()).collect();
    // The changed section flags its fact, naming it; the unchanged section and the moved
    // document flag nothing; the deleted document flags its fact, saying so.
    assert_eq!(flagged, vec!["Deploys go to Fly.io", "Jobs run on Redis streams"], "{flags:?}");
    assert!(flags[0].1[0].contains("cites \"Targets\" of docs/deploy.md, which changed"), "{flags:?}");
    assert!(flags[1].1[0].contains("deleted from the repository"), "{flags:?}");
    assert_eq!(out["needs_review"].as_array().map(Vec::len), Some(2), "ingest says which facts to review: {out}");
    // Deleted documents are marked outdated, never dropped.
    let sources = json(&sb.neo_ok(&repo, &["list", "--kind", "source", "--all", "--json"]));
    let statuses: Vec<(String, String)> = sources
        .as_array()
        .expect("sources")
        .iter()
        .map(|e| (e["record"]["path"].as_str().unwrap_or("").into(), e["status"].as_str().unwrap_or("").into()))
        .collect();
    assert!(statuses.contains(&("docs/adr/0002-queue.md".into(), "outdated".into())), "{statuses:?}");
    assert!(statuses.contains(&("docs/adr/0001-postgres.md".into(), "superseded".into())), "{statuses:?}");
    // A citation of the current version after the change is clean.
    sb.neo_ok(&repo, &["add", "-t", "decision", "-s", "Deploys go to Render", "--source", "docs/deploy.md#Targets"]);
    assert_eq!(review_flags(&sb, &repo).len(), 2);
    let diff = sb.neo_ok(&repo, &["diff", "neo-memory~2"]);
    assert!(diff.contains("Documents ingested"), "{diff}");
    assert!(sb.neo_ok(&repo, &["verify"]).contains("ok"));
}

#[test]
fn a_glob_or_a_file_ingests_what_it_names_and_uncommitted_documents_are_refused() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    write(&repo, "docs/a.md", "# A\n\ntext\n");
    write(&repo, "docs/sub/b.md", "# B\n\ntext\n");
    write(&repo, "NOTES.txt", "plain notes\n");
    commit(&sb, &repo, "docs");
    let out = json(&sb.neo_ok(&repo, &["ingest", "docs/*.md", "NOTES.txt", "--json"]));
    let paths: Vec<&str> =
        out["documents"].as_array().expect("docs").iter().filter_map(|d| d["path"].as_str()).collect();
    assert_eq!(paths, vec!["NOTES.txt", "docs/a.md"]);
    let out = json(&sb.neo_ok(&repo, &["ingest", "docs/**/*.md", "--json"]));
    assert_eq!(out["documents"].as_array().map(Vec::len), Some(1), "b.md only: {out}");
    write(&repo, "docs/new.md", "# New\n");
    let tip = sb.tip(&repo);
    let out = sb.neo(&repo, &["ingest", "docs/new.md"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("commit it first"), "{}", stderr(&out));
    assert_eq!(sb.tip(&repo), tip, "nothing written");
}

#[test]
fn html_headings_are_sections_and_a_query_cites_the_one_that_answers() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    // A FAQ written for a web page: a table of contents, then `<h3 name=…>` headings.
    let mut faq = String::from("## FAQ\n\n");
    let questions = [
        (
            "search-compressed",
            "How do I search compressed files?",
            "Pass the -z flag; gzip, bzip2, xz and zstd are read.",
        ),
        (
            "look-around",
            "How do I enable look-around and backreferences?",
            "Use -P to switch to the PCRE2 engine, which supports them.",
        ),
        ("config", "Does it read a configuration file?", "Set RIPGREP_CONFIG_PATH to a file of flags, one per line."),
    ];
    for (name, q, _) in &questions {
        faq.push_str(&format!("* [{q}](#{name})\n"));
    }
    for (name, q, a) in &questions {
        faq.push_str(&format!("\n<h3 name=\"{name}\">\n{q}\n</h3>\n\n{a}\n"));
    }
    write(&repo, "FAQ.md", &faq);
    commit(&sb, &repo, "faq");
    let out = json(&sb.neo_ok(&repo, &["ingest", "FAQ.md", "--json"]));
    assert_eq!(out["documents"][0]["sections"], 4, "the contents, then one per question: {out}");

    let r = json(&sb.neo_ok(&repo, &["recall", "how do I enable look-around and backreferences", "--json"]));
    let d = &r["documents"][0];
    assert_eq!(d["heading"], "How do I enable look-around and backreferences?", "{r}");
    assert!(d["excerpt"].as_str().is_some_and(|e| e.contains("PCRE2") && !e.contains("* [")), "{d}");
}
