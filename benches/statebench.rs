//! Updates nobody labelled: the StateBench supersession timelines replayed through the library,
//! printed as a table (`cargo bench --bench statebench`; `-- --split NAME=PATH` for another split
//! in the same format; `-- --pairs` to print every candidate pair the frame rule judged, `-- --train-only` to leave dev
//! out while choosing thresholds).
//!
//! Needs the real model (scripts/install-model.sh). Data: `fixtures/statebench/` (train and dev,
//! MIT licensed). Each timeline gets a repository of its own; its initial facts and then its
//! writes become `add`s (type decision, or constraint when `is_constraint`; the value is the
//! subject), at the timeline's clock, and every query a `recall`:
//! - *explicit*: a write that replaces a fact names it (`supersedes`, its id);
//! - *implicit*: no key and no id; git-neo must notice the update itself.
//!
//! Per split and mode it prints, over the queries: **leak** (a replaced value appears in recall's
//! current layers: anything outside the invalidated layer), **latest** (the newest value of every
//! chain appears there), **must-mention** (every required term appears) and **must-not**
//! (a forbidden term appears); over the writes: updates **caught** (the replaced fact superseded)
//! and **wrong** (something else superseded), and **false supersessions** among the writes that
//! replace nothing. Negative sets: the recall fixture's 62 distinct facts, in file order and
//! reversed; and text nobody here wrote, the opening sentences of the READMEs in the cargo
//! registry cache, each crate's in one memory (the same topic, often the same name): any frame
//! supersession among them is false (similarity ones, near-duplicate sentences, are counted apart).
//! Then the negative corpus (`-- --negatives-only` for it alone, `-- --conversations-only` for the
//! conversations, `-- --tables-only` for the timelines; any of them together): README sentences and CHANGELOG
//! lines of every crate in the registry cache, the StateBench facts that replace nothing, and, with
//! `GIT_NEO_DIALOGUE=DIR` (`scripts/dialogue-corpus.sh`), a public dialogue added turn by turn with
//! and without turn markers: pairs, frame and similarity supersessions, the share of additions
//! that returned a possible update, and how many facts stayed valid. Between the two, each split
//! as one long conversation added turn by turn (`[Dn:t] Name:` markers, a session per timeline):
//! how many turns stay valid, and evidence recall@5 (the question's own turns that hold a term
//! its answer must mention) beside plain BM25 over the same turns.

// Tests and benches print, read the environment and run processes freely (clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_macros)]

mod common;
use common::conversation::{bm25_top, conversation, strings, words};

use git_neo::api::{AddRequest, Clock, RecallQuery, Session, SessionOptions};
use git_neo::embed::{Embedder, EmbedderChoice};
use git_neo::recall::LayerKind;
use git_neo::record::Timestamp;
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

struct Write {
    /// The timeline's own id and key for it (a later write names either).
    id: String,
    key: String,
    value: String,
    supersedes: Option<String>,
    constraint: bool,
    at: Timestamp,
}

struct Query {
    prompt: String,
    must: Vec<String>,
    must_not: Vec<String>,
    at: Timestamp,
}

enum Event {
    Write(Write),
    Query(Query),
}

struct Timeline {
    id: String,
    events: Vec<Event>,
}

fn time(v: &Value) -> Timestamp {
    let s = v.as_str().unwrap_or("2025-01-01T00:00:00");
    let s = if s.ends_with('Z') { s.to_string() } else { format!("{}Z", &s[..19.min(s.len())]) };
    Timestamp::parse(&s).unwrap_or(Timestamp(1_735_689_600))
}

fn write(w: &Value, at: Timestamp) -> Write {
    let s = |k: &str| w[k].as_str().unwrap_or_default().to_string();
    Write {
        id: s("id"),
        key: s("key"),
        value: s("value"),
        supersedes: w["supersedes"].as_str().map(str::to_string),
        constraint: w["is_constraint"].as_bool().unwrap_or(false),
        at,
    }
}

fn timelines(path: &Path) -> Vec<Timeline> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let t: Value = serde_json::from_str(line).expect("a timeline per line");
            let start = time(&t["initial_state"]["environment"]["now"]);
            let mut events: Vec<Event> = t["initial_state"]["persistent_facts"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|f| Event::Write(write(f, start)))
                .collect();
            for e in t["events"].as_array().into_iter().flatten() {
                let at = time(&e["ts"]);
                match e["type"].as_str() {
                    Some("state_write" | "supersession") => {
                        events.extend(e["writes"].as_array().into_iter().flatten().map(|w| Event::Write(write(w, at))))
                    }
                    Some("query") => events.push(Event::Query(Query {
                        prompt: e["prompt"].as_str().unwrap_or_default().to_string(),
                        must: strings(&e["ground_truth"]["must_mention"]),
                        must_not: strings(&e["ground_truth"]["must_not_mention"]),
                        at,
                    })),
                    _ => {}
                }
            }
            Timeline { id: t["id"].as_str().unwrap_or_default().to_string(), events }
        })
        .collect()
}

#[derive(Default)]
struct Tally {
    queries: usize,
    with_replaced: usize,
    leaks: usize,
    latest: usize,
    must: usize,
    must_not: usize,
    updates: usize,
    caught: usize,
    wrong: usize,
    negatives: usize,
    false_sup: usize,
}

