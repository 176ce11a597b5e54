//! The MCP server as a client uses it: spawn `git neo mcp`, speak JSON-RPC over its stdin and
//! stdout, and check every tool's reply, an invalid call, and the size of `tools/list`.

use crate::support::{bin, hermetic, json, Sandbox, Stopped};
use serde_json::{json as j, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

/// A JSON-RPC client over a spawned server's stdio.
pub struct Client {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next: u64,
    /// Bytes of the last raw reply line.
    pub last_len: usize,
}

impl Client {
    pub fn spawn(home: &Path, repo: &Path, env: &[(&str, &str)]) -> Client {
        let mut cmd = Command::new(bin());
        hermetic(&mut cmd, home).current_dir(repo).arg("mcp").stdin(Stdio::piped()).stdout(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("spawn git neo mcp");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut c = Client { child, stdin, stdout, next: 1, last_len: 0 };
        let init = c.request(
            "initialize",
            j!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "it", "version": "1"}}),
        );
        assert_eq!(init["result"]["serverInfo"]["name"], "git-neo", "{init}");
        c.notify("notifications/initialized");
        c
    }

    fn send(&mut self, v: &Value) {
        writeln!(self.stdin, "{v}").expect("write to the server");
        self.stdin.flush().expect("flush");
    }

    /// Write raw bytes to the server's stdin (a test of what it does with bad input).
    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.stdin.write_all(bytes).expect("write to the server");
        self.stdin.flush().expect("flush");
    }

    /// The next line the server writes, as JSON.
    pub fn next_reply(&mut self) -> Value {
        let mut line = String::new();
        let n = self.stdout.read_line(&mut line).expect("read from the server");
        assert!(n > 0, "the server closed its stdout");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON-RPC ({e}): {line}"))
    }

    pub fn notify(&mut self, method: &str) {
        self.send(&j!({"jsonrpc": "2.0", "method": method}));
    }

    /// Send a request and read lines until its reply.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        self.send(&j!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            let n = self.stdout.read_line(&mut line).expect("read from the server");
            assert!(n > 0, "the server closed its stdout while {method} was pending");
            let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON-RPC ({e}): {line}"));
            if v["id"] == id {
                self.last_len = line.trim_end().len();
                return v;
            }
        }
    }

    /// Call a tool: (is_error, text).
    pub fn call(&mut self, name: &str, arguments: Value) -> (bool, String) {
        let r = self.call_result(name, arguments);
        (r["isError"] == true, r["content"][0]["text"].as_str().unwrap_or("").to_string())
    }

    /// Call a tool: the whole result (content, structuredContent, isError).
    pub fn call_result(&mut self, name: &str, arguments: Value) -> Value {
        let v = self.request("tools/call", j!({"name": name, "arguments": arguments}));
        let r = &v["result"];
        assert!(r.is_object(), "{name}: {v}");
        r.clone()
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Every tool the server lists, in its order.
const TOOLS: [&str; 11] = [
    "recall",
    "add_fact",
    "record_attempt",
    "mark_outdated",
    "confirm",
    "forget",
    "show",
    "task_history",
    "construct_search",
    "refresh",
    "lessons",
];

#[test]
fn tools_list_stays_small_and_every_tool_is_annotated() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let mut c = Client::spawn(sb.dir.path(), &repo, &[("GIT_NEO_EMBEDDER", "none")]);
    let list = c.request("tools/list", j!({}));
    let size = c.last_len;
    // Eleven tools, each bounded against hostile input (maxLength on every string): about 2,500 tokens.
    assert!(size < 10_000, "tools/list is {size} bytes; keep it under about 2,500 tokens");
    let tools = list["result"]["tools"].as_array().expect("tools");
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, TOOLS);
    for t in tools {
        assert_eq!(t["inputSchema"]["additionalProperties"], false, "{t}");
        assert!(t["description"].as_str().is_some_and(|d| d.len() < 300), "{t}");
        let read_only = t["annotations"]["readOnlyHint"] == true;
        let name = t["name"].as_str().unwrap_or("");
        assert_eq!(read_only, ["recall", "show", "task_history", "construct_search", "refresh"].contains(&name), "{t}");
        assert_eq!(t["outputSchema"]["type"], "object", "every tool says what its structuredContent holds: {t}");
        assert!(t["outputSchema"]["required"].as_array().is_some_and(|r| !r.is_empty()), "{t}");
    }
    let forget = tools.iter().find(|t| t["name"] == "forget").expect("forget");
    assert_eq!(forget["annotations"]["destructiveHint"], true);
}

