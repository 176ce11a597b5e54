//! Agent setup: PURE. What `git neo setup <agent>` writes, as edits merged into the files a user
//! may already have. The CLI reads the files and writes the results; nothing here touches disk.
//!
//! Merging rules, so a user's file is never overwritten:
//! - JSON files (`.mcp.json`, `.claude/settings.json`) are parsed and only git-neo's own entry is
//!   added; every other key is kept as it was. If git-neo's entry exists with other settings, it is
//!   left alone and reported as a conflict, unless the caller forces the replacement.
//! - Markdown files (`AGENTS.md`, `CLAUDE.md`) get one section between `<!-- git-neo:begin -->`
//!   and `<!-- git-neo:end -->` markers: replaced in place when present, appended otherwise.
//! - A file that is not valid JSON is never rewritten.
//! - TOML (`.codex/config.toml`) gets one `[mcp_servers.git-neo]` table appended when it has none;
//!   one with other settings is a conflict unless forced (then that table alone is replaced).
//!
//! Each agent's files are the ones its own documentation names: Claude Code `.mcp.json`,
//! `.claude/settings.json`, `CLAUDE.md`; Cursor `.cursor/mcp.json` (`mcpServers`) and a project
//! rule `.cursor/rules/git-neo.mdc` (front matter with `alwaysApply: true`); Codex CLI
//! `.codex/config.toml` (`[mcp_servers.<name>]`, read in trusted projects) and `AGENTS.md`;
//! Gemini CLI `.gemini/settings.json` (`mcpServers`) and `GEMINI.md`; GitHub Copilot in VS Code
//! `.vscode/mcp.json` (`servers`, with `"type": "stdio"`) and `.github/copilot-instructions.md`.

use serde::Serialize;
use serde_json::{json, Value};

/// The agents `setup` knows.
pub const AGENTS: [&str; 6] = ["claude-code", "cursor", "codex", "gemini", "copilot", "agents-md"];

/// The command MCP clients start.
pub const MCP_COMMAND: &str = "git-neo";

/// The hook command that recalls memory for each prompt (Claude Code's `UserPromptSubmit`).
pub const PROMPT_HOOK: &str = "git-neo hook prompt";

/// The markers around the section git-neo writes into an instruction file.
pub const BEGIN: &str = "<!-- git-neo:begin -->";
pub const END: &str = "<!-- git-neo:end -->";

/// What happens to one file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Create,
    Update,
    Unchanged,
    /// Left as it is; `why` says what the user should look at.
    Conflict {
        why: String,
    },
}

/// One file's planned content.
#[derive(Clone, Debug, Serialize)]
pub struct FileEdit {
    /// Relative to the repository root.
    pub path: String,
    pub action: Action,
    /// The full new content (for create and update).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
}

/// The instructions an agent follows, as markdown (the body of the marked section). With the MCP
/// server configured, every step names the tool to call (the command line is the fallback, for a
/// shell without the server); without it, the commands.
pub fn instructions(with_mcp: bool) -> String {
    // (what to do, the MCP call, the command)
    let steps = [
        (
            "**Before starting a task**, recall what is known",
            "`recall` with the task in your words",
            "`git neo recall \"<the task in your words>\"`",
        ),
        (
            "**After each meaningful try**, record it",
            "`record_attempt` (task, action, observation, the check you ran and its result)",
            "`git neo attempt --task <id> --action \"…\" --observation \"…\" --run \"<the check>\"` (git-neo runs the check and records the commit)",
        ),
        (
            "**When you learn something durable**, add it as a fact",
            "`add_fact` with a `type` and a `slot` (`\"<subject> / <predicate>\"`)",
            "`git neo add --type decision|constraint|pattern|failure|known-unknown --subject \"…\" --slot \"<subject> / <predicate>\"`",
        ),
        (
            "**When a fact stops being true**, say so",
            "`mark_outdated` with the id and the reason",
            "`git neo outdated <id> --reason \"…\"`",
        ),
    ];
    let how = if with_mcp {
        "Use the `git-neo` MCP tools named below; the command line (`git neo …`) does the same where the \
         tools are not available."
    } else {
        "Use the `git neo` command line (add `--json` for machine-readable output)."
    };
    let mut out = format!(
        "## Project memory (git-neo)\n\nThis repository keeps its memory on the `neo-memory` branch. {how}\n\n"
    );
    for (n, (what, tool, cli)) in steps.iter().enumerate() {
        let call = if with_mcp { format!("{tool} (command line: {cli})") } else { cli.to_string() };
        out.push_str(&format!("{}. {what}: {call}.", n + 1));
        match n {
            0 => out.push_str(" Constraints always apply; \"no longer true\" entries say what changed and why."),
            2 => out.push_str(
                " The slot names the thing, then what is said of it (`\"payments api / timeout\"`): a fact with the \
                 same slot replaces the old one; if the reply lists a possible update that this replaces, add it \
                 again naming it in `supersedes`. A habit of the person you work for goes to the `user` scope; \
                 working notes for this task only to a session (`git neo session start`, then scope `session`).",
            ),
            _ => {}
        }
        out.push('\n');
    }
    out.push_str("\nNever put secrets in memory; git-neo refuses them.\n");
    out
}

