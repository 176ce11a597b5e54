//! Recall quality on public sets nobody here wrote, printed as a table
//! (`cargo bench --bench quality -- [--data DIR] [--statebench DIR] [--lexical] [--limit N]
//! [--sets scifact,cosqa,conversation] [--baseline BIN] [--configs neo.recall.fusion=rrf,neo.recall.expand=false] [--keep DIR]`).
//!
//! Sets (see the README in the data directory, by default `../shared/data/retrieval` beside the
//! repository): SciFact (5,183 abstracts, title as subject, abstract as body; the 809 train
//! claims; nDCG@10) and CoSQA (6,267 Python functions, the docstring's first line or the first
//! line as subject, the code as body; the 500 dev queries; MRR@10); and a conversation per
//! StateBench split (`../shared/data/statebench`: every timeline a session of `[Dn:t] Name:`
//! turns, one record per turn; each query's evidence is its session's turns that hold a term the
//! answer must mention, judged by what a turn says, since templated timelines repeat turns;
//! recall@5). For each set it prints nDCG@10, MRR@10, recall@5 and @10 and the p50 of one recall,
//! for lexical recall (BM25 with git-neo's analyser, no model), hybrid recall with the real model
//! (unless `--lexical`), plain Okapi BM25 (conversations), and with `--baseline BIN` another
//! git-neo binary's recall through its own server on the same records, and with `--configs` each
//! listed variant of the recall settings on the same indexes, all in the same run.
//! Records are written as one import, the way `git neo import` lands them; the index is built
//! before timing. `--keep DIR` keeps the repositories and their caches there for the next run.

// Tests and benches print, read the environment and run processes freely (clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_macros)]

mod common;

