//! `git neo import` at scale, the frame rule on, printed as a table (`cargo bench --bench import`;
//! `-- --baseline PATH` to time another git-neo binary beside this one, in the same run).
//!
//! Lines of one kind of thing ("Service 426 uses queue q982 for its jobs": one thing, a value in
//! each subject), lines about one thing that each update the last ("The worker pool uses queue
//! q17 for its jobs"), and varied lines (README sentences of the crates in the registry cache), at
//! 1,000, 3,000 and 10,000 lines: seconds per import (median of three), milliseconds per line, and
//! the time per line against the 1,000-line run of the same shape (linear: about 1.0x).

// Tests and benches print, read the environment and run processes freely (clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_macros)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

fn lines(shape: &str, n: usize, readme: &[String]) -> String {
    let mut out = String::new();
    for i in 0..n {
        let subject = match shape {
            "one kind of thing" => format!("Service {} uses queue q{} for its jobs", 100 + i, (i * 7919) % 100_000),
            "one thing, updated" => format!("The worker pool uses queue q{} for its jobs", i + 1),
            _ => readme[i % readme.len()].clone(),
        };
        out.push_str(&serde_json::json!({"type": "architecture", "subject": subject}).to_string());
        out.push('\n');
    }
    out
}

fn import(bin: &Path, root: &Path, name: &str, file: &Path) -> f64 {
    let repo = common::new_repo(root, name);
    let mut cmd = Command::new(bin);
    cmd.current_dir(&repo)
        .env("GIT_NEO_EMBEDDER", "none")
        .env("GIT_NEO_DAEMON", "off")
        .env("GIT_AUTHOR_NAME", "Bench")
        .env("GIT_AUTHOR_EMAIL", "bench@example.com")
        .args(["import", &file.to_string_lossy(), "--json"]);
    let started = Instant::now();
    let out = cmd.output().expect("run git-neo import");
    let took = started.elapsed().as_secs_f64();
    assert!(out.status.success(), "import failed: {}", String::from_utf8_lossy(&out.stderr));
    took
}

fn readme_lines() -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(common::registry_root())
        .into_iter()
        .flatten()
        .flatten()
        .flat_map(|r| std::fs::read_dir(r.path()).into_iter().flatten().flatten().map(|c| c.path()))
        .collect();
    dirs.sort();
    for d in dirs {
        let text = std::fs::read_to_string(d.join("README.md")).unwrap_or_default();
        for para in text.split("\n\n") {
            let l = para.split_whitespace().collect::<Vec<_>>().join(" ");
            if (40..=180).contains(&l.len())
                && l.chars().next().is_some_and(char::is_alphabetic)
                && !l.contains(['[', '<'])
            {
                out.push(l);
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mut bins: Vec<(String, PathBuf)> = vec![("this".into(), PathBuf::from(env!("CARGO_BIN_EXE_git-neo")))];
    if let Some(w) = args.windows(2).find(|w| w[0] == "--baseline") {
        bins.push(("baseline".into(), PathBuf::from(&w[1])));
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let readme = readme_lines();
    println!("| binary | shape | lines | import (median of 3; one run past 30 s) | ms per line | per line vs 1,000 |");
    println!("|---|---|---|---|---|---|");
    for shape in ["one kind of thing", "one thing, updated", "varied (README sentences)"] {
        for (label, bin) in &bins {
            let mut per_1000 = None;
            for n in [1_000, 3_000, 10_000] {
                let file = tmp.path().join(format!("{}-{n}.jsonl", shape.len()));
                std::fs::write(&file, lines(shape, n, &readme)).expect("write");
                // The median of three; a run past 30 s is not repeated (an import that slow is
                // measured well enough once).
                let mut times = Vec::new();
                for r in 0..3 {
                    let t = import(bin, tmp.path(), &format!("{label}-{}-{n}-{r}", shape.len()), &file);
                    times.push(t);
                    if t > 30.0 {
                        break;
                    }
                }
                times.sort_by(f64::total_cmp);
                let t = times[times.len() / 2];
                let per = t * 1000.0 / n as f64;
                let base = *per_1000.get_or_insert(per);
                println!("| {label} | {shape} | {n} | {t:.2} s | {per:.3} | {:.2}x |", per / base);
            }
        }
    }
}
