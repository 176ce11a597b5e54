//! `git neo outdated`, `git neo confirm`, `git neo revert`, `git neo repair` and `git neo history`: corrections that
//! keep history.

use super::Ctx;
use git_neo::Error;

#[derive(clap::Args)]
pub struct OutdatedArgs {
    /// Id (or unique prefix) of the fact or attempt that no longer holds.
    id: String,
    /// Why it no longer holds.
    #[arg(long)]
    reason: String,
    /// Print the plan (the commit and its records) and write nothing.
    #[arg(long)]
    dry_run: bool,
}

#[derive(clap::Args)]
pub struct ConfirmArgs {
    /// Id (or unique prefix) of the fact you checked.
    id: String,
    /// Where the fact is anchored now (`PATH[:START-END]`, repeatable); without it, each anchor
    /// moves to where its code is now.
    #[arg(long = "anchor", value_name = "PATH[:START-END]")]
    anchors: Vec<String>,
    /// What you checked.
    #[arg(long)]
    reason: Option<String>,
    /// Print the plan (the commit and its records) and write nothing.
    #[arg(long)]
    dry_run: bool,
}

#[derive(clap::Args)]
pub struct RevertArgs {
    /// Id (or unique prefix) of the supersession or retraction to undo.
    id: String,
    /// Why it is undone.
    #[arg(long)]
    reason: Option<String>,
    /// Print the plan (the commit and its records) and write nothing.
    #[arg(long)]
    dry_run: bool,
}

#[derive(clap::Args)]
pub struct RepairArgs {
    /// List what would be reverted; write nothing.
    #[arg(long)]
    dry_run: bool,
}

#[derive(clap::Args)]
pub struct HistoryArgs {
    /// A record id (prefix) or a fact key.
    what: String,
}

pub fn outdated(ctx: &mut Ctx, args: OutdatedArgs) -> Result<(), Error> {
    let outcome = ctx.session.dry_run(args.dry_run, |s| s.outdated(&args.id, &args.reason))?;
    if ctx.out.json {
        ctx.out.json(&outcome);
    } else if let Some(plan) = &outcome.plan {
        ctx.show_plan(plan);
    } else {
        ctx.out.line(&outcome.id.to_hex());
        ctx.out.note(&format!("marked {} outdated: supersession {}", args.id, outcome.id.short()));
    }
    Ok(())
}

pub fn confirm(ctx: &mut Ctx, args: ConfirmArgs) -> Result<(), Error> {
    let c = ctx.session.dry_run(args.dry_run, |s| s.confirm(&args.id, &args.anchors, args.reason.as_deref()))?;
    if ctx.out.json {
        ctx.out.json(&c);
        return Ok(());
    }
    if let Some(plan) = &c.outcome.plan {
        ctx.show_plan(plan);
        return Ok(());
    }
    ctx.out.line(&c.outcome.id.to_hex());
    ctx.out.note(&format!("confirmed {} at {}: review flags cleared", args.id, &c.commit[..c.commit.len().min(12)]));
    for m in &c.anchors {
        let line = match m.how {
            "named" => format!("  anchored at {}", m.to),
            "unchanged" => format!("  {} (unchanged)", m.to),
            "followed" => format!("  {} -> {} (followed)", m.from, m.to),
            _ => format!("  {} -> {} (its lines were rewritten: check these)", m.from, m.to),
        };
        ctx.out.note(&line);
    }
    Ok(())
}

pub fn revert(ctx: &mut Ctx, args: RevertArgs) -> Result<(), Error> {
    let (outcome, restores) = ctx.session.dry_run(args.dry_run, |s| s.revert(&args.id, args.reason.as_deref()))?;
    let now: Vec<serde_json::Value> = ctx
        .session
        .entries(&restores)?
        .iter()
        .map(|e| serde_json::json!({ "id": e.id, "status": e.status, "summary": e.record.summary() }))
        .collect();
    if ctx.out.json {
        ctx.out.json(&serde_json::json!({ "revert": outcome, "restored": now }));
    } else if let Some(plan) = &outcome.plan {
        ctx.show_plan(plan);
        for r in &now {
            ctx.out.note(&format!(
                "would restore {} ({})",
                r["id"].as_str().map(|s| &s[..12]).unwrap_or(""),
                r["summary"].as_str().unwrap_or("")
            ));
        }
    } else {
        ctx.out.line(&outcome.id.to_hex());
        for r in &now {
            ctx.out.note(&format!(
                "reverted {}: {} is now {} ({})",
                args.id,
                r["id"].as_str().map(|s| &s[..12]).unwrap_or(""),
                r["status"].as_str().unwrap_or(""),
                r["summary"].as_str().unwrap_or("")
            ));
        }
    }
    Ok(())
}

pub fn history(ctx: &mut Ctx, args: HistoryArgs) -> Result<(), Error> {
    let h = ctx.session.history(&args.what)?;
    if ctx.out.json {
        ctx.out.json(&h);
        return Ok(());
    }
    let facts = h.records.len();
    ctx.out.line(&format!(
        "history of {} ({} record{}, {} event{})",
        h.query,
        facts,
        if facts == 1 { "" } else { "s" },
        h.events.len(),
        if h.events.len() == 1 { "" } else { "s" }
    ));
    for ev in &h.events {
        let id = ctx.out.paint("33", &ev.id.short());
        let mut line = format!("{}  {:<10} {} {}", ev.at, ev.event, id, ev.summary);
        if let Some(m) = ev.method {
            line.push_str(&format!(" [{m}{}]", ev.score.map(|s| format!(" {s:.3}")).unwrap_or_default()));
        }
        if let Some(d) = ev.delta {
            line.push_str(&format!(" ({d:+.3})"));
        }
        if matches!(ev.kind, git_neo::record::Kind::Fact | git_neo::record::Kind::Attempt) {
            line.push_str(&format!(" — {} now", ev.status.as_str()));
        } else if ev.status == git_neo::api::Status::Retracted {
            line.push_str(" — reverted");
        }
        ctx.out.line(&line);
        ctx.out.line(&format!("      by {}", ev.author));
    }
    Ok(())
}

pub fn repair(ctx: &mut Ctx, args: RepairArgs) -> Result<(), Error> {
    let r = ctx.session.dry_run(args.dry_run, |s| s.repair())?;
    if ctx.out.json {
        ctx.out.json(&r);
        return Ok(());
    }
    for s in &r.supersessions {
        let mark = if s.holds {
            "keeps "
        } else if r.dry_run {
            "would revert"
        } else {
            "reverted"
        };
        ctx.out.line(&format!(
            "{mark:<12} {} ({}): \"{}\" -> \"{}\" [{}]",
            s.id.short(),
            s.method,
            s.old_subject,
            s.new_subject,
            s.verdict
        ));
        ctx.out.note(&format!("  written as: {}", s.reason));
    }
    let n = r.supersessions.len();
    ctx.out.note(&format!(
        "{n} automatic supersession{} checked; {} {}",
        if n == 1 { "" } else { "s" },
        r.reverted,
        if r.dry_run { "would be reverted (dry run: nothing written)" } else { "reverted" }
    ));
    Ok(())
}
