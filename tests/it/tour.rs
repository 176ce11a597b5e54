//! The README's five-minute tour, executed: the block between `<!-- tour:begin -->` and
//! `<!-- tour:end -->` runs in a fresh repository with `git neo` on PATH, so the README cannot rot.
//! The completion lines and the MCP-over-HTTP block run the same way.

use crate::support::{hermetic, Sandbox, BIN};
use std::path::Path;
use std::process::Command;

/// The shell lines of the README block between `<!-- NAME:begin -->` and `<!-- NAME:end -->`.
fn readme_block(name: &str) -> String {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).expect("read README.md");
    let block = readme
        .split(&format!("<!-- {name}:begin -->"))
        .nth(1)
        .and_then(|rest| rest.split(&format!("<!-- {name}:end -->")).next())
        .unwrap_or_else(|| panic!("README.md has a {name} block"));
    block.lines().filter(|l| !l.starts_with("```")).map(|l| format!("{l}\n")).collect()
}

/// bash running `script` in `cwd` with the sandbox's environment and `git neo` on PATH.
fn bash(sb: &Sandbox, cwd: &Path, script: &str) -> Command {
    let bin_dir = Path::new(BIN).parent().expect("binary directory");
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    let mut cmd = Command::new("bash");
    hermetic(&mut cmd, sb.dir.path()).current_dir(cwd).env("PATH", path).args(["-euo", "pipefail", "-c", script]);
    cmd
}

#[test]
fn the_readme_completion_lines_run_as_written() {
    let sb = Sandbox::new();
    let out = bash(&sb, sb.dir.path(), &readme_block("completions")).output().expect("run bash");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let home = sb.dir.path();
    for (file, needle) in [
        (".local/share/bash-completion/completions/git-neo", "_git_neo"),
        (".zfunc/_git-neo", "#compdef git-neo"),
        (".config/fish/completions/git-neo.fish", "complete -c git-neo"),
    ] {
        let text = std::fs::read_to_string(home.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(text.contains(needle), "{file} lacks {needle:?}");
    }
}

#[test]
fn the_readme_mcp_over_http_block_serves_with_its_token_and_refuses_without() {
    use std::io::{Read, Write};
    use std::os::unix::process::CommandExt;
    let sb = Sandbox::new();
    // A free port in place of the README's, so parallel runs do not collide.
    let port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
    let script = readme_block("mcp-http");
    assert!(script.contains("127.0.0.1:8765"), "{script}");
    let script = script.replace("8765", &port.to_string());
    let mut child = bash(&sb, sb.dir.path(), &script)
        .env("GIT_NEO_EMBEDDER", "hash")
        .stdout(std::process::Stdio::null())
        .process_group(0)
        .spawn()
        .expect("run bash");
    let group = child.id() as i32;
    let status = |auth: Option<String>| -> Option<u16> {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
        let auth = auth.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"it","version":"1"}}}"#;
        write!(
            s,
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nAccept: \
             application/json, text/event-stream\r\n{auth}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .ok()?;
        let mut head = [0u8; 12];
        s.read_exact(&mut head).ok()?;
        String::from_utf8_lossy(&head[9..12]).parse().ok()
    };
    let mut refused = None;
    for _ in 0..200 {
        refused = status(None);
        if refused.is_some() || child.try_wait().ok().flatten().is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let token = std::fs::read_to_string(sb.dir.path().join("served/.git/neo-mcp-token")).unwrap_or_default();
    let served = status(Some(token.trim().to_string()));
    // The whole group: bash and the server it started.
    unsafe { libc::kill(-group, libc::SIGTERM) };
    let _ = child.wait();
    assert_eq!(refused, Some(401), "a request without the token");
    assert_eq!(token.trim().len(), 64, "the README's line writes a 256-bit token: {token:?}");
    assert_eq!(served, Some(200), "a request with the token");
}

#[test]
fn the_readme_tour_runs_as_written() {
    let script = readme_block("tour");
    assert!(script.contains("git neo add"), "the tour adds memory");

    let sb = Sandbox::new();
    let work = sb.path("tour");
    std::fs::create_dir_all(&work).expect("mkdir");
    let mut cmd = bash(&sb, &work, &script);
    // As a new user runs it: an empty HOME (the sandbox's), no global git config and none of git's
    // variables, so every identity comes from what the tour itself configures.
    for var in [
        "GIT_NEO_NOW",
        "GIT_AUTHOR_NAME",
        "GIT_AUTHOR_EMAIL",
        "GIT_AUTHOR_DATE",
        "GIT_COMMITTER_NAME",
        "GIT_COMMITTER_EMAIL",
        "GIT_COMMITTER_DATE",
        "GIT_CONFIG_GLOBAL",
        "GIT_CONFIG_NOSYSTEM",
    ] {
        cmd.env_remove(var);
    }
    assert!(
        !sb.dir.path().join(".gitconfig").exists() && !sb.dir.path().join(".config/git").exists(),
        "no global config"
    );
    let out = cmd.output().expect("run bash");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the tour failed\n--- script\n{script}\n--- stdout\n{stdout}\n--- stderr\n{stderr}");
    // Distinct statements draw no "possibly an update" hint (the hint is for the same thing only).
    assert!(!stderr.contains("possibly an update"), "{stderr}");
    // What the tour promises a reader they will see.
    assert!(stdout.contains("Never call the payments API from tests"), "{stdout}");
    assert!(stdout.contains("[retracted]"), "{stdout}");
    assert!(stdout.contains("neo: add constraint"), "{stdout}");
    assert!(stdout.contains("records, ok"), "verify passes: {stdout}");
    assert!(stdout.contains("# Memory for: add a refund endpoint to payments"), "recall answers: {stdout}");
    assert!(stdout.contains("### Forgotten"), "diff renders the forget: {stdout}");
    assert!(stdout.contains("[user]") && stdout.contains("[session:refunds]"), "scopes recalled together: {stdout}");
    assert!(
        !stdout.contains("user    0 records") && !stderr.contains("is not set"),
        "the user scope was written: {stdout}\n{stderr}"
    );
    assert!(stdout.contains("promoted 1 facts of session:refunds to project"), "{stdout}");
    assert!(stdout.contains("new     docs/payments.md"), "ingest: {stdout}");
    assert!(
        stdout.contains(
            "\"subject\":\"Never log card numbers.\",\"tags\":[\"agents-md\",\"agents.md\"],\"type\":\"constraint\""
        ),
        "the dry run: {stdout}"
    );
    assert!(
        stdout.contains("cites \"Refunds\" of docs/payments.md, which changed"),
        "review after the change: {stdout}"
    );
    assert!(stdout.contains("## Constraints (always apply)"), "the handbook: {stdout}");
    // The lesson: proposed by curation from the three failures, shown in the diff, applied, put back.
    assert!(
        stdout.contains("share 'cargo test without --locked'")
            || stderr.contains("share 'cargo test without --locked'"),
        "{stdout}\n{stderr}"
    );
    assert!(stdout.contains("### Lessons proposed to the instruction files"), "the diff shows the patch: {stdout}");
    assert!(stdout.contains("+<!-- git-neo:lessons -->"), "{stdout}");
    assert!(stderr.contains("applied: wrote AGENTS.md") && stderr.contains("restored: wrote AGENTS.md"), "{stderr}");
    let agents = std::fs::read_to_string(work.join("demo/AGENTS.md")).expect("AGENTS.md");
    assert!(!agents.contains("git-neo:lessons"), "restored byte for byte: {agents}");
}
