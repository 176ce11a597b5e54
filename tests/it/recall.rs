//! Recall end to end: layers, budget, caches that catch up and rebuild, lexical without a model,
//! the deterministic embedder for the vector path, and the real model.

use crate::support::{json, stderr, Sandbox};
use std::path::Path;
use std::process::Output;

fn recall(sb: &Sandbox, repo: &Path, embedder: &str, args: &[&str]) -> Output {
    let mut cmd = sb.neo_cmd(repo);
    cmd.env("GIT_NEO_EMBEDDER", embedder).arg("recall").args(args);
    cmd.output().expect("run recall")
}

fn seed(sb: &Sandbox, repo: &Path) -> Vec<String> {
    let add = |args: &[&str]| sb.neo_ok(repo, args);
    vec![
        add(&[
            "add",
            "-t",
            "constraint",
            "-s",
            "Never call the payments API from tests",
            "-b",
            "Use FakePayments from tests/support; the sandbox bills real cards.",
        ]),
        add(&[
            "add",
            "-t",
            "architecture",
            "-s",
            "Payments go through the ledger service",
            "-b",
            "The ledger owns idempotency keys.",
        ]),
        add(&[
            "add",
            "-t",
            "pattern",
            "-s",
            "Cache invalidation uses versioned keys",
            "-b",
            "Bump the version suffix instead of deleting keys.",
        ]),
        add(&["add", "-t", "known-unknown", "-s", "Why the payments webhook retries twice", "-b", "Nobody knows yet."]),
        add(&["add", "-t", "decision", "-s", "Deploy with Fly.io", "--area", "ops"]),
    ]
}