use common::{cache_root, median, ms, new_repo, who};
use git_neo::api::{Clock, RecallQuery, Session, SessionOptions};
use git_neo::embed::EmbedderChoice;
use git_neo::record::{Fact, FactType, Kind, Payload, Record, RecordId, Timestamp};
use git_neo::store::{Store, StoreOptions};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One document to store and the key it is judged by (documents may share a key: turns that say
/// the same thing).
struct Doc {
    key: String,
    subject: String,
    body: String,
}

/// One query and the keys of the documents that answer it.
struct Query {
    text: String,
    relevant: HashSet<String>,
}

/// Text records can hold: printable characters, newlines and tabs.
fn clean(s: &str) -> String {
    s.chars().filter(|c| !c.is_control() || *c == '\n' || *c == '\t').collect()
}

/// A subject line: one line, at most 190 characters, cut at a character boundary.
fn line(s: &str) -> String {
    let one: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    let cut: String = one.chars().take(190).collect::<String>().trim_end().to_string();
    if cut.is_empty() {
        "untitled".into()
    } else {
        cut
    }
}

fn read_jsonl(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn scifact(dir: &Path) -> (Vec<Doc>, Vec<Query>) {
    let docs = read_jsonl(&dir.join("scifact/corpus.jsonl"))
        .into_iter()
        .map(|d| Doc {
            key: d["_id"].as_str().unwrap_or_default().to_string(),
            subject: line(&clean(d["title"].as_str().unwrap_or_default())),
            body: clean(d["text"].as_str().unwrap_or_default()),
        })
        .collect();
    let mut relevant: HashMap<String, HashSet<String>> = HashMap::new();
    let qrels = std::fs::read_to_string(dir.join("scifact/qrels-train.tsv")).expect("qrels");
    for l in qrels.lines().skip(1) {
        let f: Vec<&str> = l.split('\t').collect();
        if f.len() >= 2 {
            relevant.entry(f[0].to_string()).or_default().insert(f[1].to_string());
        }
    }
    let queries = read_jsonl(&dir.join("scifact/queries-train.jsonl"))
        .into_iter()
        .filter_map(|q| {
            let rel = relevant.get(q["_id"].as_str()?)?.clone();
            Some(Query { text: q["text"].as_str()?.to_string(), relevant: rel })
        })
        .collect();
    (docs, queries)
}

fn cosqa(dir: &Path) -> (Vec<Doc>, Vec<Query>) {
    let map: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(dir.join("cosqa/code_idx_map.txt")).expect("code map"))
            .expect("a JSON object");
    let docs = map
        .iter()
        .map(|(code, idx)| {
            let code = clean(code);
            // The docstring's first line, else the code's first line.
            let doc = code.split("\"\"\"").nth(1).and_then(|d| d.lines().map(str::trim).find(|l| !l.is_empty()));
            let first = code.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("empty");
            Doc { key: idx.to_string(), subject: line(doc.unwrap_or(first)), body: code }
        })
        .collect();
    let queries: Vec<serde_json::Value> = serde_json::from_str(
        &std::fs::read_to_string(dir.join("cosqa/cosqa-retrieval-dev-500.json")).expect("queries"),
    )
    .expect("a JSON list");
    let queries = queries
        .into_iter()
        .filter_map(|q| {
            let idx =
                q["retrieval_idx"].as_str().map(str::to_string).or_else(|| Some(q["retrieval_idx"].to_string()))?;
            Some(Query { text: q["doc"].as_str()?.to_string(), relevant: HashSet::from([idx]) })
        })
        .collect();
    (docs, queries)
}

/// A StateBench split as one conversation: a record per turn, keyed by what the turn says.
fn conversation_set(path: &Path) -> (Vec<Doc>, Vec<Query>) {
    let c = common::conversation::conversation(path, false);
    let said = |t: &str| t.split_once("] ").map_or(t, |(_, rest)| rest).to_string();
    let docs = c
        .turns
        .iter()
        .map(|t| {
            // A subject holds at most 200 characters: a longer turn keeps its whole text as the body.
            let (subject, body) = match t.char_indices().nth(190) {
                None => (t.clone(), String::new()),
                Some((cut, _)) => (format!("{}…", &t[..t[..cut].rfind(' ').unwrap_or(cut)]), t.clone()),
            };
            Doc { key: said(t), subject, body }
        })
        .collect();
    let queries = c
        .questions
        .iter()
        .map(|(prompt, evidence)| Query {
            text: prompt.clone(),
            relevant: evidence.iter().map(|&i| said(&c.turns[i])).collect(),
        })
        .collect();
    (docs, queries)
}

/// The documents as one import into a new repository: its directory and record id -> key.
fn write(root: &Path, name: &str, docs: &[Doc]) -> (PathBuf, HashMap<RecordId, String>) {
    // A repository kept from an earlier run (`--keep DIR`) is reused with its caches: the records
    // are the same (fixed times, content-addressed), so only their ids are needed.
    let kept = root.join(name).join(".git").is_dir();
    let repo = if kept { root.join(name) } else { new_repo(root, name) };
    let store = Store::discover(&repo, StoreOptions::default()).expect("store");
    let mut keys = HashMap::new();
    let mut batch = Vec::new();
    for (i, d) in docs.iter().enumerate() {
        let r = Record {
            kind: Kind::Fact,
            payload: Payload::Fact(Fact::new(FactType::Architecture, d.subject.clone())),
            author: "Bench <bench@example.com>".into(),
            created_at: Timestamp(1_770_000_000 + i as i64),
            body: format!("{}\n", d.body.trim_end()),
        };
        let (id, bytes) = r.encode();
        keys.insert(id, d.key.clone());
        batch.push((Kind::Fact, id, bytes));
    }
    for chunk in batch.chunks(5_000).filter(|_| !kept) {
        store.write_records(chunk, "neo: import", &who(), Timestamp(1_770_000_000), false).expect("write");
    }
    (repo, keys)
}

/// nDCG@10, MRR@10, recall@5 and recall@10 of one ranking (keys, best first). A key counts
/// once, where it first appears.
fn judge(ranked: &[&str], relevant: &HashSet<String>) -> [f64; 4] {
    let mut seen = HashSet::new();
    let gains: Vec<bool> = ranked.iter().take(10).map(|d| relevant.contains(*d) && seen.insert(*d)).collect();
    let dcg: f64 = gains.iter().enumerate().filter(|(_, g)| **g).map(|(i, _)| 1.0 / (i as f64 + 2.0).log2()).sum();
    let idcg: f64 = (0..relevant.len().min(10)).map(|i| 1.0 / (i as f64 + 2.0).log2()).sum();
    let mrr = gains.iter().position(|g| *g).map_or(0.0, |p| 1.0 / (p as f64 + 1.0));
    let found = |n: usize| gains.iter().take(n).filter(|g| **g).count() as f64 / relevant.len() as f64;
    [dcg / idcg, mrr, found(5), found(10)]
}

/// Mean nDCG@10, MRR@10, recall@5, recall@10 over `queries` of the rankings `rank` gives, and
/// the p50 of its time.
fn score(queries: &[Query], mut rank: impl FnMut(&str) -> Vec<String>) -> [f64; 5] {
    let mut sums = [0.0; 4];
    let mut times = Vec::new();
    for q in queries {
        let t = Instant::now();
        let ranked = rank(&q.text);
        times.push(t.elapsed());
        let ranked: Vec<&str> = ranked.iter().map(String::as_str).collect();
        for (s, v) in sums.iter_mut().zip(judge(&ranked, &q.relevant)) {
            *s += v;
        }
    }
    let n = queries.len().max(1) as f64;
    [sums[0] / n, sums[1] / n, sums[2] / n, sums[3] / n, median(times).as_secs_f64() * 1000.0]
}

fn query(text: &str) -> RecallQuery {
    RecallQuery {
        query: text.to_string(),
        k: 10,
        budget: 50_000,
        types: Vec::new(),
        area: None,
        as_of: None,
        front: None,
        all_sessions: false,
    }
}

/// In-process recall: the keys of the facts it returns.
fn ours(s: &mut Session, keys: &HashMap<RecordId, String>, text: &str) -> Vec<String> {
    let result = s.recall(&query(text)).expect("recall");
    result.items(git_neo::recall::LayerKind::Facts).iter().filter_map(|i| keys.get(&i.id).cloned()).take(10).collect()
}

/// A `git neo` command of another binary, with the model unless `lexical`, in `repo`.
fn other(exe: &Path, repo: &Path, scratch: &Path, daemon: bool, lexical: bool) -> Command {
    let mut c = Command::new(exe);
    c.current_dir(repo)
        .env("GIT_NEO_DATA_DIR", scratch.join("data"))
        .env("GIT_NEO_CACHE_DIR", cache_root())
        .env("GIT_NEO_DAEMON", if daemon { "on" } else { "off" })
        .env("XDG_RUNTIME_DIR", scratch)
        .stdin(Stdio::null());
    if lexical {
        c.env("GIT_NEO_EMBEDDER", "none");
    }
    c
}

/// Another binary's recall through its own warm server: its index is built first (`reindex`),
/// then every query is one `git neo recall --json` (a process, as an agent runs it).
fn baseline(
    exe: &Path,
    repo: &Path,
    scratch: &Path,
    lexical: bool,
    keys: &HashMap<RecordId, String>,
    queries: &[Query],
) -> [f64; 5] {
    let status =
        other(exe, repo, scratch, false, lexical).arg("reindex").stdout(Stdio::null()).status().expect("reindex");
    assert!(status.success(), "the baseline's reindex failed");
    let mut server = other(exe, repo, scratch, false, lexical)
        .args(["daemon", "run", "--idle", "600"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the baseline's server");
    let start = Instant::now();
    loop {
        let out =
            other(exe, repo, scratch, false, lexical).args(["daemon", "status", "--json"]).output().expect("status");
        let said = String::from_utf8_lossy(&out.stdout);
        if said.contains("\"running\": true") && !said.contains("\"warming\": true") {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(600), "the baseline's server did not start");
        std::thread::sleep(Duration::from_millis(200));
    }
    let result = score(queries, |text| {
        let out = other(exe, repo, scratch, true, lexical)
            .args(["recall", text, "--json", "-k", "10", "--budget", "50000"])
            .output()
            .expect("recall");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("recall --json");
        v["facts"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|f| keys.get(&RecordId::from_hex(f["id"].as_str()?)?).cloned())
            .take(10)
            .collect()
    });
    let _ = other(exe, repo, scratch, false, lexical).args(["daemon", "stop"]).status();
    let _ = server.wait();
    result
}

fn session(repo: &Path, embedder: EmbedderChoice) -> Session {
    Session::new(SessionOptions {
        dir: repo.to_path_buf(),
        git_dir: None,
        ref_name: None,
        identity: Some(who()),
        clock: Clock::Fixed(Timestamp(1_780_000_000)),
        embedder,
        scope: None,
        data_dir: None,
        config: Vec::new(),
    })
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let value = |flag: &str| args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1)).cloned();
    let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data");
    let data = value("--data").map(PathBuf::from).unwrap_or_else(|| shared.join("retrieval"));
    let statebench = value("--statebench").map(PathBuf::from).unwrap_or_else(|| shared.join("statebench"));
    let limit: usize = value("--limit").and_then(|v| v.parse().ok()).unwrap_or(usize::MAX);
    let lexical_only = args.iter().any(|a| a == "--lexical");
    let base = value("--baseline").map(PathBuf::from);
    let configs = value("--configs");
    if !data.join("scifact").is_dir() {
        eprintln!("no retrieval sets at {} (give --data DIR)", data.display());
        std::process::exit(2);
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = value("--keep").map(PathBuf::from).unwrap_or_else(|| tmp.path().to_path_buf());
    std::fs::create_dir_all(&root).expect("the --keep directory");
    let mut sets = vec![("SciFact train", scifact(&data)), ("CoSQA dev", cosqa(&data))];
    for (name, file) in [
        ("StateBench train conversation", "train-supersession.jsonl"),
        ("StateBench dev conversation", "dev-supersession.jsonl"),
    ] {
        if statebench.join(file).is_file() {
            sets.push((name, conversation_set(&statebench.join(file))));
        }
    }
    println!("| set | recall | nDCG@10 | MRR@10 | recall@5 | recall@10 | p50 |\n|---|---|---|---|---|---|---|");
    // `--sets WORD[,WORD]`: only the sets whose name holds one of the words (case aside).
    if let Some(only) = value("--sets") {
        let words: Vec<String> = only.split(',').map(str::to_lowercase).collect();
        sets.retain(|(name, _)| words.iter().any(|w| name.to_lowercase().contains(w.as_str())));
    }
    for (name, (docs, mut queries)) in sets {
        queries.truncate(limit);
        let (repo, keys) = write(&root, &name.replace(' ', "-"), &docs);
        let row = |mode: &str, [ndcg, mrr, r5, r10, p50]: [f64; 5]| {
            println!(
                "| {name} ({} docs, {} queries) | {mode} | {ndcg:.4} | {mrr:.4} | {r5:.4} | {r10:.4} | {} |",
                docs.len(),
                queries.len(),
                ms(Duration::from_secs_f64(p50 / 1000.0))
            )
        };
        if name.contains("conversation") {
            let words: Vec<Vec<String>> =
                docs.iter().map(|d| common::conversation::words(&format!("{} {}", d.subject, d.body))).collect();
            row(
                "plain Okapi BM25",
                score(&queries, |text| {
                    common::conversation::bm25_top(&words, text, 10).into_iter().map(|i| docs[i].key.clone()).collect()
                }),
            );
        }
        let mut modes = vec![("lexical (BM25, no model)", EmbedderChoice::Off)];
        if !lexical_only {
            modes.push(("hybrid (model)", EmbedderChoice::Model { cache_root: cache_root() }));
        }
        for (mode, choice) in modes {
            let lexical = matches!(choice, EmbedderChoice::Off);
            if let Some(exe) = &base {
                let scratch = tempfile::tempdir().expect("scratch");
                let label = format!("{mode}, baseline binary through its server");
                row(&label, baseline(exe, &repo, scratch.path(), lexical, &keys, &queries));
            }
            // The defaults, then each `--configs` variant on the same indexes (`key=value`, joined
            // by `+`), unless lexical (the recall settings tried are the hybrid's).
            let mut variants = vec![String::new()];
            if let (Some(list), false) = (&configs, lexical) {
                variants.extend(list.split(',').map(str::to_string));
            }
            for variant in variants {
                let settings: Vec<(&str, &str)> = variant.split('+').filter_map(|kv| kv.split_once('=')).collect();
                for (k, v) in &settings {
                    common::git(&repo, &["config", k, v], None);
                }
                let mut s = session(&repo, choice.clone());
                // Build the caches first (the embedding is not what is timed).
                let _ = s.recall(&RecallQuery { k: 1, budget: 200, ..query("warm up") });
                let label = if variant.is_empty() { mode.to_string() } else { format!("{mode}, {variant}") };
                row(&label, score(&queries, |text| ours(&mut s, &keys, text)));
                for (k, _) in &settings {
                    common::git(&repo, &["config", "--unset-all", k], None);
                }
            }
        }
    }
}
