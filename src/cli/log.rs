//! `git neo log [<range>]`: the memory ref's commits, newest first, with the records each added;
//! `--markdown` renders each commit's changes semantically for a pull-request comment.

use super::Ctx;
use git_neo::api::LoggedCommit;
use git_neo::Error;

#[derive(clap::Args)]
pub struct Args {
    /// Only commits in <from>..<to> (default: the whole history of the memory ref).
    range: Option<String>,
    /// Show at most this many commits.
    #[arg(short = 'n', long = "max-count", default_value_t = 50)]
    max_count: usize,
    /// Render each commit's changes as markdown (facts by type, supersessions, forgets, confidence).
    #[arg(long)]
    markdown: bool,
}

pub fn run(ctx: &mut Ctx, args: Args) -> Result<(), Error> {
    let commits: Vec<LoggedCommit> = ctx.session.log(args.range.as_deref(), args.max_count)?;
    if args.markdown {
        let mut rendered = Vec::new();
        for c in &commits {
            rendered.push((c, ctx.session.changes_of(c)?));
        }
        if ctx.out.json {
            let v: Vec<_> = rendered.iter().map(|(c, ch)| serde_json::json!({ "commit": c, "changes": ch })).collect();
            ctx.out.json(&v);
            return Ok(());
        }
        for (c, changes) in rendered {
            let subject = c.message.lines().next().unwrap_or_default();
            ctx.out.line(&format!(
                "### `{}` {} ({}, {})\n",
                &c.commit[..12],
                git_neo::markdown::md(subject),
                git_neo::markdown::md(&c.author),
                c.time
            ));
            for l in changes.to_markdown(4).lines() {
                ctx.out.line(l);
            }
            ctx.out.line("");
        }
        return Ok(());
    }
    if ctx.out.json {
        ctx.out.json(&commits);
        return Ok(());
    }
    if commits.is_empty() && args.max_count > 0 {
        ctx.out.note(&format!("{} has no history yet", ctx.session.ref_name()?));
    }
    let summaries = ctx.session.summaries(commits.iter().flat_map(|c| c.added.iter().map(|a| a.id)))?;
    for c in commits {
        let subject = git_neo::display::escape(c.message.lines().next().unwrap_or_default()).into_owned();
        ctx.out.line(&format!("{} {} {}", ctx.out.paint("33", &c.commit[..12]), c.time, subject));
        for added in &c.added {
            let summary = summaries.get(&added.id).map(String::as_str).unwrap_or_default();
            ctx.out.line(&format!("    + {} {} {summary}", added.kind, added.id.short()));
        }
        for change in &c.other_changes {
            ctx.out.line(&format!("    ! {} {}", change.change, git_neo::display::escape(&change.path)));
        }
    }
    Ok(())
}