#[test]
fn a_client_does_the_whole_memory_loop_through_the_server() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let mut c = Client::spawn(sb.dir.path(), &repo, &[("GIT_NEO_EMBEDDER", "hash")]);

    let (e, text) = c.call(
        "add_fact",
        j!({"type": "constraint", "subject": "Use Postgres 15 for the main database", "key": "db.engine", "tags": ["db"]}),
    );
    assert!(!e, "{text}");
    let pg15 = json(&text)["id"].as_str().expect("id").to_string();
    let (e, text) = c.call(
        "add_fact",
        j!({"type": "constraint", "subject": "Use Postgres 16 for the main database", "key": "db.engine"}),
    );
    assert!(!e, "{text}");
    let added = json(&text);
    assert_eq!(added["superseded"][0]["old"], pg15.as_str(), "{added}");
    assert_eq!(added["superseded"][0]["method"], "key");
    let pg16 = added["id"].as_str().expect("id").to_string();

    // A write by another process between calls is seen by the next call.
    sb.neo_ok(&repo, &["add", "-t", "decision", "-s", "Releases are cut on Tuesdays"]);

    let (e, text) = c.call("recall", j!({"query": "which database do we use", "k": 5}));
    assert!(!e, "{text}");
    assert!(text.contains("Use Postgres 16") && text.contains("~~Use Postgres 15"), "{text}");
    let (_, text) = c.call("recall", j!({"query": "when are releases cut", "types": ["decision"]}));
    assert!(text.contains("Releases are cut on Tuesdays") && !text.contains("Postgres"), "{text}");
    let (_, text) = c.call("recall", j!({"query": "database", "as_of": "2020-01-01"}));
    assert!(!text.contains("Postgres"), "nothing was written by 2020: {text}");

    let (e, text) = c.call(
        "record_attempt",
        j!({"task": "DB-1", "action": "upgrade the driver", "observation": "tests pass locally",
            "inference": "the driver was the blocker", "files": ["src/lib.rs"],
            "check_command": "cargo test", "check_result": "passed"}),
    );
    assert!(!e, "{text}");
    let attempt = json(&text)["id"].as_str().expect("id").to_string();
    let (e, text) = c.call("task_history", j!({"task": "DB-1"}));
    assert!(!e, "{text}");
    let h = json(&text);
    assert_eq!(h["total"], 1);
    assert_eq!(h["attempts"][0]["check"]["result"], "passed");
    assert_eq!(h["attempts"][0]["check"]["source"], "reported");
    assert_eq!(h["attempts"][0]["freshness"], "fresh");

    let (e, text) = c.call("mark_outdated", j!({"id": &attempt[..10], "reason": "the driver was rolled back"}));
    assert!(!e, "{text}");
    let (e, text) = c.call("show", j!({"id": &attempt[..10]}));
    assert!(!e && json(&text)["status"] == "outdated", "{text}");

    // A dry run through the server takes the CLI's path: the plan comes back, nothing is written,
    // and the warm server's next call writes for real.
    let tip = sb.tip(&repo);
    let (e, text) = c.call("forget", j!({"id": &pg16[..10], "reason": "wrong cluster", "dry_run": true}));
    assert!(!e, "{text}");
    let dry = json(&text);
    assert_eq!(dry["plan"]["commits"][0]["records"][0]["kind"], "retraction", "{text}");
    assert_eq!(sb.tip(&repo), tip, "a dry run through MCP wrote");
    let (_, text) = c.call("show", j!({"id": &pg16[..10]}));
    assert_eq!(json(&text)["status"], "valid", "{text}");

    let (e, text) = c.call("forget", j!({"id": &pg16[..10], "reason": "wrong cluster"}));
    assert!(!e, "{text}");
    assert_eq!(json(&text)["id"], dry["id"], "the plan and the write differ");
    let (_, text) = c.call("show", j!({"id": &pg16[..10]}));
    assert_eq!(json(&text)["status"], "retracted");

    // An add's dry run takes the same path as the CLI's: the plan and the id the CLI's dry run
    // gives, nothing written.
    let tip = sb.tip(&repo);
    let add = j!({"type": "decision", "subject": "Staging runs on Postgres 16", "dry_run": true});
    let (e, text) = c.call("add_fact", add);
    assert!(!e, "{text}");
    let mcp_dry = json(&text);
    assert!(mcp_dry["plan"]["commits"][0]["records"][0]["kind"] == "fact", "{text}");
    assert_eq!(sb.tip(&repo), tip, "an add's dry run through MCP wrote");
    let cli_dry =
        json(&sb.neo_ok(&repo, &["add", "-t", "decision", "-s", "Staging runs on Postgres 16", "--dry-run", "--json"]));
    assert_eq!(cli_dry["id"], mcp_dry["id"], "the CLI and MCP plan the same record");
    assert_eq!(sb.tip(&repo), tip, "an add's dry run through the CLI wrote");

    let (e, text) = c.call("construct_search", j!({"query": "bisect to find the regression", "k": 2}));
    assert!(!e, "{text}");
    assert_eq!(json(&text)["hits"][0]["name"], "bisect-a-regression", "{text}");

    // The same loop is visible to the CLI.
    let listed = sb.neo_ok(&repo, &["list", "--all"]);
    assert!(listed.contains("DB-1: upgrade the driver") && listed.contains("[retracted]"), "{listed}");
    assert!(sb.neo(&repo, &["verify"]).status.success());
}

