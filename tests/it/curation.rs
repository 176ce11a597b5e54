//! Curation, telemetry, implicit feedback and the report, on real repositories: a simulated year
//! of memory curated monthly, telemetry off, feedback rescanned, curation reviewed and reverted,
//! and the report opened in a real headless browser.

use crate::support::Sandbox;
use git_neo::api::learn::curate::CurateOptions;
use git_neo::api::learn::telemetry::Front;
use git_neo::api::{AddRequest, Clock, ListFilter, RecallQuery, RecordState, Session, SessionOptions};
use git_neo::embed::EmbedderChoice;
use git_neo::recall::LayerKind;
use git_neo::record::{FactType, Kind, RecordId, Timestamp};
use git_neo::state::Status;
use git_neo::store::Identity;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

const DAY: i64 = 86_400;
/// 2025-01-01T00:00:00Z: the simulated year starts here.
const START: i64 = 1_735_689_600;

fn session(repo: &Path, at: i64, embedder: &EmbedderChoice) -> Session {
    Session::new(SessionOptions {
        dir: repo.to_path_buf(),
        git_dir: None,
        ref_name: None,
        identity: Some(Identity { name: "Ada Tester".into(), email: "ada@example.com".into() }),
        clock: Clock::Fixed(Timestamp(at)),
        embedder: embedder.clone(),
        scope: None,
        data_dir: None,
        config: Vec::new(),
    })
}

/// A recall as an agent asks it through MCP: five records, a 2,000-token budget.
fn mcp_query(query: &str) -> RecallQuery {
    RecallQuery {
        query: query.into(),
        k: 5,
        budget: 2_000,
        types: vec![],
        area: None,
        as_of: None,
        front: Some(Front::Mcp),
        all_sessions: false,
    }
}

fn at(s: &mut Session, t: i64) {
    let dir = s.dir().to_path_buf();
    s.set_caller(
        Some(Identity { name: "Ada Tester".into(), email: "ada@example.com".into() }),
        Clock::Fixed(Timestamp(t)),
        dir,
    );
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures").join(name)
}

fn lines(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path).expect("fixture").lines().map(|l| serde_json::from_str(l).expect("json")).collect()
}

/// The recall fixture's facts as requests (their keys name them in the queries).
fn recall_facts() -> Vec<AddRequest> {
    lines(&fixture("recall/facts.jsonl"))
        .iter()
        .map(|f| AddRequest {
            fact_type: f["type"].as_str().expect("type").into(),
            subject: f["subject"].as_str().expect("subject").into(),
            body: f["body"].as_str().unwrap_or_default().into(),
            key: f["key"].as_str().map(String::from),
            area: f["scope"].as_str().map(String::from),
            no_supersede: true,
            ..Default::default()
        })
        .collect()
}

/// Month `m`'s agent writes: real functions from the code corpus as facts nobody curated
/// (inferred, around its default confidence), a few near-duplicates of each other, a few protected seeds and
/// a few constraints.
fn month_of_writes(corpus: &[serde_json::Value], m: usize, n: usize) -> Vec<AddRequest> {
    let types = ["pattern", "review", "decision", "failure", "architecture", "known-unknown"];
    let mut out = Vec::new();
    for i in 0..n {
        let k = (m * n + i) % corpus.len();
        let text = corpus[k]["text"].as_str().expect("text");
        let first = text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("code");
        let subject: String =
            format!("{} in {}", first, corpus[k]["source"].as_str().unwrap_or("?")).chars().take(150).collect();
        let body: String = text.chars().take(400).collect();
        let mut tags = Vec::new();
        let mut fact_type = types[(m + i) % types.len()].to_string();
        if i % 40 == 7 {
            tags.push("seed".to_string());
        }
        if i % 50 == 11 {
            fact_type = "constraint".into();
        }
        // Inferred, at that provenance's default confidence (0.5), give or take 0.1.
        let confidence = Some(0.4 + 0.025 * ((m * 7 + i * 3) % 9) as f64);
        let req = AddRequest {
            fact_type,
            subject: subject.clone(),
            body: body.clone(),
            tags,
            confidence,
            provenance: Some("inferred".into()),
            no_supersede: true,
            ..Default::default()
        };
        // Every 25th write is said twice, a little differently: a near-duplicate pair.
        if i % 25 == 3 {
            out.push(AddRequest { subject: format!("{subject} (seen again)"), tags: vec![], ..req.clone() });
        }
        out.push(req);
    }
    out
}

/// Every record of the session's memory with its derived state, by id.
struct Held {
    entries: HashMap<RecordId, RecordState>,
}

impl Held {
    fn iter(&self) -> impl Iterator<Item = &RecordState> {
        self.entries.values()
    }
}

fn state_of(s: &mut Session) -> Held {
    let all = ListFilter { all: true, ..ListFilter::default() };
    Held { entries: s.list(&all).expect("list").into_iter().map(|e| (e.id, e)).collect() }
}

