//! `git neo forget`: append a retraction that hides a record from the current state.

use super::Ctx;
use git_neo::Error;

#[derive(clap::Args)]
pub struct Args {
    /// Id (or unique prefix) of the record to forget.
    id: String,
    /// Why it should be forgotten.
    #[arg(long)]
    reason: String,
    /// Print the plan (the commit and its records) and write nothing.
    #[arg(long)]
    dry_run: bool,
}

pub fn run(ctx: &mut Ctx, args: Args) -> Result<(), Error> {
    let outcome = ctx.session.dry_run(args.dry_run, |s| s.forget(&args.id, &args.reason))?;
    if ctx.out.json {
        ctx.out.json(&outcome);
    } else if let Some(plan) = &outcome.plan {
        ctx.show_plan(plan);
    } else {
        ctx.out.line(&outcome.id.to_hex());
        ctx.out.note(&format!("forgot {}: retraction {}", args.id, outcome.id.short()));
    }
    Ok(())
}
