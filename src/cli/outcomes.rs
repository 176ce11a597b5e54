//! `git neo outcomes`, `git neo explain` and `git neo hooks install|uninstall`: confidence that
//! follows what later commits did.

use super::Ctx;
use git_neo::outcomes::ScanOptions;
use git_neo::store::{Store, StoreOptions};
use git_neo::Error;

#[derive(clap::Args)]
pub struct OutcomesArgs {
    /// Scan the commits after this one (instead of after the last scan).
    #[arg(long, value_name = "REV")]
    since: Option<String>,
    /// The branch to scan (default: the current one).
    #[arg(long)]
    branch: Option<String>,
    /// Print nothing on success (for hooks); a scan already running is not an error.
    #[arg(long, short)]
    quiet: bool,
}

#[derive(clap::Args)]
pub struct ExplainArgs {
    /// Id (or unique prefix) of a fact or attempt.
    id: String,
}

#[derive(clap::Subcommand)]
pub enum HooksCommand {
    /// Add post-commit and post-merge hooks that scan for outcomes in the background.
    Install,
    /// Remove exactly what install added, keeping any hooks of your own.
    Uninstall,
}

pub fn outcomes(ctx: &mut Ctx, args: OutcomesArgs) -> Result<(), Error> {
    let mut memory = ctx.memory()?;
    let store = memory.store();
    let branch = match &args.branch {
        Some(b) => b.trim().to_string(),
        None => store.current_branch().unwrap_or_else(|| "HEAD".into()),
    };
    let tip_spec = if args.branch.is_some() { format!("refs/heads/{branch}") } else { "HEAD".to_string() };
    let tip = store.resolve_commit(&tip_spec).map_err(|_| {
        Error::invalid(
            "branch",
            format!("{tip_spec} does not name a commit here; commit something first or name a branch"),
        )
    })?;
    let since = args.since.as_deref().map(|s| store.resolve_commit(s)).transpose()?;
    let opts = ScanOptions {
        branch,
        tip,
        since,
        max_per_scan: store.config_u64("neo.outcomes.maxPerScan", ScanOptions::DEFAULT_MAX_PER_SCAN as u64)? as usize,
        max_per_record_per_day: store
            .config_u64("neo.outcomes.maxPerRecordPerDay", u64::from(ScanOptions::DEFAULT_MAX_PER_RECORD_PER_DAY))?
            as u32,
        survive_commits: store
            .config_u64("neo.outcomes.surviveCommits", u64::from(ScanOptions::DEFAULT_SURVIVE_COMMITS))?
            as u32,
    };
    let wc = ctx.write_context(&memory)?;
    let report = match memory.outcomes(&opts, &wc) {
        Err(Error::Busy(_)) if args.quiet => return Ok(()),
        other => other?,
    };
    if args.quiet {
        return Ok(());
    }
    if ctx.out.json {
        ctx.out.json(&report);
        return Ok(());
    }
    let written = report.outcomes.iter().filter(|o| o.new).count();
    ctx.out.line(&format!(
        "scanned {} commit{} of {}: {written} new outcome{}{}",
        report.commits,
        if report.commits == 1 { "" } else { "s" },
        report.branch,
        if written == 1 { "" } else { "s" },
        if report.outcomes.len() > written {
            format!(" ({} already recorded)", report.outcomes.len() - written)
        } else {
            String::new()
        }
    ));
    for o in &report.outcomes {
        let summary = memory.state().entries.get(&o.target).map(|e| e.record.summary()).unwrap_or_default();
        let line = format!(
            "  {} {:<16} {:+.2} {} at {} {}",
            ctx.out.paint("33", &o.target.short()),
            o.signal,
            o.delta,
            summary,
            &o.commit[..12],
            o.paths.join(", ")
        );
        ctx.out.line(&line);
    }
    if report.dropped > 0 {
        ctx.out.note(&format!("{} outcome(s) dropped by neo.outcomes.maxPerRecordPerDay", report.dropped));
    }
    if report.capped {
        ctx.out.note("stopped at neo.outcomes.maxPerScan; run `git neo outcomes` again to go on");
    }
    Ok(())
}

