//! Helpers every benchmark binary shares: git with a fixed identity, scratch repositories, the
//! record builder, medians and formatting. (Not every binary uses every helper.)
#![allow(dead_code)]

pub mod conversation;

use git_neo::record::{Fact, FactType, Kind, Payload, Record, RecordId, Timestamp};
use git_neo::store::Identity;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// Run git in `dir` with the bench identity, no system config and `env` on top; assert success
/// and return stdout, trimmed.
pub fn git_with(dir: &Path, args: &[&str], stdin: Option<&[u8]>, env: &[(&str, &str)]) -> String {
    let mut cmd = Command::new("git");
    cmd.current_dir(dir)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "Bench")
        .env("GIT_AUTHOR_EMAIL", "bench@example.com")
        .env("GIT_COMMITTER_NAME", "Bench")
        .env("GIT_COMMITTER_EMAIL", "bench@example.com")
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("spawn git");
    if let Some(input) = stdin {
        child.stdin.take().expect("stdin").write_all(input).expect("write to git");
    }
    let out = child.wait_with_output().expect("wait for git");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// [`git_with`] without extra environment.
pub fn git(dir: &Path, args: &[&str], stdin: Option<&[u8]>) -> String {
    git_with(dir, args, stdin, &[])
}

/// A new repository `root/name` with the bench identity configured.
pub fn new_repo(root: &Path, name: &str) -> PathBuf {
    let p = root.join(name);
    std::fs::create_dir_all(&p).expect("mkdir");
    git(&p, &["init", "-q"], None);
    git(&p, &["config", "user.name", "Bench"], None);
    git(&p, &["config", "user.email", "bench@example.com"], None);
    p
}

pub fn who() -> Identity {
    Identity { name: "Bench".into(), email: "bench@example.com".into() }
}

/// An encoded observed fact written by the bench author at `1_770_000_000 + i` seconds.
pub fn fact(i: usize, subject: String, scope: String, tags: Vec<String>, body: String) -> (Kind, RecordId, Vec<u8>) {
    let r = Record {
        kind: Kind::Fact,
        payload: Payload::Fact(Fact { scope, tags, ..Fact::new(FactType::ALL[i % FactType::ALL.len()], subject) }),
        author: "Bench <bench@example.com>".into(),
        created_at: Timestamp(1_770_000_000 + i as i64),
        body,
    };
    let (id, bytes) = r.encode();
    (Kind::Fact, id, bytes)
}

pub fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

pub fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

/// The vocabulary of the synthetic bench facts.
pub const W: &[&str] = &[
    "cache",
    "retry",
    "schema",
    "deploy",
    "token",
    "index",
    "parser",
    "queue",
    "lock",
    "migration",
    "payments",
    "auth",
    "ledger",
    "refund",
    "webhook",
    "tenant",
    "shard",
    "replica",
    "backup",
    "metrics",
    "alert",
    "quota",
    "session",
    "export",
];

/// The word `k` of synthetic fact `i`.
pub fn word(i: usize, k: usize) -> &'static str {
    W[(i / (k + 1) + k * 7 + i % 5) % W.len()]
}

/// The subject of synthetic fact `i`.
pub fn subject(i: usize) -> String {
    format!("The {} {} must not block the {} in service {}", word(i, 0), word(i, 1), word(i, 2), i % 97)
}

/// Where the model is installed: `GIT_NEO_CACHE_DIR`, else `~/.cache/git-neo`.
pub fn cache_root() -> PathBuf {
    std::env::var_os("GIT_NEO_CACHE_DIR")
        .map(Into::into)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache/git-neo"))
}

/// The cargo registry's unpacked crates: `$CARGO_HOME/registry/src` (default `~/.cargo`).
pub fn registry_root() -> PathBuf {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cargo"));
    home.join("registry/src")
}

/// Wait for `child` (spawned just now) and return its exit status and peak resident memory in
/// MB, from `wait4`'s resource usage: the child's own peak, not this process's.
pub fn wait_peak(child: &std::process::Child) -> (i32, f64) {
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to fill in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child, whose pid we hold; `status` and `usage` outlive the call.
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as i32, "wait4");
    (status, usage.ru_maxrss as f64 / 1024.0)
}

/// Every file under `dir` whose name ends with `ext`, sorted.
fn files(dir: &std::path::Path, ext: &str, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            files(&p, ext, out);
        } else if p.to_string_lossy().ends_with(ext) {
            out.push(p);
        }
    }
}

/// The crates' markdown (READMEs first), then their Rust sources.
fn registry_texts() -> Vec<PathBuf> {
    let root = registry_root();
    let (mut readmes, mut md, mut rs) = (Vec::new(), Vec::new(), Vec::new());
    files(&root, ".md", &mut md);
    files(&root, ".rs", &mut rs);
    md.retain(|p| {
        let readme = p.file_name().is_some_and(|n| n == "README.md");
        if readme {
            readmes.push(p.clone());
        }
        !readme
    });
    readmes.into_iter().chain(md).chain(rs).collect()
}

/// (short texts, long texts) from the registry cache's crates (text nobody here wrote)'s markdown and sources, deterministic.
pub fn registry_corpus(short_n: usize, long_n: usize) -> (Vec<String>, Vec<String>) {
    let (mut short, mut long) = (Vec::new(), Vec::new());
    for path in registry_texts() {
        let Ok(text) = std::fs::read_to_string(&path) else { continue };
        let paragraphs: Vec<String> = text
            .split("\n\n")
            .map(|p| p.split_whitespace().collect::<Vec<_>>().join(" "))
            .filter(|p| p.len() > 40 && !p.starts_with('[') && !p.starts_with('<') && !p.starts_with('|'))
            .collect();
        for p in &paragraphs {
            if short.len() < short_n
                && path.extension().is_some_and(|e| e == "md")
                && (60..=300).contains(&p.len())
                && p.chars().next().is_some_and(char::is_alphabetic)
            {
                short.push(p.clone());
            }
        }
        let mut acc = String::new();
        for p in paragraphs {
            if long.len() >= long_n {
                break;
            }
            acc.push_str(&p);
            acc.push('\n');
            if acc.len() >= 1_200 {
                acc.truncate(acc.char_indices().nth(2_000).map_or(acc.len(), |(i, _)| i));
                long.push(std::mem::take(&mut acc));
            }
        }
        if short.len() >= short_n && long.len() >= long_n {
            break;
        }
    }
    (short, long)
}
