//! Outcome detection on a history nobody here wrote (`cargo bench --bench field`): hashbrown's
//! releases 0.14.5, 0.15.5, 0.16.1 and 0.17.2, from the crate sources in the cargo registry cache,
//! one commit per release (a rename of `src/raw/mod.rs` to `src/raw.rs`, the raw-entry API moved to
//! a file of its own, signatures rewritten, functions added). Anchored facts and suggestions are
//! written at the first release, as a team adopting git-neo would, months later (so the records are
//! newer than every commit: they are scanned from their anchor commit). `git neo outcomes` then
//! replays the three releases, and each signal is compared with the labels kept beside it
//! (`fixtures/field/hashbrown.tsv`, which says how they were decided): right, wrong (a signal the
//! labels do not expect, or at another release) or missed; the rows labelled quiet that stayed
//! quiet are counted apart. Needs no model. `-- --binary PATH` runs another git-neo build instead
//! (the records are written and scanned by it), to compare; `-- --since-first` scans with
//! `--since <first release>`; `-- --dated-first` dates the records just after the first release
//! instead of months later (a build that scans by the records' time then sees the releases too).

// Tests and benches print, read the environment and run processes freely (clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_macros)]

mod common;

use common::{git_with, registry_root};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

const VERSIONS: [&str; 4] = ["0.14.5", "0.15.5", "0.16.1", "0.17.2"];
/// The records' clock: months after the last release's commit.
const NOW: &str = "2024-09-01T00:00:00Z";

struct Label {
    name: String,
    kind: String,
    anchor: String,
    suggestion: String,
    expected: BTreeSet<(String, String)>,
}

fn labels() -> Vec<Label> {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/field/hashbrown.tsv"))
        .expect("read the labels");
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f.len(), 5, "five columns: {l}");
            let expected = f[4]
                .split(',')
                .map(str::trim)
                .filter(|e| *e != "-" && !e.is_empty())
                .map(|e| {
                    let (s, v) = e.split_once('@').expect("signal@version");
                    (s.to_string(), v.to_string())
                })
                .collect();
            Label {
                name: f[0].into(),
                kind: f[1].into(),
                anchor: f[2].into(),
                suggestion: f[3].replace("\\n", "\n"),
                expected,
            }
        })
        .collect()
}

fn crate_dir(version: &str) -> Option<PathBuf> {
    std::fs::read_dir(registry_root())
        .ok()?
        .flatten()
        .map(|r| r.path().join(format!("hashbrown-{version}")))
        .find(|p| p.is_dir())
}

fn copy_tree(from: &Path, to: &Path) {
    for e in std::fs::read_dir(from).expect("read the crate").flatten() {
        let name = e.file_name();
        let n = name.to_string_lossy();
        if n.starts_with(".cargo") || n == "Cargo.toml.orig" || n == ".git" {
            continue;
        }
        let target = to.join(&name);
        if e.path().is_dir() {
            std::fs::create_dir_all(&target).expect("mkdir");
            copy_tree(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).expect("copy");
        }
    }
}

fn binary() -> String {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == "--binary")
        .and_then(|i| args.get(i + 1).cloned())
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_git-neo").to_string())
}