fn import(s: &mut Session, reqs: &[AddRequest]) {
    s.import(reqs, 10_000, false, &mut |_, _| {}).expect("import");
}

/// recall@5 of the fixture's queries: a query hits when a fact it expects, or what replaced it,
/// is among the constraints and the first five facts.
fn quality(s: &mut Session, queries: &[serde_json::Value]) -> f64 {
    let all = ListFilter { all: true, ..ListFilter::default() };
    let entries: HashMap<RecordId, RecordState> = s.list(&all).expect("list").into_iter().map(|e| (e.id, e)).collect();
    let by_key: HashMap<String, RecordId> = entries
        .values()
        .filter_map(|e| e.record.as_fact().and_then(|f| f.key.clone()).map(|k| (k, e.id)))
        .filter(|(k, _)| k.starts_with('k'))
        .collect();
    let successors = |id: RecordId| {
        let mut out = vec![id];
        let mut i = 0;
        while i < out.len() {
            if let Some(e) = entries.get(&out[i]) {
                for n in &e.superseded_by {
                    if entries.get(n).is_some_and(|x| x.record.kind == Kind::Fact) && !out.contains(n) {
                        out.push(*n);
                    }
                }
            }
            i += 1;
        }
        out
    };
    let mut hits = 0;
    for q in queries {
        let want: Vec<RecordId> = q["expected"]
            .as_array()
            .expect("expected")
            .iter()
            .filter_map(|k| by_key.get(k.as_str().expect("key")))
            .flat_map(|id| successors(*id))
            .collect();
        let r = s
            .recall(&RecallQuery {
                query: q["query"].as_str().expect("query").into(),
                k: 5,
                budget: 4_000,
                types: vec![],
                area: None,
                as_of: None,
                front: None,
                all_sessions: false,
            })
            .expect("recall");
        if r.items(LayerKind::Constraints)
            .iter()
            .chain(r.items(LayerKind::Facts).iter().take(5))
            .any(|i| want.contains(&i.id))
        {
            hits += 1;
        }
    }
    hits as f64 / queries.len() as f64
}

/// recall@5 on the recall fixture along a simulated year (see [`simulated_year`]).
#[derive(Debug)]
struct Year {
    fresh: f64,
    grown: f64,
    /// Just before the last month's curation.
    before_last: f64,
    curated: f64,
}

#[test]
fn a_simulated_year_curated_monthly_stays_under_its_caps_and_answers_as_well() {
    let y = simulated_year(&EmbedderChoice::Hash);
    // Measured here: fresh 0.778, grown 0.587, curated 0.730 (0.667 just before the last run);
    // with the model (below) 0.937, 0.857, 0.873 (0.857).
    // Curation does not lower recall: not the last run against the memory just before it, not
    // the curated year against the same year uncurated. (It does not reach a fresh memory: the
    // 500 facts the cap allows still hold about 440 agent writes, which crowd some answers;
    // docs/curation.md.)
    assert!(y.grown < y.fresh, "the year's growth cost no answer, so this year tests nothing: {y:?}");
    assert!(y.curated >= y.before_last, "the last curation lowered recall@5: {y:?}");
    assert!(y.curated > y.grown, "a curated year answers worse than an uncurated one: {y:?}");
}

/// The same year with the real embedding model: near-duplicates, re-asks and ranking by its
/// vectors.
#[test]
#[ignore = "needs the model: scripts/install-model.sh"]
fn a_simulated_year_with_the_model_answers_at_least_as_well_curated() {
    let root = crate::quality::model_root();
    let paths = git_neo::embed::ModelPaths::in_cache(&root);
    assert!(paths.missing().is_empty(), "the embedding model is not installed: run scripts/install-model.sh");
    let y = simulated_year(&EmbedderChoice::Model { cache_root: root });
    assert!(y.grown < y.fresh, "the year's growth cost no answer, so this year tests nothing: {y:?}");
    assert!(y.curated >= y.before_last, "the last curation lowered recall@5: {y:?}");
    assert!(y.curated > y.grown, "a curated year answers no better than an uncurated one: {y:?}");
    // Measured: fresh 59 of 63, grown 54, curated 55 (54 before the last run). Recall's
    // expansion of a weak first pass gained a fresh memory two questions (57 before it, and 54
    // grown, 56 curated): the agent writes crowd the feedback it reads. Curation does not reach
    // a fresh memory, so the test pins only what curation itself does (above).
}