/// A session on a new repository under `root`, using `embedder`; `frame`: the frame rule on.
fn session(root: &Path, name: &str, embedder: Box<dyn Embedder>, frame: bool) -> Session {
    let repo = common::new_repo(root, name);
    common::git(&repo, &["config", "neo.updates.frame", if frame { "true" } else { "false" }], None);
    let mut s = Session::new(SessionOptions {
        dir: repo,
        git_dir: None,
        ref_name: None,
        identity: Some(common::who()),
        clock: Clock::Fixed(Timestamp(1_735_689_600)),
        embedder: EmbedderChoice::Off,
        scope: None,
        data_dir: None,
        config: Vec::new(),
    });
    s.give_embedder(embedder);
    s
}

/// `add` a fact (no key: the point is what git-neo notices without one).
fn add(
    s: &mut Session,
    fact_type: &str,
    scope: Option<String>,
    subject: &str,
    body: &str,
    supersedes: Vec<String>,
) -> git_neo::api::AddOutcome {
    let req = AddRequest { area: scope, supersedes, body: body.into(), ..request(fact_type, subject) };
    s.add(&req).unwrap_or_else(|e| panic!("add {subject:?}: {e}"))
}

/// A request for a fact of `fact_type` saying `subject`: no key, no id, nothing else set.
fn request(fact_type: &str, subject: &str) -> AddRequest {
    AddRequest {
        fact_type: fact_type.into(),
        subject: subject.into(),
        body: String::new(),
        area: None,
        tags: vec![],
        key: None,
        slot: None,
        confidence: None,
        provenance: None,
        depends_on: vec![],
        anchors: vec![],
        valid_from: None,
        valid_to: None,
        supersedes: vec![],
        extends: vec![],
        derives_from: vec![],
        no_supersede: false,
        reason: None,
        suggestion: None,
        created_at: None,
        sources: vec![],
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Explicit,
    /// Implicit, with the frame rule off: cosine similarity alone (as before it).
    CosineOnly,
    Implicit,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Explicit => "explicit",
            Mode::CosineOnly => "implicit, cosine only (before)",
            Mode::Implicit => "implicit",
        }
    }
}

fn replay(
    t: &Timeline,
    mode: Mode,
    root: &Path,
    embedder: Box<dyn Embedder>,
    tally: &mut Tally,
    pairs: bool,
) -> Box<dyn Embedder> {
    let explicit = mode == Mode::Explicit;
    let mut s = session(root, &format!("{}-{}", t.id, mode as u8), embedder, mode == Mode::Implicit);
    // The timeline's ids and keys -> git-neo ids; each write's chain (the first write's index).
    let mut ids: HashMap<&str, git_neo::record::RecordId> = HashMap::new();
    let mut chain_of: HashMap<&str, usize> = HashMap::new();
    let mut chains: Vec<Vec<&Write>> = Vec::new();
    for e in &t.events {
        match e {
            Event::Write(w) => {
                s.set_caller(Some(common::who()), Clock::Fixed(w.at), s.dir().to_path_buf());
                let old = w.supersedes.as_deref().and_then(|k| ids.get(k).copied());
                let named = match (explicit, old) {
                    (true, Some(old)) => vec![old.to_hex()],
                    _ => vec![],
                };
                let out = add(&mut s, if w.constraint { "constraint" } else { "decision" }, None, &w.value, "", named);
                let superseded: Vec<_> = out.superseded.iter().map(|p| p.old).collect();
                if pairs {
                    print_pairs(&out, |id| if Some(id) == old { "UPDATE" } else { "other" });
                }
                match old {
                    Some(old) => {
                        tally.updates += 1;
                        // Restating the current value is de-duplicated: nothing to replace.
                        let restated = out.deduplicated && out.id == old;
                        tally.caught += usize::from(superseded.contains(&old) || restated);
                        tally.wrong += usize::from(superseded.iter().any(|o| *o != old));
                    }
                    None => {
                        tally.negatives += 1;
                        tally.false_sup += usize::from(!superseded.is_empty());
                    }
                }
                let chain = match w.supersedes.as_deref().and_then(|k| chain_of.get(k).copied()) {
                    Some(c) => c,
                    None => {
                        chains.push(Vec::new());
                        chains.len() - 1
                    }
                };
                chains[chain].push(w);
                chain_of.insert(&w.id, chain);
                chain_of.insert(&w.key, chain);
                ids.insert(&w.id, out.id);
                ids.insert(&w.key, out.id);
            }
            Event::Query(q) => {
                s.set_caller(Some(common::who()), Clock::Fixed(q.at), s.dir().to_path_buf());
                let r = s
                    .recall(&RecallQuery {
                        query: q.prompt.clone(),
                        k: 10,
                        budget: git_neo::recall::DEFAULT_BUDGET,
                        types: vec![],
                        area: None,
                        as_of: None,
                        front: None,
                        all_sessions: false,
                    })
                    .expect("recall");
                let current: String = r
                    .items(LayerKind::Constraints)
                    .iter()
                    .chain(r.items(LayerKind::Facts))
                    .chain(r.items(LayerKind::KnownUnknowns))
                    .map(|i| format!("{}\n{}\n", i.subject, i.body))
                    .collect::<String>()
                    .to_lowercase();
                let has = |v: &str| current.contains(&v.to_lowercase());
                tally.queries += 1;
                let mut replaced = Vec::new();
                let mut newest = Vec::new();
                for c in &chains {
                    let last = c.last().expect("chains are never empty");
                    newest.push(last.value.as_str());
                    replaced.extend(
                        c[..c.len() - 1]
                            .iter()
                            .map(|w| w.value.as_str())
                            .filter(|v| !v.eq_ignore_ascii_case(&last.value)),
                    );
                }
                if !replaced.is_empty() {
                    tally.with_replaced += 1;
                    tally.leaks += usize::from(replaced.iter().any(|v| has(v)));
                }
                tally.latest += usize::from(newest.iter().all(|v| has(v)));
                tally.must += usize::from(q.must.iter().all(|m| has(m)));
                tally.must_not += usize::from(q.must_not.iter().any(|m| has(m)));
            }
        }
    }
    s.take_embedder().expect("the session kept the model")
}

