//! `git neo list`: records in fold order, filtered.

use super::Ctx;
use git_neo::api::ListFilter;
use git_neo::api::Status;
use git_neo::Error;

#[derive(clap::Args)]
pub struct Args {
    /// Only this kind: fact, attempt, supersession, outcome, retraction.
    #[arg(long)]
    kind: Option<String>,
    /// Only facts of this type.
    #[arg(long = "type", short = 't', value_parser = super::completions::Offer(super::completions::FACT_TYPES), hide_possible_values = true)]
    fact_type: Option<String>,
    /// Only records with this area label.
    #[arg(long)]
    area: Option<String>,
    /// Only records with this tag.
    #[arg(long)]
    tag: Option<String>,
    /// Include forgotten, superseded and outdated records.
    #[arg(long)]
    all: bool,
    /// Only valid records that need review (a dependency or source was replaced, or a conflict).
    #[arg(long)]
    needs_review: bool,
    /// List pending review-mode proposals instead of the memory.
    #[arg(long)]
    proposed: bool,
}

pub fn run(ctx: &mut Ctx, args: Args) -> Result<(), Error> {
    let filter = ListFilter {
        kind: args.kind,
        fact_type: args.fact_type,
        area: args.area,
        tag: args.tag,
        all: args.all,
        needs_review: args.needs_review,
    };
    let entries = if args.proposed { ctx.session.proposed()? } else { ctx.session.list(&filter)? };
    let fetched = ctx.session.fetched()?;
    if ctx.out.json && fetched.is_empty() {
        ctx.out.json(&entries);
        return Ok(());
    }
    if ctx.out.json {
        // A record only a fetched copy holds says where it came from, as in the text.
        let mut value = serde_json::to_value(&entries).unwrap_or_default();
        for item in value.as_array_mut().into_iter().flatten() {
            let from =
                item["id"].as_str().and_then(git_neo::record::RecordId::from_hex).and_then(|id| fetched.get(&id));
            if let (Some(from), Some(map)) = (from, item.as_object_mut()) {
                map.insert("fetched_from".into(), from.clone().into());
            }
        }
        ctx.out.json(&value);
        return Ok(());
    }
    if entries.is_empty() {
        ctx.out.note("no records match");
    }
    for e in entries {
        let what = match e.record.as_fact() {
            Some(f) => f.fact_type.as_str().to_string(),
            None => e.record.kind.as_str().to_string(),
        };
        let mut status = if e.status == Status::Valid { String::new() } else { format!(" [{}]", e.status.as_str()) };
        if let Some(from) = fetched.get(&e.id) {
            status.push_str(&format!(" [fetched from {}, not merged]", git_neo::display::escape(from)));
        }
        let conf =
            if e.record.as_fact().is_some() { format!("{:>5}", e.confidence.to_string()) } else { "    -".to_string() };
        let line =
            format!("{} {:<13} {} {}{}", ctx.out.paint("33", &e.id.short()), what, conf, e.record.summary(), status);
        ctx.out.line(&line);
        for flag in &e.needs_review {
            ctx.out.line(&format!("    needs review: {flag}"));
        }
    }
    Ok(())
}