#[test]
fn lexical_recall_works_without_a_model_and_layers_the_answer() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let ids = seed(&sb, &repo);
    let out = recall(&sb, &repo, "none", &["payments ledger", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let r = json(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(r["semantic"], false);
    assert_eq!(r["constraints"][0]["id"], ids[0], "constraints always come first");
    assert_eq!(r["facts"][0]["id"], ids[1], "the best lexical match leads the facts");
    assert_eq!(r["known_unknowns"][0]["id"], ids[3]);
    assert!(
        r["facts"].as_array().expect("facts").iter().all(|f| f["id"] != ids[0]),
        "constraints are not repeated as facts"
    );
    let md = recall(&sb, &repo, "none", &["payments ledger"]);
    let text = String::from_utf8_lossy(&md.stdout);
    assert!(
        text.contains("## Constraints (always apply)")
            && text.contains("## Relevant facts")
            && text.contains("## Known unknowns"),
        "{text}"
    );
    assert!(text.contains("Lexical recall only"), "{text}");
    // --type and --scope filter.
    let ops =
        json(&String::from_utf8_lossy(&recall(&sb, &repo, "none", &["deploy", "--area", "ops", "--json"]).stdout));
    assert_eq!(ops["facts"][0]["id"], ids[4]);
    let only =
        json(&String::from_utf8_lossy(&recall(&sb, &repo, "none", &["payments", "-t", "pattern", "--json"]).stdout));
    assert!(only["facts"].as_array().expect("facts").iter().all(|f| f["type"] == "pattern"));
}

#[test]
fn caches_catch_up_rebuild_on_damage_and_embed_when_a_model_appears() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    seed(&sb, &repo);
    let first = recall(&sb, &repo, "none", &["cache"]);
    assert!(stderr(&first).contains("rebuilt the recall index (no cache yet)"), "{}", stderr(&first));
    let second = recall(&sb, &repo, "none", &["cache"]);
    assert!(!stderr(&second).contains("rebuilt"), "an up-to-date cache is reused: {}", stderr(&second));

    // A new record (even one written by another process) is caught up, not rebuilt.
    let new = sb.neo_ok(&repo, &["add", "-t", "pattern", "-s", "Shard the cache by tenant"]);
    let third = recall(&sb, &repo, "none", &["tenant", "--json"]);
    assert!(!stderr(&third).contains("rebuilt"), "{}", stderr(&third));
    assert_eq!(json(&String::from_utf8_lossy(&third.stdout))["facts"][0]["id"], new);

    // A damaged stamp is rebuilt and said so; deleting the cache is always safe.
    let stamp = repo.join(".git/neo/index/stamp.json");
    std::fs::write(&stamp, "{not json").expect("damage the stamp");
    let damaged = recall(&sb, &repo, "none", &["tenant"]);
    assert!(damaged.status.success());
    assert!(stderr(&damaged).contains("rebuilt the recall index (the stamp is unreadable"), "{}", stderr(&damaged));
    std::fs::remove_dir_all(repo.join(".git/neo")).expect("delete the caches");
    assert!(recall(&sb, &repo, "none", &["tenant"]).status.success());

    // The model appears later: the next recall embeds what is missing, without a rebuild.
    let with_model = recall(&sb, &repo, "hash", &["tenant shard", "--json"]);
    assert!(!stderr(&with_model).contains("rebuilt"), "{}", stderr(&with_model));
    let r = json(&String::from_utf8_lossy(&with_model.stdout));
    assert_eq!(r["semantic"], true);
    assert_eq!(r["facts"][0]["id"], new);
    assert!(r["facts"][0]["vector_rank"].is_number(), "{r}");
    let stamp: serde_json::Value = serde_json::from_slice(&std::fs::read(&stamp).expect("stamp")).expect("json");
    assert_eq!(stamp["model"], "hash-384@1");
    assert_eq!(stamp["records"], 6);

    // A purged record is no longer on the ref: the cache must not serve it, so it is rebuilt.
    sb.neo_ok(&repo, &["purge", &new[..8], "--reason", "test", "--yes"]);
    let after = recall(&sb, &repo, "hash", &["tenant shard", "--json"]);
    assert!(
        stderr(&after).contains("rebuilt the recall index (a record it holds is no longer on the ref)"),
        "{}",
        stderr(&after)
    );
    let r = json(&String::from_utf8_lossy(&after.stdout));
    assert!(r["facts"].as_array().expect("facts").iter().all(|f| f["id"] != new));
}

#[test]
fn the_budget_cuts_and_says_so_and_invalidated_facts_show_their_replacement() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    for i in 0..12 {
        sb.neo_ok(
            &repo,
            &[
                "add",
                "-t",
                "constraint",
                "-s",
                &format!("Constraint number {i} about migrations"),
                "-b",
                &"Keep migrations reversible. ".repeat(20),
            ],
        );
    }
    let r = json(&String::from_utf8_lossy(
        &recall(&sb, &repo, "none", &["migrations", "--budget", "600", "--json"]).stdout,
    ));
    assert!(r["cut"].as_u64().is_some_and(|c| c > 0), "{r}");
    assert!(r["tokens"].as_u64().is_some_and(|t| t <= 600));
    let text =
        String::from_utf8_lossy(&recall(&sb, &repo, "none", &["migrations", "--budget", "600"]).stdout).to_string();
    assert!(text.contains("Cut to the 600-token budget"), "{text}");

    // A superseded fact shows in its own layer with what replaced it and why.
    let old = sb.neo_ok(&repo, &["add", "-t", "decision", "-s", "Deploy target is Heroku"]);
    let new = sb.neo_ok(&repo, &["add", "-t", "decision", "-s", "Deploy target is Fly.io", "-b", "Heroku is gone."]);
    let store = git_neo::store::Store::discover(&repo, git_neo::store::StoreOptions::default()).expect("store");
    let rec = git_neo::record::Record {
        kind: git_neo::record::Kind::Supersession,
        payload: git_neo::record::Payload::Supersession(git_neo::record::Supersession {
            old: git_neo::record::RecordId::from_hex(&old).expect("id"),
            old_scope: None,
            new: git_neo::record::RecordId::from_hex(&new),
            reason: "moved to Fly.io in March".into(),
            method: git_neo::record::SupersessionMethod::Key,
            score: None,
        }),
        author: "Ada Tester <ada@example.com>".into(),
        created_at: git_neo::record::Timestamp(1_772_400_000),
        body: String::new(),
    };
    let (id, bytes) = rec.encode();
    let who = git_neo::store::Identity { name: "Ada Tester".into(), email: "ada@example.com".into() };
    store.write_records(&[(rec.kind, id, bytes)], "neo: supersede", &who, rec.created_at, false).expect("write");
    let r = json(&String::from_utf8_lossy(&recall(&sb, &repo, "none", &["deploy target heroku", "--json"]).stdout));
    assert_eq!(r["invalidated"][0]["id"], old, "{r}");
    assert_eq!(r["invalidated"][0]["replaced_by"][0]["reason"], "moved to Fly.io in March");
    assert_eq!(r["facts"][0]["id"], new);
    let md = String::from_utf8_lossy(&recall(&sb, &repo, "none", &["deploy target heroku"]).stdout).to_string();
    assert!(
        md.contains("## No longer true")
            && md.contains("~~Deploy target is Heroku~~")
            && md.contains("moved to Fly.io in March"),
        "{md}"
    );
}

