//! `git neo show`: a record's file, then what the fold derived for it.

use super::Ctx;
use git_neo::Error;

#[derive(clap::Args)]
pub struct Args {
    /// Id (or unique prefix) of the record.
    id: String,
}

pub fn run(ctx: &mut Ctx, args: Args) -> Result<(), Error> {
    let shown = ctx.session.show(&args.id)?;
    if ctx.out.json {
        ctx.out.json(&shown);
        return Ok(());
    }
    let e = &shown.entry;
    ctx.out.line(&format!("{} {}", ctx.out.paint("33", &format!("record {}", e.id)), shown.path));
    let mut state = format!("status: {}", e.status.as_str());
    if e.record.as_fact().is_some() {
        state.push_str(&format!("  confidence: {}", e.confidence));
        if e.successes > 0 {
            state.push_str(&format!("  successes: {}", e.successes));
        }
    }
    if let Some(by) = e.retracted_by {
        state.push_str(&format!("  forgotten by: {}", by.short()));
    }
    if !e.superseded_by.is_empty() {
        let by: Vec<String> = e.superseded_by.iter().map(|i| i.short()).collect();
        state.push_str(&format!("  superseded by: {}", by.join(", ")));
    }
    if let Some(from) = ctx.session.fetched()?.get(&e.id) {
        state.push_str(&format!("  fetched from {}, not merged", git_neo::display::escape(from)));
    }
    ctx.out.line(&state);
    ctx.out.line("");
    for l in shown.text.lines() {
        ctx.out.line(l);
    }
    Ok(())
}
