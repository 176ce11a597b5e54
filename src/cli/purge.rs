//! `git neo purge`: remove one record from the memory ref's whole history (for leaked secrets).

use super::Ctx;
use git_neo::Error;

#[derive(clap::Args)]
pub struct Args {
    /// Id (or unique prefix) of the record to purge.
    id: String,
    /// Why; recorded in the purge note next to the Neo-Purge trailer.
    #[arg(long, default_value = "purged")]
    reason: String,
    /// Confirm: this rewrites the memory ref's history.
    #[arg(long)]
    yes: bool,
}

pub fn run(ctx: &mut Ctx, args: Args) -> Result<(), Error> {
    if !args.yes {
        return Err(Error::invalid(
            "yes",
            "purge rewrites the memory ref's history and needs a force-push afterwards; run it again with --yes \
             (to hide a record and keep history, use `git neo forget`)",
        ));
    }
    let outcome = ctx.session.purge(&args.id, &args.reason)?;
    if ctx.out.json {
        ctx.out.json(&outcome);
        return Ok(());
    }
    let ref_name = ctx.session.ref_name()?;
    let tips = ctx.session.tips()?;
    ctx.out.line(&format!(
        "purged {} from the history of {ref_name} ({} of {} commits rewritten; note {})",
        outcome.path,
        outcome.rewritten,
        outcome.commits,
        &outcome.commit[..12]
    ));
    let branch = ref_name.strip_prefix("refs/heads/").unwrap_or(&ref_name).to_string();
    ctx.out.line("next:");
    ctx.out.line("  1. rotate the secret: every clone and fork may already hold it");
    for copy in &outcome.remote_copies {
        let remote = copy.strip_prefix("refs/remotes/").and_then(|r| r.split('/').next()).unwrap_or("origin");
        ctx.out.line(&format!(
            "  2. replace the remote's history: git push --force-with-lease={ref_name}:{} {remote} {ref_name} \
             (or `git neo sync {remote}`, which does the same and keeps records pushed meanwhile)",
            tips.iter().find(|(n, _)| n == copy).map(|(_, c)| c.as_str()).unwrap_or_default()
        ));
    }
    if outcome.remote_copies.is_empty() {
        ctx.out.line("  2. if this memory was pushed, `git neo sync` replaces the remote's history");
    }
    ctx.out.line(&format!(
        "  3. drop the old objects here: git reflog expire --expire-unreachable=now {ref_name} && git gc --prune=now"
    ));
    ctx.out.line(&format!(
        "  4. other clones: `git neo sync` applies the purge to their history; until they do, their {branch} still holds it"
    ));
    Ok(())
}
