//! Live sessions are never silently rewritten (docs/scopes.md, "Sessions that stay put"): an MCP
//! connection, a CLI working session and a prompt-hook conversation each keep their constraints
//! as they started, are told what changed, and take it in when they refresh; their own writes
//! are theirs at once. The same through the background server.

use crate::mcp::Client;
use crate::support::{json, stderr, stdout, Sandbox};
use serde_json::json as j;
use std::path::Path;

use crate::daemon::neo;

fn ok(sb: &Sandbox, repo: &Path, daemon: bool, args: &[&str]) -> String {
    let out = neo(sb, repo, daemon, args);
    assert!(out.status.success(), "git neo {args:?}: {}\n{}", stdout(&out), stderr(&out));
    stdout(&out).trim().to_string()
}

#[test]
fn a_live_mcp_session_keeps_its_constraints_until_it_refreshes() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    ok(
        &sb,
        &repo,
        false,
        &["add", "--type", "constraint", "--subject", "Never push directly to main", "--key", "git.push"],
    );
    let env = [("GIT_NEO_EMBEDDER", "hash")];
    let mut writer = Client::spawn(sb.dir.path(), &repo, &env);
    let mut reader = Client::spawn(sb.dir.path(), &repo, &env);
    let first = reader.call_result("recall", j!({"query": "how do we push"}));
    assert!(first["structuredContent"].get("stale").is_none(), "{first}");

    // The writer's own writes are visible to it at once, and it is not stale.
    let (e, text) = writer.call(
        "add_fact",
        j!({"type": "constraint", "subject": "Push only through the merge queue", "key": "git.push"}),
    );
    assert!(!e, "{text}");
    let new = json(&text)["id"].as_str().expect("id").to_string();
    let mine = writer.call_result("recall", j!({"query": "how do we push"}));
    let constraints = mine["structuredContent"]["constraints"].to_string();
    assert!(constraints.contains("merge queue") && !constraints.contains("Never push directly"), "{mine}");
    assert!(mine["structuredContent"].get("stale").is_none(), "{mine}");

    // The reader keeps its constraint layer as it started, and is told what changed.
    let r = reader.call_result("recall", j!({"query": "how do we push"}));
    let s = &r["structuredContent"];
    let constraints = s["constraints"].to_string();
    assert!(constraints.contains("Never push directly") && !constraints.contains("merge queue"), "{r}");
    let summary = s["stale"]["summary"].as_str().expect("stale");
    assert!(summary.contains("1 new constraint") && summary.contains("Push only through the merge queue"), "{summary}");
    assert_eq!(s["stale"]["changes"][0]["id"], new.as_str());
    assert!(s["stale"]["refresh"].as_str().unwrap_or("").contains("refresh"), "{r}");
    assert!(r["content"][0]["text"].as_str().unwrap_or("").contains("**Stale:**"), "{r}");

    // Every answer says so, not only recall's.
    let shown = reader.call_result("show", j!({"id": &new[..12]}));
    assert!(shown["structuredContent"]["stale"]["summary"].as_str().unwrap_or("").contains("merge queue"), "{shown}");

    // After refresh it sees the new constraint, and is no longer stale.
    let refreshed = reader.call_result("refresh", j!({}));
    assert!(refreshed["structuredContent"]["taken_in"]["summary"].as_str().is_some(), "{refreshed}");
    let r = reader.call_result("recall", j!({"query": "how do we push"}));
    let constraints = r["structuredContent"]["constraints"].to_string();
    assert!(constraints.contains("merge queue") && !constraints.contains("Never push directly"), "{r}");
    assert!(r["structuredContent"].get("stale").is_none(), "{r}");
    assert!(reader.call_result("show", j!({"id": &new[..12]}))["structuredContent"].get("stale").is_none());

    // Its own write and another process's land between two recalls: only the other is news.
    let (e, text) = reader.call("add_fact", j!({"type": "decision", "subject": "Pushes wait for the green build"}));
    assert!(!e, "{text}");
    ok(&sb, &repo, false, &["add", "--type", "decision", "--subject", "Pushes are frozen on release day"]);
    let r = reader.call_result("recall", j!({"query": "pushes"}));
    let summary = r["structuredContent"]["stale"]["summary"].as_str().unwrap_or("").to_string();
    assert!(summary.contains("1 new fact") && summary.contains("frozen on release day"), "{r}");
    assert!(!summary.contains("green build"), "its own write is not news: {summary}");
}