/// One line per candidate the frame rule judged (`--pairs`), tab-separated: label, superseded,
/// thing, predicate, why, values old -> new, masked frames old <- new.
fn print_pairs(out: &git_neo::api::AddOutcome, label: impl Fn(git_neo::record::RecordId) -> &'static str) {
    for j in &out.judged {
        let taken = out.superseded.iter().any(|p| p.old == j.id);
        println!(
            "pair\t{}\t{taken}\t{}\t{}\t{}\t{:?}->{:?}\t{:?} <- {:?}",
            label(j.id),
            j.thing,
            j.predicate,
            j.why,
            j.old_values,
            j.new_values,
            j.frames[0],
            j.frames[1]
        );
    }
}

/// Every crate's directory in the registry cache, sorted.
fn crate_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(common::registry_root())
        .into_iter()
        .flatten()
        .flatten()
        .flat_map(|reg| std::fs::read_dir(reg.path()).into_iter().flatten().flatten().map(|c| c.path()))
        .collect();
    dirs.sort();
    dirs
}

/// Each crate's README sentences (the first sentence of each plain paragraph), for crates with at
/// least three, at most `per` each: `crates` crates after the first `skip` such crates.
fn readme_sentences(skip: usize, crates: usize, per: usize) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for dir in crate_dirs() {
        let Ok(text) = std::fs::read_to_string(dir.join("README.md")) else { continue };
        let mut sentences: Vec<String> = Vec::new();
        for para in text.split("\n\n") {
            let line = para.split_whitespace().collect::<Vec<_>>().join(" ");
            let first = line.split_inclusive(['.', '!', '?']).next().unwrap_or_default().trim().to_string();
            let plain = !first.contains(['[', '<', '`', '|', '#', '*', '=']);
            if plain && (30..=200).contains(&first.len()) && !sentences.contains(&first) && sentences.len() < per {
                sentences.push(first);
            }
        }
        if sentences.len() >= 3 {
            out.push(sentences);
        }
        if out.len() == skip + crates {
            break;
        }
    }
    out.split_off(skip.min(out.len()))
}

/// The recall fixture's facts (type, scope, subject, body), each distinct from every other.
fn distinct_facts() -> Vec<(String, String, String, String)> {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/recall/facts.jsonl"))
        .expect("fixtures/recall/facts.jsonl");
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("JSON");
            let s = |k: &str| v[k].as_str().unwrap_or_default().to_string();
            (s("type"), s("scope"), s("subject"), s("body"))
        })
        .collect()
}

fn rate(n: usize, of: usize) -> String {
    if of == 0 {
        "–".into()
    } else {
        format!("{:.3} ({n}/{of})", n as f64 / of as f64)
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let pairs = args.iter().any(|a| a == "--pairs");
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/statebench");
    let only_train = args.iter().any(|a| a == "--train-only");
    let mut splits: Vec<(String, PathBuf)> = vec![("train".into(), fixtures.join("train-supersession.jsonl"))];
    if !only_train {
        splits.push(("dev".into(), fixtures.join("dev-supersession.jsonl")));
    }
    for w in args.windows(2).filter(|w| w[0] == "--split") {
        let (name, path) = w[1].split_once('=').expect("--split NAME=PATH");
        splits.push((name.into(), PathBuf::from(path)));
    }
    let mut embedder: Box<dyn Embedder> =
        git_neo::embed::load(&EmbedderChoice::Model { cache_root: common::cache_root() }).unwrap_or_else(|why| {
            panic!("the model is needed (scripts/install-model.sh): {why}");
        });
    let tmp = tempfile::tempdir().expect("tempdir");
    // `--tables-only`, `--conversations-only` and `--negatives-only` choose parts (any
    // together); none of them runs all three.
    let parts = ["--tables-only", "--conversations-only", "--negatives-only", "--updates-only", "--agent-memory-only"];
    let chosen: Vec<&str> = parts.into_iter().filter(|p| args.iter().any(|a| a == p)).collect();
    let run = |part: &str| chosen.is_empty() || chosen.contains(&part);
    if run("--tables-only") {
        embedder = statebench_tables(&splits, embedder, tmp.path(), pairs);
    }
    if run("--conversations-only") {
        embedder = conversations(&splits, embedder, tmp.path());
    }
    if run("--updates-only") {
        embedder = update_corpus(embedder, tmp.path(), pairs);
    }
    if run("--negatives-only") {
        embedder = negatives(&splits, embedder, tmp.path(), pairs);
    }
    if run("--agent-memory-only") {
        let n = args
            .windows(2)
            .find(|w| w[0] == "--agent-facts")
            .map_or(100_000, |w| w[1].parse().expect("--agent-facts N"));
        agent_memory(tmp.path(), n, pairs);
    }
    drop(embedder);
}

/// The update corpus (`fixtures/updates/pairs.tsv`, assembled by `scripts/update-corpus.py` from
/// the changelogs in the registry cache): each pair in a memory of its own, the old statement then
/// the new one through `add` (type decision, no key, no id). Caught: the old fact superseded, or
/// returned as a possible update.
fn update_corpus(mut embedder: Box<dyn Embedder>, tmp: &Path, pairs: bool) -> Box<dyn Embedder> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/updates/pairs.tsv");
    let text = std::fs::read_to_string(&path).expect("fixtures/updates/pairs.tsv");
    let (mut n, mut frame_sup, mut similar_sup, mut hinted, mut missed) = (0, 0, 0, 0, 0);
    for (i, line) in text.lines().enumerate() {
        let mut cols = line.split('\t');
        let (Some(old), Some(new)) = (cols.next(), cols.next()) else { continue };
        let mut s = session(tmp, &format!("upd-{i}"), embedder, true);
        let first = add(&mut s, "decision", None, old, "", vec![]);
        s.set_caller(Some(common::who()), Clock::Fixed(Timestamp(1_735_689_700)), s.dir().to_path_buf());
        let out = add(&mut s, "decision", None, new, "", vec![]);
        n += 1;
        let superseded = out.superseded.iter().find(|p| p.old == first.id);
        let label = match superseded.map(|p| p.method) {
            Some(git_neo::record::SupersessionMethod::Frame) => {
                frame_sup += 1;
                "frame"
            }
            Some(_) => {
                similar_sup += 1;
                "similarity"
            }
            None if out.possible_updates.iter().any(|p| p.id == first.id) => {
                hinted += 1;
                "hinted"
            }
            None => {
                missed += 1;
                "missed"
            }
        };
        if pairs {
            println!("{label}\t{old}\t{new}");
        }
        embedder = s.take_embedder().expect("the session kept the model");
    }
    println!();
    println!("| update corpus | pairs | superseded (frame) | superseded (similarity) | hinted | caught | missed |");
    println!("|---|---|---|---|---|---|---|");
    println!(
        "| registry changelogs (fixtures/updates/pairs.tsv) | {n} | {frame_sup} | {similar_sup} | {hinted} | {} | {missed} |",
        rate(frame_sup + similar_sup + hinted, n)
    );
    embedder
}