/// Replace or append the marked git-neo section in a markdown file.
pub fn merge_markdown(path: &str, existing: Option<&str>, section: &str) -> FileEdit {
    let block = format!("{BEGIN}\n{}\n{END}\n", section.trim_end());
    let new = match existing {
        None => block,
        Some(old) => match (old.find(BEGIN), old.find(END)) {
            (Some(b), Some(e)) if e > b => format!("{}{}{}", &old[..b], block.trim_end(), &old[e + END.len()..]),
            _ => {
                let sep = if old.is_empty() || old.ends_with("\n\n") {
                    ""
                } else if old.ends_with('\n') {
                    "\n"
                } else {
                    "\n\n"
                };
                format!("{old}{sep}{block}")
            }
        },
    };
    edit(path, existing, new)
}

fn edit(path: &str, existing: Option<&str>, new: String) -> FileEdit {
    let action = match existing {
        None => Action::Create,
        Some(old) if old == new => Action::Unchanged,
        Some(_) => Action::Update,
    };
    let content = (action != Action::Unchanged).then_some(new);
    FileEdit { path: path.to_string(), action, content }
}

fn parse_object(path: &str, existing: Option<&str>) -> Result<serde_json::Map<String, Value>, FileEdit> {
    let Some(text) = existing.filter(|t| !t.trim().is_empty()) else { return Ok(serde_json::Map::new()) };
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(m)) => Ok(m),
        _ => Err(FileEdit {
            path: path.to_string(),
            action: Action::Conflict { why: "is not a JSON object; fix it or add the entry by hand".into() },
            content: None,
        }),
    }
}

fn pretty(v: &Value) -> String {
    format!("{}\n", serde_json::to_string_pretty(v).unwrap_or_default())
}

/// `.mcp.json` with a `git-neo` server entry.
pub fn merge_mcp_json(existing: Option<&str>, force: bool) -> FileEdit {
    merge_server(".mcp.json", "mcpServers", json!({"command": MCP_COMMAND, "args": ["mcp"]}), existing, force)
}

/// A JSON MCP configuration at `path` with git-neo's entry `ours` under the object `key`
/// (`mcpServers` for most clients, `servers` for VS Code).
pub fn merge_server(path: &str, key: &str, ours: Value, existing: Option<&str>, force: bool) -> FileEdit {
    let mut root = match parse_object(path, existing) {
        Ok(m) => m,
        Err(conflict) => return conflict,
    };
    let servers = root.entry(key).or_insert_with(|| json!({}));
    let Some(servers) = servers.as_object_mut() else {
        return FileEdit {
            path: path.into(),
            action: Action::Conflict { why: format!("{key} is not an object") },
            content: None,
        };
    };
    match servers.get("git-neo") {
        Some(v) if *v == ours => {}
        Some(_) if !force => {
            return FileEdit {
                path: path.into(),
                action: Action::Conflict {
                    why: "has a git-neo server with other settings; left as is (--force replaces it)".into(),
                },
                content: None,
            }
        }
        _ => {
            servers.insert("git-neo".into(), ours);
        }
    }
    edit(path, existing, pretty(&Value::Object(root)))
}

