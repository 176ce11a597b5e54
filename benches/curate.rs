//! `git neo curate` over 10k facts of real text, twice: functions of the code corpus fixture,
//! then paragraphs of the crates' markdown in the local cargo registry cache (text nobody here
//! wrote; skipped when the cache is empty), each cycled with its number. Timed: the plan (dry
//! run, library session), the first curation through the command line with its peak memory (it
//! writes about 13,400 evictions, merges and prunes in one commit), and a second run right after
//! (library session; writes nothing). Baseline in the same run: loading and folding the same
//! memory.
//! The deterministic embedder gives the vectors (the index is built before timing).
//!
//! `cargo bench --bench curate`

// Tests and benches print, read the environment and run processes freely (clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_macros)]

mod common;

use common::{git, median, ms, new_repo, who};
use git_neo::api::learn::curate::CurateOptions;
use git_neo::api::{Clock, Session, SessionOptions};
use git_neo::embed::EmbedderChoice;
use git_neo::record::{Fact, FactType, Kind, Milli, Payload, Provenance, Record, Timestamp};
use git_neo::store::{Store, StoreOptions};
use std::time::{Duration, Instant};

const N: usize = 10_000;

fn main() {
    // (subject, source, body) of each text.
    let code: Vec<(String, String, String)> =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/code/functions.jsonl"))
            .expect("corpus")
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("json"))
            .map(|c| {
                let text = c["text"].as_str().expect("text").to_string();
                let first = text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("code").to_string();
                (first, c["source"].as_str().unwrap_or("?").to_string(), text)
            })
            .collect();
    run("functions of the code corpus fixture", &code);
    let (paragraphs, _) = common::registry_corpus(N, 0);
    if paragraphs.is_empty() {
        println!("\n(no crate READMEs in the cargo registry cache: the second corpus is skipped)");
        return;
    }
    let readmes: Vec<(String, String, String)> = paragraphs
        .into_iter()
        .map(|p| {
            let first = p.split(". ").next().unwrap_or(&p).to_string();
            (first, "a crate's markdown".to_string(), p)
        })
        .collect();
    println!();
    run("paragraphs of the crates' markdown in the cargo registry cache", &readmes);
}

/// The bench on `N` facts made from `corpus` (cycled, numbered, so each is distinct).
fn run(name: &str, corpus: &[(String, String, String)]) {
    let root = tempfile::tempdir().expect("tempdir");
    let repo = new_repo(root.path(), "r");
    let store = Store::discover(&repo, StoreOptions::default()).expect("store");
    let mut batch = Vec::new();
    for i in 0..N {
        let (first, source, text) = &corpus[i % corpus.len()];
        let r = Record {
            kind: Kind::Fact,
            payload: Payload::Fact(Fact {
                tags: if i % 97 == 0 { vec!["seed".into()] } else { vec![] },
                provenance: Provenance::Inferred,
                confidence: Milli(350 + (i % 7) as i32 * 50),
                ..Fact::new(
                    FactType::ALL[1 + i % (FactType::ALL.len() - 1)],
                    format!("{} ({} #{i})", first.chars().take(100).collect::<String>(), source),
                )
            }),
            author: "Bench <bench@example.com>".into(),
            created_at: Timestamp(1_760_000_000 + i as i64 * 600),
            body: text.chars().take(300).collect(),
        };
        let (id, bytes) = r.encode();
        batch.push((Kind::Fact, id, bytes));
    }
    store.write_records(&batch, "neo: import", &who(), Timestamp(1_770_000_000), false).expect("write");
    git(&repo, &["gc", "-q"], None);
    let now = Timestamp(1_770_000_000 + 90 * 86_400);
    let session = || {
        Session::new(SessionOptions {
            dir: repo.clone(),
            git_dir: None,
            ref_name: None,
            identity: Some(who()),
            clock: Clock::Fixed(now),
            embedder: EmbedderChoice::Hash,
            scope: None,
            data_dir: None,
            config: Vec::new(),
        })
    };
    // Build the index once, outside the timings.
    session().reindex().expect("index");

    let mut load = Vec::new();
    let mut plan = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let snapshot = Store::discover(&repo, StoreOptions::default()).expect("store").load().expect("load");
        let folded = git_neo::state::fold(snapshot.records.into_iter().map(|r| (r.id, r.record)));
        load.push(t.elapsed());
        assert_eq!(folded.entries.len(), N);
        let mut s = session();
        let t = Instant::now();
        let r = s.curate(CurateOptions { dry_run: true, include_constraints: false }).expect("dry run");
        plan.push(t.elapsed());
        assert!(r.plan.after < N);
    }
    // The first curation through the command line, as a person runs it: time and peak memory
    // of the whole process (start-up and loading included).
    let (first_t, peak_mb, first) = cli_curate(&repo, now);
    let mut again: Vec<Duration> = Vec::new();
    for _ in 0..5 {
        let mut s = session();
        let t = Instant::now();
        let r = s.curate(CurateOptions::default()).expect("again");
        again.push(t.elapsed());
        assert_eq!(r.records, 0, "a second run wrote");
    }
    let base = median(load.clone());
    println!(
        "curation over {N} facts of real text: {name}, {} distinct (cap 500; medians of 5, the first curation once)",
        corpus.len().min(N)
    );
    println!("| step | time | × load |");
    println!("| --- | --- | --- |");
    println!("| load and fold the memory (baseline) | {} | 1.0 |", ms(base));
    let row =
        |name: &str, d: Duration| println!("| {name} | {} | {:.1} |", ms(d), d.as_secs_f64() / base.as_secs_f64());
    row("plan (dry run, own session)", median(plan));
    row(
        &format!(
            "first curation, `git neo curate --json` (peak RSS {peak_mb:.0} MB): {} records ({} evicted, {} pruned, {} merged into {}; {} current after)",
            first["records"],
            first["evicted"].as_array().map_or(0, Vec::len),
            first["pruned"].as_array().map_or(0, Vec::len),
            first["synthesized"].as_array().map_or(0, |s| s
                .iter()
                .map(|x| x["members"].as_array().map_or(0, Vec::len))
                .sum::<usize>()),
            first["synthesized"].as_array().map_or(0, Vec::len),
            first["after"]
        ),
        first_t,
    );
    row("second run right after (writes nothing)", median(again));
}

/// Run `git neo curate --json` on `repo` at `now`: wall time, peak RSS (MB) and its report.
// The child is reaped by `wait4` (for its rusage), which clippy does not see.
#[allow(clippy::zombie_processes)]
fn cli_curate(repo: &std::path::Path, now: Timestamp) -> (Duration, f64, serde_json::Value) {
    let out = tempfile::NamedTempFile::new().expect("temp file");
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_git-neo"))
        .current_dir(repo)
        .args(["curate", "--json"])
        .env("GIT_NEO_EMBEDDER", "hash")
        // In its own process: a bench leaves no background server behind.
        .env("GIT_NEO_DAEMON", "off")
        .env("GIT_NEO_NOW", now.0.to_string())
        .env("GIT_AUTHOR_NAME", "Bench")
        .env("GIT_AUTHOR_EMAIL", "bench@example.com")
        .env("NO_COLOR", "1")
        .stdout(out.reopen().expect("reopen"))
        .spawn()
        .expect("spawn git neo curate");
    let t = Instant::now();
    let (status, peak) = common::wait_peak(&child);
    let elapsed = t.elapsed();
    assert_eq!(status, 0, "git neo curate failed");
    let report = serde_json::from_str(&std::fs::read_to_string(out.path()).expect("report")).expect("json report");
    (elapsed, peak, report)
}