/// Twelve months of agent writes into two memories that start as the recall fixture: one
/// curated at each month's end after a month of questions, one left to grow.
fn simulated_year(embedder: &EmbedderChoice) -> Year {
    let sb = Sandbox::new();
    let curated = sb.repo("curated");
    let grown = sb.repo("grown");
    // The agent writes: real functions from the code corpus fixture, or any other text in its
    // shape (`scripts/year-corpus.py` makes one from the crates' markdown in the cargo registry).
    let corpus_path =
        std::env::var_os("GIT_NEO_YEAR_CORPUS").map(PathBuf::from).unwrap_or_else(|| fixture("code/functions.jsonl"));
    let corpus = lines(&corpus_path);
    let queries = lines(&fixture("recall/queries.jsonl"));
    let mut a = session(&curated, START, embedder);
    let mut b = session(&grown, START, embedder);
    import(&mut a, &recall_facts());
    import(&mut b, &recall_facts());
    let fresh = quality(&mut a, &queries);

    let mut protected: HashSet<RecordId> = HashSet::new();
    let mut constraints: HashSet<RecordId> = HashSet::new();
    let mut written = 0;
    let mut last_before = 0.0;
    for m in 0..12usize {
        let t = START + m as i64 * 30 * DAY;
        at(&mut a, t);
        at(&mut b, t);
        let writes = month_of_writes(&corpus, m, 240);
        written += writes.len();
        import(&mut a, &writes);
        import(&mut b, &writes);
        // A working month: the fixture's questions asked through MCP, two minutes apart; an
        // answer without the fact the question is about is asked again (the implicit negative
        // signal lands on what was shown instead).
        let state = state_of(&mut a);
        let by_key: HashMap<String, RecordId> = state
            .iter()
            .filter(|e| e.status == Status::Valid)
            .filter_map(|e| e.record.as_fact().and_then(|f| f.key.clone()).map(|k| (k, e.id)))
            .collect();
        for (i, q) in queries.iter().enumerate() {
            let text = q["query"].as_str().expect("query");
            let want: Vec<RecordId> = q["expected"]
                .as_array()
                .expect("expected")
                .iter()
                .filter_map(|k| by_key.get(k.as_str()?).copied())
                .collect();
            for j in 0..2 {
                at(&mut a, t + (1 + i as i64 % 28) * DAY + (i as i64) * 120 + j * 30);
                let r = a.recall(&mcp_query(text)).expect("recall");
                if r.items(LayerKind::Constraints).iter().chain(r.items(LayerKind::Facts)).any(|i| want.contains(&i.id))
                {
                    break;
                }
            }
        }
        at(&mut a, t + 29 * DAY);
        if m == 11 {
            last_before = quality(&mut a, &queries);
        }
        let report = a.curate(CurateOptions::default()).expect("curate");
        let state = state_of(&mut a);
        for e in state.iter().filter(|e| e.record.kind == Kind::Fact) {
            let f = e.record.as_fact().expect("fact");
            if f.tags.iter().any(|t| t == "seed") {
                protected.insert(e.id);
            }
            if f.fact_type == FactType::Constraint {
                constraints.insert(e.id);
            }
        }
        let current = state.iter().filter(|e| e.status == Status::Valid && e.record.kind == Kind::Fact).count();
        assert!(
            current <= 500,
            "month {m}: {current} current facts over the default cap of 500 ({:?})",
            report.plan.over_cap
        );
        assert_eq!(report.plan.after, current, "month {m}: the plan says what the memory holds");
        // A second run right after writes nothing.
        let again = a.curate(CurateOptions::default()).expect("curate again");
        assert_eq!(again.records, 0, "month {m}: a second curation wrote {:?}", again.plan);
    }
    assert!(written >= 2_800, "thousands of facts: {written}");
    let state = state_of(&mut a);
    for id in protected.iter().chain(&constraints) {
        assert_eq!(state.entries[id].status, Status::Valid, "{} was removed", id.short());
    }
    let supersessions = state.iter().filter(|e| e.record.kind == Kind::Supersession).count();
    assert!(supersessions > 2_000, "curation removed by records: {supersessions}");
    let outcomes: Vec<&str> = state
        .iter()
        .filter_map(|e| match &e.record.payload {
            git_neo::record::Payload::Outcome(o) => Some(o.signal.as_str()),
            _ => None,
        })
        .collect();
    assert!(outcomes.contains(&"reasked"), "implicit feedback wrote outcomes: {outcomes:?}");

    let year_curated = quality(&mut a, &queries);
    let year_grown = quality(&mut b, &queries);
    eprintln!(
        "recall@5 on the recall fixture, agent writes from {}: fresh {fresh:.3}, a year grown {year_grown:.3}, \
         a year curated {year_curated:.3} (before its last curation {last_before:.3})",
        corpus_path.display()
    );
    Year { fresh, grown: year_grown, before_last: last_before, curated: year_curated }
}

fn neo_hash(sb: &Sandbox, repo: &Path, args: &[&str]) -> std::process::Output {
    sb.neo_cmd(repo).env("GIT_NEO_EMBEDDER", "hash").args(args).output().expect("run git-neo")
}

fn ok_hash(sb: &Sandbox, repo: &Path, args: &[&str]) -> String {
    let out = neo_hash(sb, repo, args);
    assert!(out.status.success(), "git neo {args:?}: {}", crate::support::stderr(&out));
    crate::support::stdout(&out)
}

