//! Whole-process commands, as a person or a hook runs them, printed as a table
//! (`cargo bench --bench commands`; `-- --size N` for one memory size, `-- --baseline PATH` to
//! measure another git-neo binary beside this one in the same run).
//!
//! Needs the real model (scripts/install-model.sh). Per memory size (1k, 10k, 100k facts):
//! `git neo recall` and `git neo add` (a fact of a type the memory already holds, so the
//! similarity check runs) p50, in their own process (`GIT_NEO_DAEMON=off`) and through the
//! background server; the prompt hook through the server; `add_fact` (a new fact, and a
//! near-duplicate that supersedes one) and `recall` through a warm `git neo mcp`. New facts are
//! sentences from the READMEs in the cargo registry cache; the index is caught up before timing.
//! Then the same memory with a user memory (1k facts) and an org memory (5k facts) beside it:
//! recall reads all three scopes, ranked together (docs/scopes.md), by each binary.
//! `-- --scopes`: only these three-scope rows.
//!
//! `-- --interleaved --baseline PATH`: only `add` and `recall` through each binary's warm server,
//! the two binaries alternating call by call (see [`interleaved`]).
//!
//! Every recall asks something new (a real sentence's first words): query vectors are memoised,
//! and a repeated query would answer in a third of the time.
//!
//! `-- --first`: only the first command in a fresh clone. Ten times over, a new repository whose
//! ref holds 100 facts (as a clone receives them: no index) answers `git neo recall` with no
//! server running, then another with the user's server up for the first, then `git neo hook
//! prompt` in a third with no server running.
//!
//! `-- --writes N`: N `add_fact` calls in a row through a warm `git neo mcp` at 10k facts (1,500
//! unless given), the slowest calls listed (see [`writes`]).
//!
//! `-- --fleet`: twenty repositories of 1,000 facts each, touched one after another by `git neo
//! add` and `git neo recall`: how many servers are left, and their resident memory in all.

// Tests and benches print, read the environment and run processes freely (clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_macros)]

mod common;

