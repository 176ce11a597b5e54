//! `git neo outcomes`, `git neo explain` and `git neo hooks install|uninstall`: confidence that
//! follows what later commits did.

use super::Ctx;
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
    let report = match ctx.session.outcomes(args.branch.as_deref(), args.since.as_deref()) {
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
    let summaries = ctx.session.summaries(report.outcomes.iter().map(|o| o.target))?;
    for o in &report.outcomes {
        let summary = summaries.get(&o.target).map(String::as_str).unwrap_or_default();
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
        if !o.why.is_empty() {
            ctx.out.line(&format!("      {}", o.why));
        }
    }
    for o in &report.off_branch {
        ctx.out.note(&format!(
            "{} is anchored at commit {}, which {} does not contain: scanned from when it was written; \
             check it and re-anchor it with `git neo confirm {}`",
            o.id.short(),
            &o.commit[..o.commit.len().min(12)],
            report.branch,
            o.id.short()
        ));
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
    let x = ctx.session.explain(&args.id)?;
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
        if !s.why.is_empty() {
            ctx.out.line(&format!("      {}", s.why));
        }
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

pub fn hooks(ctx: &mut Ctx, cmd: HooksCommand) -> Result<(), Error> {
    let changes = match cmd {
        HooksCommand::Install => ctx.session.install_hooks()?,
        HooksCommand::Uninstall => ctx.session.uninstall_hooks()?,
    };
    if ctx.out.json {
        ctx.out.json(&changes);
    } else {
        for c in &changes {
            ctx.out.line(&format!("{}: {} ({})", c.hook, c.action, c.path.display()));
        }
    }
    Ok(())
}
