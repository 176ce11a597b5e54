//! `git neo init`: create the memory ref holding only `FORMAT`; with `--ci github|gitlab`, also
//! write the forge's CI file into the memory branch (docs/review.md).

use super::Ctx;
use git_neo::Error;

#[derive(clap::Args)]
pub struct Args {
    /// Also write the CI file that checks pull requests into the memory branch, into the memory
    /// branch itself, where the forge finds it: github (.github/workflows/neo-memory-review.yml)
    /// or gitlab (.gitlab-ci.yml). One ordinary commit, reviewable like any memory change.
    #[arg(long, value_name = "FORGE", value_parser = super::completions::Offer(&["github", "gitlab"]), hide_possible_values = true)]
    ci: Option<String>,
    /// The git-neo version the CI job installs (default: this one's).
    #[arg(long, value_name = "VERSION", requires = "ci", conflicts_with = "install_git")]
    install_version: Option<String>,
    /// Install git-neo in CI from this git URL instead (with --install-rev).
    #[arg(long, value_name = "URL", requires_all = ["ci", "install_rev"])]
    install_git: Option<String>,
    /// The commit of --install-git to install, 40 hex digits: the one you vetted.
    #[arg(long, value_name = "COMMIT", requires = "install_git")]
    install_rev: Option<String>,
}

pub fn run(ctx: &mut Ctx, args: Args) -> Result<(), Error> {
    if let Some(forge) = &args.ci {
        let install = match (args.install_git, args.install_rev) {
            (Some(url), Some(rev)) => git_neo::ci::Install::Git { url, rev },
            _ => {
                git_neo::ci::Install::Version(args.install_version.unwrap_or_else(|| env!("CARGO_PKG_VERSION").into()))
            }
        };
        let (path, made) = ctx.session.init_ci(forge, &install)?;
        if ctx.out.json {
            ctx.out.json(&serde_json::json!({ "ci": forge, "path": path, "written": made }));
        } else if made {
            ctx.out.line(&format!(
                "wrote {path} into the memory branch: push it (git neo sync) so pull requests into it are checked"
            ));
        } else {
            ctx.out.line(&format!("{path} is already in the memory branch, unchanged"));
        }
        return Ok(());
    }
    let outcome = ctx.session.init()?;
    if ctx.out.json {
        ctx.out.json(&outcome);
    } else if outcome.created {
        ctx.out.line(&format!("initialised {} at {}", outcome.ref_name, &outcome.tip[..12]));
    } else {
        ctx.out.line(&format!("{} already exists at {}", outcome.ref_name, &outcome.tip[..12]));
    }
    Ok(())
}
