//! The background server (`git neo daemon`): the commands it runs answer exactly as they do in
//! their own process, writes land on the ref, a changed git config is noticed, and a command
//! with no server runs itself and starts one.

use crate::support::{json, Sandbox};
use std::path::Path;
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

/// `git neo` with the deterministic embedder, through a server when `daemon` is true.
pub fn neo(sb: &Sandbox, repo: &Path, daemon: bool, args: &[&str]) -> Output {
    sb.neo_cmd(repo)
        .env("GIT_NEO_EMBEDDER", "hash")
        .env("GIT_NEO_DAEMON", if daemon { "on" } else { "off" })
        .args(args)
        .output()
        .expect("run git-neo")
}

pub fn status(sb: &Sandbox, repo: &Path) -> serde_json::Value {
    json(&String::from_utf8_lossy(&neo(sb, repo, false, &["daemon", "status", "--json"]).stdout))
}

fn wait_until_running(sb: &Sandbox, repo: &Path) -> serde_json::Value {
    let start = Instant::now();
    loop {
        let s = status(sb, repo);
        // Up and warm: until then it hands commands back to their clients.
        if s["running"] == true && s["warming"] == false {
            return s;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "no server came up: {s}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A foreground server for `repo`, stopped (and waited for) when dropped.
pub struct Server<'a> {
    child: Child,
    sb: &'a Sandbox,
    repo: &'a Path,
}

impl Drop for Server<'_> {
    fn drop(&mut self) {
        let _ = neo(self.sb, self.repo, false, &["daemon", "stop"]);
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(10) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn start<'a>(sb: &'a Sandbox, repo: &'a Path) -> Server<'a> {
    let mut cmd: Command = sb.neo_cmd(repo);
    cmd.env("GIT_NEO_EMBEDDER", "hash").args(["daemon", "run", "--idle", "60"]);
    let child = cmd.spawn().expect("start the server");
    let server = Server { child, sb, repo };
    wait_until_running(sb, repo);
    server
}

fn text(o: &Output) -> (String, String, Option<i32>) {
    (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned(), o.status.code())
}

#[test]
fn the_server_answers_exactly_as_the_process_does_and_its_writes_land() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    for (t, s) in [
        ("constraint", "Never log card numbers"),
        ("decision", "Deploys go to Fly.io from the main branch"),
        ("pattern", "Retry webhooks with exponential backoff"),
    ] {
        assert!(neo(&sb, &repo, false, &["add", "-t", t, "-s", s]).status.success());
    }
    let query = ["recall", "where do deploys go"];
    // The first recall builds the index (and says so); compare what every later one prints.
    assert!(neo(&sb, &repo, false, &query).status.success());
    let alone = text(&neo(&sb, &repo, false, &query));
    let server = start(&sb, &repo);
    // (Asked until it answers: on a loaded machine one status can time out.)
    let before = wait_until_running(&sb, &repo)["commands"].as_u64().expect("count");

    // Recall, markdown and JSON, byte for byte.
    assert_eq!(text(&neo(&sb, &repo, true, &query)), alone);
    let json_query = ["recall", "where do deploys go", "--json"];
    assert_eq!(text(&neo(&sb, &repo, true, &json_query)).0, text(&neo(&sb, &repo, false, &json_query)).0);
    assert_eq!(wait_until_running(&sb, &repo)["commands"].as_u64(), Some(before + 2), "both went through the server");

    // A write through the server lands on the ref and the next recall (anywhere) sees it.
    let added = neo(&sb, &repo, true, &["add", "-t", "decision", "-s", "Staging deploys go to Render", "--json"]);
    assert!(added.status.success(), "{}", text(&added).1);
    let id = json(&text(&added).0)["id"].as_str().expect("id").to_string();
    let listed = text(&neo(&sb, &repo, false, &["list", "--json"])).0;
    assert!(listed.contains(&id), "the fact is on the ref: {listed}");
    assert!(text(&neo(&sb, &repo, true, &["recall", "staging deploys"])).0.contains("Staging deploys go to Render"));

    // Bad input: the same error and exit code, nothing written.
    let tip = sb.tip(&repo);
    let bad = text(&neo(&sb, &repo, true, &["add", "-t", "opinion", "-s", "x"]));
    assert_eq!(bad, text(&neo(&sb, &repo, false, &["add", "-t", "opinion", "-s", "x"])));
    assert_eq!(bad.2, Some(1));
    assert_eq!(sb.tip(&repo), tip, "nothing written");

    // A dry run: the same plan through the server as in the process, nothing written, and the
    // warm server neither stays in dry-run mode nor keeps the planned retraction.
    let dry = ["forget", &id[..10], "--reason", "moved", "--dry-run", "--json"];
    let served = text(&neo(&sb, &repo, true, &dry));
    assert_eq!(served, text(&neo(&sb, &repo, false, &dry)));
    assert_eq!(json(&served.0)["plan"]["commits"][0]["records"][0]["kind"], "retraction", "{served:?}");
    assert_eq!(sb.tip(&repo), tip, "a dry run through the server wrote");
    assert!(text(&neo(&sb, &repo, true, &["list", "--json"])).0.contains(&id), "the server hid the fact");

    // The prompt hook reads its event from the client's stdin.
    let mut hook = sb.neo_cmd(&repo);
    hook.env("GIT_NEO_EMBEDDER", "hash")
        .env("GIT_NEO_DAEMON", "on")
        .args(["hook", "prompt"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped());
    let mut child = hook.spawn().expect("hook");
    std::io::Write::write_all(
        &mut child.stdin.take().expect("stdin"),
        br#"{"prompt": "where do the staging deploys go these days"}"#,
    )
    .expect("write the event");
    let out = child.wait_with_output().expect("hook output");
    assert!(String::from_utf8_lossy(&out.stdout).contains("Staging deploys go to Render"), "{out:?}");

    // A config change is noticed: review mode now stages the write instead of landing it.
    sb.git(&repo, &["config", "neo.mode", "review"]);
    let tip = sb.tip(&repo);
    let staged = neo(&sb, &repo, true, &["add", "-t", "decision", "-s", "Preview deploys go to Vercel"]);
    assert!(staged.status.success(), "{}", text(&staged).1);
    assert_eq!(sb.tip(&repo), tip, "review mode: the memory ref did not move");
    assert!(wait_until_running(&sb, &repo)["commands"].as_u64() > Some(before + 5));
    drop(server);
    assert_eq!(status(&sb, &repo)["running"], false, "stopped");
}

/// Stop the user's server (whichever command started it) and wait until it has gone: a test
/// leaves no process behind.
pub fn stop(sb: &Sandbox, repo: &Path) {
    let start = Instant::now();
    loop {
        let _ = neo(sb, repo, false, &["daemon", "stop"]);
        if status(sb, repo)["running"] != true {
            return;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "the server did not stop");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `facts.jsonl` in `repo`: `n` pattern facts, one per service, for `git neo import`.
fn write_retry_facts(repo: &Path, n: usize) {
    let lines: String = (0..n)
        .map(|i| format!("{{\"type\": \"pattern\", \"subject\": \"Service {i} keeps its retry queue bounded\"}}\n"))
        .collect();
    std::fs::write(repo.join("facts.jsonl"), lines).expect("write");
}

/// A fresh clone of `origin`'s memory, as a clone receives it: records, no caches, no server.
fn clone_memory(sb: &Sandbox, origin: &Path, name: &str) -> std::path::PathBuf {
    let clone = sb.path(name);
    sb.git(sb.dir.path(), &["clone", "-q", "--no-local", &origin.to_string_lossy(), &clone.to_string_lossy()]);
    sb.git(&clone, &["fetch", "-q", "origin", "neo-memory:neo-memory"]);
    sb.git(&clone, &["update-ref", "-d", "refs/remotes/origin/neo-memory"]);
    clone
}

/// The first command in a repository the user's server has never seen answers exactly as the
/// command does by itself: semantic, with the ingested documents, at once. Without a server the
/// command starts one and waits for it; with the server up for another repository, it catches
/// this one up before answering.
#[test]
fn the_first_answer_in_a_fresh_clone_is_the_answer_without_the_server() {
    let sb = Sandbox::new();
    let origin = sb.repo("origin");
    write_retry_facts(&origin, 40);
    std::fs::create_dir_all(origin.join("docs/adr")).expect("docs");
    std::fs::write(
        origin.join("docs/adr/0007-queues.md"),
        "# ADR 7: Queues\n\n## Decision\n\nEvery retry queue is drained by the ledger worker, never by the web tier.\n",
    )
    .expect("write");
    sb.git(&origin, &["add", "."]);
    sb.git(&origin, &["commit", "-q", "-m", "docs"]);
    // Written without a model, as a clone receives a memory: records, no vector index.
    let mut import = sb.neo_cmd(&origin);
    import.env("GIT_NEO_EMBEDDER", "none").env("GIT_NEO_DAEMON", "off").args(["import", "facts.jsonl"]);
    assert!(import.output().expect("import").status.success());
    let recall = |repo: &Path, daemon: bool, query: &str| {
        let (stdout, stderr, code) = text(&neo(&sb, repo, daemon, &["recall", "--json", query]));
        assert_eq!(code, Some(0), "{stderr}");
        stdout
    };
    let queries = ["retry queue of service 7", "who drains the retry queues"];
    for (round, documents) in [(0, false), (1, true)] {
        if documents {
            let mut ingest = sb.neo_cmd(&origin);
            ingest.env("GIT_NEO_EMBEDDER", "none").env("GIT_NEO_DAEMON", "off").args(["ingest", "docs"]);
            assert!(ingest.output().expect("ingest").status.success());
        }
        let alone = clone_memory(&sb, &origin, &format!("alone-{round}"));
        let served = clone_memory(&sb, &origin, &format!("served-{round}"));
        for query in queries {
            // No server yet (round 0), then the server up for the other clones (round 1).
            let first = recall(&served, true, query);
            let by_itself = recall(&alone, false, query);
            assert_eq!(first, by_itself, "round {round}: {query}");
            assert_eq!(json(&first)["semantic"], true, "{first}");
            if documents && query.contains("drains") {
                assert!(first.contains("0007-queues.md"), "the ingested ADR is cited: {first}");
            }
        }
        assert_eq!(status(&sb, &served)["running"], true, "the first command started the server");
    }
    let s = status(&sb, &origin);
    let held: Vec<String> =
        s["repositories"].as_array().expect("repositories").iter().map(|r| r["work_tree"].to_string()).collect();
    assert_eq!(held.len(), 2, "one server holds both clones it served: {s}");
    stop(&sb, &origin);
}

/// A model that is installed but does not load (here a runtime library that is not one) loads in
/// the background beside the first command's reading of its repository; that command still
/// answers lexically and says why, exactly as it does by itself, through the server too (whose
/// status then names the failure), and over MCP.
#[test]
fn a_model_that_does_not_load_answers_lexically_with_the_reason_every_way_in() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    write_retry_facts(&repo, 12);
    let mut import = sb.neo_cmd(&repo);
    import.env("GIT_NEO_EMBEDDER", "none").args(["import", "facts.jsonl"]);
    assert!(import.output().expect("import").status.success());
    // Every file the install script puts there, none of them what it should be.
    let cache = sb.path("broken-cache");
    let paths = git_neo::embed::ModelPaths::in_cache(&cache);
    std::fs::create_dir_all(&paths.model_dir).expect("model dir");
    for name in git_neo::embed::MODEL_FILES {
        std::fs::write(paths.model_dir.join(name), "not what it should be").expect("write");
    }
    std::fs::create_dir_all(paths.runtime.parent().expect("runtime dir")).expect("runtime dir");
    std::fs::write(&paths.runtime, "not a library").expect("write");
    assert!(paths.missing().is_empty(), "installed, as far as the files go");
    // Every record's vectors are in the user's vector cache already (this machine embedded them
    // before), so the index catches up without calling the model: only the query needs it, and
    // whether recall is semantic is decided by asking the loading model, not by a failed call.
    let (_, state, _) = crate::support::fold_of(&repo);
    let texts: Vec<String> = state.entries.values().flat_map(|e| git_neo::index::vector_texts(&e.record)).collect();
    assert!(texts.len() >= 8, "a bulk call (the cache is read for eight texts or more)");
    let mut filled = git_neo::embed::TextCache::new(
        Box::new(git_neo::embed::HashEmbedder::new(git_neo::embed::MODEL_DIM)),
        git_neo::embed::vector_cache(&cache),
    );
    git_neo::embed::Embedder::embed(&mut filled, &texts).expect("fill the cache");
    let recall = |daemon: bool, embedder: Option<&str>| {
        let mut c = sb.neo_cmd(&repo);
        c.env("GIT_NEO_CACHE_DIR", &cache).env("GIT_NEO_DAEMON", if daemon { "on" } else { "off" });
        if let Some(e) = embedder {
            c.env("GIT_NEO_EMBEDDER", e);
        }
        text(&c.args(["recall", "--json", "retry queue of service 7"]).output().expect("recall"))
    };
    let (lexical, _, code) = recall(false, Some("none"));
    assert_eq!(code, Some(0));
    assert_eq!(json(&lexical)["semantic"], false);
    for daemon in [false, true] {
        let (stdout, stderr, code) = recall(daemon, None);
        assert_eq!(code, Some(0), "daemon {daemon}: {stderr}");
        assert_eq!(stdout, lexical, "daemon {daemon}: the lexical answer");
        assert!(
            stderr.contains("cannot load ONNX Runtime") && stderr.contains("falling back to lexical recall"),
            "daemon {daemon}: the reason is given: {stderr}"
        );
    }
    // MCP over stdio takes the same path: the lexical answer, and the reason in its text.
    let cache_dir = cache.to_string_lossy().into_owned();
    let mut mcp = crate::mcp::Client::spawn(sb.dir.path(), &repo, &[("GIT_NEO_CACHE_DIR", &cache_dir)]);
    let r = mcp.call_result("recall", serde_json::json!({"query": "retry queue of service 7"}));
    assert_ne!(r["isError"], true, "{r}");
    let text = r["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("semantic recall off") && text.contains("cannot load ONNX Runtime"), "{text}");
    let ids = |v: &serde_json::Value| -> Vec<String> {
        v["facts"].as_array().into_iter().flatten().filter_map(|f| f["id"].as_str().map(str::to_string)).collect()
    };
    assert!(!ids(&json(&lexical)).is_empty());
    assert_eq!(ids(&r["structuredContent"]), ids(&json(&lexical)), "the lexical answer over MCP");
    drop(mcp);
    // The server of these settings (its socket is the model cache's and the embedder's).
    let daemon = |args: &[&str]| {
        let mut c = sb.neo_cmd(&repo);
        c.env("GIT_NEO_CACHE_DIR", &cache).args(args);
        json(&String::from_utf8_lossy(&c.output().expect("daemon").stdout))
    };
    let s = daemon(&["daemon", "status", "--json"]);
    assert_eq!(s["running"], true, "the first command started it: {s}");
    assert!(s["model"].as_str().is_some_and(|m| m.contains("cannot load ONNX Runtime")), "{s}");
    let start = Instant::now();
    while daemon(&["daemon", "status", "--json"])["running"] == true {
        daemon(&["daemon", "stop", "--json"]);
        assert!(start.elapsed() < Duration::from_secs(20), "the server did not stop");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// One server for every repository of the user, each request answered from its own repository
/// only: two repositories hold facts with the same subject and different bodies, and parallel
/// clients ask them in turn.
#[test]
fn one_server_serves_every_repository_and_never_mixes_them() {
    let sb = Sandbox::new();
    let repos: Vec<_> = ["north", "south"].iter().map(|n| sb.repo(n)).collect();
    for (repo, body) in
        repos.iter().zip(["Retries wait 2 s in the north region", "Retries wait 9 s in the south region"])
    {
        let out = neo(&sb, repo, false, &["add", "-t", "pattern", "-s", "Retry delay", "-b", body]);
        assert!(out.status.success(), "{}", text(&out).1);
    }
    let pid = |repo: &Path| {
        assert!(neo(&sb, repo, true, &["recall", "retry delay"]).status.success());
        status(&sb, repo)["pid"].as_u64().expect("a server")
    };
    assert_eq!(pid(&repos[0]), pid(&repos[1]), "one server");
    // A worktree is a repository of its own to the server (its own HEAD and sessions).
    let tree = sb.path("north-tree");
    sb.git(&repos[0], &["worktree", "add", "-q", &tree.to_string_lossy()]);
    assert_eq!(pid(&tree), pid(&repos[0]));
    assert_eq!(status(&sb, &tree)["repositories"].as_array().map(Vec::len), Some(3));

    let answers: Vec<(usize, String)> = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let (sb, repos) = (&sb, &repos);
                scope.spawn(move || {
                    (0..8)
                        .map(|i| {
                            let which = (t + i) % 2;
                            (which, text(&neo(sb, &repos[which], true, &["recall", "retry delay", "--json"])).0)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        threads.into_iter().flat_map(|t| t.join().expect("a client thread")).collect()
    });
    assert_eq!(answers.len(), 32);
    for (which, out) in answers {
        let (mine, theirs) = if which == 0 { ("2 s", "9 s") } else { ("9 s", "2 s") };
        assert!(out.contains(mine), "{out}");
        assert!(!out.contains(theirs), "another repository's record: {out}");
    }
    assert_eq!(status(&sb, &repos[0])["repositories"].as_array().map(Vec::len), Some(3), "still one server");
    stop(&sb, &repos[0]);
}

/// Beyond `neo.server.memory` the least recently used repository is let go; a deleted one is let
/// go at the next command; and the server goes on answering for the rest.
#[test]
fn the_server_keeps_its_budget_and_outlives_a_deleted_repository() {
    let sb = Sandbox::new();
    let repos: Vec<_> = ["a", "b", "c"].iter().map(|n| sb.repo(n)).collect();
    for repo in &repos {
        assert!(neo(&sb, repo, false, &["add", "-t", "decision", "-s", "Deploys go out on Tuesdays"]).status.success());
    }
    let held = |repo: &Path| -> Vec<String> {
        let s = status(&sb, repo);
        s["repositories"]
            .as_array()
            .unwrap_or_else(|| panic!("{s}"))
            .iter()
            .map(|r| r["work_tree"].as_str().expect("a path").to_string())
            .collect()
    };
    for repo in &repos[..2] {
        assert!(neo(&sb, repo, true, &["recall", "deploys"]).status.success());
    }
    assert_eq!(held(&repos[0]).len(), 2, "both held within the default budget");
    std::fs::remove_dir_all(&repos[1]).expect("delete b");
    let out = neo(&sb, &repos[0], true, &["recall", "deploys"]);
    assert!(text(&out).0.contains("Tuesdays"));
    let now = held(&repos[0]);
    assert_eq!(now.len(), 1, "the deleted repository was let go: {now:?}");
    // A budget of one byte: only the repository just used is kept.
    sb.git(&repos[2], &["config", "neo.server.memory", "1"]);
    assert!(neo(&sb, &repos[2], true, &["recall", "deploys"]).status.success());
    let now = held(&repos[2]);
    assert_eq!(now.len(), 1, "{now:?}");
    assert!(now[0].ends_with("/c"), "{now:?}");
    let s = status(&sb, &repos[2]);
    assert_eq!(s["budget_bytes"], 1, "{s}");
    // The one let go answers again, read afresh.
    assert!(text(&neo(&sb, &repos[0], true, &["recall", "deploys"])).0.contains("Tuesdays"));
    stop(&sb, &repos[0]);
}

/// The relevance floor and the known-unknown gate answer the same through the server as in
/// process, and a change of `neo.recall.floor` reaches the warm session.
#[test]
fn the_floor_and_its_setting_answer_the_same_through_the_server() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    for (t, s) in [
        ("decision", "Deploys go to Fly.io from the main branch"),
        ("architecture", "Payments go through the ledger service"),
        ("known-unknown", "Is the ledger safe when a deploy is rolled back?"),
    ] {
        assert!(neo(&sb, &repo, false, &["add", "-t", t, "-s", s]).status.success());
    }
    let ask = |daemon: bool| text(&neo(&sb, &repo, daemon, &["recall", "where do deploys go", "--json"]));
    // The first recall builds the index (and says so); compare what every later one prints.
    ask(false);
    let alone = ask(false);
    let _server = start(&sb, &repo);
    assert_eq!(ask(true), alone);
    // Only what matches as well as the best fact is left.
    sb.git(&repo, &["config", "neo.recall.floor", "1"]);
    let strict = ask(false);
    assert_ne!(strict, alone, "the setting changes the answer");
    assert_eq!(ask(true), strict, "the warm session reads the new setting");
}

/// Between commands the server catches the indexes of the repository it just wrote to up to that
/// write (the next recall does not wait for it), and what it held back reaches the disk when it
/// stops: a process that opens the caches afterwards finds them current.
#[test]
fn the_server_catches_up_after_a_write_between_commands_and_saves_on_stopping() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    assert!(neo(&sb, &repo, false, &["add", "-t", "pattern", "-s", "Retries back off exponentially"]).status.success());
    assert!(neo(&sb, &repo, false, &["recall", "retries"]).status.success());
    let stamp = || -> serde_json::Value {
        let path = repo.join(".git/neo/index/stamp.json");
        serde_json::from_slice(&std::fs::read(path).expect("the stamp")).expect("stamp JSON")
    };
    let tip = || sb.git(&repo, &["rev-parse", git_neo::store::DEFAULT_REF]);
    let server = start(&sb, &repo);
    // The first command warms the repository's session and its indexes.
    assert!(neo(&sb, &repo, true, &["recall", "retries"]).status.success());
    let added = neo(&sb, &repo, true, &["add", "-t", "pattern", "-s", "Timeouts are five seconds per call"]);
    assert!(added.status.success(), "{}", String::from_utf8_lossy(&added.stderr));
    let start = Instant::now();
    while stamp()["tips"][0] != tip().as_str() {
        assert!(start.elapsed() < Duration::from_secs(20), "the server never caught up: {} vs {}", stamp(), tip());
        std::thread::sleep(Duration::from_millis(20));
    }
    let held_back = repo.join(".git/neo/index/vectors-new.usearch");
    assert!(!held_back.exists(), "one new vector is held in memory, not written at once");
    drop(server);
    // Stopped, the server wrote the vector it held.
    assert!(held_back.exists(), "the server wrote its vectors when it stopped");
    let recalled = neo(&sb, &repo, false, &["recall", "timeouts", "--json"]);
    assert!(recalled.status.success());
    let r = json(&String::from_utf8_lossy(&recalled.stdout));
    assert_eq!(r["facts"][0]["subject"], "Timeouts are five seconds per call", "{r}");
}

/// A repository whose next write crosses git's `gc --auto` threshold (1,500 loose objects that a
/// branch reaches; `gc.auto` lowered to 512, as git allows), with a `pre-auto-gc` hook (git runs
/// it from the gc process) that saves that process's stat line.
fn past_the_gc_threshold(sb: &Sandbox, name: &str) -> std::path::PathBuf {
    let repo = sb.repo(name);
    let bulk = repo.join("bulk");
    std::fs::create_dir_all(&bulk).expect("bulk");
    for i in 0..1_500 {
        std::fs::write(bulk.join(i.to_string()), format!("object {i}\n")).expect("a blob's file");
    }
    sb.git(&repo, &["add", "bulk"]);
    sb.git(&repo, &["commit", "-qm", "bulk"]);
    sb.git(&repo, &["config", "gc.auto", "512"]);
    let hooks = sb.path(&format!("{name}-hooks"));
    std::fs::create_dir_all(&hooks).expect("hooks");
    let hook = hooks.join("pre-auto-gc");
    std::fs::write(&hook, "#!/bin/sh\ncat /proc/$$/stat > \"$GIT_DIR/gc-stat\"\n").expect("hook");
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).expect("chmod");
    sb.git(&repo, &["config", "core.hooksPath", &hooks.to_string_lossy()]);
    repo
}

/// The priority (nice value) a gc ran at in `repo`, once it ran and let go of its lock and of the
/// loose objects it packed (so that no gc outlives the test).
fn gc_nice(repo: &Path) -> i32 {
    let git_dir = repo.join(".git");
    let loose = || {
        std::fs::read_dir(git_dir.join("objects"))
            .into_iter()
            .flatten()
            .flatten()
            .filter(|d| d.file_name().len() == 2)
            .map(|d| std::fs::read_dir(d.path()).map_or(0, |f| f.count()))
            .sum::<usize>()
    };
    let start = Instant::now();
    while !git_dir.join("gc-stat").exists() || git_dir.join("gc.pid").exists() || loose() >= 1_500 {
        assert!(start.elapsed() < Duration::from_secs(120), "no gc ran, or it never finished");
        std::thread::sleep(Duration::from_millis(50));
    }
    nice_of(&std::fs::read_to_string(git_dir.join("gc-stat")).expect("the hook's stat line"))
}

/// A process's nice value: the 19th field of its stat line, the 17th after its name.
fn nice_of(stat: &str) -> i32 {
    let fields: Vec<&str> = stat.rsplit_once(") ").expect("a stat line").1.split(' ').collect();
    fields[16].parse().expect("a nice value")
}

/// Every long-lived way in (the server, MCP) leaves a gc that a write sets off to git's own
/// background process, below its own priority; a command in its own process runs it inline, at
/// its own. Every write lands either way.
#[test]
fn a_write_past_the_gc_threshold_leaves_the_gc_to_git_below_every_long_lived_way_in() {
    let sb = Sandbox::new();
    let ours = nice_of(&std::fs::read_to_string("/proc/self/stat").expect("our stat"));
    let add = ["add", "-t", "pattern", "-s", "Retry payment webhooks with backoff"];

    let own = past_the_gc_threshold(&sb, "own");
    assert!(neo(&sb, &own, false, &add).status.success());
    assert_eq!(gc_nice(&own), ours, "a command in its own process waits for its gc");

    let served = past_the_gc_threshold(&sb, "served");
    let server = start(&sb, &served);
    assert!(neo(&sb, &served, true, &add).status.success());
    assert_eq!(status(&sb, &served)["commands"], 1, "the server ran the add");
    assert!(gc_nice(&served) >= (ours + 10).min(19), "the server's gc ran at its own priority");
    drop(server);

    let mcp = past_the_gc_threshold(&sb, "mcp");
    let mut client = crate::mcp::Client::spawn(sb.dir.path(), &mcp, &[("GIT_NEO_EMBEDDER", "hash")]);
    let (failed, said) = client
        .call("add_fact", serde_json::json!({"type": "pattern", "subject": "Retry payment webhooks with backoff"}));
    assert!(!failed, "{said}");
    assert!(gc_nice(&mcp) >= (ours + 10).min(19), "MCP's gc ran at its own priority");
    drop(client);

    for repo in [&own, &served, &mcp] {
        let facts = json(&String::from_utf8_lossy(&neo(&sb, repo, false, &["list", "--json"]).stdout));
        assert_eq!(facts.as_array().map(Vec::len), Some(1), "{facts}");
        sb.git(repo, &["fsck", "--no-dangling"]);
    }
}
