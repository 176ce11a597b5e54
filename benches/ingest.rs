//! Day one on real text (`cargo bench --bench ingest`): the READMEs and docs of the crates in the
//! cargo registry cache committed into a repository as `docs/<crate>/…`, then `git neo ingest
//! docs` as a person runs it (a whole process), again with nothing changed, again after a tenth
//! of the documents changed (ingest embeds new sections with the model, so recall does not); recall
//! with the documents layer, the first time after ingest and warm; and the instruction files found there (AGENTS.md,
//! CLAUDE.md, CONTRIBUTING.md) imported with `--dry-run`, counted by type. Needs the model for the
//! recall rows (scripts/install-model.sh); prints a table of p50s and counts.

// Tests and benches print, read the environment and run processes freely (clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_macros)]

mod common;

use common::{cache_root, git, median, ms, new_repo};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

fn neo(repo: &Path, args: &[&str]) -> (Duration, String) {
    let t = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_git-neo"))
        .current_dir(repo)
        .env("GIT_NEO_CACHE_DIR", cache_root())
        .env("GIT_NEO_DAEMON", "off")
        .env("GIT_NEO_DATA_DIR", repo.join(".git/bench-data"))
        .env("GIT_AUTHOR_NAME", "Bench")
        .env("GIT_AUTHOR_EMAIL", "bench@example.com")
        .args(args)
        .output()
        .expect("run git-neo");
    let took = t.elapsed();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    (took, String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Markdown documents of the registry's crates (README.md and docs/*.md), at most `n`.
fn documents(n: usize) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    let mut crates: Vec<PathBuf> = std::fs::read_dir(common::registry_root())
        .into_iter()
        .flatten()
        .flatten()
        .flat_map(|reg| std::fs::read_dir(reg.path()).into_iter().flatten().flatten().map(|c| c.path()))
        .collect();
    crates.sort();
    for c in crates {
        let name = c.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let mut files = vec![c.join("README.md")];
        files.extend(
            std::fs::read_dir(c.join("docs"))
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "md")),
        );
        for f in files.into_iter().filter(|f| f.is_file()) {
            let rel = format!("{name}/{}", f.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default());
            out.push((rel, f));
            if out.len() == n {
                return out;
            }
        }
    }
    out
}

fn main() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let repo = new_repo(tmp.path(), "r");
    let docs = documents(500);
    for (rel, from) in &docs {
        let to = repo.join("docs").join(rel);
        std::fs::create_dir_all(to.parent().expect("parent")).expect("mkdir");
        std::fs::copy(from, &to).expect("copy");
    }
    git(&repo, &["add", "."], None);
    git(&repo, &["commit", "-qm", "docs"], None);
    println!("| step | p50 | notes |\n|---|---|---|");
    let (first, out) = neo(&repo, &["ingest", "docs", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    let sections: u64 = v["documents"].as_array().into_iter().flatten().filter_map(|d| d["sections"].as_u64()).sum();
    println!(
        "| `git neo ingest docs`, {} documents | {} | {sections} sections, one commit, every section embedded |",
        docs.len(),
        ms(first)
    );
    let again: Vec<Duration> = (0..5).map(|_| neo(&repo, &["ingest", "docs"]).0).collect();
    println!("| ingest again, nothing changed | {} | |", ms(median(again)));
    for (rel, _) in docs.iter().step_by(10) {
        let p = repo.join("docs").join(rel);
        let text = std::fs::read_to_string(&p).unwrap_or_default();
        std::fs::write(&p, format!("{text}\n## Changed\n\nA new section.\n")).expect("write");
    }
    git(&repo, &["commit", "-qam", "a tenth changed"], None);
    let (changed, _) = neo(&repo, &["ingest", "docs"]);
    println!(
        "| ingest after a tenth changed | {} | {} new versions, their sections embedded |",
        ms(changed),
        docs.len().div_ceil(10)
    );
    let queries = [
        "how do I enable the serde feature",
        "minimum supported rust version policy",
        "how to contribute and run the tests",
    ];
    let (cold, _) = neo(&repo, &["recall", queries[0], "--json"]);
    println!("| recall, first after ingest | {} | own process, model load included |", ms(cold));
    let warm: Vec<Duration> = (0..9).map(|i| neo(&repo, &["recall", queries[i % 3], "--json"]).0).collect();
    println!("| recall, warm (section vectors cached) | {} | own process, model load included |", ms(median(warm)));
    let (_, out) = neo(&repo, &["recall", queries[2], "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    let hits: Vec<String> = v["documents"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|d| format!("{}#{}", d["path"].as_str().unwrap_or(""), d["heading"].as_str().unwrap_or("")))
        .collect();
    println!("| documents for {:?} | | {} |", queries[2], hits.join(", "));

    // Instruction files nobody here wrote, imported with a dry run.
    let mut found = Vec::new();
    for reg in std::fs::read_dir(common::registry_root()).into_iter().flatten().flatten() {
        for c in std::fs::read_dir(reg.path()).into_iter().flatten().flatten() {
            for (name, format) in
                [("AGENTS.md", "agents-md"), ("CLAUDE.md", "claude-md"), ("CONTRIBUTING.md", "agents-md")]
            {
                let p = c.path().join(name);
                if p.is_file() {
                    found.push((p, format));
                }
            }
        }
    }
    found.sort();
    let mut types: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
    let mut times = Vec::new();
    for (p, format) in &found {
        let (t, out) = neo(&repo, &["import", "--from", format, &p.to_string_lossy(), "--dry-run"]);
        times.push(t);
        for line in out.lines() {
            let v: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
            *types.entry(v["type"].as_str().unwrap_or("").to_string()).or_default() += 1;
        }
    }
    let counts: Vec<String> = types.iter().map(|(t, n)| format!("{t} {n}")).collect();
    println!(
        "| `import --from … --dry-run`, {} instruction files | {} | {} |",
        found.len(),
        if times.is_empty() { "-".into() } else { ms(median(times)) },
        counts.join(", ")
    );
}
