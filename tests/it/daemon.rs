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
    let before = status(&sb, &repo)["commands"].as_u64().expect("count");

    // Recall, markdown and JSON, byte for byte.
    assert_eq!(text(&neo(&sb, &repo, true, &query)), alone);
    let json_query = ["recall", "where do deploys go", "--json"];
    assert_eq!(text(&neo(&sb, &repo, true, &json_query)).0, text(&neo(&sb, &repo, false, &json_query)).0);
    assert_eq!(status(&sb, &repo)["commands"].as_u64(), Some(before + 2), "both went through the server");

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
    assert!(status(&sb, &repo)["commands"].as_u64() > Some(before + 5));
    drop(server);
    assert_eq!(status(&sb, &repo)["running"], false, "stopped");
}

#[test]
fn a_command_with_no_server_runs_itself_and_starts_one_for_the_next() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    assert!(neo(&sb, &repo, false, &["add", "-t", "decision", "-s", "Deploys go to Fly.io"]).status.success());
    assert_eq!(status(&sb, &repo)["running"], false);
    let mut cmd = sb.neo_cmd(&repo);
    cmd.env("GIT_NEO_EMBEDDER", "hash").env("GIT_NEO_DAEMON", "on").env("GIT_NEO_DAEMON_IDLE", "30");
    let first = cmd.args(["recall", "where do deploys go"]).output().expect("recall");
    assert!(first.status.success());
    // No vector index yet: the first answer is lexical while the new server builds it.
    let said = String::from_utf8_lossy(&first.stdout);
    assert!(said.contains("Deploys go to Fly.io") && said.contains("being built in the background"), "{said}");
    let s = wait_until_running(&sb, &repo);
    assert!(s["pid"].as_u64().is_some(), "{s}");
    let second = neo(&sb, &repo, true, &["recall", "where do deploys go"]);
    assert!(neo(&sb, &repo, false, &["daemon", "stop"]).status.success());
    let start = Instant::now();
    while status(&sb, &repo)["running"] == true {
        assert!(start.elapsed() < Duration::from_secs(10), "the server did not stop");
        std::thread::sleep(Duration::from_millis(20));
    }
    // With the server gone (its socket removed or stale), commands still answer by themselves.
    let third = text(&neo(&sb, &repo, false, &["recall", "where do deploys go"]));
    assert_eq!(third.0, String::from_utf8_lossy(&second.stdout), "the server's answer is the process's");
}

#[test]
fn the_first_recall_of_a_fresh_clone_answers_lexically_while_the_new_server_builds_the_vectors() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let lines: String = (0..40)
        .map(|i| format!("{{\"type\": \"pattern\", \"subject\": \"Service {i} keeps its retry queue bounded\"}}\n"))
        .collect();
    std::fs::write(repo.join("facts.jsonl"), lines).expect("write");
    // Written without a model, as a clone receives a memory: records, no vector index.
    let mut import = sb.neo_cmd(&repo);
    import.env("GIT_NEO_EMBEDDER", "none").args(["import", "facts.jsonl"]);
    assert!(import.output().expect("import").status.success());
    let recall = |daemon: bool| {
        let mut cmd = sb.neo_cmd(&repo);
        cmd.env("GIT_NEO_EMBEDDER", "hash")
            .env("GIT_NEO_DAEMON", if daemon { "on" } else { "off" })
            .env("GIT_NEO_DAEMON_IDLE", "30")
            .args(["recall", "--json", "retry queue of service 7"]);
        text(&cmd.output().expect("recall"))
    };
    let (stdout, stderr, code) = recall(true);
    assert_eq!(code, Some(0), "{stderr}");
    let first = json(&stdout);
    assert_eq!(first["semantic"], false, "no model was loaded for the first answer: {first}");
    assert!(stderr.contains("the vector index is being built by the background server"), "{stderr}");
    assert!(stdout.contains("Service 7 keeps its retry queue bounded"), "the lexical answer finds it: {stdout}");
    wait_until_running(&sb, &repo);
    let (stdout, stderr, _) = recall(true);
    assert_eq!(json(&stdout)["semantic"], true, "the server answers semantically: {stderr}");
    assert!(!stderr.contains("being built"), "{stderr}");
    assert!(neo(&sb, &repo, false, &["daemon", "stop"]).status.success());

    // Without a server to build them, a command embeds what it needs itself, as it always has.
    let fresh = sb.repo("fresh");
    std::fs::copy(repo.join("facts.jsonl"), fresh.join("facts.jsonl")).expect("copy");
    let mut import = sb.neo_cmd(&fresh);
    import.env("GIT_NEO_EMBEDDER", "none").args(["import", "facts.jsonl"]);
    assert!(import.output().expect("import").status.success());
    let mut cmd = sb.neo_cmd(&fresh);
    cmd.env("GIT_NEO_EMBEDDER", "hash").env("GIT_NEO_DAEMON", "off").args(["recall", "--json", "retry queue"]);
    let (stdout, stderr, _) = text(&cmd.output().expect("recall"));
    assert_eq!(json(&stdout)["semantic"], true, "{stderr}");
}
