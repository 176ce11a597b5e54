//! Recall quality on public retrieval sets nobody here wrote, printed as a table
//! (`cargo bench --bench quality -- [--data DIR] [--lexical] [--limit N]`).
//!
//! Sets (see the README in the data directory, by default `../shared/data/retrieval` beside the
//! repository): SciFact (5,183 abstracts, title as subject, abstract as body; the 809 train
//! claims; nDCG@10) and CoSQA (6,267 Python functions, the docstring's first line or the first
//! line as subject, the code as body; the 500 dev queries; MRR@10). For each set it prints
//! nDCG@10, MRR@10, recall@5 and @10 and the p50 of an in-process recall, for lexical recall
//! (BM25 with git-neo's analyser, no model) and, unless `--lexical`, for hybrid recall with the
//! real model, in the same run. Records are written as one import, the way `git neo import`
//! lands them; the index is built before timing.

mod common;

use common::{cache_root, median, ms, new_repo, who};
use git_neo::api::{Clock, RecallQuery, Session, SessionOptions};
use git_neo::embed::EmbedderChoice;
use git_neo::record::{Fact, FactType, Kind, Payload, Record, RecordId, Timestamp};
use git_neo::store::{Store, StoreOptions};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// One document to store and the key it is judged by.
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
    let cut: String = one.chars().take(190).collect();
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

/// The documents as one import into a new repository: its directory and record id -> key.
fn write(root: &Path, name: &str, docs: &[Doc]) -> (PathBuf, HashMap<RecordId, String>) {
    let repo = new_repo(root, name);
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
    for chunk in batch.chunks(5_000) {
        store.write_records(chunk, "neo: import", &who(), Timestamp(1_770_000_000), false).expect("write");
    }
    (repo, keys)
}

/// Mean nDCG@10, MRR@10, recall@5, recall@10, and the p50 recall time over `queries`.
fn score(s: &mut Session, keys: &HashMap<RecordId, String>, queries: &[Query]) -> [f64; 5] {
    let (mut ndcg, mut mrr, mut r5, mut r10) = (0.0, 0.0, 0.0, 0.0);
    let mut times = Vec::new();
    for q in queries {
        let query = RecallQuery {
            query: q.text.clone(),
            k: 10,
            budget: 50_000,
            types: Vec::new(),
            area: None,
            as_of: None,
            front: None,
        };
        let t = Instant::now();
        let result = s.recall(&query).expect("recall");
        times.push(t.elapsed());
        let ranked: Vec<&str> =
            result.facts.iter().filter_map(|i| keys.get(&i.id).map(String::as_str)).take(10).collect();
        let hit = |d: &&str| q.relevant.contains(*d);
        let dcg: f64 =
            ranked.iter().enumerate().filter(|(_, d)| hit(d)).map(|(i, _)| 1.0 / (i as f64 + 2.0).log2()).sum();
        let idcg: f64 = (0..q.relevant.len().min(10)).map(|i| 1.0 / (i as f64 + 2.0).log2()).sum();
        ndcg += dcg / idcg;
        mrr += ranked.iter().position(hit).map_or(0.0, |p| 1.0 / (p as f64 + 1.0));
        let found = |n: usize| ranked.iter().take(n).filter(|d| hit(d)).count() as f64 / q.relevant.len() as f64;
        r5 += found(5);
        r10 += found(10);
    }
    let n = queries.len().max(1) as f64;
    [ndcg / n, mrr / n, r5 / n, r10 / n, median(times).as_secs_f64() * 1000.0]
}

fn session(repo: &Path, embedder: EmbedderChoice) -> Session {
    Session::new(SessionOptions {
        dir: repo.to_path_buf(),
        ref_name: None,
        identity: Some(who()),
        clock: Clock::Fixed(Timestamp(1_780_000_000)),
        embedder,
        scope: None,
        data_dir: None,
        config: Vec::new(),
        defer_vectors: false,
    })
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let value = |flag: &str| args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1)).cloned();
    let data = value("--data")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/retrieval"));
    let limit: usize = value("--limit").and_then(|v| v.parse().ok()).unwrap_or(usize::MAX);
    let lexical_only = args.iter().any(|a| a == "--lexical");
    if !data.join("scifact").is_dir() {
        eprintln!("no retrieval sets at {} (give --data DIR)", data.display());
        std::process::exit(2);
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    println!("| set | recall | nDCG@10 | MRR@10 | recall@5 | recall@10 | p50 |\n|---|---|---|---|---|---|---|");
    for (name, (docs, mut queries)) in [("SciFact train", scifact(&data)), ("CoSQA dev", cosqa(&data))] {
        queries.truncate(limit);
        let (repo, keys) = write(tmp.path(), &name.replace(' ', "-"), &docs);
        let mut modes = vec![("lexical (BM25, no model)", EmbedderChoice::Off)];
        if !lexical_only {
            modes.push(("hybrid (model)", EmbedderChoice::Model { cache_root: cache_root() }));
        }
        for (mode, choice) in modes {
            let mut s = session(&repo, choice);
            // Build the caches first (the embedding is not what is timed).
            let _ = s.recall(&RecallQuery {
                query: "warm up".into(),
                k: 1,
                budget: 200,
                types: Vec::new(),
                area: None,
                as_of: None,
                front: None,
            });
            let [ndcg, mrr, r5, r10, p50] = score(&mut s, &keys, &queries);
            println!(
                "| {name} ({} docs, {} queries) | {mode} | {ndcg:.4} | {mrr:.4} | {r5:.4} | {r10:.4} | {} |",
                docs.len(),
                queries.len(),
                ms(std::time::Duration::from_secs_f64(p50 / 1000.0))
            );
        }
    }
}