/// Components, failures, reviews, patterns and decisions in the shape of a coding agent's memory.
mod agent {
    pub const COMPONENTS: &[&str] = &[
        "the CLI argument parser",
        "the billing worker",
        "the inventory sync job",
        "the email renderer",
        "the search indexer",
        "the auth middleware",
        "the session store",
        "the upload handler",
        "the report exporter",
        "the webhook dispatcher",
        "the rate limiter",
        "the cache layer",
        "the payment gateway client",
        "the feature flag service",
        "the audit logger",
        "the image resizer",
        "the notification queue",
        "the config loader",
        "the migration runner",
        "the GraphQL resolver",
        "the metrics collector",
        "the PDF generator",
        "the retry scheduler",
        "the CSV importer",
        "the tenant router",
        "the token refresher",
        "the pricing engine",
        "the order validator",
        "the backup agent",
        "the health checker",
        "the websocket gateway",
        "the i18n loader",
    ];
    pub const FILES: &[&str] = &[
        "src/db/cache.py",
        "src/api/orders.ts",
        "src/cli/args.rs",
        "src/jobs/billing.py",
        "src/web/auth.go",
        "src/sync/inventory.py",
        "src/mail/render.ts",
        "src/search/index.rs",
        "src/upload/handler.go",
        "src/report/export.py",
        "src/hooks/dispatch.ts",
        "src/limits/rate.rs",
    ];
    pub const SYMPTOMS: &[&str] = &[
        "returns stale data",
        "returns HTTP 500 instead of 404",
        "drops the last record",
        "leaks a file handle",
        "times out",
        "double-counts retries",
        "emits duplicate events",
        "reorders items",
        "panics on empty input",
        "ignores the timezone",
        "logs the full token",
        "holds a lock across an await",
        "loses the trailing newline",
        "rounds amounts down",
        "skips the first page",
        "retries forever",
    ];
    pub const CONDITIONS: &[&str] = &[
        "when a batch exceeds ten thousand rows",
        "when the network flaps briefly",
        "after pagination",
        "under concurrent writes",
        "when the cache is cold",
        "on leap days",
        "if the header is missing",
        "when two tenants share a name",
        "after a deploy",
        "when the queue is full",
        "on Windows paths",
        "when the clock skews",
        "with unicode file names",
        "during a failover",
    ];
    /// Patterns and decisions, `{}` standing for a value drawn per fact.
    pub const PATTERNS: &[(&str, &[&str])] = &[
        ("wraps every call in a retry with {} attempts", &["2", "3", "5"]),
        ("validates input at the {} boundary", &["HTTP", "queue", "database"]),
        ("logs one structured line per {}", &["request", "job", "batch"]),
        ("batches writes of at most {} rows", &["100", "500", "1000", "5000"]),
        ("uses a circuit breaker that opens after {} failures", &["3", "5", "10"]),
        ("streams files larger than {} instead of buffering them", &["8 MB", "64 MB", "1 GB"]),
        ("keeps its configuration in {}", &["environment variables", "a TOML file", "Consul"]),
        ("emits metrics every {} seconds", &["10", "15", "60"]),
    ];
    pub const DECISIONS: &[(&str, &[&str])] = &[
        ("runs on Postgres {}", &["13", "14", "15", "16"]),
        ("is deployed to {}", &["Fly.io", "Render", "Heroku", "Kubernetes"]),
        ("keeps its secrets in {}", &["Vault", "AWS Secrets Manager", "Doppler"]),
        ("uses {} for its queue", &["Redis", "SQS", "RabbitMQ"]),
        ("times out after {} seconds", &["10", "30", "60", "120"]),
        ("is owned by the {} team", &["platform", "payments", "growth", "data"]),
        ("ships behind the {} feature flag", &["beta", "canary", "internal"]),
        ("uses tokio {}", &["1.36", "1.38", "1.40", "1.42"]),
    ];
}

