//! `git neo purge`: remove one record file from the memory's current tree (for leaked secrets).

use super::Ctx;
use git_neo::Error;

#[derive(clap::Args)]
pub struct Args {
    /// Id (or unique prefix) of the record to purge.
    id: String,
    /// Why; recorded in the commit message next to the Neo-Purge trailer.
    #[arg(long)]
    reason: String,
}

pub fn run(ctx: &mut Ctx, args: Args) -> Result<(), Error> {
    let mut memory = ctx.memory()?;
    let wc = ctx.write_context(&memory)?;
    let outcome = memory.purge(&args.id, &args.reason, &wc)?;
    if ctx.out.json {
        ctx.out.json(&outcome);
    } else {
        ctx.out.line(&format!("purged {} from the current memory", outcome.path));
        ctx.out.note(
            "history still holds the file: rotate any leaked secret, and see docs/security.md to rewrite history",
        );
    }
    Ok(())
}
