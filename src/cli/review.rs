//! `git neo approve` and `git neo reject`: act on review-mode proposals (`git config neo.mode review`).

use super::Ctx;
use git_neo::Error;

#[derive(clap::Args)]
pub struct ApproveArgs {
    /// Ids (or unique prefixes) of proposals, as `git neo list --proposed` shows them.
    ids: Vec<String>,
    /// Approve every pending proposal.
    #[arg(long, conflicts_with = "ids")]
    all: bool,
    /// Print the plan (the commit and its records) and write nothing.
    #[arg(long)]
    dry_run: bool,
}

#[derive(clap::Args)]
pub struct RejectArgs {
    /// Ids (or unique prefixes) of proposals to drop.
    #[arg(required = true)]
    ids: Vec<String>,
}

pub fn approve(ctx: &mut Ctx, args: ApproveArgs) -> Result<(), Error> {
    let outcome = ctx.session.dry_run(args.dry_run, |s| s.approve(&args.ids, args.all))?;
    if ctx.out.json {
        ctx.out.json(&outcome);
    } else if let Some(plan) = &outcome.plan {
        ctx.show_plan(plan);
    } else if outcome.ids.is_empty() {
        ctx.out.line("no proposals are pending");
    } else {
        for id in &outcome.ids {
            ctx.out.line(&id.to_hex());
        }
        ctx.out.note(&format!("approved {} proposals onto {}", outcome.ids.len(), ctx.session.ref_name()?));
    }
    Ok(())
}

pub fn reject(ctx: &mut Ctx, args: RejectArgs) -> Result<(), Error> {
    let outcome = ctx.session.reject(&args.ids)?;
    if ctx.out.json {
        ctx.out.json(&outcome);
    } else {
        for id in &outcome.ids {
            ctx.out.line(&id.to_hex());
        }
        ctx.out.note(&format!("rejected {} proposals", outcome.ids.len()));
    }
    Ok(())
}