/// The real model end to end: needs scripts/install-model.sh (which .ci/run runs).
#[test]
#[ignore = "needs the model: scripts/install-model.sh"]
fn the_real_model_finds_a_paraphrase_that_shares_no_words() {
    let root = crate::support::installed_model_root();
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let target = sb.neo_ok(&repo, &["add", "-t", "pattern", "-s", "Automobiles are parked in the garage overnight"]);
    sb.neo_ok(&repo, &["add", "-t", "pattern", "-s", "Invoices are emailed to customers monthly"]);
    sb.neo_ok(&repo, &["add", "-t", "pattern", "-s", "The build uses a pinned Rust toolchain"]);
    let mut cmd = sb.neo_cmd(&repo);
    cmd.env("GIT_NEO_CACHE_DIR", &root).args(["recall", "where do cars stay at night", "--json"]);
    let out = cmd.output().expect("run recall");
    assert!(out.status.success(), "{}", stderr(&out));
    let r = json(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(r["semantic"], true, "{}", stderr(&out));
    assert_eq!(r["facts"][0]["id"], target, "{r}");
    assert!(r["facts"][0]["lexical_rank"].is_null(), "no word in common: found by meaning alone");
    assert!(r["familiarity"]["best_similarity"].as_f64().is_some_and(|s| s > 0.4), "{r}");
}

/// The shape of `recall --json` documented in docs/json-output.md: top-level fields, item fields
/// and which records land in which layer, on a fixed memory with the deterministic embedder.
#[test]
fn recall_json_shape_is_pinned() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    seed(&sb, &repo);
    let out = recall(&sb, &repo, "hash", &["payments ledger webhook", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let r = json(&String::from_utf8_lossy(&out.stdout));
    let mut shape = String::new();
    let keys = |v: &serde_json::Value| {
        v.as_object().map(|o| o.keys().cloned().collect::<Vec<_>>().join(",")).unwrap_or_default()
    };
    shape.push_str(&format!("top: {}\n", keys(&r)));
    shape.push_str(&format!("familiarity: {}\n", keys(&r["familiarity"])));
    for layer in ["constraints", "facts", "attempts", "invalidated", "known_unknowns"] {
        for item in r[layer].as_array().expect("layer") {
            shape.push_str(&format!("{layer}: {} | {}\n", item["subject"].as_str().unwrap_or(""), keys(item)));
        }
    }
    let expected = "top: attempts,budget,constraints,cut,expanded,facts,familiarity,invalidated,known_unknowns,query,scopes,semantic,tokens
familiarity: best_confidence,best_similarity,level
constraints: Never call the payments API from tests | area,body,confidence,id,kind,lexical_rank,scope,score,similarity,status,subject,successes,type,unconfirmed_days,vector_rank
facts: Payments go through the ledger service | area,body,confidence,id,kind,lexical_rank,scope,score,similarity,status,subject,successes,type,unconfirmed_days,vector_rank
known_unknowns: Why the payments webhook retries twice | area,body,confidence,id,kind,lexical_rank,scope,score,similarity,status,subject,successes,type,unconfirmed_days,vector_rank
";
    assert_eq!(shape, expected);
}

#[test]
fn concurrent_recalls_share_one_cache_build() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    seed(&sb, &repo);
    let results: Vec<Output> = std::thread::scope(|scope| {
        let handles: Vec<_> =
            (0..4).map(|_| scope.spawn(|| recall(&sb, &repo, "hash", &["payments", "--json"]))).collect();
        handles.into_iter().map(|h| h.join().expect("thread")).collect()
    });
    for out in &results {
        assert!(out.status.success(), "{}", stderr(out));
        assert_eq!(json(&String::from_utf8_lossy(&out.stdout))["constraints"].as_array().map(|c| c.len()), Some(1));
    }
    let rebuilt = results.iter().filter(|o| stderr(o).contains("rebuilt")).count();
    assert_eq!(rebuilt, 1, "one process builds, the others wait and reuse it");
}

/// A body longer than the model's window is indexed by passages: a question about its end finds
/// it, and recall says which lines matched (JSON `passage`, and the markdown shows those lines).
#[test]
fn a_long_fact_is_found_by_a_passage_deep_in_its_body_and_says_which_lines() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let filler: String = (0..12)
        .map(|i| {
            format!(
                "Paragraph {i} describes the release train, the staging cluster and the on-call rota in detail.\n\n"
            )
        })
        .collect();
    let body = format!(
        "{filler}## Rollback\n\nWhen the canary fails, flip the kubernetes ingress weight back to zero and page the database owner.\n"
    );
    let id = sb.neo_ok(&repo, &["add", "-t", "architecture", "-s", "Release runbook", "-b", &body]);
    sb.neo_ok(&repo, &["add", "-t", "architecture", "-s", "Ingress weights are managed by the platform team"]);
    let out =
        recall(&sb, &repo, "hash", &["canary fails flip kubernetes ingress weight page database owner", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let r = json(&String::from_utf8_lossy(&out.stdout));
    let fact =
        r["facts"].as_array().expect("facts").iter().find(|f| f["id"] == id).expect("the runbook is recalled").clone();
    let lines = &fact["passage"]["lines"];
    let total = body.trim_end().lines().count() as u64;
    assert_eq!(lines[1].as_u64(), Some(total), "the matching passage is the last one: {fact}");
    assert!(lines[0].as_u64().is_some_and(|first| first > 10), "deep in the body: {fact}");
    let md = String::from_utf8_lossy(
        &recall(&sb, &repo, "hash", &["canary fails flip kubernetes ingress weight page database owner"]).stdout,
    )
    .into_owned();
    assert!(md.contains(&format!("lines {}–{total} of the body matched", lines[0])), "{md}");
    assert!(md.contains("flip the kubernetes ingress weight"), "the matched lines are shown: {md}");
    let short = recall(&sb, &repo, "hash", &["who manages ingress weights", "--json"]);
    let r = json(&String::from_utf8_lossy(&short.stdout));
    assert!(
        r["facts"].as_array().expect("facts").iter().all(|f| f["id"] == id || f["passage"].is_null()),
        "a short fact has no passage: {r}"
    );
}

/// The analyser without a model: a word finds its inflections, an identifier finds its words.
#[test]
fn without_a_model_commit_finds_small_commits_and_parse_config_finds_parse_the_config() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let commits = sb.neo_ok(&repo, &["add", "-t", "pattern", "-s", "Keep small commits"]);
    let config = sb.neo_ok(&repo, &["add", "-t", "pattern", "-s", "We parse the config once at start"]);
    sb.neo_ok(&repo, &["add", "-t", "pattern", "-s", "Invoices are emailed monthly"]);
    let ids = |query: &str| -> Vec<String> {
        let out = recall(&sb, &repo, "none", &[query, "--json"]);
        assert!(out.status.success(), "{}", stderr(&out));
        let r = json(&String::from_utf8_lossy(&out.stdout));
        assert_eq!(r["semantic"], false);
        r["facts"].as_array().expect("facts").iter().map(|f| f["id"].as_str().unwrap_or_default().to_string()).collect()
    };
    assert_eq!(ids("commit"), std::slice::from_ref(&commits), "\"commit\" finds \"small commits\"");
    assert_eq!(ids("parse_config"), std::slice::from_ref(&config), "parse_config finds \"parse the config\"");
    assert_eq!(ids("parseConfig"), [config], "so does parseConfig");
    assert!(ids("commit").iter().all(|i| *i == commits));
}

#[test]
fn a_known_unknown_shows_only_for_its_own_question_and_unrelated_prompts_change_nothing() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let ku = sb.neo_ok(
        &repo,
        &["add", "-t", "known-unknown", "-s", "Is mmap safe when a searched file is truncated while it is read?"],
    );
    let gzip =
        sb.neo_ok(&repo, &["add", "-t", "pattern", "-s", "Compressed files are searched with -z: gzip, xz and bzip2"]);
    sb.neo_ok(&repo, &["add", "-t", "decision", "-s", "Output colors come from the --colors flag"]);

    let ask = |q: &str| {
        let out = recall(&sb, &repo, "none", &[q, "--json"]);
        assert!(out.status.success(), "{}", stderr(&out));
        json(&String::from_utf8_lossy(&out.stdout))
    };
    // It shares "search" and "files" with the question, and is not about it.
    let r = ask("how does the search handle gzip compressed files");
    assert_eq!(r["facts"][0]["id"], gzip.as_str(), "{r}");
    assert_eq!(r["known_unknowns"].as_array().map(Vec::len), Some(0), "{r}");
    // Asked about, it is shown.
    let r = ask("is mmap safe for truncated files");
    assert_eq!(r["known_unknowns"][0]["id"], ku.as_str(), "{r}");
    // Telemetry counts it retrieved for the second question only.
    let log = std::fs::read_to_string(repo.join(".git/neo/telemetry/recalls.jsonl")).expect("telemetry");
    let shown: Vec<bool> = log
        .lines()
        .map(|l| json(l)["results"].as_array().expect("results").iter().any(|x| x["id"] == ku.as_str()))
        .collect();
    assert_eq!(shown, vec![false, true]);

    // Two unrelated questions in a row (they share only "how does the") say nothing.
    ask("how does the search handle gzip files");
    ask("how does the output pick its colors");
    let f = json(&sb.neo_ok(&repo, &["feedback", "--dry-run", "--json"]));
    assert_eq!(f["outcomes"].as_array().map(Vec::len), Some(0), "{f}");
}