#[test]
fn invalid_calls_are_tool_errors_and_write_nothing() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    sb.neo_ok(&repo, &["add", "-t", "pattern", "-s", "Keep functions short"]);
    let before = sb.tip(&repo);
    let mut c = Client::spawn(sb.dir.path(), &repo, &[("GIT_NEO_EMBEDDER", "none")]);
    let cases = [
        ("add_fact", j!({"type": "rumour", "subject": "x"}), "type"),
        ("add_fact", j!({"type": "pattern", "subject": "x", "colour": "red"}), "unknown field `colour`"),
        ("add_fact", j!({"type": "pattern", "subject": "Slack token xoxb-1234567890-abcdefghij"}), "slack-token"),
        ("add_fact", j!({"subject": "no type"}), "missing field `type`"),
        ("record_attempt", j!({"task": "T", "action": "a", "observation": ""}), "observation"),
        (
            "record_attempt",
            j!({"task": "T", "action": "a", "observation": "o", "check_result": "passed"}),
            "go together",
        ),
        ("mark_outdated", j!({"id": "zzzz", "reason": "x"}), "id"),
        ("forget", j!({"id": "0000000000", "reason": "x"}), "0000000000"),
        ("recall", j!({"query": "x", "types": ["gossip"]}), "types"),
        ("recall", j!({"query": "x", "as_of": "yesterday-ish"}), "as_of"),
        ("recall", j!({"query": 5}), "invalid type"),
    ];
    for (tool, args, needle) in cases {
        let (is_error, text) = c.call(tool, args.clone());
        assert!(is_error, "{tool} {args}: {text}");
        assert!(text.contains(needle), "{tool} {args}: {text}");
        assert!(!text.contains("abcdefghij"), "never echo a secret: {text}");
    }
    assert_eq!(sb.tip(&repo), before, "nothing was written");
    let unknown = c.request("tools/call", j!({"name": "drop_table", "arguments": {}}));
    assert!(unknown["error"]["message"].as_str().is_some_and(|m| m.contains("drop_table")), "{unknown}");
}

