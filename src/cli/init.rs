//! `git neo init`: create the memory ref holding only `FORMAT`.

use super::Ctx;
use git_neo::Error;

pub fn run(ctx: &mut Ctx) -> Result<(), Error> {
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