/// 100,000 facts (or `n`) in the shape of a coding agent's memory imported through the library,
/// the frame rule on: failures ("… returns stale data when …"), reviews ("Review note on FILE:
/// …"), patterns and decisions about a few dozen components. Prints what was superseded, by
/// type; with `--pairs`, every pattern or decision supersession, for a person to judge.
fn agent_memory(tmp: &Path, n: usize, pairs: bool) {
    use agent::*;
    // A small deterministic generator (xorshift), so that every run imports the same facts.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = |m: usize| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % m as u64) as usize
    };
    let mut requests = Vec::with_capacity(n);
    let mut types = Vec::with_capacity(n);
    for i in 0..n {
        let c = COMPONENTS[next(COMPONENTS.len())];
        let (t, subject) = match i % 10 {
            0..=3 => {
                ("failure", format!("{c} {} {}", SYMPTOMS[next(SYMPTOMS.len())], CONDITIONS[next(CONDITIONS.len())]))
            }
            4..=6 => (
                "review",
                format!(
                    "Review note on {}: {c} {} {}",
                    FILES[next(FILES.len())],
                    SYMPTOMS[next(SYMPTOMS.len())],
                    CONDITIONS[next(CONDITIONS.len())]
                ),
            ),
            7 | 8 => {
                let (p, values) = PATTERNS[next(PATTERNS.len())];
                ("pattern", format!("{c} {}", p.replace("{}", values[next(values.len())])))
            }
            _ => {
                let (d, values) = DECISIONS[next(DECISIONS.len())];
                ("decision", format!("{c} {}", d.replace("{}", values[next(values.len())])))
            }
        };
        let mut subject = subject;
        subject[..1].make_ascii_uppercase();
        types.push(t);
        requests.push(request(t, &subject));
    }
    let mut s = session(tmp, "agent-memory", Box::new(git_neo::embed::HashEmbedder::new(64)), true);
    let started = std::time::Instant::now();
    let out = s.import(&requests, 1000, false, &mut |_, _| {}).expect("import");
    let took = started.elapsed().as_secs_f64();
    let type_of: HashMap<git_neo::record::RecordId, &str> =
        out.ids.iter().zip(&types).map(|(id, t)| (*id, *t)).collect();
    let mut by_type: std::collections::BTreeMap<&str, usize> = Default::default();
    for p in &out.superseded {
        *by_type.entry(type_of.get(&p.old).copied().unwrap_or("?")).or_default() += 1;
    }
    println!();
    println!("| agent memory | facts | added | duplicates | superseded: failure | review | pattern | decision | import time |");
    println!("|---|---|---|---|---|---|---|---|---|");
    let count = |t: &str| by_type.get(t).copied().unwrap_or(0);
    println!(
        "| generated (32 components) | {n} | {} | {} | {} | {} | {} | {} | {took:.1} s |",
        out.added,
        out.duplicates,
        count("failure"),
        count("review"),
        count("pattern"),
        count("decision")
    );
    if pairs {
        // Every pattern or decision supersession, for a person to judge (failures and reviews
        // are events: there should be none of those).
        for p in &out.superseded {
            println!("superseded\t{}\t{}\t{}", type_of.get(&p.old).copied().unwrap_or("?"), p.subject, p.reason);
        }
    }
}