#[test]
fn an_answer_stops_at_the_relevance_floor_and_a_bad_floor_is_refused() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let deploy = sb.neo_ok(&repo, &["add", "-t", "decision", "-s", "Deploys go to Fly.io from the main branch"]);
    let ledger = sb.neo_ok(&repo, &["add", "-t", "architecture", "-s", "Payments go through the ledger service"]);
    let ask = |sb: &Sandbox| {
        let out = recall(sb, &repo, "none", &["where do deploys go", "--json"]);
        assert!(out.status.success(), "{}", stderr(&out));
        let r = json(&String::from_utf8_lossy(&out.stdout));
        r["facts"]
            .as_array()
            .expect("facts")
            .iter()
            .map(|f| f["id"].as_str().unwrap_or("").to_string())
            .collect::<Vec<_>>()
    };
    // The ledger fact shares only "go" with the question: a filler, left out by default.
    assert_eq!(ask(&sb), vec![deploy.clone()]);
    sb.git(&repo, &["config", "neo.recall.floor", "0"]);
    assert_eq!(ask(&sb), vec![deploy, ledger], "a floor of 0 fills the slots");
    sb.git(&repo, &["config", "neo.recall.floor", "2"]);
    let out = recall(&sb, &repo, "none", &["where do deploys go"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("neo.recall.floor"), "{}", stderr(&out));
}
