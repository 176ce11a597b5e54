//! Outcome detection benchmarks, printed as a table (`cargo bench --bench outcomes`; `-- --quick`
//! for a 300-commit history).
//!
//! Builds the fixture history (fixtures/outcomes/build-history.sh) with about 1,000 commits, then
//! measures: a full scan (commits per second; p50 of 3 scans from the root, the first of which
//! writes the outcomes), and the latency `git neo hooks install` adds to `git commit` (p50 of 15
//! commits with and without the hooks, in the same run).

// Tests and benches print, read the environment and run processes freely (clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_macros)]

mod common;

use common::{git_with, median, ms};
use git_neo::api::{Clock, Session, SessionOptions};
use git_neo::record::Timestamp;
use git_neo::store::{Store, StoreOptions};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let filler = if quick { 300 } else { 1_000 };
    let tmp = tempfile::tempdir().expect("tempdir");
    let repo = tmp.path().join("history");
    let bin = env!("CARGO_BIN_EXE_git-neo");
    let out = Command::new("bash")
        .args([
            concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/outcomes/build-history.sh"),
            repo.to_str().expect("utf-8"),
            bin,
        ])
        .arg(filler.to_string())
        .output()
        .expect("fixture");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let store = Store::discover(&repo, StoreOptions::default()).expect("store");
    let tip = store.resolve_commit("HEAD").expect("HEAD");
    let root = store.first_parent_chain(tip, None, usize::MAX).expect("chain")[0].id;
    let commits = store.first_parent_chain(tip, Some(root), usize::MAX).expect("chain").len();

    let mut scans = Vec::new();
    let mut found = 0;
    for _ in 0..3 {
        // Every outcome of the history in one scan from the root: no caps.
        let mut session = Session::new(SessionOptions {
            dir: repo.clone(),
            git_dir: None,
            ref_name: None,
            identity: Some(common::who()),
            clock: Clock::Fixed(Timestamp(1_780_000_000)),
            embedder: git_neo::embed::EmbedderChoice::Off,
            scope: None,
            data_dir: None,
            config: vec![
                format!("neo.outcomes.maxPerScan={}", u32::MAX),
                format!("neo.outcomes.maxPerRecordPerDay={}", u32::MAX),
            ],
        });
        let t = Instant::now();
        let report = session.outcomes(Some("main"), Some(&root.to_string())).expect("scan");
        scans.push(t.elapsed());
        found = report.outcomes.len();
    }
    let scan = median(scans);
    println!("| measurement | value | notes |\n|---|---|---|");
    println!(
        "| full outcome scan, {commits} commits | {} | {:.0} commits/s (target >= 200); {found} outcomes; p50 of 3 |",
        ms(scan),
        commits as f64 / scan.as_secs_f64()
    );

    // The hooks' added latency on `git commit`.
    let bin_dir = Path::new(bin).parent().expect("dir").display().to_string();
    let path_env = format!("{bin_dir}:{}", std::env::var("PATH").unwrap_or_default());
    let commit_times = |n: usize, tag: &str| -> Duration {
        let mut v = Vec::new();
        for i in 0..n {
            std::fs::write(repo.join("notes/bench.txt"), format!("{tag} {i}\n")).expect("write");
            git_with(&repo, &["add", "-A"], None, &[("PATH", &path_env), ("GIT_NEO_EMBEDDER", "none")]);
            let t = Instant::now();
            git_with(
                &repo,
                &["commit", "-qm", &format!("bench {tag} {i}")],
                None,
                &[("PATH", &path_env), ("GIT_NEO_EMBEDDER", "none")],
            );
            v.push(t.elapsed());
        }
        median(v)
    };
    let without = commit_times(15, "plain");
    let ok = Command::new(bin).current_dir(&repo).args(["hooks", "install"]).output().expect("install");
    assert!(ok.status.success());
    let with = commit_times(15, "hooked");
    std::thread::sleep(Duration::from_secs(2)); // let the last background scans finish
    println!(
        "| `git commit` with the outcome hooks | {} vs {} without | +{} (the scan runs in the background) |",
        ms(with),
        ms(without),
        ms(with.saturating_sub(without))
    );
}