fn statebench_tables(
    splits: &[(String, PathBuf)],
    mut embedder: Box<dyn Embedder>,
    tmp: &Path,
    pairs: bool,
) -> Box<dyn Embedder> {
    println!("| split | mode | leak | latest | must-mention | must-not | updates caught | wrong target | false supersessions |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for (name, path) in splits {
        let all = timelines(path);
        for mode in [Mode::Explicit, Mode::CosineOnly, Mode::Implicit] {
            let mut tally = Tally::default();
            for t in &all {
                embedder = replay(t, mode, &tmp.join(name), embedder, &mut tally, pairs && mode == Mode::Implicit);
            }
            println!(
                "| {name} ({} timelines) | {} | {} | {} | {} | {} | {} | {} | {} |",
                all.len(),
                mode.name(),
                rate(tally.leaks, tally.with_replaced),
                rate(tally.latest, tally.queries),
                rate(tally.must, tally.queries),
                rate(tally.must_not, tally.queries),
                rate(tally.caught, tally.updates),
                rate(tally.wrong, tally.updates),
                rate(tally.false_sup, tally.negatives),
            );
        }
    }
    // Distinct facts, in file order and reversed, with their own types and scopes and all as
    // decisions in one scope (every pair a candidate): any supersession among them is false.
    let facts = distinct_facts();
    for (same_type, label) in [(false, "own types and scopes"), (true, "all one type and scope")] {
        for frame in [false, true] {
            let mut false_sup = 0;
            for reversed in [false, true] {
                let name = format!("distinct-{same_type}-{frame}-{reversed}");
                let mut s = session(tmp, &name, embedder, frame);
                let mut list: Vec<_> = facts.iter().collect();
                if reversed {
                    list.reverse();
                }
                for (i, (fact_type, scope, subject, body)) in list.into_iter().enumerate() {
                    s.set_caller(
                        Some(common::who()),
                        Clock::Fixed(Timestamp(1_735_689_600 + i as i64)),
                        s.dir().to_path_buf(),
                    );
                    let (fact_type, scope) =
                        if same_type { ("decision", None) } else { (fact_type.as_str(), Some(scope.clone())) };
                    let out = add(&mut s, fact_type, scope, subject, body, vec![]);
                    if pairs && frame {
                        print_pairs(&out, |_| "distinct");
                    }
                    false_sup += usize::from(!out.superseded.is_empty());
                }
                embedder = s.take_embedder().expect("the session kept the model");
            }
            println!(
                "| recall fixture: {} distinct facts, {label}, two orders | {} | | | | | | | {} |",
                facts.len(),
                if frame { "implicit" } else { "implicit, cosine only (before)" },
                rate(false_sup, 2 * facts.len())
            );
        }
    }
    // README sentences, each crate's in one memory: the first 40 such crates were looked at while
    // choosing the rule, the next 40 were not.
    for (skip, label) in [(0, "crates 1-40, looked at"), (40, "crates 41-80, held out")] {
        let groups = readme_sentences(skip, 40, 8);
        let (mut frame_sup, mut similar_sup, mut n) = (0, 0, 0);
        for (g, sentences) in groups.iter().enumerate() {
            let mut s = session(tmp, &format!("readme-{skip}-{g}"), embedder, true);
            for (i, sentence) in sentences.iter().enumerate() {
                s.set_caller(
                    Some(common::who()),
                    Clock::Fixed(Timestamp(1_735_689_600 + i as i64)),
                    s.dir().to_path_buf(),
                );
                let out = add(&mut s, "decision", None, sentence, "", vec![]);
                if pairs {
                    print_pairs(&out, |_| "readme");
                }
                n += 1;
                for p in &out.superseded {
                    match p.method {
                        git_neo::record::SupersessionMethod::Frame => frame_sup += 1,
                        _ => similar_sup += 1,
                    }
                }
            }
            embedder = s.take_embedder().expect("the session kept the model");
        }
        println!(
            "| README sentences ({label}): {n} in {} memories, one per crate | implicit | | | | | | | {} by the frame rule ({similar_sup} near-duplicates by similarity) |",
            groups.len(),
            rate(frame_sup, n)
        );
    }
    embedder
}

fn negatives(
    splits: &[(String, PathBuf)],
    mut embedder: Box<dyn Embedder>,
    tmp: &Path,
    pairs: bool,
) -> Box<dyn Embedder> {
    // The negative corpus: distinct statements nobody here wrote, each group added in order to
    // one memory, every pair a candidate. Any supersession among them is false; a hint is an
    // addition that returned a possible update.
    println!();
    println!("| negative set | memories | additions | pairs | about the same thing | frame supersessions | similarity supersessions | additions hinted | valid at the end |");
    println!("|---|---|---|---|---|---|---|---|---|");
    let fixes = registry_fix_lines(12);
    let events = agent_events(24);
    let mut sets: Vec<(String, &str, Vec<Vec<String>>)> = vec![
        ("README sentences (12 per crate)".into(), "decision", registry_lines("README.md", 12)),
        ("CHANGELOG lines (12 per crate)".into(), "decision", registry_lines("CHANGELOG.md", 12)),
        ("CHANGELOG fix lines, as failures (12 per crate)".into(), "failure", fixes.clone()),
        ("CHANGELOG fix lines, as decisions (12 per crate)".into(), "decision", fixes),
        ("agent failures and reviews, generated, as failures and reviews".into(), "", events.clone()),
        ("agent failures and reviews, generated, as decisions".into(), "decision", events),
        ("StateBench facts that replace nothing (per timeline)".into(), "decision", statebench_negatives(splits)),
    ];
    if let Some(dir) = std::env::var_os("GIT_NEO_DIALOGUE") {
        let (marked, raw) = dialogue(Path::new(&dir));
        sets.push(("dialogue turns, `[Dn:t] Name:` markers (per topic)".into(), "decision", marked));
        sets.push(("dialogue turns, bare (per topic)".into(), "decision", raw));
    }
    let mut total_pairs = 0;
    let mut total_false = 0;
    for (label, fact_type, groups) in &sets {
        let (mut adds, mut pairs_n, mut same, mut frame_sup, mut similar_sup, mut hinted, mut valid) =
            (0, 0, 0, 0, 0, 0, 0);
        for (g, lines) in groups.iter().enumerate() {
            let mut s = session(tmp, &format!("neg-{}-{g}", label.len()), embedder, true);
            let keys: Vec<Option<String>> = lines.iter().map(|l| git_neo::frame::frame(l).thing_key()).collect();
            for i in 0..lines.len() {
                pairs_n += i;
                same += keys[..i].iter().filter(|k| k.is_some() && **k == keys[i]).count();
            }
            for (i, line) in lines.iter().enumerate() {
                s.set_caller(
                    Some(common::who()),
                    Clock::Fixed(Timestamp(1_735_689_600 + i as i64)),
                    s.dir().to_path_buf(),
                );
                // A generated event line says its own type (`Review note on …` is a review).
                let t = match *fact_type {
                    "" if line.starts_with("Review note") => "review",
                    "" => "failure",
                    t => t,
                };
                let out = add(&mut s, t, None, line, "", vec![]);
                adds += 1;
                hinted += usize::from(!out.possible_updates.is_empty());
                for p in &out.superseded {
                    match p.method {
                        git_neo::record::SupersessionMethod::Frame => frame_sup += 1,
                        _ => similar_sup += 1,
                    }
                    if pairs {
                        println!("false\t{}\t{}\t{}", p.method, p.subject, line);
                    }
                }
            }
            valid += valid_facts(&mut s);
            embedder = s.take_embedder().expect("the session kept the model");
        }
        total_pairs += pairs_n;
        total_false += frame_sup;
        println!(
            "| {label} | {} | {adds} | {pairs_n} | {same} | {frame_sup} | {similar_sup} | {} | {} |",
            groups.len(),
            rate(hinted, adds),
            rate(valid, adds)
        );
    }
    println!("\nfalse-supersession rate by the frame rule: {}", rate(total_false, total_pairs));
    embedder
}