use common::{cache_root, fact, git, median, ms, new_repo, subject, who, W};
use git_neo::record::Timestamp;
use git_neo::store::{Store, StoreOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Sentences from the READMEs of the crates in the cargo registry cache: new facts that are not
/// near-duplicates of each other (text nobody here wrote), one line each.
fn real_sentences(n: usize) -> Vec<String> {
    let mut readmes = Vec::new();
    for reg in std::fs::read_dir(common::registry_root()).into_iter().flatten().flatten() {
        for c in std::fs::read_dir(reg.path()).into_iter().flatten().flatten() {
            let p = c.path().join("README.md");
            if p.exists() {
                readmes.push(p);
            }
        }
    }
    readmes.sort();
    let mut out: Vec<String> = Vec::new();
    for p in readmes {
        let text = std::fs::read_to_string(p).unwrap_or_default();
        for para in text.split("\n\n") {
            let line = para.split_whitespace().collect::<Vec<_>>().join(" ");
            let ok = (40..=180).contains(&line.len())
                && line.chars().next().is_some_and(char::is_alphabetic)
                && !line.contains('[')
                && !line.contains('<')
                && !out.contains(&line);
            if ok {
                out.push(line);
            }
            if out.len() == n {
                return out;
            }
        }
    }
    out
}

/// A `git neo` command of `exe` in `repo`, with the model, the daemon on or off, and a private
/// socket directory.
fn neo(exe: &Path, repo: &Path, daemon: bool, run: &Path) -> Command {
    let mut c = Command::new(exe);
    // User and org memories live here, never in the bench runner's own data directory.
    let data = DATA.lock().map(|d| d.clone()).unwrap_or_default().unwrap_or_else(|| run.join("data"));
    c.current_dir(repo)
        .env("GIT_NEO_DATA_DIR", data)
        .env("GIT_NEO_CACHE_DIR", cache_root())
        .env("GIT_NEO_DAEMON", if daemon { "on" } else { "off" })
        .env("GIT_NEO_DAEMON_IDLE", "120")
        .env("XDG_RUNTIME_DIR", run)
        .env("GIT_AUTHOR_NAME", "Bench")
        .env("GIT_AUTHOR_EMAIL", "bench@example.com")
        .stdin(Stdio::null());
    c
}

fn ok(mut c: Command) -> Duration {
    let t = Instant::now();
    let out = c.output().expect("run git-neo");
    let took = t.elapsed();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    took
}

/// p50 of recall and of add, `rounds` each.
fn recall_and_add(
    exe: &Path,
    repo: &Path,
    daemon: bool,
    run: &Path,
    next: &mut usize,
    rounds: usize,
) -> (Duration, Duration) {
    let mut recall = Vec::new();
    let mut add = Vec::new();
    for _ in 0..rounds {
        *next += 1;
        let mut c = neo(exe, repo, daemon, run);
        c.args(["recall", &query(*next), "--json"]);
        recall.push(ok(c));
        *next += 1;
        let mut c = neo(exe, repo, daemon, run);
        c.args(["add", "-t", "pattern", "-s", &new_fact(*next), "--json"]);
        add.push(ok(c));
    }
    (median(recall), median(add))
}

fn wait_for_server(exe: &Path, repo: &Path, run: &Path) {
    let start = Instant::now();
    loop {
        let mut c = neo(exe, repo, false, run);
        c.args(["daemon", "status", "--json"]);
        let out = c.output().expect("status");
        let said = String::from_utf8_lossy(&out.stdout);
        // Up and warm (an older binary does not say `warming`).
        if said.contains("\"running\": true") && !said.contains("\"warming\": true") {
            return;
        }
        assert!(start.elapsed() < Duration::from_secs(120), "the server did not start");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Facts `range` of the project's memory.
fn project_facts(range: std::ops::Range<usize>) -> Vec<(git_neo::record::Kind, git_neo::record::RecordId, Vec<u8>)> {
    range
        .map(|i| {
            fact(
                i,
                subject(i),
                "project".into(),
                vec![],
                format!("Incident {i}: keep the {} bounded.\n", W[i % W.len()]),
            )
        })
        .collect()
}

/// A repository as a fresh clone receives its memory: the ref holds `n` facts, no index. The
/// facts are the same for every `name` (the clones of one project), unless `unseen` makes them
/// new to this machine.
fn fresh_memory(root: &Path, name: &str, n: usize) -> PathBuf {
    fresh_memory_of(root, name, n, false)
}

fn fresh_memory_of(root: &Path, name: &str, n: usize, unseen: bool) -> PathBuf {
    let repo = new_repo(root, name);
    let store = Store::discover(&repo, StoreOptions::default()).expect("store");
    for start in (0..n).step_by(10_000) {
        let mut batch = project_facts(start..(start + 10_000).min(n));
        if unseen {
            let salt = blake3::hash(name.as_bytes()).to_hex()[..8].to_string();
            batch = (start..(start + 10_000).min(n))
                .map(|i| {
                    fact(
                        i,
                        format!("{} ({salt})", subject(i)),
                        "project".into(),
                        vec![],
                        format!("Incident {i} of {salt}.\n"),
                    )
                })
                .collect();
        }
        store.write_records(&batch, "neo: import", &who(), Timestamp(1_770_000_000), false).expect("write");
    }
    repo
}

/// Stop every server `exe` runs for `repos` (one per user for this build; one per work tree for
/// older ones), waiting until each has gone.
fn stop_servers(exe: &Path, repos: &[PathBuf], run: &Path) {
    for repo in repos {
        let start = Instant::now();
        loop {
            let mut stop = neo(exe, repo, false, run);
            stop.args(["daemon", "stop"]);
            let _ = stop.output();
            let mut c = neo(exe, repo, false, run);
            c.args(["daemon", "status", "--json"]);
            let said = String::from_utf8_lossy(&c.output().expect("status").stdout).to_string();
            if !said.contains("\"running\": true") || start.elapsed() > Duration::from_secs(20) {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// The first commands in fresh clones of a 100-fact memory (p50 over ten rounds): `git neo recall`
/// with no server running; `git neo recall` in another fresh clone while the user's server is up
/// (for the first); and `git neo hook prompt` in a third with no server running.
fn first_command(exe: &Path, name: &str, root: &Path, run: &Path) {
    let (mut absent, mut up, mut hook) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..10 {
        let repos: Vec<PathBuf> =
            (0..3).map(|i| fresh_memory(root, &format!("first-{name}-{round}-{i}"), 100)).collect();
        let recall = |repo: &Path, q: &str| {
            let mut c = neo(exe, repo, true, run);
            c.args(["recall", q, "--json"]);
            ok(c)
        };
        absent.push(recall(&repos[0], "how do retries behave under load"));
        wait_for_server(exe, &repos[0], run);
        up.push(recall(&repos[1], "tenant sharding and quotas"));
        stop_servers(exe, &repos[..2], run);
        let mut c = neo(exe, &repos[2], true, run);
        c.args(["hook", "prompt"]).stdin(Stdio::piped()).stdout(Stdio::piped());
        let t = Instant::now();
        let mut child = c.spawn().expect("hook");
        child.stdin.take().expect("stdin").write_all(br#"{"prompt": "what blocks the ledger"}"#).expect("event");
        let out = child.wait_with_output().expect("hook");
        hook.push(t.elapsed());
        assert!(out.status.success());
        stop_servers(exe, &repos[2..], run);
    }
    // The same, for memories this machine has never embedded (every record's vector computed).
    let (mut unseen_absent, mut unseen_up) = (Vec::new(), Vec::new());
    for round in 0..5 {
        let repos: Vec<PathBuf> =
            (0..2).map(|i| fresh_memory_of(root, &format!("unseen-{name}-{round}-{i}"), 100, true)).collect();
        let recall = |repo: &Path, q: &str| {
            let mut c = neo(exe, repo, true, run);
            c.args(["recall", q, "--json"]);
            ok(c)
        };
        unseen_absent.push(recall(&repos[0], "how do retries behave under load"));
        wait_for_server(exe, &repos[0], run);
        unseen_up.push(recall(&repos[1], "tenant sharding and quotas"));
        stop_servers(exe, &repos, run);
    }
    println!(
        "| 100 | {name} | first `git neo recall` in a fresh clone, no server running | {} | |",
        ms(median(absent))
    );
    println!(
        "| 100 | {name} | first `git neo recall` in a fresh clone, the user's server up for another | {} | |",
        ms(median(up))
    );
    println!(
        "| 100 | {name} | first `git neo hook prompt` in a fresh clone, no server running | {} | |",
        ms(median(hook))
    );
    println!(
        "| 100 | {name} | first `git neo recall`, no server running, a memory never embedded here | {} | this build embeds every record; the earlier one answers lexically |",
        ms(median(unseen_absent))
    );
    println!(
        "| 100 | {name} | first `git neo recall`, the user's server up, a memory never embedded here | {} | this build embeds every record; the earlier one answers lexically |",
        ms(median(unseen_up))
    );
}

/// Resident memory of `pid` (bytes), from /proc.
fn resident(pid: u64) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|kb| kb.parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// Twenty repositories of 1,000 facts, each touched by `git neo add` and `git neo recall` through
/// the server, one after another: the servers left and their resident memory in all.
fn fleet(exe: &Path, name: &str, root: &Path, run: &Path, next: &mut usize) {
    // Twenty different projects: no record's vector is cached from another.
    let repos: Vec<PathBuf> =
        (0..20).map(|i| fresh_memory_of(root, &format!("fleet-{name}-{i}"), 1_000, true)).collect();
    let t = Instant::now();
    for repo in &repos {
        *next += 1;
        let mut c = neo(exe, repo, true, run);
        c.args(["add", "-t", "pattern", "-s", &new_fact(*next), "--json"]);
        ok(c);
        let mut c = neo(exe, repo, true, run);
        c.args(["recall", &query(*next), "--json"]);
        ok(c);
    }
    let took = t.elapsed();
    // Older builds may still be warming a repository's server up after its client answered.
    std::thread::sleep(Duration::from_secs(2));
    let mut pids = std::collections::BTreeSet::new();
    for repo in &repos {
        let mut c = neo(exe, repo, false, run);
        c.args(["daemon", "status", "--json"]);
        let v: serde_json::Value =
            serde_json::from_slice(&c.output().expect("status").stdout).unwrap_or(serde_json::Value::Null);
        if let Some(pid) = v["pid"].as_u64() {
            pids.insert(pid);
        }
    }
    let rss: u64 = pids.iter().map(|&p| resident(p)).sum();
    if std::env::args().any(|a| a == "--verbose") {
        let mut c = neo(exe, &repos[0], false, run);
        c.args(["daemon", "status"]);
        println!("{}", String::from_utf8_lossy(&c.output().expect("status").stdout));
    }
    println!(
        "| 20 x 1k | {name} | 20 repositories touched by add and recall | {} servers, {:.0} MB resident | {:.1} s for the 40 commands |",
        pids.len(),
        rss as f64 / 1_048_576.0,
        took.as_secs_f64()
    );
    stop_servers(exe, &repos, run);
}

/// The data directory commands are given (user memory, org caches).
static DATA: std::sync::Mutex<Option<PathBuf>> = std::sync::Mutex::new(None);

/// Records `from..to` as facts of another memory (their own words, so they do not collide with
/// the project's).
fn other_facts(from: usize, to: usize, area: &str) -> Vec<(git_neo::record::Kind, git_neo::record::RecordId, Vec<u8>)> {
    (from..to)
        .map(|i| fact(i, format!("{} ({area} {i})", subject(i)), area.into(), vec![], format!("Shared rule {i}.\n")))
        .collect()
}

static SENTENCES: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();

/// A question never asked before in this run: the first words of the `i`-th real sentence.
fn query(i: usize) -> String {
    let s = SENTENCES.get_or_init(|| real_sentences(2_000));
    let words: Vec<&str> = s[(i * 7 + 3) % s.len()].split_whitespace().take(7).collect();
    format!("{} {}", words.join(" "), i)
}

/// The `i`-th new fact: a real sentence (with its number, so reruns never repeat a fact).
fn new_fact(i: usize) -> String {
    let s = SENTENCES.get_or_init(|| real_sentences(2_000));
    format!("{} ({i})", s[i % s.len()])
}

/// A warm `git neo mcp` over stdio, initialised and asked once (the indexes caught up).
struct Mcp {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    stdout: BufReader<std::process::ChildStdout>,
    id: u64,
}

impl Mcp {
    fn start(exe: &Path, repo: &Path, run: &Path) -> Mcp {
        let mut child =
            neo(exe, repo, false, run).arg("mcp").stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().expect("mcp");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut mcp = Mcp { child, stdin, stdout, id: 0 };
        mcp.call(
            "initialize",
            serde_json::json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}),
        );
        mcp.tool("recall", serde_json::json!({"query": "warm up"}));
        mcp
    }

    /// One request; how long its answer took.
    fn call(&mut self, method: &str, params: serde_json::Value) -> Duration {
        self.id += 1;
        let msg = serde_json::json!({"jsonrpc": "2.0", "id": self.id, "method": method, "params": params});
        writeln!(self.stdin, "{msg}").expect("write");
        self.stdin.flush().expect("flush");
        let t = Instant::now();
        loop {
            let mut line = String::new();
            assert!(self.stdout.read_line(&mut line).expect("read") > 0, "the server exited");
            let v: serde_json::Value = serde_json::from_str(&line).expect("JSON-RPC");
            if v["id"] == self.id {
                assert!(v["result"]["isError"] != true, "{v}");
                return t.elapsed();
            }
        }
    }

    fn tool(&mut self, name: &str, arguments: serde_json::Value) -> Duration {
        self.call("tools/call", serde_json::json!({"name": name, "arguments": arguments}))
    }

    /// Close its input and wait for it to exit.
    fn stop(self) {
        let Mcp { mut child, stdin, .. } = self;
        drop(stdin);
        let _ = child.wait();
    }
}

/// p50 of `add_fact` (a new fact; and one that supersedes a near-duplicate) and of `recall`
/// through a warm `git neo mcp`.
fn mcp(exe: &Path, repo: &Path, run: &Path, next: &mut usize, rounds: usize) -> (Duration, Duration, Duration) {
    let mut server = Mcp::start(exe, repo, run);
    let (mut add, mut replacing, mut recall) = (Vec::new(), Vec::new(), Vec::new());
    for r in 0..rounds {
        *next += 1;
        add.push(server.tool("add_fact", serde_json::json!({"type": "pattern", "subject": new_fact(*next)})));
        // A near-duplicate of an existing fact: supersession is decided and written too.
        let s = format!("{} (revised {})", subject(r * 37 % 1_000), *next);
        replacing.push(server.tool("add_fact", serde_json::json!({"type": "pattern", "subject": s})));
        recall.push(server.tool("recall", serde_json::json!({"query": format!("retries in service {r}")})));
    }
    server.stop();
    (median(add), median(replacing), median(recall))
}

/// `-- --writes N [--size S]`: N `add_fact` calls in a row through one warm `git neo mcp` on a
/// memory of S facts (10k unless given), each binary on a copy of its own: the median, the 99th
/// percentile, and the five slowest calls (which call, how long). About 1,400 one-fact writes
/// cross git's `gc --auto` threshold, and new vectors past an eighth of the main index (about
/// 1,400 at 10k, 12,500 at 100k) fold the vector index's new part into a rebuilt main one: what
/// an agent that writes a lot meets now and then, not at the median.
fn writes(binaries: &[(&str, PathBuf)], root: &Path, run: &Path, calls: usize, size: usize) {
    let original = fresh_memory_of(root, "writes", size, true);
    git(&original, &["repack", "-adq"], None);
    git(&original, &["prune-packed"], None);
    println!("\n| binary | `add_fact` calls in a row, {size} facts | p50 | p99 | slowest | the five slowest (call: ms) |\n|---|---|---|---|---|---|");
    for (name, exe) in binaries {
        let repo = root.join(format!("writes-{name}"));
        copy_memory(root, &original, &repo);
        let mut reindex = neo(exe, &repo, false, run);
        reindex.args(["reindex"]);
        ok(reindex);
        let mut server = Mcp::start(exe, &repo, run);
        let times: Vec<Duration> = (0..calls)
            .map(|i| {
                server.tool("add_fact", serde_json::json!({"type": "pattern", "subject": new_fact(7_000_000 + i)}))
            })
            .collect();
        server.stop();
        let mut slowest: Vec<(usize, Duration)> = times.iter().copied().enumerate().collect();
        slowest.sort_by_key(|(i, t)| (std::cmp::Reverse(*t), *i));
        let slow: Vec<String> = slowest.iter().take(5).map(|(i, t)| format!("{i}: {}", t.as_millis())).collect();
        let mut sorted = times.clone();
        sorted.sort();
        println!(
            "| {name} | {calls} | {} | {} | {} | {} |",
            ms(sorted[calls / 2]),
            ms(sorted[calls * 99 / 100]),
            ms(sorted[calls - 1]),
            slow.join(", ")
        );
        // A gc that git carries on alone finishes before the copy goes.
        let started = Instant::now();
        while repo.join(".git/gc.pid").exists() && started.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// A copy of the repository `from` at `to`, its memory ref included, that reads its own ref
/// alone, as the original does (no remote-tracking copy to union).
fn copy_memory(root: &Path, from: &Path, to: &Path) {
    git(root, &["clone", "-q", "--no-local", &from.to_string_lossy(), &to.to_string_lossy()], None);
    git(to, &["fetch", "-q", "origin", "neo-memory:neo-memory"], None);
    git(to, &["update-ref", "-d", "refs/remotes/origin/neo-memory"], None);
    git(to, &["remote", "remove", "origin"], None);
}

/// `-- --interleaved --baseline PATH`: `git neo add` and `git neo recall` through each binary's
/// warm server, alternating between the two binaries call by call (each on its own copy of the
/// memory, with its own server and socket directory), so that a drift of the machine during the
/// run weighs on both alike. Measured one after the other, the same binary's figures moved by up
/// to a third between runs here.
fn interleaved(n: usize, repo: &Path, baseline: &Path, this: &Path, root: &Path, next: &mut usize, rounds: usize) {
    let copy = root.join(format!("r{n}-baseline"));
    copy_memory(root, repo, &copy);
    let sides = [
        ("baseline", baseline.to_path_buf(), copy, root.join("run-baseline")),
        ("this", this.to_path_buf(), repo.to_path_buf(), root.join("run-this")),
    ];
    let mut servers = Vec::new();
    for (_, exe, repo, run) in &sides {
        std::fs::create_dir_all(run).expect("a socket directory");
        let mut c = neo(exe, repo, false, run);
        c.args(["reindex"]);
        ok(c);
        let mut server = neo(exe, repo, false, run);
        server.args(["daemon", "run", "--idle", "300"]).stdout(Stdio::null()).stderr(Stdio::null());
        servers.push(server.spawn().expect("server"));
        wait_for_server(exe, repo, run);
        let _ = recall_and_add(exe, repo, true, run, next, 2);
    }
    let mut add = [Vec::new(), Vec::new()];
    let mut recall = [Vec::new(), Vec::new()];
    for r in 0..rounds {
        let order: [usize; 2] = if r % 2 == 0 { [0, 1] } else { [1, 0] };
        for &i in &order {
            let (_, exe, repo, run) = &sides[i];
            *next += 1;
            let mut c = neo(exe, repo, true, run);
            c.args(["add", "-t", "pattern", "-s", &new_fact(*next), "--json"]);
            add[i].push(ok(c));
        }
        for &i in &order {
            let (_, exe, repo, run) = &sides[i];
            let mut c = neo(exe, repo, true, run);
            c.args(["recall", "how do retries behave under load", "--json"]);
            recall[i].push(ok(c));
        }
    }
    let (add, recall) = (add.map(median), recall.map(median));
    for (i, (name, ..)) in sides.iter().enumerate() {
        println!(
            "| {n} | {name} | `git neo add`, through the server, interleaved | {} | ratio to baseline {:.3} |",
            ms(add[i]),
            add[i].as_secs_f64() / add[0].as_secs_f64()
        );
        println!(
            "| {n} | {name} | `git neo recall`, through the server, interleaved | {} | ratio to baseline {:.3} |",
            ms(recall[i]),
            recall[i].as_secs_f64() / recall[0].as_secs_f64()
        );
    }
    for ((_, exe, repo, run), mut server) in sides.iter().zip(servers) {
        let mut stop = neo(exe, repo, false, run);
        stop.args(["daemon", "stop"]);
        ok(stop);
        let _ = server.wait();
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let one: Option<usize> =
        args.iter().position(|a| a == "--size").and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok());
    let baseline: Option<PathBuf> =
        args.iter().position(|a| a == "--baseline").and_then(|i| args.get(i + 1)).map(PathBuf::from);
    let sizes = match one {
        Some(n) => vec![n],
        None => vec![1_000, 10_000, 100_000],
    };
    let this = PathBuf::from(env!("CARGO_BIN_EXE_git-neo"));
    let tmp = tempfile::tempdir().expect("tempdir");
    let run = tmp.path().join("run");
    println!("| records | binary | command | p50 | notes |\n|---|---|---|---|---|");
    if args.iter().any(|a| a == "--first") {
        let mut binaries = vec![("this", this.clone())];
        if let Some(b) = &baseline {
            binaries.insert(0, ("baseline", b.clone()));
        }
        for (name, exe) in &binaries {
            first_command(exe, name, tmp.path(), &run);
        }
        return;
    }
    if let Some(calls) =
        args.iter().position(|a| a == "--writes").map(|i| args.get(i + 1).and_then(|v| v.parse().ok()).unwrap_or(1_500))
    {
        let mut binaries = vec![("this", this.clone())];
        if let Some(b) = &baseline {
            binaries.insert(0, ("baseline", b.clone()));
        }
        writes(&binaries, tmp.path(), &run, calls.max(1), one.unwrap_or(10_000));
        return;
    }
    if args.iter().any(|a| a == "--fleet") {
        let mut binaries = vec![("this", this.clone())];
        if let Some(b) = &baseline {
            binaries.insert(0, ("baseline", b.clone()));
        }
        let mut next = 5_000_000;
        for (name, exe) in &binaries {
            fleet(exe, name, tmp.path(), &run, &mut next);
        }
        return;
    }
    for &n in &sizes {
        let repo = new_repo(tmp.path(), &format!("r{n}"));
        let store = Store::discover(&repo, StoreOptions::default()).expect("store");
        for start in (0..n).step_by(10_000) {
            let batch = project_facts(start..(start + 10_000).min(n));
            store.write_records(&batch, "neo: import", &who(), Timestamp(1_770_000_000), false).expect("write");
        }
        git(&repo, &["repack", "-adq"], None);
        git(&repo, &["prune-packed"], None);
        let mut next = n + 1;
        let rounds = 10;
        if let (true, Some(b)) = (args.iter().any(|a| a == "--interleaved"), &baseline) {
            interleaved(n, &repo, b, &this, tmp.path(), &mut next, 30);
            continue;
        }
        let mut binaries = vec![("this", this.clone())];
        if let Some(b) = &baseline {
            binaries.insert(0, ("baseline", b.clone()));
        }
        if args.iter().any(|a| a == "--scopes") {
            three_scopes(n, &repo, &binaries, tmp.path(), &run, &mut next, rounds);
            continue;
        }
        for (name, exe) in &binaries {
            // Build (or rebuild) the caches this binary reads, and warm the page cache.
            let mut c = neo(exe, &repo, false, &run);
            c.args(["reindex"]);
            let reindex = ok(c);
            println!("| {n} | {name} | `git neo reindex`, own process | {} | every record embedded |", ms(reindex));
            let (recall, add) = recall_and_add(exe, &repo, false, &run, &mut next, rounds);
            println!("| {n} | {name} | `git neo recall`, own process | {} | |", ms(recall));
            println!("| {n} | {name} | `git neo add`, own process | {} | similarity check included |", ms(add));
            {
                let mut server = neo(exe, &repo, false, &run);
                server.args(["daemon", "run", "--idle", "120"]).stdout(Stdio::null()).stderr(Stdio::null());
                let mut server = server.spawn().expect("server");
                wait_for_server(exe, &repo, &run);
                let _ = recall_and_add(exe, &repo, true, &run, &mut next, 2);
                let (recall, add) = recall_and_add(exe, &repo, true, &run, &mut next, rounds);
                let mut hook = Vec::new();
                for _ in 0..rounds {
                    let mut c = neo(exe, &repo, true, &run);
                    c.args(["hook", "prompt"]).stdin(Stdio::piped()).stdout(Stdio::piped());
                    let t = Instant::now();
                    let mut child = c.spawn().expect("hook");
                    child
                        .stdin
                        .take()
                        .expect("stdin")
                        .write_all(br#"{"prompt": "how do retries behave under load"}"#)
                        .expect("event");
                    let out = child.wait_with_output().expect("hook");
                    hook.push(t.elapsed());
                    assert!(out.status.success());
                }
                println!("| {n} | {name} | `git neo recall`, through the server | {} | |", ms(recall));
                println!(
                    "| {n} | {name} | `git neo add`, through the server | {} | similarity check included |",
                    ms(add)
                );
                println!("| {n} | {name} | `git neo hook prompt`, through the server | {} | |", ms(median(hook)));
                let mut stop = neo(exe, &repo, false, &run);
                stop.args(["daemon", "stop"]);
                ok(stop);
                let _ = server.wait();
            }
            let (add, replacing, recall) = mcp(exe, &repo, &run, &mut next, rounds * 2);
            println!(
                "| {n} | {name} | MCP `add_fact`, warm server | {} | a new fact; similarity check included |",
                ms(add)
            );
            println!("| {n} | {name} | MCP `add_fact` that supersedes, warm server | {} | near-duplicate: supersession written too |", ms(replacing));
            println!("| {n} | {name} | MCP `recall`, warm server | {} | |", ms(recall));
        }

        // The same project with a user memory and an org memory beside it.
        three_scopes(n, &repo, &binaries, tmp.path(), &run, &mut next, rounds);
    }
    // A whole run also measures the first hour: fresh clones and a fleet of repositories.
    if one.is_none() {
        let mut binaries = vec![("this", this.clone())];
        if let Some(b) = &baseline {
            binaries.insert(0, ("baseline", b.clone()));
        }
        let mut next = 5_000_000;
        for (name, exe) in &binaries {
            first_command(exe, name, tmp.path(), &run);
            fleet(exe, name, tmp.path(), &run, &mut next);
        }
    }
}

/// The project of `n` facts with a user memory (1k facts) and an org memory (5k) beside it,
/// recalled together by each of `binaries`: in its own process, through the server with a project
/// add after each recall (the fold of all scopes catches up), and through a warm `git neo mcp`.
fn three_scopes(
    n: usize,
    repo: &Path,
    binaries: &[(&str, PathBuf)],
    root: &Path,
    run: &Path,
    next: &mut usize,
    rounds: usize,
) {
    let data = root.join(format!("data{n}"));
    *DATA.lock().expect("data dir") = Some(data.clone());
    let user = Store::open_at(&data.join("user.git"), StoreOptions::default(), true).expect("user").expect("made");
    user.write_records(
        &other_facts(n + 1_000_000, n + 1_001_000, "user"),
        "neo: import",
        &who(),
        Timestamp(1_770_000_000),
        false,
    )
    .expect("write user");
    let forge = root.join(format!("org{n}.git"));
    git(root, &["init", "-q", "--bare", &forge.to_string_lossy()], None);
    let org = Store::open_at(&forge, StoreOptions::default(), false).expect("org").expect("exists");
    org.write_records(
        &other_facts(n + 2_000_000, n + 2_005_000, "org"),
        "neo: import",
        &who(),
        Timestamp(1_770_000_000),
        false,
    )
    .expect("write org");
    git(repo, &["config", "neo.org.url", &forge.to_string_lossy()], None);
    git(repo, &["config", "neo.org.mode", "auto"], None);
    for (name, exe) in binaries {
        // The org cache fetched, and every scope's caches caught up (built by the first binary,
        // read by the next: the cache format is the same) by a recall before timing.
        for args in [&["--scope", "org", "sync"][..], &["recall", "warm up", "--json"]] {
            let mut c = neo(exe, repo, false, run);
            c.args(args);
            ok(c);
        }
        let (recall, _) = recall_and_add(exe, repo, false, run, next, rounds);
        println!(
            "| {n} + 1k user + 5k org | {name} | `git neo recall`, own process, three scopes | {} | |",
            ms(recall)
        );
        let mut server = neo(exe, repo, false, run);
        server.args(["daemon", "run", "--idle", "120"]).stdout(Stdio::null()).stderr(Stdio::null());
        let mut server = server.spawn().expect("server");
        wait_for_server(exe, repo, run);
        let _ = recall_and_add(exe, repo, true, run, next, 2);
        let (recall, add) = recall_and_add(exe, repo, true, run, next, rounds);
        println!("| {n} + 1k user + 5k org | {name} | `git neo recall`, through the server, three scopes | {} | a project add after each recall: the fold of all scopes catches up | ", ms(recall));
        println!("| {n} + 1k user + 5k org | {name} | `git neo add`, through the server | {} | |", ms(add));
        let mut stop = neo(exe, repo, false, run);
        stop.args(["daemon", "stop"]);
        ok(stop);
        let _ = server.wait();
        let (_, _, recall) = mcp(exe, repo, run, next, rounds * 2);
        println!("| {n} + 1k user + 5k org | {name} | MCP `recall`, warm server, three scopes | {} | |", ms(recall));
    }
    *DATA.lock().expect("data dir") = None;
}
