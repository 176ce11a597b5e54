//! `git neo diff <a> [<b>]`: what changed in memory between two commits, as pull-request markdown.

use super::Ctx;
use git_neo::Error;

#[derive(clap::Args)]
pub struct Args {
    /// The older memory commit (any revision: neo-memory~3, origin/neo-memory, a commit id).
    from: String,
    /// The newer memory commit (default: the memory ref).
    to: Option<String>,
}

pub fn run(ctx: &mut Ctx, args: Args) -> Result<(), Error> {
    let changes = ctx.session.diff(&args.from, args.to.as_deref())?;
    if ctx.out.json {
        ctx.out.json(&changes);
        return Ok(());
    }
    ctx.out.line(&format!(
        "## Memory changes `{}..{}`\n",
        &changes.from.as_deref().unwrap_or("")[..12],
        &changes.to[..12]
    ));
    for l in changes.to_markdown(3).lines() {
        ctx.out.line(l);
    }
    Ok(())
}