/// Lines of `file` in every crate of the registry cache: plain sentences of paragraphs and list
/// items (code blocks, headings, tables, links and HTML left out), at most `per` per crate.
fn registry_lines(file: &str, per: usize) -> Vec<Vec<String>> {
    let mut code = false;
    per_crate(file, per, &mut |n, line| {
        // Each file starts outside a code block.
        code &= n > 0;
        let l = line.trim();
        if l.starts_with("```") {
            code = !code;
            return Vec::new();
        }
        if code || l.is_empty() || l.starts_with(['#', '|', '[', '<', '!']) {
            return Vec::new();
        }
        l.trim_start_matches(['-', '*', ' '])
            .split(". ")
            .map(str::trim)
            .filter(|s| s.split_whitespace().count() >= 4 && s.len() < 200)
            .map(str::to_string)
            .collect()
    })
}

/// The lines of every crate's CHANGELOG that report a failure fixed ("Fix panic when …",
/// "Fixed a bug where …"), the verb left out so that each reads as the failure it was: at most
/// `per` per crate.
fn registry_fix_lines(per: usize) -> Vec<Vec<String>> {
    per_crate("CHANGELOG.md", per, &mut |_, line| {
        let l = line.trim().trim_start_matches(['-', '*', ' ']);
        let Some(rest) =
            ["Fix ", "Fixed ", "Fixes ", "fix ", "fixed ", "fixes "].iter().find_map(|p| l.strip_prefix(p))
        else {
            return Vec::new();
        };
        let rest = rest.split(" (").next().unwrap_or(rest).trim().trim_end_matches('.');
        if rest.split_whitespace().count() < 4 || rest.len() >= 180 {
            return Vec::new();
        }
        let mut chars = rest.chars();
        let first = chars.next().map(|c| c.to_uppercase().collect::<String>()).unwrap_or_default();
        vec![format!("{first}{}", chars.as_str())]
    })
}

/// For every crate of the registry cache with `file`: what `pick` makes of its lines (each with
/// its number in the file), in order, each once, at most `per`; a group per crate that gave at
/// least two.
fn per_crate(file: &str, per: usize, pick: &mut dyn FnMut(usize, &str) -> Vec<String>) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for dir in crate_dirs() {
        let Ok(text) = std::fs::read_to_string(dir.join(file)) else { continue };
        let mut lines: Vec<String> = Vec::new();
        for (n, line) in text.lines().enumerate() {
            for candidate in pick(n, line) {
                if !lines.contains(&candidate) {
                    lines.push(candidate);
                }
            }
            if lines.len() >= per {
                lines.truncate(per);
                break;
            }
        }
        if lines.len() >= 2 {
            out.push(lines);
        }
    }
    out
}

/// Generated agent-memory failures and reviews, `per` per component, each component's in one
/// group (the same thing again and again, each line another event).
fn agent_events(per: usize) -> Vec<Vec<String>> {
    use agent::*;
    let mut out = Vec::new();
    for (c, component) in COMPONENTS.iter().enumerate() {
        let mut lines = Vec::new();
        for i in 0..per {
            let symptom = SYMPTOMS[(c + i * 7) % SYMPTOMS.len()];
            let condition = CONDITIONS[(c * 3 + i * 5) % CONDITIONS.len()];
            let mut line = if i % 2 == 0 {
                format!("{component} {symptom} {condition}")
            } else {
                format!("Review note on {}: {component} {symptom} {condition}", FILES[(c + i) % FILES.len()])
            };
            line[..1].make_ascii_uppercase();
            if !lines.contains(&line) {
                lines.push(line);
            }
        }
        out.push(lines);
    }
    out
}

/// The values of the StateBench writes that replace nothing, per timeline (initial facts and
/// fresh writes, in order).
fn statebench_negatives(splits: &[(String, PathBuf)]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for (_, path) in splits {
        for t in timelines(path) {
            let lines: Vec<String> = t
                .events
                .iter()
                .filter_map(|e| match e {
                    Event::Write(w) if w.supersedes.is_none() => Some(w.value.clone()),
                    _ => None,
                })
                .collect();
            if lines.len() >= 2 {
                out.push(lines);
            }
        }
    }
    out
}