pub fn explain(ctx: &mut Ctx, args: ExplainArgs) -> Result<(), Error> {
    let memory = ctx.memory()?;
    let x = memory.explain(&args.id)?;
    if ctx.out.json {
        ctx.out.json(&x);
        return Ok(());
    }
    ctx.out.line(&format!("{} {} {}: {}", x.kind, x.id.short(), x.status.as_str(), x.summary));
    let mut start = format!("  initial confidence {:.2}", x.initial);
    if !x.carried_from.is_empty() {
        let from: Vec<String> = x.carried_from.iter().map(|i| i.short()).collect();
        start.push_str(&format!(" (replaces {}; carried over +0.05 unless given explicitly)", from.join(", ")));
    }
    ctx.out.line(&start);
    for s in &x.steps {
        let evidence = s.commits.first().map(|c| format!(" commit {}", &c[..c.len().min(12)])).unwrap_or_default();
        let paths = if s.paths.is_empty() { String::new() } else { format!(" ({})", s.paths.join(", ")) };
        let line = if s.counted {
            format!("  {} {:<16} {:+.2} -> {:.2}{evidence}{paths}", s.at, s.signal, s.delta, s.running)
        } else {
            format!(
                "  {} {:<16} {:+.2} not counted: the same evidence counted earlier{evidence}",
                s.at, s.signal, s.delta
            )
        };
        ctx.out.line(&line);
    }
    ctx.out.line(&format!(
        "  now {:.2} (clamped to 0..1), {} success(es); weight in recall {:.3} = (0.5 + confidence) x success bonus",
        x.confidence, x.successes, x.recall_weight
    ));
    for r in &x.needs_review {
        ctx.out.line(&format!("  needs review: {r}"));
    }
    Ok(())
}

const BEGIN: &str = "# >>> git-neo outcomes >>>";
const END: &str = "# <<< git-neo outcomes <<<";
const SHEBANG: &str = "#!/bin/sh\n";
const HOOKS: [&str; 2] = ["post-commit", "post-merge"];

fn block() -> String {
    format!(
        "{BEGIN}\n# Added by `git neo hooks install`; `git neo hooks uninstall` removes it.\n\
         # Runs in the background so the commit is never slowed or failed by it.\n\
         (git-neo outcomes --quiet >/dev/null 2>&1 &) >/dev/null 2>&1 || true\n{END}\n"
    )
}

pub fn hooks(ctx: &mut Ctx, cmd: HooksCommand) -> Result<(), Error> {
    let store = Store::discover(&ctx.dir, StoreOptions::default())?;
    let dir = store.hooks_dir();
    let mut report = Vec::new();
    for name in HOOKS {
        let path = dir.join(name);
        let io = |e| Error::Io { context: format!("updating {}", path.display()), source: e };
        let existing = std::fs::read_to_string(&path).ok();
        let action = match &cmd {
            HooksCommand::Install => match &existing {
                Some(text) if text.contains(BEGIN) => "already installed",
                Some(text) => {
                    let sep = if text.ends_with('\n') || text.is_empty() { "" } else { "\n" };
                    std::fs::write(&path, format!("{text}{sep}{}", block())).map_err(io)?;
                    "added to your hook"
                }
                None => {
                    std::fs::create_dir_all(&dir).map_err(io)?;
                    std::fs::write(&path, format!("{SHEBANG}{}", block())).map_err(io)?;
                    "created"
                }
            },
            HooksCommand::Uninstall => match &existing {
                Some(text) if text.contains(BEGIN) => {
                    let (before, rest) = text.split_once(BEGIN).unwrap_or((text, ""));
                    let after = rest.split_once(END).map(|(_, a)| a.strip_prefix('\n').unwrap_or(a)).unwrap_or("");
                    let kept = format!("{before}{after}");
                    if kept == SHEBANG || kept.trim().is_empty() {
                        std::fs::remove_file(&path).map_err(io)?;
                        "removed"
                    } else {
                        std::fs::write(&path, kept).map_err(io)?;
                        "removed git-neo's part; your hook stays"
                    }
                }
                _ => "not installed",
            },
        };
        #[cfg(unix)]
        if matches!(cmd, HooksCommand::Install) && path.exists() {
            use std::os::unix::fs::PermissionsExt;
            let mut perms = std::fs::metadata(&path).map_err(io)?.permissions();
            perms.set_mode(perms.mode() | 0o755);
            std::fs::set_permissions(&path, perms).map_err(io)?;
        }
        report.push(serde_json::json!({ "hook": name, "path": path, "action": action }));
        if !ctx.out.json {
            ctx.out.line(&format!("{name}: {action} ({})", path.display()));
        }
    }
    if ctx.out.json {
        ctx.out.json(&report);
    }
    Ok(())
}
