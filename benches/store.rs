//! Store benchmarks, printed as a table (run with `cargo bench --bench store`).
//!
//! Each measurement runs beside its baseline in the same process and the same run, so the ratio
//! is meaningful on a noisy machine; medians are reported.
//! - in-process add: `Store::write_records` (one record, one commit, CAS) vs the same write through
//!   git plumbing (`hash-object -w`, three `mktree`, `commit-tree`, `update-ref` with the old value).
//! - whole-process add: the `git neo add` binary vs the same plumbing write.
//! - fold: load (read + hash + parse, in parallel) and fold of 10k and 100k packed records.

// Tests and benches print, read the environment and run processes freely (clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_macros)]

mod common;

use common::{fact, git, median, new_repo, who};
use git_neo::api::{Clock, Session, SessionOptions};
use git_neo::record::{Kind, RecordId, Timestamp};
use git_neo::state;
use git_neo::store::{Store, StoreOptions};
use std::collections::BTreeMap;
use std::process::Command;
use std::time::{Duration, Instant};

/// The first twelve words of the shared bench vocabulary (the texts this bench has always used).
const WORDS: &[&str] = common::W.split_at(12).0;

fn record(i: usize) -> (Kind, RecordId, Vec<u8>) {
    let w = |k: usize| WORDS[(i / (k + 1) + k * 7) % WORDS.len()];
    let mut tags = vec![w(4).to_string(), w(5).to_string()];
    tags.sort();
    tags.dedup();
    fact(
        i,
        format!("The {} {} must not block the {} ({i})", w(0), w(1), w(2)),
        format!("src/{}", w(3)),
        tags,
        format!(
            "When the {} is under load the {} retries. Seen in incident {i}; keep the {} bounded.\n",
            w(6),
            w(7),
            w(8)
        ),
    )
}

/// The plumbing baseline: the same one-record write with git subprocesses. The bench keeps the
/// current trees in memory (sparing the baseline any `ls-tree` calls), so it is a lower bound.
struct Plumbing {
    dir: std::path::PathBuf,
    leaves: BTreeMap<String, BTreeMap<String, String>>,
    format_blob: String,
    tip: Option<String>,
}

impl Plumbing {
    fn new(dir: std::path::PathBuf) -> Plumbing {
        let format_blob = git(&dir, &["hash-object", "-w", "--stdin"], Some(b"1\n"));
        Plumbing { dir, leaves: BTreeMap::new(), format_blob, tip: None }
    }

    fn write(&mut self, id: &RecordId, bytes: &[u8]) {
        let hex = id.to_hex();
        let blob = git(&self.dir, &["hash-object", "-w", "--stdin"], Some(bytes));
        let fan = hex[..2].to_string();
        let leaf = self.leaves.entry(fan.clone()).or_default();
        leaf.insert(format!("{hex}.md"), blob);
        let leaf_listing: String = leaf.iter().map(|(name, oid)| format!("100644 blob {oid}\t{name}\n")).collect();
        let leaf_tree = git(&self.dir, &["mktree"], Some(leaf_listing.as_bytes()));
        // Other fan-out trees are unchanged: a real tool would read their ids; we recompute none
        // of them, only the one that changed, and cache the rest here.
        LEAF_TREES.with(|m| m.borrow_mut().insert(fan.clone(), leaf_tree));
        let facts_listing: String =
            LEAF_TREES.with(|m| m.borrow().iter().map(|(n, t)| format!("040000 tree {t}\t{n}\n")).collect());
        let facts_tree = git(&self.dir, &["mktree"], Some(facts_listing.as_bytes()));
        let root_listing = format!("100644 blob {}\tFORMAT\n040000 tree {facts_tree}\tfacts\n", self.format_blob);
        let root = git(&self.dir, &["mktree"], Some(root_listing.as_bytes()));
        let mut args = vec!["commit-tree", root.as_str(), "-m", "neo: add fact"];
        let parent = self.tip.clone();
        if let Some(p) = &parent {
            args.push("-p");
            args.push(p);
        }
        let commit = git(&self.dir, &args, None);
        let old = parent.unwrap_or_else(|| "0".repeat(40));
        git(&self.dir, &["update-ref", "-m", "neo: add fact", "refs/heads/neo-memory", &commit, &old], None);
        self.tip = Some(commit);
    }
}