fn neo_at(repo: &Path, args: &[&str], now: &str) -> String {
    let out = command(repo, args, now).output().expect("run git-neo");
    assert!(out.status.success(), "git neo {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Run `git neo` with `args` and return its stdout and its own peak resident memory (MB).
// The child is reaped by `wait4` (for its rusage), which clippy does not see.
#[allow(clippy::zombie_processes)]
fn neo_peak(repo: &Path, args: &[&str]) -> (String, f64) {
    let out = tempfile::NamedTempFile::new().expect("temp file");
    let child = command(repo, args, NOW).stdout(out.reopen().expect("reopen")).spawn().expect("spawn git-neo");
    let (status, peak) = common::wait_peak(&child);
    assert_eq!(status, 0, "git neo {args:?} failed");
    (std::fs::read_to_string(out.path()).expect("read the output"), peak)
}

fn command(repo: &Path, args: &[&str], now: &str) -> Command {
    let mut cmd = Command::new(binary());
    cmd.current_dir(repo)
        .args(args)
        .env("GIT_NEO_NOW", now)
        .env("GIT_NEO_EMBEDDER", "none")
        .env("GIT_NEO_DAEMON", "off")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "Bench")
        .env("GIT_AUTHOR_EMAIL", "bench@example.com");
    cmd
}

fn main() {
    let dirs: Vec<Option<PathBuf>> = VERSIONS.iter().map(|v| crate_dir(v)).collect();
    if dirs.iter().any(Option::is_none) {
        println!("skipped: the cargo registry cache does not hold hashbrown {}", VERSIONS.join(", "));
        return;
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let repo = common::new_repo(tmp.path(), "hashbrown");
    for (i, (v, dir)) in VERSIONS.iter().zip(&dirs).enumerate() {
        for e in std::fs::read_dir(&repo).expect("read").flatten() {
            if e.file_name() != ".git" {
                let p = e.path();
                if p.is_dir() {
                    std::fs::remove_dir_all(&p).expect("clear");
                } else {
                    std::fs::remove_file(&p).expect("clear");
                }
            }
        }
        copy_tree(dir.as_ref().expect("checked"), &repo);
        let date = format!("2024-0{}-01T12:00:00Z", i + 1);
        let env = [("GIT_AUTHOR_DATE", date.as_str()), ("GIT_COMMITTER_DATE", date.as_str())];
        git_with(&repo, &["add", "-A"], None, &env);
        git_with(&repo, &["commit", "-q", "-m", &format!("hashbrown {v}")], None, &env);
    }
    let commits: Vec<(String, String)> = common::git(&repo, &["log", "--format=%H %s"], None)
        .lines()
        .filter_map(|l| l.split_once(' ').map(|(h, s)| (h.to_string(), s.trim_start_matches("hashbrown ").to_string())))
        .collect();
    let first = &commits.last().expect("commits").0;

    // The records, written at the first release.
    let labels = labels();
    common::git(&repo, &["checkout", "-q", first], None);
    let mut ids = Vec::new();
    for l in &labels {
        let subject = format!("Field label {}", l.name);
        let mut args = vec!["add", "-t", "pattern", "-s", subject.as_str(), "--anchor", l.anchor.as_str()];
        if l.kind == "suggestion" {
            args.extend(["--suggestion", l.suggestion.as_str()]);
        }
        let at = if std::env::args().any(|a| a == "--dated-first") { "2024-01-01T12:30:00Z" } else { NOW };
        ids.push(neo_at(&repo, &args, at));
    }
    common::git(&repo, &["checkout", "-q", "-"], None);

    let t = std::time::Instant::now();
    let since_first = std::env::args().any(|a| a == "--since-first");
    let scan: Vec<&str> =
        if since_first { vec!["outcomes", "--since", first.as_str(), "--json"] } else { vec!["outcomes", "--json"] };
    let (printed, peak) = neo_peak(&repo, &scan);
    let secs = t.elapsed().as_secs_f64();
    let report: serde_json::Value = serde_json::from_str(&printed).expect("json");
    let version_of =
        |commit: &str| commits.iter().find(|(h, _)| h == commit).map(|(_, v)| v.clone()).unwrap_or_default();
    let found: Vec<(usize, String, String, String)> = report["outcomes"]
        .as_array()
        .expect("outcomes")
        .iter()
        .filter_map(|o| {
            let i = ids.iter().position(|id| Some(id.as_str()) == o["target"].as_str())?;
            let signal = o["signal"].as_str()?.to_string();
            Some((i, signal, version_of(o["commit"].as_str()?), o["why"].as_str().unwrap_or("").to_string()))
        })
        .collect();

    println!("\n| record | expected | found | verdict |\n|---|---|---|---|");
    let (mut right, mut wrong, mut missed, mut quiet) = (0, 0, 0, 0);
    for (i, l) in labels.iter().enumerate() {
        let got: BTreeSet<(String, String)> =
            found.iter().filter(|f| f.0 == i).map(|f| (f.1.clone(), f.2.clone())).collect();
        let show = |s: &BTreeSet<(String, String)>| {
            if s.is_empty() {
                "-".to_string()
            } else {
                s.iter().map(|(a, b)| format!("{a}@{b}")).collect::<Vec<_>>().join(", ")
            }
        };
        let r = l.expected.intersection(&got).count();
        let w = got.difference(&l.expected).count();
        let m = l.expected.difference(&got).count();
        right += r;
        wrong += w;
        missed += m;
        let verdict = if l.expected.is_empty() && got.is_empty() {
            quiet += 1;
            "quiet, right".to_string()
        } else {
            [(r, "right"), (w, "wrong"), (m, "missed")]
                .iter()
                .filter(|(n, _)| *n > 0)
                .map(|(n, s)| format!("{n} {s}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        println!("| {} | {} | {} | {verdict} |", l.name, show(&l.expected), show(&got));
    }
    println!(
        "\nsignals expected: {}; right {right}, wrong {wrong}, missed {missed}; quiet rows that stayed quiet: {quiet} of {}",
        labels.iter().map(|l| l.expected.len()).sum::<usize>(),
        labels.iter().filter(|l| l.expected.is_empty()).count()
    );
    println!("{} commits scanned in {:.2} s, peak RSS {peak:.0} MB", report["commits"], secs);
    if std::env::args().any(|a| a == "--why") {
        for (i, s, v, why) in &found {
            println!("{} {s}@{v}: {why}", labels[*i].name);
        }
    }
}