#[test]
fn telemetry_off_writes_nothing_and_on_keeps_one_line_per_recall() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    sb.neo_ok(&repo, &["add", "-t", "pattern", "-s", "Retry payment webhooks with backoff"]);
    sb.git(&repo, &["config", "neo.telemetry", "off"]);
    sb.neo_ok(&repo, &["recall", "payment webhooks"]);
    let log = repo.join(".git/neo/telemetry");
    assert!(!log.exists(), "telemetry off wrote {}", log.display());
    let stats = crate::support::json(&sb.neo_ok(&repo, &["stats", "--json"]));
    assert_eq!(stats["telemetry"], false);
    assert_eq!(stats["recalls"], 0);

    sb.git(&repo, &["config", "neo.telemetry", "on"]);
    sb.git(&repo, &["config", "neo.telemetry.queries", "false"]);
    sb.neo_ok(&repo, &["recall", "payment webhooks"]);
    sb.neo_ok(&repo, &["recall", "--json", "how do we deploy"]);
    let text = std::fs::read_to_string(log.join("recalls.jsonl")).expect("telemetry");
    assert_eq!(text.lines().count(), 2);
    assert!(!text.contains("payment webhooks"), "query text kept although neo.telemetry.queries=false");
    let first: serde_json::Value = serde_json::from_str(text.lines().next().expect("line")).expect("json");
    assert_eq!(first["front"], "cli");
    assert_eq!(first["results"][0]["layer"], "facts");
    let stats = crate::support::json(&sb.neo_ok(&repo, &["stats", "--json"]));
    assert_eq!(stats["recalls"], 2);
    assert_eq!(stats["hit_rate"], 0.5);
    assert_eq!(stats["most_retrieved"][0]["retrievals"], 1);
    assert_eq!(stats["scopes"][0]["current_facts"], 1);
    assert_eq!(stats["never_retrieved"], 0);

    // A constraint is shown by every recall: it is counted as shown, never as "never retrieved",
    // beside a fact that no recall has found yet.
    sb.neo_ok(&repo, &["add", "-t", "constraint", "-s", "Never log card numbers"]);
    sb.neo_ok(&repo, &["add", "-t", "pattern", "-s", "Name migrations by date"]);
    sb.neo_ok(&repo, &["recall", "payment webhooks"]);
    let stats = crate::support::json(&sb.neo_ok(&repo, &["stats", "--json"]));
    assert_eq!(stats["constraints_shown"], 1, "{stats}");
    assert_eq!(stats["never_retrieved"], 1, "only the migration pattern: {stats}");
    assert_eq!(stats["never_retrieved_oldest"][0]["subject"], "Name migrations by date");
    let text = sb.neo_ok(&repo, &["stats"]);
    assert!(text.contains("constraints: 1, shown by every recall"), "{text}");
}

#[test]
fn implicit_feedback_is_idempotent_across_rescans_and_explained() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let id = crate::support::json(
        &sb.neo_ok(&repo, &["add", "--json", "-t", "pattern", "-s", "Retry payment webhooks with backoff"]),
    )["id"]
        .as_str()
        .expect("id")
        .to_string();
    // The same question twice, a minute apart (the clock is the CLI's fixed one, moved by hand).
    for at in ["2026-03-01T12:00:00Z", "2026-03-01T12:01:00Z"] {
        let out =
            sb.neo_cmd(&repo).env("GIT_NEO_NOW", at).args(["recall", "payment webhooks retry"]).output().expect("run");
        assert!(out.status.success());
    }
    let first = crate::support::json(&sb.neo_ok(&repo, &["feedback", "--json"]));
    let new: Vec<&serde_json::Value> =
        first["outcomes"].as_array().expect("outcomes").iter().filter(|o| o["new"] == true).collect();
    assert_eq!(new.len(), 1, "{first}");
    assert_eq!(new[0]["signal"], "reasked");
    let tip = sb.tip(&repo);
    let again = crate::support::json(&sb.neo_ok(&repo, &["feedback", "--json"]));
    assert!(again["outcomes"].as_array().expect("outcomes").iter().all(|o| o["new"] == false), "{again}");
    assert_eq!(sb.tip(&repo), tip, "a rescan wrote something");
    let explained = crate::support::json(&sb.neo_ok(&repo, &["explain", "--json", &id]));
    assert_eq!(explained["steps"][0]["signal"], "reasked");
    assert_eq!(explained["confidence"], 0.68);
    // The record carries hashes, never the query text.
    let log = sb.git(&repo, &["log", "-p", "neo-memory", "--", "outcomes"]);
    assert!(log.contains("query hash") && !log.contains("payment webhooks retry"), "{log}");
}

