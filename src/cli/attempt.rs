//! `git neo attempt`, `git neo task` and `git neo recheck`: what was tried, and whether its check
//! still holds.

use super::Ctx;
use git_neo::api::{AttemptRequest, CheckSpec, DEFAULT_CHECK_TIMEOUT};
use git_neo::record::Payload;
use git_neo::Error;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

#[derive(clap::Args)]
pub struct AttemptArgs {
    /// The task this attempt belongs to.
    #[arg(long)]
    task: String,
    /// What was tried.
    #[arg(long)]
    action: String,
    /// What was observed (required).
    #[arg(long)]
    observation: String,
    /// What was inferred from it (kept apart from the observation).
    #[arg(long)]
    inference: Option<String>,
    /// Affected files (repeatable; must exist at HEAD or in the work tree).
    #[arg(long = "files", num_args = 1.., value_name = "PATH")]
    files: Vec<String>,
    /// A check you ran yourself (give --result too).
    #[arg(long, conflicts_with = "run", requires = "result")]
    check: Option<String>,
    /// The result of --check: passed or failed.
    #[arg(long, requires = "check")]
    result: Option<String>,
    /// A check for git-neo to run now, through your shell, in the repository root.
    #[arg(long)]
    run: Option<String>,
    /// Timeout for --run, in seconds.
    #[arg(long, default_value_t = DEFAULT_CHECK_TIMEOUT.as_secs())]
    timeout: u64,
    /// A free-form area label (default: the scope's name).
    #[arg(long)]
    area: Option<String>,
    #[arg(long = "tag")]
    tags: Vec<String>,
    /// A code snippet the attempt proposes; `git neo outcomes` looks for it in later commits.
    #[arg(long)]
    suggestion: Option<String>,
}

#[derive(clap::Args)]
pub struct TaskArgs {
    /// The task id.
    task: String,
    /// Show at most this many attempts (the newest).
    #[arg(long, default_value_t = 50)]
    limit: usize,
    /// Stop printing after about this many bytes.
    #[arg(long, default_value_t = 16_000)]
    max_bytes: usize,
}

#[derive(clap::Args)]
pub struct RecheckArgs {
    /// An attempt id (prefix), or a task id (its latest attempt with a check command).
    target: String,
    /// Timeout in seconds.
    #[arg(long, default_value_t = DEFAULT_CHECK_TIMEOUT.as_secs())]
    timeout: u64,
    /// Run the check even if this clone never ran it before (it is printed first either way).
    #[arg(long)]
    yes: bool,
}

/// The user's shell (`$SHELL`), or `/bin/sh`.
fn shell() -> PathBuf {
    std::env::var_os("SHELL").filter(|s| !s.is_empty()).map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/bin/sh"))
}

pub fn attempt(ctx: &mut Ctx, args: AttemptArgs) -> Result<(), Error> {
    let check = match (args.check, args.result, args.run) {
        (Some(command), Some(result), None) => CheckSpec::Reported { command, result },
        (None, None, Some(command)) => {
            CheckSpec::Run { command, shell: shell(), timeout: Duration::from_secs(args.timeout) }
        }
        _ => CheckSpec::None,
    };
    let req = AttemptRequest {
        task: args.task,
        action: args.action,
        observation: args.observation,
        inference: args.inference,
        files: args.files,
        check,
        area: args.area,
        tags: args.tags,
        retry_of: None,
        suggestion: args.suggestion,
    };
    let outcome = ctx.session.attempt(&req)?;
    if ctx.out.json {
        ctx.out.json(&outcome);
    } else {
        ctx.out.line(&outcome.id.to_hex());
        ctx.out.note(&format!("recorded attempt {}", outcome.id.short()));
    }
    Ok(())
}

pub fn task(ctx: &mut Ctx, args: TaskArgs) -> Result<(), Error> {
    let history = ctx.session.task_history(&args.task)?;
    let total = history.len();
    let shown: Vec<_> = history.into_iter().rev().take(args.limit).collect::<Vec<_>>().into_iter().rev().collect();
    let cut_rows = total - shown.len();
    if ctx.out.json {
        ctx.out.json(&serde_json::json!({ "task": args.task, "total": total, "attempts": shown, "cut": cut_rows }));
        return Ok(());
    }
    if total == 0 {
        ctx.out.note(&format!("no attempts recorded for task {}", args.task));
        return Ok(());
    }
    if cut_rows > 0 {
        ctx.out.line(&format!("… {cut_rows} older attempts not shown (--limit)"));
    }
    let mut bytes = 0;
    for (i, v) in shown.iter().enumerate() {
        let Payload::Attempt(a) = &v.entry.record.payload else { continue };
        let mut status = if v.entry.status == git_neo::api::Status::Valid {
            String::new()
        } else {
            format!(" [{}]", v.entry.status.as_str())
        };
        if let Some(from) = &v.fetched_from {
            status.push_str(&format!(" [fetched from {}, not merged: never re-run]", git_neo::display::escape(from)));
        }
        let mut text = format!(
            "{} {} {} ({}{}){status}\n    observed: {}\n",
            ctx.out.paint("33", &v.entry.id.short()),
            v.entry.record.created_at,
            git_neo::display::escape(&a.action),
            a.check.result,
            a.check
                .command
                .as_deref()
                .map(|c| format!(", {}: {}", a.check.source, git_neo::display::escape(c)))
                .unwrap_or_default(),
            git_neo::display::escape(a.observation.lines().next().unwrap_or(""))
        );
        if let Some(inf) = &a.inference {
            text.push_str(&format!("    inferred: {}\n", git_neo::display::escape(inf.lines().next().unwrap_or(""))));
        }
        text.push_str(&format!("    check: {}\n", v.freshness));
        if bytes + text.len() > args.max_bytes {
            ctx.out.line(&format!(
                "… output cut at {} bytes: {} more attempts not shown (--max-bytes)",
                args.max_bytes,
                shown.len() - i
            ));
            break;
        }
        bytes += text.len();
        for l in text.lines() {
            ctx.out.line(l);
        }
    }
    Ok(())
}

pub fn recheck(ctx: &mut Ctx, args: RecheckArgs) -> Result<(), Error> {
    // The exact command is shown before anything runs; one this clone never ran needs --yes, or a
    // yes typed at a terminal.
    let plan = ctx.session.recheck_plan(&args.target)?;
    let shown = git_neo::display::escape(&plan.command);
    let mut approved = args.yes;
    if plan.known || args.yes {
        ctx.out.note(&format!("running the check of attempt {}: {shown}", plan.attempt.short()));
    } else if !ctx.out.json && std::io::stdin().is_terminal() && std::io::stderr().is_terminal() {
        ctx.out.note(&format!("the check of attempt {} is new to this clone:\n    {shown}", plan.attempt.short()));
        approved = confirm("run it? [y/N] ");
    }
    let r = ctx.session.recheck(&args.target, &shell(), Duration::from_secs(args.timeout), approved)?;
    if ctx.out.json {
        ctx.out.json(&r);
    } else {
        ctx.out.line(&r.attempt.id.to_hex());
        ctx.out.note(&format!(
            "re-checked: {} at HEAD; new attempt {}, outcome {} {:+.2} on {}",
            r.result,
            r.attempt.id.short(),
            r.signal,
            r.delta,
            plan.attempt.short()
        ));
    }
    Ok(())
}

/// Ask on stderr and read a line from the terminal: yes only for `y` or `yes`.
fn confirm(question: &str) -> bool {
    use std::io::Write;
    let _ = write!(std::io::stderr(), "{question}");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer).is_ok()
        && matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}