/// The command line says what to run to fix a mistake (`git neo revert …`, `git neo list --all`);
/// a client of the MCP server has tools, not those commands, and reads what went wrong alone.
#[test]
fn errors_reach_a_client_without_the_command_lines_advice() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let id = sb.neo_ok(&repo, &["add", "-t", "pattern", "-s", "Keep functions short"]);
    sb.neo_ok(&repo, &["forget", &id, "--reason", "wrong"]);
    let outdated = sb.neo(&repo, &["outdated", &id, "--reason", "x"]);
    assert_eq!(outdated.status.code(), Some(1));
    assert!(crate::support::stderr(&outdated).contains("`git neo revert "), "{}", crate::support::stderr(&outdated));
    let missing = sb.neo(&repo, &["forget", "0000000000", "--reason", "x"]);
    assert!(crate::support::stderr(&missing).contains("`git neo list --all`"), "{}", crate::support::stderr(&missing));

    let mut c = Client::spawn(sb.dir.path(), &repo, &[("GIT_NEO_EMBEDDER", "none")]);
    for (tool, args, needle) in [
        ("mark_outdated", j!({"id": &id, "reason": "x"}), "is forgotten"),
        ("forget", j!({"id": "0000000000", "reason": "x"}), "no record id starts with"),
    ] {
        let (is_error, text) = c.call(tool, args);
        assert!(is_error && text.contains(needle), "{tool}: {text}");
        assert!(!text.contains("git neo") && !text.contains("--"), "{tool}: no command-line advice: {text}");
    }
}

#[test]
fn replies_are_bounded_and_say_when_they_were_cut() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let body = "A long note about the payment gateway. ".repeat(400);
    let big = sb.neo_ok(&repo, &["add", "-t", "architecture", "-s", "Payment gateway notes", "-b", &body]);
    let mut c = Client::spawn(sb.dir.path(), &repo, &[("GIT_NEO_EMBEDDER", "none")]);
    let (e, text) = c.call("show", j!({"id": &big[..10]}));
    assert!(!e);
    assert!(text.len() < 16_200, "{}", text.len());
    assert!(text.contains("[cut:") && text.contains("more bytes not shown"), "{}", &text[text.len() - 200..]);
    // The structured content is cut inside its strings, so it stays valid JSON of the same shape.
    let r = c.call_result("show", j!({"id": &big[..10]}));
    let structured = &r["structuredContent"];
    assert!(structured["text"].as_str().is_some_and(|t| t.contains("more bytes not shown")), "{structured}");
    assert_eq!(structured["id"], big.trim(), "short fields are kept whole");
    assert!(serde_json::to_string_pretty(structured).expect("json").len() <= 16_000);
    let (_, text) = c.call("recall", j!({"query": "payment gateway", "budget": 300}));
    assert!(text.contains("more item(s) not shown") || text.len() < 2_000, "{text}");
}

