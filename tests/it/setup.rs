//! `git neo setup` merges agent configuration into existing files, and the configuration works:
//! the MCP entry starts a server that answers, and the prompt hook prints what memory knows.

use crate::support::{hermetic, json, stderr, stdout, Sandbox, BIN};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

/// PATH with the directory holding `git-neo` first, as after installing it.
fn path_with_bin() -> String {
    let dir = Path::new(BIN).parent().expect("bin dir").display().to_string();
    format!("{dir}:{}", std::env::var("PATH").unwrap_or_default())
}

#[test]
fn claude_code_setup_merges_and_produces_working_configuration() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    std::fs::create_dir_all(repo.join(".claude")).expect("mkdir");
    std::fs::write(repo.join(".claude/settings.json"), r#"{"permissions": {"allow": ["Bash(cargo test)"]}}"#)
        .expect("write");
    std::fs::write(repo.join("CLAUDE.md"), "# House rules\n\nRun cargo fmt.\n").expect("write");

    let dry = sb.neo_ok(&repo, &["setup", "claude-code", "--dry-run"]);
    assert!(dry.contains("would create .mcp.json") && dry.contains("would update CLAUDE.md"), "{dry}");
    assert!(!repo.join(".mcp.json").exists(), "a dry run writes nothing");

    let out = sb.neo_ok(&repo, &["setup", "claude-code", "--json"]);
    let actions: Vec<String> =
        json(&out)["files"].as_array().expect("files").iter().map(|f| f["action"].to_string()).collect();
    assert_eq!(actions, vec!["\"create\"", "\"update\"", "\"update\""], "{out}");
    let settings: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(repo.join(".claude/settings.json")).expect("read"))
            .expect("json");
    assert_eq!(settings["permissions"]["allow"][0], "Bash(cargo test)", "the user's settings are kept");
    let claude = std::fs::read_to_string(repo.join("CLAUDE.md")).expect("read");
    assert!(claude.starts_with("# House rules\n\nRun cargo fmt.\n") && claude.contains("git neo recall"), "{claude}");
    let again = sb.neo_ok(&repo, &["setup", "claude-code"]);
    assert_eq!(again.matches("already set up").count(), 3, "{again}");

    // The MCP entry, run as a client would run it, answers.
    let mcp: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(repo.join(".mcp.json")).expect("read")).expect("json");
    let entry = &mcp["mcpServers"]["git-neo"];
    let mut cmd = Command::new(entry["command"].as_str().expect("command"));
    hermetic(&mut cmd, sb.dir.path()).current_dir(&repo).env("PATH", path_with_bin()).env("GIT_NEO_EMBEDDER", "none");
    let args: Vec<&str> = entry["args"].as_array().expect("args").iter().filter_map(|a| a.as_str()).collect();
    let mut child = cmd.args(&args).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().expect("start the server");
    {
        let mut stdin = child.stdin.take().expect("stdin");
        writeln!(
            stdin,
            r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"2025-06-18","capabilities":{{}},"clientInfo":{{"name":"t","version":"1"}}}}}}"#
        )
        .expect("write");
    }
    let out = child.wait_with_output().expect("server output");
    assert!(stdout(&out).contains(r#""serverInfo":{"name":"git-neo""#), "{}", stdout(&out));

    // The prompt hook, run as Claude Code runs it, prints what memory knows for the prompt.
    sb.neo_ok(&repo, &["add", "-t", "constraint", "-s", "Never call the payments API from tests"]);
    let hook = settings_hook(&repo);
    let run_hook = |event: &str| {
        let mut cmd = Command::new("sh");
        hermetic(&mut cmd, sb.dir.path())
            .current_dir(&repo)
            .env("PATH", path_with_bin())
            .env("GIT_NEO_EMBEDDER", "none");
        let mut child = cmd
            .args(["-c", &hook])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("hook");
        child.stdin.take().expect("stdin").write_all(event.as_bytes()).expect("write");
        child.wait_with_output().expect("hook output")
    };
    let out = run_hook(
        r#"{"session_id":"s","hook_event_name":"UserPromptSubmit","prompt":"add a refund endpoint to payments"}"#,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("Never call the payments API from tests"), "{}", stdout(&out));
    let short = run_hook(r#"{"prompt":"yes"}"#);
    assert!(short.status.success() && stdout(&short).is_empty(), "{}", stdout(&short));
}

fn settings_hook(repo: &Path) -> String {
    let settings: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(repo.join(".claude/settings.json")).expect("read"))
            .expect("json");
    settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"].as_str().expect("hook command").to_string()
}

#[test]
fn agents_md_and_conflicts_never_overwrite_a_users_file() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    std::fs::write(repo.join("AGENTS.md"), "# Agents\n\nAsk before deleting files.\n").expect("write");
    sb.neo_ok(&repo, &["setup", "agents-md"]);
    let text = std::fs::read_to_string(repo.join("AGENTS.md")).expect("read");
    assert!(text.starts_with("# Agents\n\nAsk before deleting files.\n"), "{text}");
    assert!(text.contains("<!-- git-neo:begin -->") && text.contains("git neo attempt"), "{text}");

    let theirs = r#"{"mcpServers": {"git-neo": {"command": "/opt/bin/git-neo", "args": ["mcp"]}}}"#;
    std::fs::write(repo.join(".mcp.json"), theirs).expect("write");
    let out = sb.neo(&repo, &["setup", "claude-code"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).contains("left .mcp.json as is"), "{}", stdout(&out));
    assert_eq!(std::fs::read_to_string(repo.join(".mcp.json")).expect("read"), theirs);
    sb.neo_ok(&repo, &["setup", "claude-code", "--force"]);
    assert!(std::fs::read_to_string(repo.join(".mcp.json")).expect("read").contains(r#""command": "git-neo""#));

    let bad = sb.neo(&repo, &["setup", "emacs"]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(stderr(&bad).contains("claude-code, cursor, codex, gemini, copilot, agents-md"), "{}", stderr(&bad));
}

#[test]
fn cursor_codex_gemini_and_copilot_are_set_up_in_their_own_files_merged_and_idempotent() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let write = |rel: &str, text: &str| {
        let p = repo.join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    };
    write(".cursor/mcp.json", r#"{"mcpServers": {"docs": {"command": "docs-mcp"}}}"#);
    write(".codex/config.toml", "model = \"o4-mini\"\n");
    write(".gemini/settings.json", r#"{"theme": "GitHub"}"#);
    write(".vscode/mcp.json", r#"{"inputs": [], "servers": {"db": {"type": "stdio", "command": "db-mcp"}}}"#);
    write(".github/copilot-instructions.md", "Prefer small functions.\n");
    let read = |rel: &str| std::fs::read_to_string(repo.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
    let server = |rel: &str, key: &str| -> serde_json::Value {
        serde_json::from_str::<serde_json::Value>(&read(rel)).expect("json")[key]["git-neo"].clone()
    };
    for agent in ["cursor", "codex", "gemini", "copilot"] {
        sb.neo_ok(&repo, &["setup", agent]);
        let again = sb.neo_ok(&repo, &["setup", agent]);
        assert_eq!(again.matches("already set up").count(), 2, "{agent}: {again}");
    }
    // Cursor: the server beside the user's, and an always-applied project rule.
    let cursor: serde_json::Value = serde_json::from_str(&read(".cursor/mcp.json")).expect("json");
    assert_eq!(cursor["mcpServers"]["docs"]["command"], "docs-mcp");
    assert_eq!(server(".cursor/mcp.json", "mcpServers")["args"][0], "mcp");
    assert!(read(".cursor/rules/git-neo.mdc").contains("alwaysApply: true"));
    // Codex: the table appended after the user's settings, and AGENTS.md.
    let codex = read(".codex/config.toml");
    assert!(
        codex.starts_with("model = \"o4-mini\"\n") && codex.contains("[mcp_servers.git-neo]\ncommand = \"git-neo\"")
    );
    assert!(read("AGENTS.md").contains("git neo recall"));
    // Gemini CLI: settings kept, GEMINI.md written.
    let gemini: serde_json::Value = serde_json::from_str(&read(".gemini/settings.json")).expect("json");
    assert_eq!(gemini["theme"], "GitHub");
    assert_eq!(server(".gemini/settings.json", "mcpServers")["command"], "git-neo");
    assert!(read("GEMINI.md").contains("git neo recall"));
    // Copilot in VS Code: `servers` with a stdio type; the user's instructions first.
    assert_eq!(server(".vscode/mcp.json", "servers")["type"], "stdio");
    let vscode: serde_json::Value = serde_json::from_str(&read(".vscode/mcp.json")).expect("json");
    assert_eq!(vscode["servers"]["db"]["command"], "db-mcp");
    assert!(read(".github/copilot-instructions.md").starts_with("Prefer small functions.\n"));
    // An import of these files leaves git-neo's own section out.
    let dry = sb.neo_ok(&repo, &["import", "--from", "copilot", ".github/copilot-instructions.md", "--dry-run"]);
    assert_eq!(dry.lines().count(), 1, "{dry}");
    // The configured command starts a server that answers (what each client runs).
    let entry = server(".vscode/mcp.json", "servers");
    let mut cmd = Command::new(entry["command"].as_str().expect("command"));
    hermetic(&mut cmd, sb.dir.path()).current_dir(&repo).env("PATH", path_with_bin()).args(["mcp"]);
    let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().expect("spawn");
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    writeln!(child.stdin.take().expect("stdin"), "{init}").expect("write");
    let out = child.wait_with_output().expect("wait");
    assert!(stdout(&out).contains("\"serverInfo\""), "{}", stderr(&out));
}
