//! `git neo sync` and `git neo propose`: share memory through a git remote (each scope through
//! its own: `--scope user|org`).

use super::Ctx;
use git_neo::store::{MergeKind, Store};
use git_neo::Error;

#[derive(clap::Args)]
pub struct SyncArgs {
    /// The remote (default: origin, or the only remote).
    remote: Option<String>,
}

#[derive(clap::Args)]
pub struct ProposeArgs {
    /// The remote (default: origin, or the only remote).
    remote: Option<String>,
    /// The proposal's name: the branch is neo-memory-proposals/<name>.
    #[arg(long)]
    name: Option<String>,
}

/// The store and who writes. Sync and propose need no folded state: the identity comes from the
/// store's git config, so the records are not loaded.
fn open(ctx: &mut Ctx) -> Result<(Store, git_neo::api::WriteContext), Error> {
    let store = ctx.session.store()?;
    let wc = ctx.write_context_for(&store)?;
    Ok((store, wc))
}

pub fn sync(ctx: &mut Ctx, args: SyncArgs) -> Result<(), Error> {
    let outcome = ctx.session.sync(args.remote.as_deref())?;
    if ctx.out.json {
        ctx.out.json(&outcome);
        return Ok(());
    }
    let how = match outcome.merge {
        MergeKind::UpToDate => "already had everything from",
        MergeKind::FastForward => "fast-forwarded to",
        MergeKind::Merged => "merged",
    };
    ctx.out.line(&format!(
        "{how} {}: received {} records, sent {}{}",
        outcome.remote,
        outcome.received,
        outcome.sent,
        if outcome.pushed { "" } else { " (nothing to push)" }
    ));
    if let Some(p) = &outcome.proposal {
        ctx.out.line(&format!(
            "proposed {} records as {} on the org memory; they land when its pull request is merged",
            p.records, p.branch
        ));
    }
    Ok(())
}

pub fn propose(ctx: &mut Ctx, args: ProposeArgs) -> Result<(), Error> {
    let (store, wc) = open(ctx)?;
    let outcome = git_neo::api::share::propose(&store, args.remote.as_deref(), args.name.as_deref(), &wc)?;
    if ctx.out.json {
        ctx.out.json(&outcome);
    } else if outcome.pushed {
        ctx.out.line(&format!("pushed {} new records to {} on {}", outcome.records, outcome.branch, outcome.remote));
        ctx.out.note(&format!(
            "open a pull request from {} into {}; CI can check it with `git neo verify --range origin/{}..origin/{}`",
            outcome.branch,
            store.branch().unwrap_or("neo-memory"),
            store.branch().unwrap_or("neo-memory"),
            outcome.branch
        ));
    } else {
        ctx.out.line(&format!("nothing to propose: {} already has every local record", outcome.remote));
    }
    Ok(())
}