#[test]
fn curation_is_reviewable_revertible_and_proposed_in_review_mode() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let add = |s: &str, extra: &[&str]| {
        let mut args = vec!["add", "--json", "--no-supersede", "-t", "pattern", "-s", s];
        args.extend_from_slice(extra);
        crate::support::json(&ok_hash(&sb, &repo, &args))["id"].as_str().expect("id").to_string()
    };
    let a = add("Retry payment webhooks with exponential backoff", &["--tag", "payments"]);
    let b = add("Retry the payment webhooks with an exponential backoff", &["--tag", "webhooks"]);
    let seed = add("Payments run in the eu-west region", &["--tag", "seed"]);
    add("Release notes are written in the changelog", &[]);
    let c = add("Deploys happen on Tuesdays", &["--confidence", "0.2"]);
    ok_hash(&sb, &repo, &["add", "-t", "constraint", "-s", "Never log card numbers", "--confidence", "0.1"]);
    sb.git(&repo, &["config", "neo.curate.cap.project", "4"]);
    sb.git(&repo, &["config", "neo.curate.synthesize", "0.8"]);

    let before = sb.tip(&repo);
    let dry = crate::support::json(&ok_hash(&sb, &repo, &["curate", "--dry-run", "--json"]));
    assert_eq!(sb.tip(&repo), before, "a dry run wrote");
    assert_eq!(dry["synthesized"].as_array().expect("synthesized").len(), 1, "{dry}");
    let done = crate::support::json(&ok_hash(&sb, &repo, &["curate", "--json"]));
    assert_eq!(done["records"], dry["records"]);
    assert_eq!(done["after"], 4);
    let evicted: Vec<&str> =
        done["evicted"].as_array().expect("evicted").iter().map(|e| e["id"].as_str().expect("id")).collect();
    assert_eq!(evicted, vec![c.as_str()], "the weakest unprotected fact goes; constraints and seeds stay: {done}");
    let list = ok_hash(&sb, &repo, &["list", "--json"]);
    assert!(list.contains(&seed) && list.contains("Never log card numbers") && list.contains("synthesized"));
    let current: Vec<String> = crate::support::json(&list)
        .as_array()
        .expect("a list")
        .iter()
        .map(|e| e["id"].as_str().expect("id").to_string())
        .collect();
    assert!(!current.contains(&a) && !current.contains(&b), "merged facts are superseded: {current:?}");
    assert_eq!(current.len(), 4);
    // Reviewable as a change set, and a second run writes nothing.
    let diff = ok_hash(&sb, &repo, &["diff", before.as_deref().expect("a tip")]);
    assert!(diff.contains("curation") || diff.contains("curate"), "{diff}");
    let tip = sb.tip(&repo);
    let again = crate::support::json(&ok_hash(&sb, &repo, &["curate", "--json"]));
    assert_eq!(again["records"], 0, "{again}");
    assert_eq!(sb.tip(&repo), tip);
    // Revertible: undoing the eviction brings the fact back.
    let history = crate::support::json(&ok_hash(&sb, &repo, &["history", "--json", &c]));
    let eviction = history["events"]
        .as_array()
        .expect("events")
        .iter()
        .find(|e| e["event"] == "outdated")
        .and_then(|e| e["id"].as_str())
        .expect("the eviction in the history")
        .to_string();
    ok_hash(&sb, &repo, &["revert", &eviction]);
    assert!(ok_hash(&sb, &repo, &["list", "--json"]).contains(&c));

    // Review mode: the curation is a proposal, and it is not proposed twice.
    sb.git(&repo, &["config", "neo.mode", "review"]);
    sb.git(&repo, &["config", "neo.curate.cap.project", "3"]);
    let tip = sb.tip(&repo);
    let proposed = crate::support::json(&ok_hash(&sb, &repo, &["curate", "--json"]));
    assert_eq!(proposed["proposed"], true, "{proposed}");
    assert_eq!(sb.tip(&repo), tip, "review mode wrote to the memory ref");
    let twice = crate::support::json(&ok_hash(&sb, &repo, &["curate", "--json"]));
    assert_eq!(twice["records"], 0, "{twice}");
    assert!(twice["pending_in_review"].as_u64().expect("count") >= 1);
}

/// The report of `repo`, written and opened in a real headless browser: what `report --json`
/// said, and the DOM after the page's script drew it.
fn report_dom(sb: &Sandbox, repo: &std::path::Path, name: &str) -> (serde_json::Value, String) {
    let browser = ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|b| std::process::Command::new(b).arg("--version").output().is_ok_and(|o| o.status.success()))
        .expect("no chromium on PATH: install it (apt-get install chromium)");
    let repo = repo.to_path_buf();
    let out_dir = sb.path(&format!("report-{name}"));
    let written =
        crate::support::json(&sb.neo_ok(&repo, &["report", "--json", "--out", out_dir.to_str().expect("utf-8")]));
    let page = out_dir.join("index.html");
    assert!(page.exists(), "{written}");
    let dom = std::process::Command::new(browser)
        // No network here or in CI: the background services' connections would only be refused.
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--window-size=800,600",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", sb.path(&format!("chromium-{name}")).display()))
        .arg(format!("file://{}", page.display()))
        .env("HOME", sb.dir.path())
        .output()
        .expect("run the browser");
    let dom = String::from_utf8_lossy(&dom.stdout).to_string();
    assert!(dom.contains("data-drawn=\"yes\""), "the page's script did not run: {}", &dom[..dom.len().min(500)]);
    // A long unbroken subject (a URL) wraps instead of making the page scroll sideways.
    assert!(dom.contains("data-fits=\"yes\""), "the page is wider than the browser's window");
    let x = texts(&dom, "xlab");
    assert!(x.iter().all(|l| !l.starts_with("1970")), "no axis starts at the epoch: {x:?}");
    (written, dom)
}