/// Wait (up to 20 s) until the caches' stamp of `repo` names the memory's tip: the server caught
/// its indexes up with no further request.
fn wait_for_caught_up(sb: &Sandbox, repo: &Path) {
    let stamp = || -> Value {
        let path = repo.join(".git/neo/index/stamp.json");
        std::fs::read(path).ok().and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or(Value::Null)
    };
    let tip = sb.git(repo, &["rev-parse", git_neo::store::DEFAULT_REF]);
    let start = std::time::Instant::now();
    while stamp()["tips"][0] != tip.as_str() {
        assert!(start.elapsed().as_secs() < 20, "the server never caught up: {} vs {tip}", stamp());
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Between calls, once the answer to a write is out, the server catches its indexes up to it: the
/// caches' stamp reaches the new tip with no further request (the next recall does not wait for
/// the catch-up).
#[test]
fn the_server_catches_up_after_a_write_before_the_next_call() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    sb.neo_ok(&repo, &["add", "-t", "decision", "-s", "Timeouts are five seconds per call"]);
    let mut c = Client::spawn(sb.dir.path(), &repo, &[("GIT_NEO_EMBEDDER", "hash")]);
    let (e, text) = c.call("recall", j!({"query": "timeouts"}));
    assert!(!e, "{text}");
    let (e, text) = c.call("add_fact", j!({"type": "pattern", "subject": "Retries back off exponentially"}));
    assert!(!e, "{text}");
    wait_for_caught_up(&sb, &repo);
    let (e, text) = c.call("recall", j!({"query": "how do retries back off"}));
    assert!(!e && text.contains("Retries back off exponentially"), "{text}");
}

#[test]
fn a_client_writes_to_a_scope_and_recalls_every_scope_through_one_warm_server() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let mut c = Client::spawn(sb.dir.path(), &repo, &[("GIT_NEO_EMBEDDER", "hash")]);
    let (e, text) = c.call(
        "add_fact",
        j!({"type": "pattern", "subject": "I always run the linter before pushing", "scope": "user"}),
    );
    assert!(!e, "{text}");
    let (e, text) = c.call(
        "add_fact",
        j!({"type": "decision", "subject": "The linter config lives in lint.toml", "area": "tooling"}),
    );
    assert!(!e, "{text}");
    // The next call without a scope goes to the project again.
    assert!(sb.neo_ok(&repo, &["list"]).contains("lint.toml"));
    assert!(!sb.neo_ok(&repo, &["list"]).contains("always run the linter"));
    assert!(sb.neo_ok(&repo, &["--scope", "user", "list"]).contains("always run the linter"));
    let (e, text) = c.call("recall", j!({"query": "linter before pushing lint.toml"}));
    assert!(!e, "{text}");
    assert!(text.contains("always run the linter") && text.contains("[user]"), "{text}");
    assert!(text.contains("lint.toml"), "{text}");
    let (e, text) = c.call("recall", j!({"query": "linter before pushing", "scope": "user"}));
    assert!(!e, "{text}");
    assert!(!text.contains("lint.toml"), "only the user scope: {text}");
    let (e, text) = c.call("add_fact", j!({"type": "pattern", "subject": "x", "scope": "backend"}));
    assert!(e && text.contains("--area backend"), "{text}");
    // Writes between recalls: the warm server's fold of all scopes catches up with each.
    let (e, text) = c.call(
        "add_fact",
        j!({"type": "decision", "subject": "Lint with clippy pedantic", "key": "lint.level", "scope": "user"}),
    );
    assert!(!e, "{text}");
    let (_, text) = c.call("recall", j!({"query": "lint level clippy"}));
    assert!(text.contains("Lint with clippy pedantic") && text.contains("[user]"), "{text}");
    let (e, text) = c.call(
        "add_fact",
        j!({"type": "decision", "subject": "Lint with the default clippy lints", "key": "lint.level"}),
    );
    assert!(!e, "{text}");
    let (_, text) = c.call("recall", j!({"query": "lint level clippy"}));
    assert!(text.contains("Lint with the default clippy lints"), "{text}");
    // The project's fact answers the key; the user's is named only as what it overrides.
    let named: Vec<&str> = text.lines().filter(|l| l.contains("Lint with clippy pedantic")).collect();
    assert_eq!(named.len(), 1, "{text}");
    assert!(named[0].contains("project note overrides user fact"), "{text}");
}

/// Whether `value` conforms to `schema`, for the keywords the tools' output schemas use (`type`,
/// `required`, `properties`, `items`): the first mismatch, with where it is.
fn conforms(schema: &Value, value: &Value, at: &str) -> Result<(), String> {
    if let Some(t) = schema["type"].as_str() {
        let ok = match t {
            "object" => value.is_object(),
            "array" => value.is_array(),
            "string" => value.is_string(),
            "boolean" => value.is_boolean(),
            "integer" => value.is_i64() || value.is_u64(),
            "number" => value.is_number(),
            _ => return Err(format!("{at}: the schema names an unknown type {t}")),
        };
        if !ok {
            return Err(format!("{at}: {value} is not of type {t}"));
        }
    }
    for r in schema["required"].as_array().into_iter().flatten() {
        let r = r.as_str().unwrap_or("");
        if value.get(r).is_none() {
            return Err(format!("{at}: required property {r} is missing from {value}"));
        }
    }
    if let (Some(props), Some(obj)) = (schema["properties"].as_object(), value.as_object()) {
        for (k, s) in props {
            if let Some(v) = obj.get(k) {
                conforms(s, v, &format!("{at}.{k}"))?;
            }
        }
    }
    if let (Some(items), Some(arr)) = (schema.get("items"), value.as_array()) {
        for (i, v) in arr.iter().enumerate() {
            conforms(items, v, &format!("{at}[{i}]"))?;
        }
    }
    Ok(())
}

