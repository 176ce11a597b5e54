//! `git neo curate` (caps, stale facts, demotion, near-duplicates merged: each a record) and
//! `git neo feedback` (implicit feedback from the recall telemetry, as outcome records).

use super::Ctx;
use git_neo::api::FeedbackReport;
use git_neo::api::{CurateOptions, CurateReport};
use git_neo::Error;

#[derive(clap::Args)]
pub struct CurateArgs {
    /// Say what would be written, write nothing.
    #[arg(long)]
    dry_run: bool,
    /// Constraints may be pruned and evicted too (never by default).
    #[arg(long)]
    include_constraints: bool,
}

#[derive(clap::Args)]
pub struct FeedbackArgs {
    /// Say what would be written, write nothing.
    #[arg(long)]
    dry_run: bool,
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

fn say_feedback(ctx: &mut Ctx, f: &FeedbackReport) {
    let new: Vec<_> = f.outcomes.iter().filter(|o| o.new).collect();
    let verb = if f.dry_run { "would write" } else { "wrote" };
    ctx.out.line(&format!(
        "implicit feedback: {} recall exchange{}; {verb} {} outcome{}{}{}",
        f.exchanges,
        plural(f.exchanges),
        new.len(),
        plural(new.len()),
        if f.spared > 0 {
            format!("; {} re-ask{} spared (the fact was in an answer to another question)", f.spared, plural(f.spared))
        } else {
            String::new()
        },
        if f.dropped > 0 { format!(" ({} over the caps, left for later)", f.dropped) } else { String::new() }
    ));
    for o in new {
        ctx.out.line(&format!(
            "  {} {} {:+.2} (similarity {:.2} by {})",
            o.target.short(),
            o.signal.as_str(),
            o.delta,
            o.similarity,
            o.by
        ));
    }
}

pub fn feedback(ctx: &mut Ctx, args: FeedbackArgs) -> Result<(), Error> {
    let report = ctx.out.spinning("reading the recall telemetry", || ctx.session.feedback(args.dry_run))?;
    if ctx.out.json {
        ctx.out.json(&report);
    } else {
        say_feedback(ctx, &report);
    }
    Ok(())
}

pub fn curate(ctx: &mut Ctx, args: CurateArgs) -> Result<(), Error> {
    let opts = CurateOptions { dry_run: args.dry_run, include_constraints: args.include_constraints };
    let report = ctx.out.spinning("curating", || ctx.session.curate(opts))?;
    ctx.say_notices();
    if ctx.out.json {
        ctx.out.json(&report);
    } else {
        render(ctx, &report);
    }
    Ok(())
}

fn render(ctx: &mut Ctx, r: &CurateReport) {
    if let Some(f) = &r.feedback {
        say_feedback(ctx, f);
    }
    let p = &r.plan;
    ctx.out.line(&format!(
        "curate {}: {} current facts, cap {}; {} after{}",
        r.scope,
        p.before,
        p.cap,
        p.after,
        if r.dry_run { " (dry run: nothing written)" } else { "" }
    ));
    for d in &p.demoted {
        ctx.out.line(&format!("  demote  {} retrieved {}x, never helped  {}", d.id.short(), d.retrievals, d.subject));
    }
    for x in &p.pruned {
        ctx.out.line(&format!("  prune   {} {}  {}", x.id.short(), x.reason.trim_start_matches("curate: "), x.subject));
    }
    for s in &p.synthesized {
        ctx.out.line(&format!(
            "  merge   {} near-duplicates into one (from {}, cosine {:.2}+)  {}",
            s.members.len(),
            s.central.short(),
            s.min_cosine,
            s.subject
        ));
    }
    for x in &p.evicted {
        ctx.out.line(&format!("  evict   {} keep score {:.3}  {}", x.id.short(), x.score, x.subject));
    }
    if let Some(why) = &p.synthesis_skipped {
        ctx.out.note(&format!("near-duplicates were not merged: {why}"));
    }
    if let Some(note) = &r.synthesis_note {
        ctx.out.note(note);
    }
    if let Some(over) = &p.over_cap {
        ctx.out.warn(over);
    }
    if r.pending_in_review > 0 {
        ctx.out.note(&format!("{} step(s) already wait in review and were not proposed again", r.pending_in_review));
    }
    match (&r.memory_commit, r.proposed) {
        (Some(c), true) => ctx.out.line(&format!(
            "proposed {} records for review ({}); `git neo approve` lands them",
            r.records,
            &c[..12.min(c.len())]
        )),
        (Some(c), false) => ctx.out.line(&format!(
            "wrote {} records in {}; `git neo diff` shows them, `git neo revert <id>` undoes one",
            r.records,
            &c[..12.min(c.len())]
        )),
        (None, _) if r.records == 0 && r.lessons.is_empty() => ctx.out.line("nothing to curate"),
        (None, _) => {}
    }
    for l in &r.lessons {
        let what = match (&l.id, l.applied, &l.skipped) {
            (_, _, Some(why)) => format!("lesson not proposed ({why})"),
            (Some(id), true, _) => {
                format!("lesson {} proposed and applied to {} (neo.lessons.mode=auto)", id.short(), l.file)
            }
            (Some(id), false, _) => {
                format!(
                    "lesson {} proposed for {}: review it, then `git neo lesson apply {}`",
                    id.short(),
                    l.file,
                    id.short()
                )
            }
            (None, _, _) => format!("would propose a lesson for {}", l.file),
        };
        ctx.out.line(&what);
        ctx.out.note(&format!("  {}", git_neo::display::escape(&l.reason)));
    }
}