/// The text of every `<text class="CLASS">` in `dom`.
fn texts<'a>(dom: &'a str, class: &str) -> Vec<&'a str> {
    dom.match_indices(&format!("<text class=\"{class}\""))
        .filter_map(|(i, _)| {
            let rest = &dom[i..];
            let open = rest.find('>')? + 1;
            rest[open..].find('<').map(|close| &rest[open..open + close])
        })
        .collect()
}

/// The drawn SVG of `chart` in `dom`.
fn chart_svg<'a>(dom: &'a str, chart: &str) -> &'a str {
    let start = dom.find(&format!("data-chart=\"{chart}\"")).unwrap_or_else(|| panic!("no chart {chart}"));
    let end = dom[start..].find("</svg>").expect("closed") + start;
    &dom[start..end]
}

/// Every drawn chart reads right: y labels are 0, s, 2s … for a nice step s (1, 2, 2.5 or 5 times a
/// power of ten), at least three of them, numbers with at most two decimals (none from 10 up); x
/// labels are at least two, at most seven, all different; a step chart is drawn as steps (its line
/// has horizontal runs); legends are wrapped into lines short enough to fit beside the chart.
fn assert_nice_axes(dom: &str) {
    let mut drawn = 0;
    for chart in ["size-type", "size-scope", "confidence", "latency", "hit-rate"] {
        let svg = chart_svg(dom, chart);
        if svg.contains("data-empty=\"yes\"") {
            continue;
        }
        drawn += 1;
        let ys: Vec<&str> = texts(svg, "ylab");
        assert!(ys.len() >= 3, "{chart}: y ticks {ys:?}");
        let vals: Vec<f64> =
            ys.iter().map(|l| l.parse().unwrap_or_else(|_| panic!("{chart}: y label {l:?} is not a number"))).collect();
        for l in &ys {
            let decimals = l.split('.').nth(1).map_or(0, str::len);
            assert!(
                decimals <= 2 && (l.parse::<f64>().unwrap_or(0.0) < 10.0 || decimals == 0),
                "{chart}: y label {l:?}"
            );
        }
        let step = vals[1] - vals[0];
        let m = step / 10f64.powf(step.log10().floor());
        assert!([1.0, 2.0, 2.5, 5.0, 10.0].iter().any(|n| (m - n).abs() < 1e-3), "{chart}: y step {step} is not nice");
        assert!(vals.windows(2).all(|w| ((w[1] - w[0]) - step).abs() < 1e-6), "{chart}: uneven y ticks {vals:?}");
        let xs: Vec<&str> = texts(svg, "xlab");
        let distinct: std::collections::BTreeSet<&&str> = xs.iter().collect();
        assert!((2..=7).contains(&xs.len()), "{chart}: x ticks {xs:?}");
        assert_eq!(distinct.len(), xs.len(), "{chart}: repeated x labels {xs:?}");
        if ["size-type", "size-scope", "confidence"].contains(&chart) {
            for line in svg.split("<polyline class=\"step\" points=\"").skip(1) {
                let pts: Vec<(f64, f64)> = line
                    .split('"')
                    .next()
                    .unwrap_or_default()
                    .split(' ')
                    .filter_map(|p| p.split_once(',').and_then(|(x, y)| Some((x.parse().ok()?, y.parse().ok()?))))
                    .collect();
                assert!(pts.windows(2).all(|w| w[0].0 == w[1].0 || w[0].1 == w[1].1), "{chart}: a diagonal in {pts:?}");
            }
            assert!(!svg.contains("<polyline class=\"line\""), "{chart} is a step chart");
        }
        for part in svg.split("<tspan").skip(1) {
            let text = part.split('>').nth(1).and_then(|t| t.split('<').next()).unwrap_or_default();
            assert!(text.chars().count() <= 24, "{chart}: a legend line runs past the chart: {text:?}");
        }
    }
    assert!(drawn > 0, "no chart was drawn");
}