#[test]
fn every_tool_answers_with_structured_content_that_matches_its_output_schema() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let mut c = Client::spawn(sb.dir.path(), &repo, &[("GIT_NEO_EMBEDDER", "hash")]);
    let list = c.request("tools/list", j!({}));
    let schemas: std::collections::HashMap<String, Value> = list["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| (t["name"].as_str().unwrap_or("").to_string(), t["outputSchema"].clone()))
        .collect();
    let mut called = std::collections::BTreeSet::new();
    let mut call = |c: &mut Client, name: &str, args: Value| -> Value {
        let r = c.call_result(name, args);
        assert_ne!(r["isError"], true, "{name}: {r}");
        let structured = &r["structuredContent"];
        conforms(&schemas[name], structured, name).unwrap_or_else(|e| panic!("{e}"));
        let text = r["content"][0]["text"].as_str().expect("a text block");
        if name != "recall" {
            // The text block is the structured content serialised, for clients that read text only.
            assert_eq!(&json(text), structured, "{name}");
        }
        called.insert(name.to_string());
        r
    };
    let fact = call(&mut c, "add_fact", j!({"type": "decision", "subject": "Releases are cut on Tuesdays"}));
    let fact_id = fact["structuredContent"]["id"].as_str().expect("id").to_string();
    let attempt = call(
        &mut c,
        "record_attempt",
        j!({"task": "REL-1", "action": "moved the cut", "observation": "nobody noticed",
            "check_command": "make release", "check_result": "passed"}),
    );
    let attempt_id = attempt["structuredContent"]["id"].as_str().expect("id").to_string();
    let recalled = call(&mut c, "recall", j!({"query": "when are releases cut"}));
    assert_eq!(recalled["structuredContent"]["facts"][0]["id"], fact_id.as_str(), "{recalled}");
    let text = recalled["content"][0]["text"].as_str().unwrap_or("");
    assert!(text.contains("Releases are cut on Tuesdays") && !text.trim_start().starts_with('{'), "{text}");
    let shown = call(&mut c, "show", j!({"id": &fact_id[..10]}));
    assert_eq!(shown["structuredContent"]["status"], "valid");
    let history = call(&mut c, "task_history", j!({"task": "REL-1"}));
    assert_eq!(history["structuredContent"]["total"], 1);
    let hits = call(&mut c, "construct_search", j!({"query": "bisect to find the regression", "k": 2}));
    assert_eq!(hits["structuredContent"]["hits"][0]["name"], "bisect-a-regression");
    call(&mut c, "mark_outdated", j!({"id": &attempt_id[..10], "reason": "the cut moved back"}));
    call(&mut c, "confirm", j!({"id": &fact_id[..10], "reason": "checked with the release manager"}));
    call(&mut c, "forget", j!({"id": &fact_id[..10], "reason": "wrong team"}));
    call(&mut c, "refresh", j!({}));
    let lesson = call(&mut c, "lessons", j!({"action": "propose", "text": "Cut releases on Tuesdays"}));
    let lesson_id = lesson["structuredContent"]["id"].as_str().expect("id").to_string();
    call(&mut c, "lessons", j!({"action": "list"}));
    call(&mut c, "lessons", j!({"action": "apply", "id": &lesson_id[..10], "dry_run": true}));
    let all: std::collections::BTreeSet<String> = schemas.keys().cloned().collect();
    assert_eq!(called, all, "every listed tool was called");

    // A tool error carries no structured content (the client validates only successes).
    let r = c.call_result("show", j!({"id": "0000000000"}));
    assert_eq!(r["isError"], true);
    assert!(r.get("structuredContent").is_none(), "{r}");
}