/// `.claude/settings.json` with a `UserPromptSubmit` hook that recalls memory for the prompt.
pub fn merge_claude_settings(existing: Option<&str>) -> FileEdit {
    let path = ".claude/settings.json";
    let mut root = match parse_object(path, existing) {
        Ok(m) => m,
        Err(conflict) => return conflict,
    };
    let hooks = root.entry("hooks").or_insert_with(|| json!({}));
    let Some(hooks) = hooks.as_object_mut() else {
        return FileEdit {
            path: path.into(),
            action: Action::Conflict { why: "hooks is not an object".into() },
            content: None,
        };
    };
    let list = hooks.entry("UserPromptSubmit").or_insert_with(|| json!([]));
    let Some(list) = list.as_array_mut() else {
        return FileEdit {
            path: path.into(),
            action: Action::Conflict { why: "hooks.UserPromptSubmit is not a list".into() },
            content: None,
        };
    };
    let present = list.iter().any(|group| {
        group["hooks"].as_array().is_some_and(|hs| hs.iter().any(|h| h["command"].as_str() == Some(PROMPT_HOOK)))
    });
    if !present {
        list.push(json!({"hooks": [{"type": "command", "command": PROMPT_HOOK, "timeout": 30}]}));
    }
    edit(path, existing, pretty(&Value::Object(root)))
}

/// The `[mcp_servers.git-neo]` table Codex reads.
const CODEX_TABLE: &str = "[mcp_servers.git-neo]\ncommand = \"git-neo\"\nargs = [\"mcp\"]\n";

/// `.codex/config.toml` with git-neo's MCP server table (appended; never rewriting the rest).
pub fn merge_codex_toml(existing: Option<&str>, force: bool) -> FileEdit {
    let path = ".codex/config.toml";
    let Some(old) = existing.filter(|t| !t.trim().is_empty()) else { return edit(path, existing, CODEX_TABLE.into()) };
    let header = "[mcp_servers.git-neo]";
    let Some(start) = old.lines().position(|l| l.trim() == header) else {
        let sep = if old.ends_with("\n\n") {
            ""
        } else if old.ends_with('\n') {
            "\n"
        } else {
            "\n\n"
        };
        return edit(path, existing, format!("{old}{sep}{CODEX_TABLE}"));
    };
    let lines: Vec<&str> = old.lines().collect();
    let end =
        lines[start + 1..].iter().position(|l| l.trim_start().starts_with('[')).map_or(lines.len(), |i| start + 1 + i);
    let table: Vec<&str> = lines[start..end].iter().map(|l| l.trim()).filter(|l| !l.is_empty()).collect();
    let ours: Vec<&str> = CODEX_TABLE.lines().collect();
    if table == ours {
        return edit(path, existing, old.to_string());
    }
    if !force {
        return FileEdit {
            path: path.into(),
            action: Action::Conflict {
                why: "has an [mcp_servers.git-neo] table with other settings; left as is (--force replaces it)".into(),
            },
            content: None,
        };
    }
    let mut new: Vec<String> = lines[..start].iter().map(|l| l.to_string()).collect();
    new.extend(ours.iter().map(|l| l.to_string()));
    if end < lines.len() {
        new.push(String::new());
    }
    new.extend(lines[end..].iter().map(|l| l.to_string()));
    edit(path, existing, format!("{}\n", new.join("\n").trim_end()))
}

