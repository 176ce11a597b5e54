//! `git neo log`: the memory ref's commits, newest first, with the records each added.

use super::Ctx;
use git_neo::Error;

#[derive(clap::Args)]
pub struct Args {
    /// Show at most this many commits.
    #[arg(short = 'n', long = "max-count", default_value_t = 50)]
    max_count: usize,
}

pub fn run(ctx: &mut Ctx, args: Args) -> Result<(), Error> {
    let memory = ctx.memory()?;
    let commits = memory.log(args.max_count)?;
    if ctx.out.json {
        ctx.out.json(&commits);
        return Ok(());
    }
    if commits.is_empty() {
        ctx.out.note(&format!("{} has no history yet", memory.store().ref_name()));
    }
    for c in commits {
        let subject = c.message.lines().next().unwrap_or_default().to_string();
        ctx.out.line(&format!("{} {} {}", ctx.out.paint("33", &c.commit[..12]), c.time, subject));
        for added in &c.added {
            let summary = memory.state().entries.get(&added.id).map(|e| e.record.summary()).unwrap_or_default();
            ctx.out.line(&format!("    + {} {} {summary}", added.kind, added.id.short()));
        }
        for change in &c.other_changes {
            ctx.out.line(&format!("    ! {} {}", change.change, change.path));
        }
    }
    Ok(())
}