/// A working session in one worktree while another worktree writes: its recall, through the CLI
/// with and without the server and through the prompt hook of a conversation, keeps its
/// constraint, says what changed, and sees its own writes.
#[test]
fn a_working_session_and_a_hook_conversation_keep_their_constraints_until_they_refresh() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let other = sb.path("r-other");
    sb.git(&repo, &["worktree", "add", "-q", other.to_str().unwrap_or("")]);
    for daemon in [false, true] {
        // Through the server, one started here and stopped (even on a failure) when dropped.
        let _server = daemon.then(|| crate::daemon::start(&sb, &repo));
        let key = if daemon { "release.day" } else { "push.rule" };
        ok(
            &sb,
            &repo,
            daemon,
            &["add", "--type", "constraint", "--subject", &format!("Old rule for {key}"), "--key", key],
        );
        ok(&sb, &repo, daemon, &["session", "start", &format!("s{}", u8::from(daemon))]);
        let hook = |prompt: &str| {
            let mut cmd = sb.neo_cmd(&repo);
            cmd.env("GIT_NEO_EMBEDDER", "hash").env("GIT_NEO_DAEMON", if daemon { "on" } else { "off" });
            cmd.args(["hook", "prompt"]).stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped());
            let mut child = cmd.spawn().expect("hook");
            let event = j!({"session_id": format!("conv-{daemon}"), "prompt": prompt}).to_string();
            std::io::Write::write_all(child.stdin.as_mut().expect("stdin"), event.as_bytes()).expect("write");
            String::from_utf8_lossy(&child.wait_with_output().expect("hook").stdout).to_string()
        };
        let first = hook(&format!("what is the rule for {key} here"));
        assert!(first.contains(&format!("Old rule for {key}")) && !first.contains("Stale"), "{first}");

        // Another worktree replaces the constraint.
        ok(
            &sb,
            &other,
            daemon,
            &["add", "--type", "constraint", "--subject", &format!("New rule for {key}"), "--key", key],
        );
        // This worktree's own write is its own.
        ok(
            &sb,
            &repo,
            daemon,
            &["add", "--type", "decision", "--subject", &format!("We follow the {key} rule strictly")],
        );

        let r = json(&ok(&sb, &repo, daemon, &["--json", "recall", &format!("rule for {key}")]));
        let constraints = r["constraints"].to_string();
        assert!(
            constraints.contains(&format!("Old rule for {key}"))
                && !constraints.contains(&format!("New rule for {key}")),
            "daemon {daemon}: {r}"
        );
        assert!(
            r["stale"]["summary"].as_str().unwrap_or("").contains(&format!("New rule for {key}")),
            "daemon {daemon}: {r}"
        );
        assert!(r["stale"]["refresh"].as_str().unwrap_or("").contains("git neo session refresh"), "{r}");
        let mine = r["facts"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|f| f["subject"].as_str().is_some_and(|s| s.contains("strictly")));
        assert!(mine.is_some_and(|m| m.get("new_since_session").is_none()), "its own write is not new to it: {r}");
        let later = hook(&format!("what is the rule for {key} now"));
        assert!(later.contains(&format!("Old rule for {key}")) && later.contains("**Stale:**"), "{later}");
        assert!(later.contains("A new conversation takes it in"), "{later}");

        // Refreshed, the session takes the new constraint in; the conversation after its refresh.
        ok(&sb, &repo, daemon, &["session", "refresh"]);
        let r = json(&ok(&sb, &repo, daemon, &["--json", "recall", &format!("rule for {key}")]));
        assert!(
            r["constraints"].to_string().contains(&format!("New rule for {key}")) && r.get("stale").is_none(),
            "{r}"
        );
        ok(&sb, &repo, daemon, &["session", "refresh", "--conversation", &format!("conv-{daemon}")]);
        let after = hook(&format!("what is the rule for {key} after all"));
        assert!(after.contains(&format!("New rule for {key}")) && !after.contains("Stale"), "{after}");
        ok(&sb, &repo, daemon, &["session", "drop"]);
    }
}