/// A public dialogue (the chatterbot-corpus English YAML files, BSD: `scripts/dialogue-corpus.sh`
/// fetches them), one memory per topic file: every turn with a `[Dc:t] Name:` marker, and bare.
fn dialogue(dir: &Path) -> (Vec<Vec<String>>, Vec<Vec<String>>) {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "yml"))
        .collect();
    files.sort();
    let (mut marked, mut raw) = (Vec::new(), Vec::new());
    for f in files {
        let Ok(text) = std::fs::read_to_string(&f) else { continue };
        let Ok(doc) = serde_yaml::from_str::<serde_yaml::Value>(&text) else { continue };
        let (mut m, mut r) = (Vec::new(), Vec::new());
        for (c, conv) in doc["conversations"].as_sequence().into_iter().flatten().enumerate() {
            for (t, turn) in conv.as_sequence().into_iter().flatten().enumerate() {
                // A subject holds at most 200 characters (with its marker).
                let Some(turn) = turn.as_str().map(str::trim).filter(|x| !x.is_empty() && x.len() <= 180) else {
                    continue;
                };
                m.push(format!("[D{}:{}] {}: {turn}", c + 1, t + 1, ["Ann", "Bob"][t % 2]));
                if !r.iter().any(|x: &String| x.eq_ignore_ascii_case(turn)) {
                    r.push(turn.to_string());
                }
            }
        }
        if m.len() >= 2 {
            marked.push(m);
            raw.push(r);
        }
    }
    (marked, raw)
}

/// How many facts of the session's memory are valid.
fn valid_facts(s: &mut Session) -> usize {
    s.list(&git_neo::api::ListFilter { all: true, ..Default::default() })
        .expect("list")
        .iter()
        .filter(|e| e.status == git_neo::state::Status::Valid && e.record.kind == git_neo::record::Kind::Fact)
        .count()
}

/// Each split's conversation added turn by turn through `add` (the frame rule on), then every
/// question recalled: records valid at the end, and evidence recall@5 beside plain BM25 over the
/// same turns, in the same run.
fn conversations(splits: &[(String, PathBuf)], mut embedder: Box<dyn Embedder>, tmp: &Path) -> Box<dyn Embedder> {
    println!();
    println!("| conversation, added turn by turn | turns | valid at the end | superseded | hinted | questions | evidence recall@5, git-neo | plain BM25 |");
    println!("|---|---|---|---|---|---|---|---|");
    for ((name, path), distinct) in splits.iter().flat_map(|s| [(s, false), (s, true)]) {
        let c = conversation(path, distinct);
        let name = format!("{name}, {}", if distinct { "distinct timelines" } else { "all timelines" });
        let mut s = session(tmp, &format!("conversation-{}", name.replace([',', ' '], "-")), embedder, true);
        let (mut ids, mut superseded, mut hinted) = (HashMap::new(), 0, 0);
        for (i, turn) in c.turns.iter().enumerate() {
            s.set_caller(Some(common::who()), Clock::Fixed(Timestamp(1_735_689_600 + i as i64)), s.dir().to_path_buf());
            // A subject holds at most 200 characters: a longer turn keeps its whole text as the body.
            let (subject, body) = match turn.char_indices().nth(190) {
                None => (turn.clone(), String::new()),
                Some((cut, _)) => (format!("{}…", &turn[..turn[..cut].rfind(' ').unwrap_or(cut)]), turn.clone()),
            };
            let out = add(&mut s, "decision", None, &subject, &body, vec![]);
            superseded += out.superseded.len();
            hinted += usize::from(!out.possible_updates.is_empty());
            ids.insert(out.id, i);
        }
        let valid = valid_facts(&mut s);
        let docs: Vec<Vec<String>> = c.turns.iter().map(|t| words(t)).collect();
        let (mut ours, mut bm25) = (0.0, 0.0);
        for (prompt, evidence) in &c.questions {
            let r = s
                .recall(&RecallQuery {
                    query: prompt.clone(),
                    k: 5,
                    budget: 20_000,
                    types: vec![],
                    area: None,
                    as_of: None,
                    front: None,
                    all_sessions: false,
                })
                .expect("recall");
            let top: Vec<usize> = r
                .items(LayerKind::Constraints)
                .iter()
                .chain(r.items(LayerKind::Facts))
                .filter_map(|i| ids.get(&i.id).copied())
                .take(5)
                .collect();
            // Timelines are templated: the same words recur in several sessions, and a turn
            // that says them answers the question as well as the session's own copy. So a turn
            // counts by what it says (the text after its `[Dn:t] Name:` marker).
            let said = |i: &usize| c.turns[*i].split_once("] ").map_or("", |(_, rest)| rest).to_string();
            let wanted: std::collections::BTreeSet<String> = evidence.iter().map(said).collect();
            let found = |top: &[usize]| {
                let got: std::collections::BTreeSet<String> = top.iter().map(said).collect();
                wanted.intersection(&got).count() as f64 / wanted.len() as f64
            };
            ours += found(&top);
            bm25 += found(&bm25_top(&docs, prompt, 5));
        }
        let q = c.questions.len().max(1) as f64;
        println!(
            "| StateBench {name} | {} | {} | {superseded} | {} | {} | {:.3} | {:.3} |",
            c.turns.len(),
            rate(valid, c.turns.len()),
            rate(hinted, c.turns.len()),
            c.questions.len(),
            ours / q,
            bm25 / q
        );
        embedder = s.take_embedder().expect("the session kept the model");
    }
    embedder
}