/// Cursor's project rule for git-neo: front matter that applies it to every request, and the
/// instructions in git-neo's marked section (a rule the user edited keeps its front matter).
pub fn merge_cursor_rule(existing: Option<&str>) -> FileEdit {
    let path = ".cursor/rules/git-neo.mdc";
    let front = "---\ndescription: Project memory (git-neo): recall before a task, record what you learn\nalwaysApply: true\n---\n\n";
    match existing {
        Some(old) if !old.trim().is_empty() => merge_markdown(path, Some(old), &instructions(true)),
        _ => {
            let body = merge_markdown(path, None, &instructions(true)).content.unwrap_or_default();
            edit(path, existing, format!("{front}{body}"))
        }
    }
}

/// git-neo's MCP server entry; VS Code names the transport (`"type": "stdio"`).
fn stdio(typed: bool) -> Value {
    match typed {
        true => json!({"type": "stdio", "command": MCP_COMMAND, "args": ["mcp"]}),
        false => json!({"command": MCP_COMMAND, "args": ["mcp"]}),
    }
}

/// Every file `setup <agent>` touches, given what each holds now (`read(path)`).
pub fn plan(agent: &str, force: bool, read: &dyn Fn(&str) -> Option<String>) -> Option<Vec<FileEdit>> {
    match agent {
        "claude-code" => Some(vec![
            merge_mcp_json(read(".mcp.json").as_deref(), force),
            merge_claude_settings(read(".claude/settings.json").as_deref()),
            merge_markdown("CLAUDE.md", read("CLAUDE.md").as_deref(), &instructions(true)),
        ]),
        "agents-md" => Some(vec![merge_markdown("AGENTS.md", read("AGENTS.md").as_deref(), &instructions(false))]),
        "cursor" => Some(vec![
            merge_server(".cursor/mcp.json", "mcpServers", stdio(false), read(".cursor/mcp.json").as_deref(), force),
            merge_cursor_rule(read(".cursor/rules/git-neo.mdc").as_deref()),
        ]),
        "codex" => Some(vec![
            merge_codex_toml(read(".codex/config.toml").as_deref(), force),
            merge_markdown("AGENTS.md", read("AGENTS.md").as_deref(), &instructions(true)),
        ]),
        "gemini" => Some(vec![
            merge_server(
                ".gemini/settings.json",
                "mcpServers",
                stdio(false),
                read(".gemini/settings.json").as_deref(),
                force,
            ),
            merge_markdown("GEMINI.md", read("GEMINI.md").as_deref(), &instructions(true)),
        ]),
        "copilot" => Some(vec![
            merge_server(".vscode/mcp.json", "servers", stdio(true), read(".vscode/mcp.json").as_deref(), force),
            merge_markdown(
                ".github/copilot-instructions.md",
                read(".github/copilot-instructions.md").as_deref(),
                &instructions(true),
            ),
        ]),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn with_the_mcp_server_the_instructions_name_the_tools_first() {
        let with = instructions(true);
        for tool in ["`recall`", "`record_attempt`", "`add_fact`", "`mark_outdated`"] {
            let at = with.find(tool).unwrap_or_else(|| panic!("{tool} in {with}"));
            let line_start = with[..at].rfind('\n').unwrap_or(0);
            let line = &with[line_start..];
            let cli = line.find("git neo").unwrap_or(usize::MAX);
            assert!(at - line_start < cli, "the tool comes before the command: {line}");
        }
        let without = instructions(false);
        assert!(!without.contains("`add_fact`") && without.contains("git neo add"), "{without}");
    }

    #[test]
    fn json_merges_keep_everything_else_and_are_idempotent() {
        let user = r#"{"mcpServers": {"other": {"command": "x"}}, "theme": "dark"}"#;
        let first = merge_mcp_json(Some(user), false);
        assert_eq!(first.action, Action::Update);
        let text = first.content.expect("content");
        let v: Value = serde_json::from_str(&text).expect("json");
        assert_eq!(v["theme"], "dark");
        assert_eq!(v["mcpServers"]["other"]["command"], "x");
        assert_eq!(v["mcpServers"]["git-neo"]["args"][0], "mcp");
        assert_eq!(merge_mcp_json(Some(&text), false).action, Action::Unchanged);

        let theirs = r#"{"mcpServers": {"git-neo": {"command": "/opt/git-neo", "args": ["mcp", "-C", "x"]}}}"#;
        assert!(matches!(merge_mcp_json(Some(theirs), false).action, Action::Conflict { .. }));
        assert_eq!(merge_mcp_json(Some(theirs), true).action, Action::Update);
        assert!(matches!(merge_mcp_json(Some("not json"), true).action, Action::Conflict { .. }));

        let settings = r#"{"permissions": {"allow": ["Bash(ls)"]}, "hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "echo hi"}]}]}}"#;
        let merged = merge_claude_settings(Some(settings)).content.expect("content");
        let v: Value = serde_json::from_str(&merged).expect("json");
        assert_eq!(v["permissions"]["allow"][0], "Bash(ls)");
        assert_eq!(v["hooks"]["UserPromptSubmit"].as_array().map(Vec::len), Some(2));
        assert_eq!(merge_claude_settings(Some(&merged)).action, Action::Unchanged);
    }

    #[test]
    fn codex_toml_is_appended_to_and_a_different_table_is_left_alone() {
        let mine = "model = \"o4\"\n\n[mcp_servers.docs]\ncommand = \"docs-mcp\"\n";
        let merged = merge_codex_toml(Some(mine), false).content.expect("content");
        assert!(merged.starts_with(mine) && merged.ends_with(CODEX_TABLE), "{merged}");
        assert_eq!(merge_codex_toml(Some(&merged), false).action, Action::Unchanged);
        let theirs = "[mcp_servers.git-neo]\ncommand = \"/opt/git-neo\"\nargs = [\"mcp\"]\n\n[other]\nx = 1\n";
        assert!(matches!(merge_codex_toml(Some(theirs), false).action, Action::Conflict { .. }));
        let forced = merge_codex_toml(Some(theirs), true).content.expect("content");
        assert!(forced.starts_with(CODEX_TABLE) && forced.ends_with("[other]\nx = 1\n"), "{forced}");
        assert_eq!(merge_codex_toml(None, false).content.as_deref(), Some(CODEX_TABLE));
    }

    #[test]
    fn every_agent_gets_its_server_entry_and_its_instruction_file() {
        for agent in AGENTS {
            let edits = plan(agent, false, &|_| None).expect("a known agent");
            assert!(edits.iter().all(|e| e.action == Action::Create), "{agent}: {edits:?}");
        }
        let vscode = plan("copilot", false, &|_| None).expect("copilot");
        let v: Value = serde_json::from_str(vscode[0].content.as_deref().expect("content")).expect("json");
        assert_eq!(v["servers"]["git-neo"]["type"], "stdio");
        let cursor = plan("cursor", false, &|_| None).expect("cursor");
        let rule = cursor[1].content.as_deref().expect("content");
        assert!(rule.starts_with("---\ndescription:") && rule.contains("alwaysApply: true") && rule.contains(BEGIN));
        let kept = "---\ndescription: mine\nglobs: src/**\n---\n";
        let merged = merge_cursor_rule(Some(kept)).content.expect("content");
        assert!(merged.starts_with(kept), "the user's front matter stays: {merged}");
    }

    #[test]
    fn markdown_sections_are_replaced_in_place_or_appended() {
        let created = merge_markdown("AGENTS.md", None, "hello");
        assert_eq!(created.action, Action::Create);
        let mine = "# My agents\n\nBe kind.\n";
        let appended = merge_markdown("AGENTS.md", Some(mine), "hello").content.expect("content");
        assert!(appended.starts_with(mine) && appended.contains(BEGIN) && appended.ends_with(&format!("{END}\n")));
        let edited = appended.replace("hello", "old text") + "\n## After\n";
        let replaced = merge_markdown("AGENTS.md", Some(&edited), "new text").content.expect("content");
        assert!(replaced.contains("new text") && !replaced.contains("old text") && replaced.ends_with("## After\n"));
        assert_eq!(replaced.matches(BEGIN).count(), 1);
        assert_eq!(merge_markdown("AGENTS.md", Some(&replaced), "new text").action, Action::Unchanged);
    }
}