/// `git neo mcp --http 127.0.0.1:0` in `repo`: the child and the URL it printed (and the token
/// it printed, when it made one up).
pub fn spawn_http(home: &Path, repo: &Path, extra: &[&str]) -> (Child, String, Option<String>) {
    let mut cmd = Command::new(bin());
    hermetic(&mut cmd, home)
        .current_dir(repo)
        .env("GIT_NEO_EMBEDDER", "hash")
        .args(["mcp", "--http", "127.0.0.1:0"])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = cmd.spawn().expect("spawn git neo mcp --http");
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut first = String::new();
    out.read_line(&mut first).expect("read the address line");
    let url = first.trim().rsplit(' ').next().unwrap_or("").to_string();
    assert!(url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"), "{first}");
    let mut second = String::new();
    out.read_line(&mut second).expect("read the token line");
    let token = second.trim().strip_prefix("token: ").filter(|t| t.len() == 64).map(str::to_string);
    (child, url, token)
}

/// One raw HTTP/1.1 POST of `body` to `url`, with `auth` as the Authorization header: the status.
pub fn post(url: &str, auth: Option<&str>, body: &str) -> u16 {
    use std::io::Read;
    let addr = url.trim_start_matches("http://").trim_end_matches("/mcp");
    let mut s = std::net::TcpStream::connect(addr).expect("connect");
    let auth = auth.map(|a| format!("Authorization: {a}\r\n")).unwrap_or_default();
    write!(
        s,
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, \
         text/event-stream\r\n{auth}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("write the request");
    let mut head = [0u8; 12];
    s.read_exact(&mut head).expect("read the status line");
    String::from_utf8_lossy(&head[9..12]).parse().expect("a status code")
}

/// One raw HTTP/1.1 POST of a JSON-RPC message over a connection of its own: the response's
/// head and body as text.
fn exchange(url: &str, token: &str, session: Option<&str>, body: &str) -> (String, String) {
    use std::io::Read;
    let addr = url.trim_start_matches("http://").trim_end_matches("/mcp");
    let mut s = std::net::TcpStream::connect(addr).expect("connect");
    let session = session.map(|id| format!("Mcp-Session-Id: {id}\r\n")).unwrap_or_default();
    write!(
        s,
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, \
         text/event-stream\r\nAuthorization: Bearer {token}\r\n{session}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("write the request");
    let mut all = String::new();
    s.read_to_string(&mut all).expect("read the response");
    let (head, rest) = all.split_once("\r\n\r\n").unwrap_or((&all, ""));
    (head.to_string(), rest.to_string())
}

/// Over HTTP as over stdio: once the answer to a write is out, the server catches its indexes up
/// to it with no further request.
#[test]
fn over_http_the_server_catches_up_after_a_write_before_the_next_call() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    sb.neo_ok(&repo, &["add", "-t", "decision", "-s", "Timeouts are five seconds per call"]);
    let (child, url, token) = spawn_http(sb.dir.path(), &repo, &[]);
    let _server = Stopped(child);
    let token = token.expect("a token made up and printed");
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"it","version":"1"}}}"#;
    let (head, _) = exchange(&url, &token, None, init);
    let session = head
        .lines()
        .find_map(|l| {
            l.split_once(':').filter(|(k, _)| k.eq_ignore_ascii_case("mcp-session-id")).map(|(_, v)| v.trim())
        })
        .expect("a session id")
        .to_string();
    exchange(&url, &token, Some(&session), r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    let call = |id: u32, name: &str, args: Value| {
        let msg = j!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": args}});
        exchange(&url, &token, Some(&session), &msg.to_string()).1
    };
    let text = call(2, "recall", j!({"query": "timeouts"}));
    assert!(text.contains("five seconds"), "{text}");
    let text = call(3, "add_fact", j!({"type": "pattern", "subject": "Retries back off exponentially"}));
    assert!(text.contains("\"isError\":false") || !text.contains("isError"), "{text}");
    wait_for_caught_up(&sb, &repo);
    let text = call(4, "recall", j!({"query": "how do retries back off"}));
    assert!(text.contains("Retries back off exponentially"), "{text}");
}

