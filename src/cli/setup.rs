//! `git neo setup <agent>` (write agent configuration, merged into existing files) and
//! `git neo hook prompt` (what the Claude Code prompt hook runs: recall for the prompt).

use super::Ctx;
use git_neo::setup::{self, Action};
use git_neo::Error;

#[derive(clap::Args)]
pub struct SetupArgs {
    /// claude-code (MCP server, prompt hook, CLAUDE.md), cursor (.cursor/mcp.json, a project
    /// rule), codex (.codex/config.toml, AGENTS.md), gemini (.gemini/settings.json, GEMINI.md),
    /// copilot (.vscode/mcp.json, .github/copilot-instructions.md), or agents-md (AGENTS.md only).
    #[arg(value_parser = super::completions::Offer(super::completions::SETUP_TARGETS), hide_possible_values = true)]
    agent: String,
    /// Print what would be written; write nothing.
    #[arg(long)]
    dry_run: bool,
    /// Replace a git-neo MCP entry that has other settings.
    #[arg(long)]
    force: bool,
}

#[derive(clap::Subcommand)]
pub enum HookCommand {
    /// Read a Claude Code UserPromptSubmit event on stdin; print what memory knows for the prompt.
    Prompt,
}

pub fn setup(ctx: &mut Ctx, args: SetupArgs) -> Result<(), Error> {
    let root = ctx.session.work_dir()?.ok_or_else(|| {
        Error::invalid("agent", "a bare repository has no work tree to configure; run this in a clone")
    })?;
    let read = |rel: &str| std::fs::read_to_string(root.join(rel)).ok();
    let edits = setup::plan(args.agent.trim(), args.force, &read).ok_or_else(|| {
        Error::invalid(
            "agent",
            format!("{:?} is not an agent git-neo sets up; use one of: {}", args.agent, setup::AGENTS.join(", ")),
        )
    })?;
    if !args.dry_run {
        for e in &edits {
            if let Some(content) = &e.content {
                let path = root.join(&e.path);
                let io = |err| Error::Io { context: format!("writing {}", path.display()), source: err };
                if let Some(dir) = path.parent() {
                    std::fs::create_dir_all(dir).map_err(io)?;
                }
                std::fs::write(&path, content).map_err(io)?;
            }
        }
    }
    if ctx.out.json {
        ctx.out.json(&serde_json::json!({ "agent": args.agent, "dry_run": args.dry_run, "files": edits }));
        return Ok(());
    }
    let would = if args.dry_run { "would " } else { "" };
    for e in &edits {
        let line = match &e.action {
            Action::Create => format!("{would}create {}", e.path),
            Action::Update => format!("{would}update {} (merged; everything else kept)", e.path),
            Action::Unchanged => format!("{} is already set up", e.path),
            Action::Conflict { why } => format!("left {} as is: {why}", e.path),
        };
        ctx.out.line(&line);
        if args.dry_run {
            if let Some(c) = &e.content {
                for l in c.lines() {
                    ctx.out.line(&format!("    {l}"));
                }
            }
        }
    }
    if edits.iter().any(|e| matches!(e.action, Action::Conflict { .. })) {
        ctx.exit = Some(super::EXIT_USER);
    }
    Ok(())
}

pub fn hook(ctx: &mut Ctx, cmd: HookCommand) -> Result<(), Error> {
    match cmd {
        HookCommand::Prompt => {
            // A hook must never block the prompt it serves: unreadable input is a warning, exit 0.
            let input = match ctx.read_stdin_lossy(8 << 20) {
                Ok(s) => s,
                Err(e) => {
                    ctx.out.warn(&format!("git-neo could not read the hook event on stdin: {e}"));
                    return Ok(());
                }
            };
            let event: serde_json::Value = serde_json::from_str(&input).unwrap_or_default();
            let prompt = event["prompt"].as_str().unwrap_or(input.trim()).trim().to_string();
            // Short prompts ("yes", "go on") carry no task to recall for.
            if prompt.split_whitespace().count() < 3 {
                return Ok(());
            }
            let query: String = prompt.chars().take(500).collect();
            // A hook must never block the prompt it serves: failures are a warning, exit 0.
            // The agent's id for the conversation: its answers stay at what it started from.
            let conversation = event["session_id"].as_str().map(str::to_string);
            let result = match super::recall::answer_for(ctx, query, 1_500, conversation) {
                Ok(r) => r,
                Err(e) => {
                    ctx.out.warn(&format!("git-neo could not recall for this prompt: {e}"));
                    return Ok(());
                }
            };
            if result.memory_is_silent() {
                return Ok(());
            }
            for l in git_neo::recall::render::markdown(&result).lines() {
                ctx.out.line(l);
            }
            Ok(())
        }
    }
}