fn circles(dom: &str, chart: &str) -> usize {
    let start = dom.find(&format!("data-chart=\"{chart}\"")).unwrap_or_else(|| panic!("no chart {chart}"));
    let end = dom[start..].find("</svg>").expect("closed") + start;
    dom[start..end].matches("<circle class=\"pt\"").count()
}

/// The page's charts, drawn by a real browser, on an empty, a one-day and a long history:
/// circles per chart as the data says, no 1970 axis, nice axis labels, long chains kept inside
/// the chart, and the last curation named even when it changed nothing.
#[test]
#[ignore = "needs a headless browser: chromium (installed by .ci/run)"]
fn the_report_renders_its_charts_in_a_headless_browser() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    // Three types of facts over three days, a replacement chain, recalls over two days.
    let mut last = None;
    for (day, (t, s)) in
        [("pattern", "Retry webhooks"), ("decision", "Use Postgres"), ("failure", "Redis timed out")].iter().enumerate()
    {
        let now = format!("2026-03-0{}T12:00:00Z", day + 1);
        let out =
            sb.neo_cmd(&repo).env("GIT_NEO_NOW", &now).args(["add", "--json", "-t", t, "-s", s]).output().expect("run");
        assert!(out.status.success());
        last = Some(crate::support::json(&crate::support::stdout(&out))["id"].as_str().expect("id").to_string());
    }
    let old = last.expect("added");
    let out = sb
        .neo_cmd(&repo)
        .env("GIT_NEO_NOW", "2026-03-04T12:00:00Z")
        .args([
            "add",
            "-t",
            "failure",
            "-s",
            "Redis timed out under load: https://status.example.com/incidents/2026_03_04/redis_cluster_eu_west_1_connection_pool_exhausted_after_failover",
            "--supersedes",
            &old,
        ])
        .output()
        .expect("run");
    assert!(out.status.success());
    for (at, q) in [
        ("2026-03-04T12:00:00Z", "webhooks"),
        ("2026-03-05T12:00:00Z", "postgres"),
        ("2026-03-05T12:05:00Z", "unrelated words"),
    ] {
        assert!(sb.neo_cmd(&repo).env("GIT_NEO_NOW", at).args(["recall", q]).output().expect("run").status.success());
    }
    // A long chain: fourteen more versions, a minute apart.
    let mut prev = crate::support::json(&sb.neo_ok(&repo, &["list", "--json", "--type", "failure"]))[0]["id"]
        .as_str()
        .expect("the current failure")
        .to_string();
    for i in 0..14 {
        let at = format!("2026-03-05T13:{i:02}:00Z");
        let subject = format!("Redis timed out under load, revision {i}");
        let out = sb
            .neo_cmd(&repo)
            .env("GIT_NEO_NOW", &at)
            .args(["add", "--json", "-t", "failure", "-s", &subject, "--supersedes", &prev])
            .output()
            .expect("run");
        assert!(out.status.success(), "{}", crate::support::stderr(&out));
        prev = crate::support::json(&crate::support::stdout(&out))["id"].as_str().expect("id").to_string();
    }
    let (written, dom) = report_dom(&sb, &repo, "long");
    // Types: pattern, decision, failure, 40 samples each; scopes: project, 40 samples.
    assert_eq!(circles(&dom, "size-type"), 3 * 40);
    assert_eq!(circles(&dom, "size-scope"), 40);
    assert_eq!(circles(&dom, "latency"), 3);
    assert_eq!(circles(&dom, "hit-rate"), 2, "two days of recalls");
    assert_eq!(circles(&dom, "chains"), 16, "one chain of sixteen versions");
    for c in written["charts"].as_array().expect("charts") {
        assert_eq!(circles(&dom, c["id"].as_str().expect("id")), c["points"].as_u64().expect("points") as usize);
    }
    assert_nice_axes(&dom);
    // Every version of the chain is drawn apart from its neighbours and inside the chart.
    let chain = &dom[dom.find("data-chain=\"0\"").expect("the chain")..];
    let xs: Vec<f64> = chain[..chain.find("</g>").expect("closed")]
        .match_indices("cx=\"")
        .filter_map(|(i, m)| chain[i + m.len()..].split('"').next()?.parse().ok())
        .collect();
    assert_eq!(xs.len(), 16);
    assert!(xs.windows(2).all(|w| w[1] - w[0] >= 6.0), "versions overlap: {xs:?}");
    assert!(xs.iter().all(|x| (20.0..=700.0).contains(x)), "a version is outside the chart: {xs:?}");
    assert_eq!(texts(&dom, "chainlab"), vec!["Redis timed out under load, revision 13"]);
    assert!(dom.contains("No curation has run"), "none ran here");

    // An empty memory: every chart says it is empty, none draws an axis.
    let empty = sb.repo("empty");
    let (_, dom) = report_dom(&sb, &empty, "empty");
    for chart in ["size-type", "size-scope", "confidence", "latency", "hit-rate", "chains"] {
        let at = dom.find(&format!("data-chart=\"{chart}\"")).unwrap_or_else(|| panic!("no chart {chart}"));
        let tag = &dom[dom[..at].rfind('<').expect("tag")..at + dom[at..].find('>').expect("tag")];
        assert!(tag.contains("data-empty=\"yes\""), "{chart}: {tag}");
    }
    assert!(texts(&dom, "ylab").is_empty() && texts(&dom, "xlab").is_empty(), "an empty chart drew an axis");
    assert!(dom.contains("No facts yet") && dom.contains("No fact has been replaced yet"));

    // One day: minutes on the time axis, and a curation that changed nothing is still named.
    let day = sb.repo("day");
    for (at, s) in [("12:00", "Retry webhooks"), ("12:05", "Use Postgres"), ("12:10", "Deploy on Tuesdays")] {
        let out = sb
            .neo_cmd(&day)
            .env("GIT_NEO_NOW", format!("2026-03-01T{at}:00Z"))
            .args(["add", "-t", "pattern", "-s", s])
            .output()
            .expect("run");
        assert!(out.status.success());
    }
    let curated = crate::support::json(&sb.neo_ok(&day, &["curate", "--json"]));
    assert_eq!(curated["records"], 0, "{curated}");
    let (_, dom) = report_dom(&sb, &day, "day");
    assert_eq!(circles(&dom, "size-type"), 40);
    let x = texts(chart_svg(&dom, "size-type"), "xlab");
    assert!(x.iter().all(|l| l.starts_with("03-01 ")), "hours of the one day: {x:?}");
    assert_nice_axes(&dom);
    assert!(!dom.contains("No curation has run") && dom.contains("nothing needed changing"), "the curation is named");
    assert!(!dom.contains("<table class=\"curation\">"), "no empty action table after nothing changed");

    // A month and a year: days, then months, on the time axis; a long series name wraps.
    for (name, days, unit_len) in [("month", 30, 10), ("year", 365, 7)] {
        let repo = sb.repo(name);
        for k in 0..12 {
            let at = 1_772_323_200 + (k * days / 11) * 86_400; // 2026-03-01 onwards
                                                               // Noon of that day, as the library writes a time.
            let now = git_neo::record::Timestamp(at + 12 * 3600).to_string();
            let t = ["pattern", "decision", "failure"][k as usize % 3];
            let out = sb
                .neo_cmd(&repo)
                .env("GIT_NEO_NOW", &now)
                .args(["add", "-t", t, "-s", &format!("The cache layer keeps fact number {k} about eviction")])
                .output()
                .expect("run");
            assert!(out.status.success(), "{}", crate::support::stderr(&out));
        }
        let (_, dom) = report_dom(&sb, &repo, name);
        assert_nice_axes(&dom);
        let x = texts(chart_svg(&dom, "size-type"), "xlab");
        assert!(x.iter().all(|l| l.len() == unit_len), "{name}: labels as fine as the step: {x:?}");
    }
}

