//! Recall benchmarks, printed as a table (`cargo bench --bench recall`; `-- --quick` for 1k only).
//!
//! Needs the real model (scripts/install-model.sh). Per memory size: full rebuild (embedding
//! included), in-process recall p50 (query embedding excluded, measured apart), whole-process
//! `git neo recall` p50, incremental catch-up after one new record, and the vector index's
//! recall@10 against exact search. Once: embedding throughput through git-neo against raw
//! fastembed in the same run.

// Tests and benches print, read the environment and run processes freely (clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_macros)]

mod common;

use common::{cache_root, fact, git, median, ms, W};
use git_neo::embed::{Embedder, FastEmbedder, ModelPaths};
use git_neo::recall::Request;
use git_neo::record::{Kind, Timestamp};
use git_neo::store::{Store, StoreOptions};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

fn bench_fact(i: usize) -> (Kind, git_neo::record::RecordId, Vec<u8>) {
    let w = |k: usize| common::word(i, k);
    fact(
        i,
        common::subject(i),
        format!("src/{}", w(3)),
        vec![],
        format!("When the {} is under load the {} retries; incident {i}. Keep the {} bounded.\n", w(4), w(5), w(6)),
    )
}

/// p50 of `tools/call recall` round trips to a warm `git neo mcp` (after one warm-up call).
fn mcp_recall_p50(repo: &Path, queries: &[String]) -> Duration {
    use std::io::{BufRead, BufReader, Write};
    let mut child = Command::new(env!("CARGO_BIN_EXE_git-neo"))
        .current_dir(repo)
        .arg("mcp")
        .env("GIT_NEO_CACHE_DIR", cache_root())
        // In its own process: a bench leaves no background server behind.
        .env("GIT_NEO_DAEMON", "off")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn git neo mcp");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut id = 0;
    let mut call = |method: &str, params: serde_json::Value| {
        id += 1;
        let msg = serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(stdin, "{msg}").expect("write");
        stdin.flush().expect("flush");
        loop {
            let mut line = String::new();
            assert!(stdout.read_line(&mut line).expect("read") > 0, "the server exited");
            let v: serde_json::Value = serde_json::from_str(&line).expect("JSON-RPC");
            if v["id"] == id {
                assert!(v["result"]["isError"] != true, "{v}");
                return;
            }
        }
    };
    call(
        "initialize",
        serde_json::json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}),
    );
    call("tools/call", serde_json::json!({"name": "recall", "arguments": {"query": "warm up"}}));
    let mut lat = Vec::new();
    for _ in 0..5 {
        for q in queries {
            let t = Instant::now();
            call("tools/call", serde_json::json!({"name": "recall", "arguments": {"query": q}}));
            lat.push(t.elapsed());
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    median(lat)
}

/// The fold of the memory `store` holds and its tips (commit ids).
fn fold(store: &Store) -> (git_neo::state::State, Vec<String>) {
    let snapshot = store.load().expect("load");
    let tips = snapshot.tips.iter().map(|(_, c)| c.to_string()).collect();
    (git_neo::state::fold(snapshot.records.into_iter().map(|r| (r.id, r.record))), tips)
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let paths = ModelPaths::in_cache(&cache_root());
    let mut embedder = FastEmbedder::load(&paths).expect("the model is installed (scripts/install-model.sh)");
    let who = common::who();
    let tmp = tempfile::tempdir().expect("tempdir");
    let queries: Vec<String> = [
        "how do retries behave under load",
        "tenant sharding and quotas",
        "webhook refunds",
        "what blocks the ledger",
        "session export limits",
        "alerting on replica lag",
        "schema migration locks",
        "token cache expiry",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();

    // Embedding throughput: git-neo's embedder against raw fastembed on the same texts.
    let texts: Vec<String> = (0..512)
        .map(|i| format!("The {} {} must not block the {} ({i})", W[i % 24], W[(i / 3) % 24], W[(i / 7) % 24]))
        .collect();
    let (mut ours, mut raw) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        let t = Instant::now();
        embedder.embed(&texts).expect("embed");
        ours.push(t.elapsed());
        let t = Instant::now();
        embedder.raw().embed(&texts, Some(64)).expect("raw embed");
        raw.push(t.elapsed());
    }
    let (o, r) = (median(ours), median(raw));
    println!("| measurement | value | notes |\n|---|---|---|");
    println!(
        "| embedding throughput, git-neo vs raw fastembed | {:.0} vs {:.0} texts/s | overhead {:+.1}% (p50 of 3 x 512 texts) |",
        512.0 / o.as_secs_f64(),
        512.0 / r.as_secs_f64(),
        (o.as_secs_f64() / r.as_secs_f64() - 1.0) * 100.0
    );

    // The Construct: load and search the shipped library, lexical and hybrid.
    let t = Instant::now();
    let mut library = git_neo::construct::Library::load(None).expect("library");
    let load = t.elapsed();
    let t = Instant::now();
    library.search("warm up", 5, Some(&mut embedder)).expect("search");
    let first = t.elapsed();
    let (mut lexical, mut hybrid) = (Vec::new(), Vec::new());
    for q in &queries {
        let t = Instant::now();
        library.search(q, 5, None).expect("search");
        lexical.push(t.elapsed());
        let t = Instant::now();
        library.search(q, 5, Some(&mut embedder)).expect("search");
        hybrid.push(t.elapsed());
    }
    println!(
        "| construct: load + index {} patterns | {} | first hybrid search {} (embeds the patterns once) |",
        library.patterns.len(),
        ms(load),
        ms(first)
    );
    println!(
        "| construct search p50, lexical / hybrid | {} / {} | query embedding included in hybrid (target < 100 ms) |",
        ms(median(lexical)),
        ms(median(hybrid))
    );

    // `--size N` measures one memory size only.
    let args: Vec<String> = std::env::args().collect();
    let one: Option<usize> =
        args.iter().position(|a| a == "--size").and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok());
    let sizes: Vec<usize> = match one {
        Some(n) => vec![n],
        None if quick => vec![1_000],
        None => vec![1_000, 10_000, 100_000],
    };
    for &n in &sizes {
        let repo = common::new_repo(tmp.path(), &format!("r{n}"));
        let store = Store::discover(&repo, StoreOptions::default()).expect("store");
        for start in (0..n).step_by(10_000) {
            let batch: Vec<_> = (start..(start + 10_000).min(n)).map(bench_fact).collect();
            store.write_records(&batch, "neo: import", &who, Timestamp(1_770_000_000), false).expect("write");
        }
        git(&repo, &["repack", "-adq"], None);
        git(&repo, &["prune-packed"], None);
        let (state, tips) = fold(&store);

        let t = Instant::now();
        let (indexes, _) = git_neo::index::Indexes::open(
            &store.index_dir(),
            &state,
            &tips,
            &|_| None,
            Some(&mut embedder),
            true,
            &mut |_, _| {},
        )
        .expect("rebuild");
        let rebuild = t.elapsed();

        // In-process recall with the query embedded beforehand.
        let mut lat = Vec::new();
        for _ in 0..5 {
            for q in &queries {
                let v = embedder.embed(std::slice::from_ref(q)).expect("embed").remove(0);
                let t = Instant::now();
                let lex = indexes.search_lexical(q, 50).expect("lexical");
                let vec = indexes.search_vectors(&v, 50).expect("vector");
                let req = Request {
                    query: q.clone(),
                    k: 10,
                    budget: 12_000,
                    types: vec![],
                    area: None,
                    now: Timestamp(1_780_000_000),
                    as_of: None,
                    origins: None,
                    fetched: None,
                    fusion: Default::default(),
                    floor: git_neo::recall::DEFAULT_RECALL_FLOOR,
                    expand: git_neo::recall::expand::When::Never,
                    pin: None,
                };
                let found = git_neo::recall::Found { lexical: lex, vector: vec, semantic: true, ..Default::default() };
                let mut ranked = git_neo::recall::rank(&state, &req, found);
                let mut budget = git_neo::recall::Budget::new(req.budget);
                let mut layers = git_neo::recall::Layers::default();
                for kind in git_neo::recall::LayerKind::ALL {
                    layers.put(kind, ranked.fit(kind, &mut budget));
                }
                let out = ranked.into_recall(layers, budget);
                lat.push(t.elapsed());
                assert!(!out.items(git_neo::recall::LayerKind::Facts).is_empty());
            }
        }
        let inproc = median(lat);

        // Vector recall@10 against exact search.
        let vectors = indexes.vectors.as_ref().expect("vectors");
        let mut overlap = 0usize;
        for q in &queries {
            let v = embedder.embed(std::slice::from_ref(q)).expect("embed").remove(0);
            let approx: Vec<u64> = vectors.search(&v, 10).expect("search").into_iter().map(|(k, _)| k).collect();
            let exact: Vec<u64> = vectors.exact_search(&v, 10).expect("exact").into_iter().map(|(k, _)| k).collect();
            overlap += approx.iter().filter(|k| exact.contains(k)).count();
        }
        let recall10 = overlap as f64 / (10 * queries.len()) as f64;
        drop(indexes);

        // Whole-process `git neo recall`.
        let mut whole = Vec::new();
        for q in queries.iter().take(5) {
            let t = Instant::now();
            let out = Command::new(env!("CARGO_BIN_EXE_git-neo"))
                .current_dir(&repo)
                .args(["recall", q, "--json"])
                .env("GIT_NEO_CACHE_DIR", cache_root())
                // In its own process: a bench leaves no background server behind.
                .env("GIT_NEO_DAEMON", "off")
                .output()
                .expect("run");
            whole.push(t.elapsed());
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        }

        // Recall through the MCP server: warm model and caches, query embedding included.
        let mcp = mcp_recall_p50(&repo, &queries);

        // Incremental catch-up after one new record (must not rebuild).
        store.write_records(&[bench_fact(n + 1)], "neo: add", &who, Timestamp(1_780_000_000), false).expect("write");
        let (state, new_tips) = fold(&store);
        // The records the one new commit added, from its tree diff (as a session catches up).
        let added_since = |old: &[String]| -> Option<Vec<git_neo::record::RecordId>> {
            let ([old], [new]) = (old, new_tips.as_slice()) else { return None };
            let (old, new) = (store.resolve_commit(old).ok()?, store.resolve_commit(new).ok()?);
            let changes = store.diff_trees(Some(store.tree_of(old).ok()?), Some(store.tree_of(new).ok()?)).ok()?;
            changes
                .iter()
                .map(|c| c.path.rsplit('/').next()?.strip_suffix(".md").and_then(git_neo::record::RecordId::from_hex))
                .collect()
        };
        let t = Instant::now();
        let (_, refresh) = git_neo::index::Indexes::open(
            &store.index_dir(),
            &state,
            &new_tips,
            &added_since,
            Some(&mut embedder),
            true,
            &mut |_, _| {},
        )
        .expect("catch up");
        let catch_up = t.elapsed();
        assert!(matches!(refresh, git_neo::index::Refresh::CaughtUp { added: 1, .. }), "{refresh:?}");

        let k = n / 1000;
        println!(
            "| {k}k: full rebuild (embedding included) | {:.1} s | {:.0} records/s |",
            rebuild.as_secs_f64(),
            n as f64 / rebuild.as_secs_f64()
        );
        println!("| {k}k: in-process recall p50 | {} | query embedding excluded; 40 queries |", ms(inproc));
        println!(
            "| {k}k: whole-process `git neo recall` p50 | {} | 5 runs, query embedding and model load included |",
            ms(median(whole))
        );
        println!("| {k}k: catch-up after one new record | {} | no rebuild; one embedding included |", ms(catch_up));
        println!(
            "| {k}k: recall through `git neo mcp` p50 | {} | warm server, 40 calls, query embedding and JSON-RPC included (target <= 20 ms) |",
            ms(mcp)
        );
        println!("| {k}k: vector recall@10 vs exact search | {recall10:.3} | usearch HNSW, cos, f16 |");
    }
}