#[test]
fn http_refuses_a_request_without_the_token_from_the_file_and_serves_one_with_it() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let token = "a-token-from-a-file-0123456789";
    let file = sb.dir.path().join("token");
    std::fs::write(&file, format!("{token}\n")).expect("write the token file");
    let (child, url, printed) = spawn_http(sb.dir.path(), &repo, &["--token-file", file.to_str().unwrap_or("")]);
    let server = Stopped(child);
    assert_eq!(printed, None, "a token read from a file is never printed");
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"it","version":"1"}}}"#;
    assert_eq!(post(&url, None, init), 401, "no token");
    assert_eq!(post(&url, Some("Bearer wrong-token-0123456789abcd"), init), 401, "a wrong token");
    assert_eq!(post(&url, Some(&format!("Basic {token}")), init), 401, "another scheme");
    assert_eq!(post(&url, Some(&format!("Bearer {token}")), init), 200, "the token");
    drop(server);

    // Bad flags are refused by name, before anything listens.
    for (args, needle) in [
        (vec!["mcp", "--http", "localhost"], "--http"),
        (vec!["mcp", "--http", "0", "--token-file", "/nonexistent/token"], "--token-file"),
        (vec!["mcp", "--token-file", "x"], "--http"),
    ] {
        let out = sb.neo(&repo, &args);
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    std::fs::write(&file, "short\n").expect("write");
    let out = sb.neo(&repo, &["mcp", "--http", "0", "--token-file", file.to_str().unwrap_or("")]);
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("16"), "{out:?}");
}

/// Where `.ci/run` installs the MCP Python SDK (`pip install --target`).
fn python_sdk() -> std::path::PathBuf {
    std::env::var_os("GIT_NEO_TEST_MCP_SDK")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/mcp-sdk"))
}

fn sdk_client(home: &Path, repo: &Path, args: &[&str]) -> Value {
    let sdk = python_sdk();
    assert!(
        sdk.join("mcp").is_dir(),
        "the MCP Python SDK is not at {}: run `python3 -m pip install --target {} mcp==2.3.0` (as .ci/run does)",
        sdk.display(),
        sdk.display()
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sdk/mcp_client.py");
    let mut cmd = Command::new("python3");
    hermetic(&mut cmd, home).current_dir(repo).env("PYTHONPATH", &sdk).env("GIT_NEO_EMBEDDER", "hash");
    let out = cmd.arg(&script).args(args).output().expect("run python3");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    json(stdout.lines().last().unwrap_or(""))
}

#[test]
#[ignore = "needs the MCP Python SDK (.ci/run installs it)"]
fn the_official_python_sdk_lists_and_calls_every_tool_over_stdio_and_over_http() {
    let sb = Sandbox::new();
    let every = j!(TOOLS);

    let repo = sb.repo("stdio");
    let seen = sdk_client(sb.dir.path(), &repo, &["stdio", &bin()]);
    assert_eq!(seen["tools"], every, "{seen}");
    assert_eq!(seen["called"], TOOLS.len());
    assert!(seen["k0"].as_str().is_some_and(|t| t.contains("k: 0 is below the minimum")), "{seen}");

    let repo = sb.repo("http");
    let (child, url, token) = spawn_http(sb.dir.path(), &repo, &[]);
    let server = Stopped(child);
    let token = token.expect("a made-up token is printed");
    let seen = sdk_client(sb.dir.path(), &repo, &["http", &url, &token]);
    drop(server);
    assert_eq!(seen["tools"], every, "{seen}");
    assert_eq!(seen["called"], TOOLS.len());
    assert_eq!(seen["unauthorized"], 401);
    // What the HTTP client wrote is in the clone's memory, as the CLI sees it.
    let listed = sb.neo_ok(&repo, &["list", "--all"]);
    assert!(listed.contains("Releases are cut on Tuesdays") && listed.contains("[retracted]"), "{listed}");
}
