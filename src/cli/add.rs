//! `git neo add`: add a typed fact and print its id.

use super::Ctx;
use git_neo::api::AddRequest;
use git_neo::Error;
use std::io::Read;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// Fact type: constraint, architecture, pattern, review, decision, known-unknown, failure.
    #[arg(long = "type", short = 't', value_name = "TYPE")]
    fact_type: String,
    /// One-line summary.
    #[arg(long, short = 's')]
    subject: String,
    /// Markdown body.
    #[arg(long, short = 'b', conflicts_with = "body_file")]
    body: Option<String>,
    /// Read the body from a file, or from stdin with `-`.
    #[arg(long, value_name = "PATH")]
    body_file: Option<PathBuf>,
    /// The part of the project this is about (default: project).
    #[arg(long)]
    scope: Option<String>,
    /// A tag (repeatable).
    #[arg(long = "tag", value_name = "TAG")]
    tags: Vec<String>,
    /// Stable subject+predicate, so later facts about the same thing share it.
    #[arg(long)]
    key: Option<String>,
    /// Initial confidence, 0.0 to 1.0 (default by provenance: structural 0.8, observed 0.7, inferred 0.5).
    #[arg(long)]
    confidence: Option<f64>,
    /// structural, observed (default) or inferred.
    #[arg(long)]
    provenance: Option<String>,
    /// Id (prefix) of a fact this one depends on (repeatable).
    #[arg(long = "depends-on", value_name = "ID")]
    depends_on: Vec<String>,
    /// PATH[:START-END] relative to the repository root (repeatable).
    #[arg(long = "anchor", value_name = "PATH[:START-END]")]
    anchors: Vec<String>,
    /// Valid from this date (YYYY-MM-DD or a UTC time).
    #[arg(long)]
    valid_from: Option<String>,
    /// Valid until this date.
    #[arg(long)]
    valid_to: Option<String>,
}

fn read_body(args: &Args) -> Result<String, Error> {
    let Some(path) = &args.body_file else { return Ok(args.body.clone().unwrap_or_default()) };
    let mut bytes = Vec::new();
    let read = if path.as_os_str() == "-" {
        std::io::stdin().read_to_end(&mut bytes).map(|_| ())
    } else {
        std::fs::File::open(path).and_then(|mut f| f.read_to_end(&mut bytes)).map(|_| ())
    };
    read.map_err(|e| Error::invalid("body", format!("cannot read {}: {e}", path.display())))?;
    String::from_utf8(bytes).map_err(|e| {
        Error::invalid(
            "body",
            format!(
                "is not valid UTF-8 (first bad byte at offset {}); save the file as UTF-8",
                e.utf8_error().valid_up_to()
            ),
        )
    })
}

pub fn run(ctx: &mut Ctx, args: Args) -> Result<(), Error> {
    let body = read_body(&args)?;
    let mut memory = ctx.memory()?;
    let wc = ctx.write_context(&memory)?;
    let req = AddRequest {
        fact_type: args.fact_type,
        subject: args.subject,
        body,
        scope: args.scope,
        tags: args.tags,
        key: args.key,
        confidence: args.confidence,
        provenance: args.provenance,
        depends_on: args.depends_on,
        anchors: args.anchors,
        valid_from: args.valid_from,
        valid_to: args.valid_to,
    };
    let outcome = memory.add(&req, &wc)?;
    if ctx.out.json {
        ctx.out.json(&outcome);
    } else {
        ctx.out.line(&outcome.id.to_hex());
        if outcome.deduplicated {
            let where_ = if outcome.proposed { " (a pending proposal)" } else { "" };
            ctx.out.note(&format!("already stored as {}{where_}: nothing written", outcome.id.short()));
        } else if outcome.proposed {
            ctx.out.note(&format!(
                "proposed (neo.mode is review): `git neo approve {}` moves it to the memory",
                outcome.id.short()
            ));
        } else {
            ctx.out.note(&format!("added {} to {}", outcome.path, memory.store().ref_name()));
        }
    }
    Ok(())
}
