//! `git neo sync` and `git neo propose`: share memory through a git remote (each scope through
//! its own: `--scope user|org`).

use super::Ctx;
use git_neo::api::MergeKind;
use git_neo::api::SyncOutcome;
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

/// What a plain `git neo sync` did: the project's sync, then each shared scope's.
#[derive(serde::Serialize)]
struct Synced {
    #[serde(flatten)]
    project: SyncOutcome,
    /// The org and user memories synced after the project (when set up).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    scopes: Vec<ScopeSynced>,
}

#[derive(serde::Serialize)]
struct ScopeSynced {
    scope: String,
    #[serde(skip_serializing_if = "Option::is_none", flatten)]
    outcome: Option<SyncOutcome>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

/// `git neo sync`: the scope asked for; without `--scope` and a remote, the project and then
/// every shared scope set up (org, user), a failure of one of those reported and exit 5.
pub fn sync(ctx: &mut Ctx, args: SyncArgs) -> Result<(), Error> {
    let outcome = ctx.session.sync(args.remote.as_deref())?;
    let mut scopes = Vec::new();
    if ctx.session.scope().is_none() && args.remote.is_none() {
        for scope in ctx.session.shared_scopes()? {
            ctx.session.set_scope(Some(scope.clone()));
            let result = ctx.session.sync(None);
            ctx.session.set_scope(None);
            let (outcome, error) = match result {
                Ok(o) => (Some(o), None),
                Err(e) => {
                    ctx.exit = Some(super::exit_code(&e));
                    (None, Some(e.to_string()))
                }
            };
            scopes.push(ScopeSynced { scope: scope.to_string(), outcome, error });
        }
    }
    if ctx.out.json {
        ctx.out.json(&Synced { project: outcome, scopes });
        return Ok(());
    }
    say(ctx, "", &outcome);
    for s in &scopes {
        match (&s.outcome, &s.error) {
            (Some(o), _) => say(ctx, &format!("{} memory: ", s.scope), o),
            (None, Some(e)) => ctx.out.warn(&format!("{} memory not synced: {e}", s.scope)),
            (None, None) => {}
        }
    }
    Ok(())
}

fn say(ctx: &mut Ctx, prefix: &str, outcome: &SyncOutcome) {
    let how = match outcome.merge {
        MergeKind::UpToDate => "already had everything from",
        MergeKind::FastForward => "fast-forwarded to",
        MergeKind::Merged => "merged",
    };
    ctx.out.line(&format!(
        "{prefix}{how} {}: received {} records, sent {}{}",
        outcome.remote,
        outcome.received,
        outcome.sent,
        if outcome.pushed { "" } else { " (nothing to push)" }
    ));
    for w in &outcome.warnings {
        ctx.out.warn(w);
    }
    if let Some(p) = &outcome.proposal {
        ctx.out.line(&format!(
            "proposed {} records as {} on the org memory; they land when its pull request is merged",
            p.records, p.branch
        ));
    }
}

pub fn propose(ctx: &mut Ctx, args: ProposeArgs) -> Result<(), Error> {
    let (outcome, branch) = ctx.session.propose(args.remote.as_deref(), args.name.as_deref())?;
    if ctx.out.json {
        ctx.out.json(&outcome);
    } else if outcome.pushed {
        ctx.out.line(&format!("pushed {} new records to {} on {}", outcome.records, outcome.branch, outcome.remote));
        ctx.out.note(&format!(
            "open a pull request from {} into {}; CI can check it with `git neo verify --range origin/{}..origin/{}`",
            outcome.branch, branch, branch, outcome.branch
        ));
    } else {
        ctx.out.line(&format!("nothing to propose: {} already has every local record", outcome.remote));
    }
    Ok(())
}