thread_local! {
    static LEAF_TREES: std::cell::RefCell<BTreeMap<String, String>> = const { std::cell::RefCell::new(BTreeMap::new()) };
}

fn row(name: &str, ours: Duration, base: Option<Duration>, note: &str) {
    let ratio = base.map(|b| format!("{:.1}x", b.as_secs_f64() / ours.as_secs_f64())).unwrap_or_else(|| "-".into());
    let base = base.map(|b| format!("{:.3} ms", b.as_secs_f64() * 1e3)).unwrap_or_else(|| "-".into());
    println!(
        "| {name:<38} | {:>12} | {base:>12} | {ratio:>7} | {note} |",
        format!("{:.3} ms", ours.as_secs_f64() * 1e3)
    );
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    // `--only add` skips the process and fold sections (handy under a profiler).
    let only_add = std::env::args().any(|a| a == "add");
    let only_fold = std::env::args().any(|a| a == "fold");
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path();
    println!("| measurement                            |  git-neo p50 | baseline p50 |   ratio | notes |");
    println!("|----------------------------------------|--------------|--------------|---------|-------|");

    // 1. In-process add vs plumbing, interleaved so both see the same machine load.
    if !only_fold {
        let n_add = if quick { 50 } else { 300 };
        let ours_repo = new_repo(root, "inproc");
        let base_repo = new_repo(root, "plumbing");
        let store = Store::discover(&ours_repo, StoreOptions::default()).expect("store");
        let mut plumbing = Plumbing::new(base_repo.clone());
        let (mut ours, mut base) = (Vec::new(), Vec::new());
        for i in 0..n_add {
            let rec = record(i);
            let t = Instant::now();
            store
                .write_records(std::slice::from_ref(&rec), "neo: add fact", &who(), Timestamp(1_770_000_000), false)
                .expect("write");
            ours.push(t.elapsed());
            let t = Instant::now();
            plumbing.write(&rec.1, &rec.2);
            base.push(t.elapsed());
        }
        assert_eq!(
            git(&ours_repo, &["ls-tree", "-r", "--name-only", "neo-memory", "facts"], None).lines().count(),
            n_add
        );
        assert_eq!(
            git(&base_repo, &["ls-tree", "-r", "--name-only", "neo-memory", "facts"], None).lines().count(),
            n_add
        );
        let (o, b) = (median(ours), median(base));
        row(
            "in-process add (1 record/commit)",
            o,
            Some(b),
            &format!("{n_add} writes each; {:.0} adds/s", 1.0 / o.as_secs_f64()),
        );

        if only_add {
            return;
        }

        // 2. Whole-process `git neo add` vs the same plumbing write.
        let n_proc = if quick { 20 } else { 100 };
        let cli_repo = new_repo(root, "cli");
        let (mut ours, mut base) = (Vec::new(), Vec::new());
        for i in 0..n_proc {
            let subject = format!("process add number {i}");
            let t = Instant::now();
            let out = Command::new(env!("CARGO_BIN_EXE_git-neo"))
                .current_dir(&cli_repo)
                // Like for like with the plumbing write, which decides no supersession.
                .args(["add", "-t", "pattern", "-s", &subject, "-b", "measured end to end", "--no-supersede"])
                .env("GIT_CONFIG_NOSYSTEM", "1")
                // In its own process: a bench leaves no background server behind.
                .env("GIT_NEO_DAEMON", "off")
                .output()
                .expect("run git-neo");
            ours.push(t.elapsed());
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            let rec = record(n_add + i);
            let t = Instant::now();
            plumbing.write(&rec.1, &rec.2);
            base.push(t.elapsed());
        }
        let ours_copy = ours.clone();
        row(
            "whole-process `git neo add`",
            median(ours),
            Some(median(base)),
            &format!("{n_proc} runs, --no-supersede; repo grows to {n_proc} records"),
        );

        // 2b. The default add, which compares the new fact with current facts of its type and
        // scope: with the model installed, that loads the model in every process.
        let mut checked = Vec::new();
        for i in 0..10 {
            let subject = format!("similarity-checked add {i} about {}", WORDS[i % WORDS.len()]);
            let t = Instant::now();
            let out = Command::new(env!("CARGO_BIN_EXE_git-neo"))
                .current_dir(&cli_repo)
                .args(["add", "-t", "pattern", "-s", &subject, "-b", "measured end to end"])
                .env("GIT_CONFIG_NOSYSTEM", "1")
                // In its own process: a bench leaves no background server behind.
                .env("GIT_NEO_DAEMON", "off")
                .output()
                .expect("run git-neo");
            checked.push(t.elapsed());
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        }
        row(
            "whole-process add, similarity checked",
            median(checked),
            Some(median(ours_copy)),
            "10 runs; baseline column: the --no-supersede add above (model load when installed)",
        );
    }

    // 3. Fold at 10k and 100k packed records.
    let sizes: &[usize] = if quick { &[10_000] } else { &[10_000, 100_000] };
    for &n in sizes {
        let repo = new_repo(root, &format!("fold{n}"));
        let store = Store::discover(&repo, StoreOptions::default()).expect("store");
        let t = Instant::now();
        for start in (0..n).step_by(10_000) {
            let batch: Vec<_> = (start..(start + 10_000).min(n)).map(record).collect();
            store.write_records(&batch, "neo: import", &who(), Timestamp(1_770_000_000), false).expect("bulk write");
        }
        git(&repo, &["repack", "-adq"], None);
        git(&repo, &["prune-packed"], None);
        let setup = t.elapsed();
        let runs = std::env::var("NEO_BENCH_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(if n >= 100_000 {
            5
        } else {
            9
        });
        let (mut load, mut fold, mut total) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..runs {
            let store = Store::discover(&repo, StoreOptions::default()).expect("store");
            let t = Instant::now();
            let snap = store.load().expect("load");
            let loaded = t.elapsed();
            assert_eq!(snap.records.len(), n);
            assert!(snap.invalid.is_empty());
            let t2 = Instant::now();
            let st = state::fold(snap.records.into_iter().map(|r| (r.id, r.record)));
            fold.push(t2.elapsed());
            load.push(loaded);
            total.push(t.elapsed());
            assert_eq!(st.entries.len(), n);
        }
        let t = Instant::now();
        // A session's first read of the memory (what every command pays before its work).
        let mut session = Session::new(SessionOptions {
            dir: repo.clone(),
            git_dir: None,
            ref_name: None,
            identity: None,
            clock: Clock::Fixed(Timestamp(1_780_000_000)),
            embedder: git_neo::embed::EmbedderChoice::Off,
            scope: None,
            data_dir: None,
            config: Vec::new(),
        });
        assert!(session.fetched().expect("read the memory").is_empty());
        let via_api = t.elapsed();
        row(
            &format!("load + fold, {}k packed records", n / 1000),
            median(total),
            None,
            &format!(
                "load {:.0} ms + fold {:.0} ms (p50 of {runs}); a session's first read {:.0} ms; setup {:.1} s; {} threads",
                median(load).as_secs_f64() * 1e3,
                median(fold).as_secs_f64() * 1e3,
                via_api.as_secs_f64() * 1e3,
                setup.as_secs_f64(),
                rayon::current_num_threads()
            ),
        );
    }
}