/// A front end that settles between requests (`Session::answer_first`: the background server,
/// `git neo mcp`) appends recall's telemetry after the answer: not before the recall returns,
/// by the settle after it; what a settle has not appended yet is appended before telemetry is
/// read and when the session ends. A session that does not answer first appends at once.
#[test]
fn telemetry_waits_for_the_answer_and_is_never_lost() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let log = repo.join(".git/neo/telemetry/recalls.jsonl");
    let count = || std::fs::read_to_string(&log).map_or(0, |t| t.lines().count());
    let ask = |s: &mut Session, query: &str| {
        s.recall(&mcp_query(query)).expect("recall");
    };
    let mut s = session(&repo, START, &EmbedderChoice::Hash);
    s.add(&AddRequest {
        fact_type: "pattern".into(),
        subject: "Retry payment webhooks with backoff".into(),
        ..AddRequest::default()
    })
    .expect("add");
    s.answer_first();
    ask(&mut s, "payment webhooks");
    assert_eq!(count(), 0, "not on the recall's clock");
    s.settle();
    assert_eq!(count(), 1, "appended as the session settles");
    ask(&mut s, "webhook retries");
    let stats = s.stats().expect("stats");
    assert_eq!(stats.recalls, 2, "what waits is read too");
    assert_eq!(count(), 2);
    ask(&mut s, "backoff");
    ask(&mut s, "payments");
    assert_eq!(count(), 3, "a recall appends the one before it first");
    drop(s);
    assert_eq!(count(), 4, "and the last is appended as the session ends");
    let queries: Vec<String> = std::fs::read_to_string(&log)
        .expect("telemetry")
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).expect("json")["query"].as_str().unwrap_or("").to_string()
        })
        .collect();
    assert_eq!(queries, ["payment webhooks", "webhook retries", "backoff", "payments"], "in the order asked");

    let mut plain = session(&repo, START, &EmbedderChoice::Hash);
    ask(&mut plain, "payment webhooks");
    assert_eq!(count(), 5, "a session that does not answer first appends at once");
}
